//! `dsh-persist delete`, `prune`, `salvage`, `import` and `verify`'s
//! salvage suggestion (issue 19): exit codes, `--json`, the refusal to
//! delete without `--yes` when stdin is not a terminal.

mod cli_common;
mod support;

use std::path::Path;

use cli_common::*;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    BackendConfig, Compression, JsonlConfig, SqliteConfig, Store, StoreConfig,
};
use support::TempDir;

fn turn(t: u64, s: u64) -> Vec<Event> {
    [
        format!(r#"{{"type":"turn/start","seq":{s},"time":5,"data":{{"turn":{t}}}}}"#),
        format!(
            r#"{{"type":"user/message","seq":{},"time":5,"data":{},"surfaceOp":"append"}}"#,
            s + 1,
            support::conv::user_message(&format!("u{t}"), "hi")
        ),
        format!(
            r#"{{"type":"turn/end","seq":{},"time":5,"data":{{"turn":{t},"reason":{{"kind":"completed"}}}}}}"#,
            s + 2
        ),
    ]
    .iter()
    .map(|l| Event::parse(l).unwrap())
    .collect()
}

/// A store of `ids`, each with `turns` turns (one append each).
fn store_with(config: BackendConfig, ids: &[&str], turns: u64) {
    let store = Store::open(StoreConfig::with_backend(config)).unwrap();
    for id in ids {
        let mut h = SessionHeader::new(*id, 1_785_000_000_000);
        h.cwd = Some("/p".into());
        store.create(h).unwrap();
        for t in 0..turns {
            store.append(id, turn(t + 1, t * 3)).unwrap();
        }
    }
    store.close().unwrap();
}

fn raw_root(dir: &TempDir) -> String {
    let root = dir.path().join("root");
    let mut c = JsonlConfig::new(&root);
    c.compression = Compression::None;
    if !root.exists() {
        store_with(BackendConfig::Jsonl(c), &["a", "b", "c"], 1);
    }
    root.display().to_string()
}

fn listed(flag: &str, store: &str) -> usize {
    let r = run(["--json", "list", flag, store]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json().as_array().unwrap().len()
}

#[test]
fn delete_needs_yes_without_a_terminal_and_reports_json() {
    let dir = TempDir::new("cli-manage");
    let root = raw_root(&dir);
    // stdin is not a terminal here: refused, nothing deleted.
    let r = run(["delete", "--jsonl-raw", &root, "a"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--yes"), "{}", r.stderr);
    assert_eq!(listed("--jsonl-raw", &root), 3);
    let r = run(["--json", "delete", "--yes", "--jsonl-raw", &root, "a", "b"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json(), serde_json::json!({"deleted": ["a", "b"]}));
    assert_eq!(listed("--jsonl-raw", &root), 1);
    // The trash a delete leaves (empty) is no problem for verify.
    assert!(Path::new(&root).join(".dsh-persist-trash").is_dir());
    let r = run(["--json", "verify", "--jsonl-raw", &root]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["problems"], serde_json::json!([]));
    let r = run(["--json", "delete", "-y", "--jsonl-raw", &root, "a"]);
    assert_eq!(r.code, 3);
    let (kind, message) = r.error();
    assert_eq!(kind, "not_found");
    assert!(message.contains("\"a\""), "{message}");
}

#[test]
fn prune_dry_run_then_real_on_sqlite() {
    let dir = TempDir::new("cli-manage");
    let db = dir.path().join("s.db").display().to_string();
    store_with(
        BackendConfig::Sqlite(SqliteConfig::new(&db)),
        &["x", "y", "z"],
        1,
    );
    let r = run([
        "--json",
        "prune",
        "--sqlite",
        &db,
        "--keep-newest",
        "1",
        "--dry-run",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["updatedFrom"], "lastEventTime");
    assert_eq!(v["deleted"].as_array().unwrap().len(), 2);
    assert_eq!(listed("--sqlite", &db), 3);
    let r = run(["prune", "--sqlite", &db, "--keep-newest", "1"]);
    assert_eq!(r.code, 2, "refused without --yes: {}", r.stderr);
    let r = run([
        "prune",
        "--sqlite",
        &db,
        "--older-than-days",
        "1",
        "--keep-newest",
        "1",
        "-y",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("2 deleted, 0 busy, 0 failed, 1 kept"),
        "{}",
        r.stdout
    );
    assert_eq!(listed("--sqlite", &db), 1);
    let r = run(["--json", "prune", "--sqlite", &db]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("criterion"));
}

#[test]
fn verify_suggests_salvage_and_salvage_rescues_the_prefix() {
    let dir = TempDir::new("cli-manage");
    let root = dir.path().join("root");
    let mut c = JsonlConfig::new(&root);
    c.compression = Compression::None;
    store_with(BackendConfig::Jsonl(c), &["broken"], 3);
    let log = root.join("--p--").join("broken").join("session.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    lines[4] = "{\"seq\":3,BROKEN\n";
    std::fs::write(&log, lines.concat()).unwrap();
    let root = root.display().to_string();

    let r = run(["--json", "verify", "--jsonl-raw", &root]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let p = &r.json()["problems"][0];
    assert_eq!(p["suggest"], "dsh-persist salvage broken NEW_ID");
    let r = run(["verify", "--jsonl-raw", &root]);
    assert!(r.stdout.contains("salvage broken NEW_ID"), "{}", r.stdout);

    let before = std::fs::read(&log).unwrap();
    let r = run([
        "--json",
        "salvage",
        "--jsonl-raw",
        &root,
        "broken",
        "rescued",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["keptEvents"], 3);
    assert!(v["stopped"].as_str().unwrap().contains("line 4"), "{v}");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "the source is not changed"
    );
    let r = run(["--json", "load", "--jsonl-raw", &root, "rescued"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run(["--json", "salvage", "--jsonl-raw", &root, "nope", "n"]);
    assert_eq!(r.code, 3);
}

#[test]
fn import_writes_all_or_nothing() {
    let dir = TempDir::new("cli-manage");
    let root = raw_root(&dir);
    let good = dir.path().join("good.jsonl");
    let lines: Vec<String> = turn(1, 0).iter().map(|e| e.to_json()).collect();
    std::fs::write(&good, lines.join("\n") + "\n").unwrap();
    let r = run(["--json", "import", "--jsonl-raw", &root, "--id", "imp"]).code;
    assert_eq!(r, 2, "FILE is required");
    let r = run([
        "--json",
        "import",
        "--jsonl-raw",
        &root,
        "--id",
        "imp",
        good.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.json(),
        serde_json::json!({"id":"imp","events":3,"hadHeader":false})
    );
    // zstd-compressed input works too.
    let zst = dir.path().join("good.jsonl.zst");
    std::fs::write(
        &zst,
        zstd::encode_all(std::fs::read(&good).unwrap().as_slice(), 3).unwrap(),
    )
    .unwrap();
    let r = run([
        "--json",
        "import",
        "--jsonl-raw",
        &root,
        "--id",
        "imp2",
        zst.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, format!("{}\n{}\n", lines[0], lines[2])).unwrap();
    let r = run([
        "--json",
        "import",
        "--jsonl-raw",
        &root,
        "--id",
        "bad",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(listed("--jsonl-raw", &root), 5);
    let r = run(["--json", "inspect", "--jsonl-raw", &root, "bad"]);
    assert_eq!(r.code, 3);
}

/// Runs the binary with stdin and stderr on a new pseudo-terminal and stdout
/// on a pipe, answering `answer` once the prompt `[y/N]` appears; prints
/// (exit code, stdout length, stdout, what the terminal got).
const PTY_ANSWER: &str = r#"
import fcntl, os, pty, select, struct, subprocess, sys, termios
answer = sys.argv[1].encode() + b"\n"
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
out_r, out_w = os.pipe()
p = subprocess.Popen(sys.argv[2:], stdin=slave, stdout=out_w, stderr=slave)
os.close(slave)
os.close(out_w)
term, out, answered = b"", b"", False
fds = [master, out_r]
while fds:
    ready, _, _ = select.select(fds, [], [], 10)
    if not ready:
        break
    for fd in ready:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            fds.remove(fd)
        elif fd == master:
            term += chunk
            if not answered and b"[y/N]" in term:
                os.write(master, answer)
                answered = True
        else:
            out += chunk
code = p.wait()
sys.stdout.buffer.write(b"%d\n%d\n" % (code, len(out)) + out + term)
"#;

fn on_pty_answering(answer: &str, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(PTY_ANSWER)
        .arg(answer)
        .arg(env!("CARGO_BIN_EXE_dsh-persist"))
        .args(args)
        .output()
        .expect("python3 runs the pty helper");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (code, rest) = text.split_once('\n').unwrap();
    let (len, rest) = rest.split_once('\n').unwrap();
    let len: usize = len.parse().unwrap();
    (
        code.parse().unwrap(),
        rest[..len].to_string(),
        rest[len..].to_string(),
    )
}

#[test]
fn a_terminal_is_asked_and_shows_progress() {
    let dir = TempDir::new("cli-manage");
    let root = raw_root(&dir);
    let (code, stdout, term) =
        on_pty_answering("n", &["prune", "--jsonl-raw", &root, "--keep-newest", "0"]);
    assert_eq!(code, 1, "declined: {term}");
    assert!(term.contains("delete 3 session(s)? [y/N]"), "{term}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(listed("--jsonl-raw", &root), 3);
    let (code, stdout, term) =
        on_pty_answering("y", &["prune", "--jsonl-raw", &root, "--keep-newest", "1"]);
    assert_eq!(code, 0, "{term}");
    assert!(
        term.contains("prune ["),
        "a progress bar on the terminal: {term}"
    );
    assert!(
        stdout.contains("2 deleted, 0 busy, 0 failed, 1 kept"),
        "{stdout}"
    );
    assert_eq!(listed("--jsonl-raw", &root), 1);
    let r = run(["--json", "list", "--jsonl-raw", &root]);
    let last = r.json()[0]["id"].as_str().unwrap().to_string();
    let (code, stdout, term) = on_pty_answering("yes", &["delete", "--jsonl-raw", &root, &last]);
    assert_eq!(code, 0, "{term}");
    assert!(
        term.contains(&format!("delete session \"{last}\"? [y/N]")),
        "{term}"
    );
    assert_eq!(stdout.trim(), format!("deleted {last}"));
    assert_eq!(listed("--jsonl-raw", &root), 0);
}
