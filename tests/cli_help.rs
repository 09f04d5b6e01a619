//! Help, shell completions and man pages, all generated from the one clap
//! definition of the command line.

mod cli_common;
mod support;

use std::process::Command;

use cli_common::*;
use support::*;

const SUBCOMMANDS: [&str; 20] = [
    "list",
    "search",
    "follow",
    "export",
    "snapshots",
    "load",
    "inspect",
    "read-from",
    "raw",
    "cat",
    "verify",
    "convert",
    // Session management (issue 19).
    "delete",
    "prune",
    "salvage",
    "import",
    "bench",
    "completions",
    "man",
    "help",
];

#[test]
fn help_names_the_real_files_and_describes_every_argument() {
    let r = run(["--help"]);
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("(`session.jsonl.zstd`)"), "{}", r.stdout);
    assert!(!r.stdout.contains("session.jsonl.zst`"), "{}", r.stdout);
    assert!(r.stdout.contains("--store <PATH>"), "{}", r.stdout);
    assert!(r.stdout.contains("--quiet"), "{}", r.stdout);
    for sub in ["load", "inspect", "read-from", "raw", "cat"] {
        let r = run([sub, "--help"]);
        assert_eq!(r.code, 0, "{sub}");
        let line = r
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("<ID>"))
            .unwrap_or_else(|| panic!("{sub}: no <ID> line in {}", r.stdout));
        assert!(
            line.trim_start().trim_start_matches("<ID>").trim().len() > 5,
            "{sub}: <ID> has no description: {line:?}"
        );
    }
    // Each command is described by its own line (`search` once carried
    // the benchmark's description too).
    let described = |sub: &str| -> String {
        r.stdout
            .lines()
            .find_map(|l| {
                l.trim_start()
                    .strip_prefix(sub)
                    .filter(|d| d.starts_with(' '))
            })
            .unwrap_or_else(|| panic!("{sub} is not listed in {}", r.stdout))
            .trim()
            .to_string()
    };
    assert!(
        described("search").starts_with("Full-text search"),
        "{}",
        r.stdout
    );
    assert!(!described("search").contains("benchmark"), "{}", r.stdout);
    assert!(
        described("bench").starts_with("Run the benchmark"),
        "{}",
        r.stdout
    );
    let bench = run(["bench", "--help"]);
    assert!(
        bench.stdout.starts_with("Run the benchmark"),
        "{}",
        bench.stdout
    );
    // `help` is a subcommand of its own: `help --help` and `help SUB` work.
    let r = run(["help", "--help"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Usage: dsh-persist help"), "{}", r.stdout);
    let r = run(["help", "verify"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, run(["verify", "--help"]).stdout);
    let r = run(["help"]);
    assert_eq!(r.code, 0);
    assert_eq!(r.stdout, run(["--help"]).stdout);
    let r = run(["--json", "help", "frobnicate"]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("no subcommand \"frobnicate\""));
    // Commands that read no store refuse a store flag.
    let r = run(["completions", "bash", "--store", "/tmp"]);
    assert_eq!(r.code, 2);
}

#[test]
fn completions_are_generated_for_each_shell() {
    let bash = run(["completions", "bash"]);
    assert_eq!(bash.code, 0, "{}", bash.stderr);
    // bash loads the script and completes a subcommand and a flag with it.
    let tmp = TempDir::new("cli-completions");
    let script = tmp.path().join("dsh-persist.bash");
    std::fs::write(&script, &bash.stdout).unwrap();
    let complete = |words: &str| -> String {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); _dsh__persist dsh-persist \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(complete("dsh-persist ver").trim(), "verify");
    let flags = complete("dsh-persist verify --st");
    assert_eq!(flags.trim(), "--store", "{flags}");
    let shells = complete("dsh-persist completions ''");
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.lines().any(|l| l == shell), "{shells}");
    }

    let zsh = run(["completions", "zsh"]);
    assert_eq!(zsh.code, 0);
    assert!(
        zsh.stdout.starts_with("#compdef dsh-persist"),
        "{}",
        zsh.stdout
    );
    let fish = run(["completions", "fish"]);
    assert_eq!(fish.code, 0);
    for (shell, text) in [("zsh", &zsh.stdout), ("fish", &fish.stdout)] {
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{shell} lacks {sub}");
        }
        assert!(
            !text.contains("rss-probe"),
            "{shell} completes a hidden command"
        );
    }
    assert!(
        fish.stdout.contains("complete -c dsh-persist"),
        "{}",
        fish.stdout
    );
    assert_eq!(run(["completions", "tcsh"]).code, 2);
}

#[test]
fn man_pages_are_generated() {
    let man = run(["man"]);
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(man.stdout.contains(".TH dsh-persist 1"), "{}", man.stdout);
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(man.stdout.contains(section), "{section}");
    }
    for sub in SUBCOMMANDS {
        assert!(
            man.stdout
                .contains(&format!("dsh\\-persist\\-{}", sub.replace('-', "\\-"))),
            "{sub}"
        );
    }
    // One page per subcommand, each naming its own options.
    let tmp = TempDir::new("cli-man");
    let dir = tmp.path().join("man1");
    let r = run(["man", "--out-dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let mut want: Vec<String> = SUBCOMMANDS
        .iter()
        .map(|s| format!("dsh-persist-{s}.1"))
        .chain(["dsh-persist.1".to_string()])
        .collect();
    want.sort();
    assert_eq!(pages, want);
    assert_eq!(r.stdout.lines().count(), want.len());
    let verify = std::fs::read_to_string(dir.join("dsh-persist-verify.1")).unwrap();
    assert!(verify.contains(".TH dsh-persist-verify 1"), "{verify}");
    assert!(verify.contains("\\-\\-store"), "{verify}");
    let convert = std::fs::read_to_string(dir.join("dsh-persist-convert.1")).unwrap();
    assert!(convert.contains("\\-\\-to\\-sqlite"), "{convert}");
}
