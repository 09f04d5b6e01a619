//! The CLI run as an ordinary user (uid/gid 65534 through `setpriv`).
//!
//! The other suites run as whoever runs them, root in CI, and root passes
//! every permission check the kernel makes: a store a user writes and reads
//! as themselves, and the ownership rules of a SQLite database (SPEC §4.1),
//! are checked here as a user meets them. Needs root (to switch user) and
//! `setpriv`, and a binary that user can run; without them the test says
//! so and checks nothing.

mod cli_common;
mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use cli_common::Run;
use support::TempDir;

const USER: u32 = 65534;

/// Runs the CLI as `USER` with `args`; `None` when it cannot be run so.
fn run_as_user(args: &[&str]) -> Option<Run> {
    let out = Command::new("setpriv")
        .args([
            &format!("--reuid={USER}"),
            &format!("--regid={USER}"),
            "--clear-groups",
            env!("CARGO_BIN_EXE_dsh-persist"),
        ])
        .args(args)
        .output()
        .ok()?;
    Some(Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    })
}

/// Every file and directory under `dir`, with `dir` itself.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < all.len() {
        if all[i].is_dir() {
            for e in std::fs::read_dir(&all[i]).unwrap() {
                all.push(e.unwrap().path());
            }
        }
        i += 1;
    }
    all
}

