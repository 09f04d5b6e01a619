//! Progress on a terminal: drawn on stderr when stderr is a pseudo-terminal
//! (python3's `pty` module gives the binary one), never in a pipe, never
//! with `--quiet`, and stdout (`--json` included) is the same either way.

mod cli_common;
mod support;

use std::process::Command;

use cli_common::*;
use support::*;

/// Runs the binary with stderr on a new pseudo-terminal (120 columns) and
/// stdout on a pipe; returns (exit code, stdout, what the terminal got).
const PTY_RUNNER: &str = r#"
import fcntl, os, pty, select, struct, subprocess, sys, termios
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
out_r, out_w = os.pipe()
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=out_w, stderr=slave)
os.close(slave)
os.close(out_w)
term, out = b"", b""
fds = [master, out_r]
while fds:
    ready, _, _ = select.select(fds, [], [])
    for fd in ready:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            chunk = b""
        if not chunk:
            fds.remove(fd)
        elif fd == master:
            term += chunk
        else:
            out += chunk
code = p.wait()
sys.stdout.buffer.write(b"%d\n%d\n" % (code, len(out)) + out + term)
"#;

struct PtyRun {
    code: i32,
    stdout: String,
    terminal: String,
}

fn on_pty(args: &[&str]) -> PtyRun {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PTY_RUNNER)
        .arg(env!("CARGO_BIN_EXE_dsh-persist"))
        .args(args)
        .output()
        .expect("python3 runs the pty helper");
    assert!(
        out.status.success(),
        "pty helper failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (code, rest) = text.split_once('\n').unwrap();
    let (len, rest) = rest.split_once('\n').unwrap();
    let len: usize = len.parse().unwrap();
    PtyRun {
        code: code.parse().unwrap(),
        stdout: rest[..len].to_string(),
        terminal: rest[len..].to_string(),
    }
}

#[test]
fn verify_and_reads_show_progress_on_a_terminal_only() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    let p = store.path.to_str().unwrap();
    let piped = run(["--json", "verify", "--store", p]);
    assert!(
        piped.stderr.is_empty(),
        "progress in a pipe: {}",
        piped.stderr
    );
    let tty = on_pty(&["--json", "verify", "--store", p]);
    assert_eq!(tty.code, piped.code);
    assert_eq!(
        tty.stdout, piped.stdout,
        "--json output changed on a terminal"
    );
    assert!(
        tty.terminal.contains("verify [") && tty.terminal.contains("/26"),
        "{:?}",
        tty.terminal
    );
    // The line is cleared at the end: the last thing drawn is an erase.
    assert!(tty.terminal.ends_with("\r\x1b[2K"), "{:?}", tty.terminal);
    // --quiet silences it.
    let quiet = on_pty(&["--json", "--quiet", "verify", "--store", p]);
    assert_eq!(quiet.stdout, piped.stdout);
    assert_eq!(quiet.terminal, "", "--quiet drew progress");

    // One long read: a spinner naming the session, also cleared.
    let cat = on_pty(&["cat", "--store", p, "conv-basic"]);
    assert_eq!(cat.code, 0);
    assert!(
        cat.terminal.contains("reading session \"conv-basic\""),
        "{:?}",
        cat.terminal
    );
    assert_eq!(cat.stdout, run(["cat", "--store", p, "conv-basic"]).stdout);
    let list = on_pty(&["list", "--store", p]);
    assert!(
        list.terminal.contains("listing the sessions"),
        "{:?}",
        list.terminal
    );
    // An error is printed after the line was cleared.
    let missing = on_pty(&["inspect", "--store", p, "nope"]);
    assert_eq!(missing.code, 3);
    assert!(
        missing
            .terminal
            .ends_with("\r\x1b[2Kdsh-persist: error (not_found): session \"nope\" not found\r\n"),
        "{:?}",
        missing.terminal
    );
}

#[test]
fn convert_and_bench_show_progress_on_a_terminal_only() {
    let src = FixtureStore::new("jsonl-none-packed");
    let tmp = TempDir::new("cli-progress");
    let a = tmp.path().join("a.db");
    let tty = on_pty(&[
        "--json",
        "convert",
        "--store",
        src.path.to_str().unwrap(),
        "--to-sqlite",
        a.to_str().unwrap(),
    ]);
    assert_eq!(tty.code, 0, "{:?}", tty.terminal);
    assert!(
        tty.terminal.contains("convert: checking ["),
        "{:?}",
        tty.terminal
    );
    assert!(
        tty.terminal.contains("convert: copying ["),
        "{:?}",
        tty.terminal
    );
    let b = tmp.path().join("b.db");
    let piped = run([
        "--json",
        "convert",
        "--store",
        src.path.to_str().unwrap(),
        "--to-sqlite",
        b.to_str().unwrap(),
    ]);
    assert_eq!(piped.code, 0);
    assert!(piped.stderr.is_empty(), "{}", piped.stderr);
    assert_eq!(tty.stdout, piped.stdout);

    let bench = |out: &str| {
        let dir = tmp.path().join(out);
        std::fs::create_dir(&dir).unwrap();
        vec![
            "--json".to_string(),
            "bench".to_string(),
            "--limit-events".to_string(),
            "600".to_string(),
            "--small-sessions".to_string(),
            "3".to_string(),
            "--out-dir".to_string(),
            dir.display().to_string(),
        ]
    };
    let args = bench("tty");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let tty = on_pty(&args);
    assert_eq!(tty.code, 0, "{:?}", tty.terminal);
    for phase in [
        "bench: jsonl-zstd-packed append [",
        "bench: sqlite cold load + inspect [",
        "bench: live-jsonl-zstd-packed read_from [",
    ] {
        assert!(
            tty.terminal.contains(phase),
            "{phase} not in {:?}",
            tty.terminal
        );
    }
    serde_json::from_str::<serde_json::Value>(&tty.stdout).expect("the report is JSON");
    let piped = run(bench("pipe"));
    assert_eq!(piped.code, 0);
    assert!(piped.stderr.is_empty(), "{}", piped.stderr);
}

#[test]
fn postgres_commands_show_progress_on_a_terminal_only() {
    let Some(url) = pg::url("postgres_commands_show_progress_on_a_terminal_only") else {
        return;
    };
    let schema = pg::Schema::new(&url, "progress");
    let src = FixtureStore::new("jsonl-zstd-packed");
    let src_path = src.path.to_str().unwrap();
    let pg_args = |sub: &str, rest: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["--json", sub, "--store", &url, "--postgres-schema"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.push(schema.name.clone());
        a.extend(rest.iter().map(|s| s.to_string()));
        a
    };
    let convert = [
        "--json",
        "convert",
        "--store",
        src_path,
        "--to",
        &url,
        "--postgres-schema",
        &schema.name,
    ];
    let tty = on_pty(&convert);
    assert_eq!(tty.code, 0, "{:?}", tty.terminal);
    for phase in [
        "connecting to PostgreSQL server at",
        "convert: checking [",
        "convert: copying [",
    ] {
        assert!(
            tty.terminal.contains(phase),
            "{phase} not in {:?}",
            tty.terminal
        );
    }
    assert!(tty.terminal.ends_with("\r\x1b[2K"), "{:?}", tty.terminal);

    for (sub, rest, drawn) in [
        ("verify", vec![], "verify ["),
        ("list", vec![], "listing the sessions"),
        ("cat", vec!["conv-basic"], "reading session \"conv-basic\""),
    ] {
        let args = pg_args(sub, &rest);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let piped = run(&args);
        assert_eq!(piped.code, 0, "{sub}: {}", piped.stderr);
        assert!(
            piped.stderr.is_empty(),
            "{sub}: progress in a pipe: {}",
            piped.stderr
        );
        let tty = on_pty(&args);
        assert_eq!(tty.code, 0, "{sub}: {:?}", tty.terminal);
        assert_eq!(
            tty.stdout, piped.stdout,
            "{sub}: --json output changed on a terminal"
        );
        assert!(
            tty.terminal.contains(drawn),
            "{drawn} not in {:?}",
            tty.terminal
        );
        if sub == "verify" {
            assert!(tty.terminal.contains("/26"), "{:?}", tty.terminal);
        }
    }

    // The bench's PostgreSQL rows have their phases too (the bench finds
    // the server through DSH_TEST_POSTGRES_URL, inherited).
    let tmp = TempDir::new("cli-progress-pg");
    let dir = tmp.path().join("bench");
    std::fs::create_dir(&dir).unwrap();
    let bench = [
        "--json",
        "bench",
        "--limit-events",
        "600",
        "--small-sessions",
        "3",
        "--out-dir",
        dir.to_str().unwrap(),
    ];
    let tty = on_pty(&bench);
    assert_eq!(tty.code, 0, "{:?}", tty.terminal);
    for phase in [
        "bench: postgres append [",
        "bench: postgres cold load + inspect [",
        "bench: postgres 8 concurrent writers [",
        "bench: postgres small sessions [",
    ] {
        assert!(
            tty.terminal.contains(phase),
            "{phase} not in {:?}",
            tty.terminal
        );
    }
    let report: serde_json::Value = serde_json::from_str(&tty.stdout).expect("the report is JSON");
    assert!(report["postgres_skipped"].is_null(), "{report}");
}