fn events_file(path: &Path) {
    let lines = [
        r#"{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}"#.to_string(),
        format!(
            r#"{{"type":"user/message","seq":1,"time":5,"data":{},"surfaceOp":"append"}}"#,
            support::conv::user_message("u1", "hi")
        ),
        r#"{"type":"turn/end","seq":2,"time":5,"data":{"turn":1,"reason":{"kind":"completed"}}}"#
            .to_string(),
    ];
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_user_writes_and_reads_their_own_stores_and_is_refused_anothers() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: not root (cannot switch to another user); nothing checked");
        return;
    }
    let probe = run_as_user(&["--version"]);
    if probe.as_ref().is_none_or(|r| r.code != 0) {
        eprintln!(
            "SKIPPED: cannot run the CLI as uid {USER} through setpriv (no setpriv, or the binary is not readable by that user); nothing checked"
        );
        return;
    }
    let tmp = TempDir::new("unprivileged");
    // The user may pass through (not list) the test's private directory.
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    // The user's home: theirs, private.
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    let input = home.join("events.jsonl");
    events_file(&input);
    std::os::unix::fs::chown(&home, Some(USER), Some(USER)).unwrap();
    std::os::unix::fs::chown(&input, Some(USER), Some(USER)).unwrap();
    let input = input.to_str().unwrap();

    // A raw JSONL root the user made (an empty directory of theirs), an
    // import into it, then two new stores the CLI creates from it.
    let raw = home.join("raw");
    std::fs::create_dir(&raw).unwrap();
    std::fs::set_permissions(&raw, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&raw, Some(USER), Some(USER)).unwrap();
    let path = |name: &str| home.join(name).to_str().unwrap().to_string();
    let r = run_as_user(&[
        "--json",
        "import",
        "--jsonl-raw",
        &path("raw"),
        "--id",
        "imp",
        input,
    ])
    .unwrap();
    assert_eq!(r.code, 0, "import: {}", r.stderr);
    for (to, name) in [("--to-sqlite", "s.db"), ("--to-jsonl", "zstd")] {
        let r = run_as_user(&[
            "--json",
            "convert",
            "--jsonl-raw",
            &path("raw"),
            to,
            &path(name),
        ])
        .unwrap();
        assert_eq!(r.code, 0, "convert {to}: {}", r.stderr);
    }
    // Another session written into the database the user now has.
    let r = run_as_user(&[
        "--json",
        "import",
        "--sqlite",
        &path("s.db"),
        "--id",
        "two",
        input,
    ])
    .unwrap();
    assert_eq!(r.code, 0, "import into the database: {}", r.stderr);
    for (flag, name, sessions) in [
        ("--sqlite", "s.db", 2),
        ("--jsonl", "zstd", 1),
        ("--jsonl-raw", "raw", 1),
    ] {
        let store = path(name);
        let ctx = format!("{flag} {store}");
        let r = run_as_user(&["--json", "list", flag, &store]).unwrap();
        assert_eq!(r.code, 0, "{ctx}: list: {}", r.stderr);
        assert_eq!(r.json().as_array().map(Vec::len), Some(sessions), "{ctx}");
        let r = run_as_user(&["--json", "load", flag, &store, "imp"]).unwrap();
        assert_eq!(r.code, 0, "{ctx}: load: {}", r.stderr);
        let r = run_as_user(&["verify", flag, &store]).unwrap();
        assert_eq!(r.code, 0, "{ctx}: verify: {}{}", r.stdout, r.stderr);
        // A search (it keeps its index in the store's cache directory),
        // then a delete of the imported session.
        let r = run_as_user(&["--json", "search", flag, &store, "hi"]).unwrap();
        assert_eq!(r.code, 0, "{ctx}: search: {}", r.stderr);
        assert!(r.stdout.contains("imp"), "{ctx}: search: {}", r.stdout);
        let r = run_as_user(&["--json", "delete", "--yes", flag, &store, "imp"]).unwrap();
        assert_eq!(r.code, 0, "{ctx}: delete: {}", r.stderr);
        let r = run_as_user(&["--json", "list", flag, &store]).unwrap();
        assert_eq!(
            r.json().as_array().map(Vec::len),
            Some(sessions - 1),
            "{ctx}"
        );
    }
    // Everything made is the user's (the caches beside the stores too); the
    // database is private to them.
    assert!(home.join("s.db.dsh-persist-cache").is_dir());
    assert!(home.join("raw/.dsh-persist-cache").is_dir());
    for path in tree(&home) {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.uid(), USER, "{} is not the user's", path.display());
    }
    let db = std::fs::metadata(home.join("s.db")).unwrap();
    assert_eq!(db.mode() & 0o077, 0, "mode {:o}", db.mode());

    // Stores behind a directory of the user's that they may not search
    // (mode 0600): the permission error, not "does not exist".
    let locked = home.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::copy(home.join("s.db"), locked.join("s.db")).unwrap();
    std::fs::create_dir(locked.join("root")).unwrap();
    for p in [locked.join("s.db"), locked.join("root"), locked.clone()] {
        std::os::unix::fs::chown(&p, Some(USER), Some(USER)).unwrap();
    }
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (flag, name, what) in [
        ("--sqlite", "s.db", "SQLite database"),
        ("--jsonl", "root", "JSONL root"),
    ] {
        let store = locked.join(name);
        let r = run_as_user(&["--json", "list", flag, store.to_str().unwrap()]).unwrap();
        let (kind, message) = r.error();
        assert_eq!((r.code, kind.as_str()), (1, "io"), "{message}");
        assert!(
            message.contains(&format!("cannot inspect {what}"))
                && message.contains("Permission denied"),
            "{message}"
        );
    }

    // A database another user (root) owns, in the user's own directory:
    // refused, nothing read or changed.
    let foreign = home.join("foreign.db");
    std::fs::copy(home.join("s.db"), &foreign).unwrap();
    std::os::unix::fs::chown(&foreign, Some(0), Some(0)).unwrap();
    let before = std::fs::read(&foreign).unwrap();
    let r = run_as_user(&["--json", "list", "--sqlite", foreign.to_str().unwrap()]).unwrap();
    assert_ne!(r.code, 0, "another user's database was opened");
    let (kind, message) = r.error();
    assert_eq!(kind, "invalid_argument", "{message}");
    assert!(
        message.contains("must be owned by the current user"),
        "{message}"
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
}
