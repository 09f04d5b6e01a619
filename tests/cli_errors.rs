//! Exit codes and the `--json` error object of `dsh-persist` (SPEC §9):
//! 0 ok, 2 usage, 3 not found, 4 corruption, 5 format unsupported, 1 other.

mod cli_common;
mod support;

use cli_common::*;
use support::*;

#[test]
fn usage_errors_exit_2() {
    let store = FixtureStore::new("jsonl-none-packed");
    let p = store.path.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![],                                    // no subcommand
        vec!["list"],                              // no store flag
        vec!["list", "--jsonl", p, "--sqlite", p], // two store flags
        vec!["frobnicate", "--jsonl", p],          // unknown subcommand
        vec!["load", "--jsonl-raw", p],            // missing ID
        vec!["read-from", "--jsonl-raw", p, "conv-basic", "abc"],
        vec!["list", "--jsonl-raw", p, "--bogus"],
        vec!["convert", "--jsonl-raw", p], // no target
    ];
    for args in cases {
        let r = run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty() || args.is_empty(), "{args:?}");
    }
    // With --json a usage error is one JSON error object too.
    let r = run(["--json", "list"]);
    assert_eq!(r.code, 2);
    let (kind, message) = r.error();
    assert_eq!(kind, "invalid_argument");
    assert!(message.contains("--jsonl"), "{message}");
    // bench makes its own stores.
    let r = run(["--json", "bench", "--jsonl", p]);
    assert_eq!(r.code, 2);
    assert!(r.error().1.contains("bench makes its own stores"));
    // A negative start is refused by the library as an invalid argument.
    let r = store.json("read-from", &["conv-basic", "-1"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "invalid_argument");
    assert!(message.contains("-1"), "{message}");
}

#[test]
fn the_store_flag_goes_before_or_after_the_subcommand() {
    let store = FixtureStore::new("jsonl-none-packed");
    let p = store.path.to_str().unwrap();
    let after = run(["--json", "list", "--jsonl-raw", p]);
    let before = run(["--jsonl-raw", p, "list", "--json"]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert_eq!(after.stdout, before.stdout);
}

#[test]
fn help_and_version_exit_0() {
    let r = run(["--help"]);
    assert_eq!(r.code, 0);
    for sub in [
        "list",
        "snapshots",
        "load",
        "inspect",
        "read-from",
        "raw",
        "cat",
        "verify",
        "convert",
        "bench",
    ] {
        assert!(r.stdout.contains(sub), "help lacks {sub}");
    }
    assert!(
        !r.stdout.contains("rss-probe"),
        "internal subcommand is hidden"
    );
    assert_eq!(run(["--version"]).code, 0);
}

#[test]
fn not_found_exits_3() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    for sub in ["load", "inspect", "raw", "cat"] {
        let r = store.json(sub, &["no-such-session"]);
        assert_eq!(r.code, 3, "{sub}: {}", r.stderr);
        let (kind, message) = r.error();
        assert_eq!(kind, "not_found");
        assert_eq!(message, "session \"no-such-session\" not found");
        assert!(r.stdout.is_empty());
    }
    let r = store.json("read-from", &["no-such-session", "0"]);
    assert_eq!(r.code, 3);
    // A missing store is not created.
    let tmp = TempDir::new("cli-missing");
    let missing = tmp.path().join("nowhere");
    for flag in ["--jsonl", "--jsonl-raw", "--sqlite"] {
        let r = run(["--json", "list", flag, missing.to_str().unwrap()]);
        assert_eq!(r.code, 3, "{flag}: {}", r.stderr);
        assert_eq!(r.error().0, "not_found");
        assert!(!missing.exists(), "{flag} created the store");
    }
    // Human mode: one line on stderr naming the kind.
    let r = run(["load", "--jsonl", store.path.to_str().unwrap(), "nope"]);
    assert_eq!(r.code, 3);
    assert_eq!(
        r.stderr,
        "dsh-persist: error (not_found): session \"nope\" not found\n"
    );
}

#[test]
fn corruption_exits_4_and_format_unsupported_exits_5() {
    let store = FixtureStore::new("jsonl-zstd-refused");
    let r = store.json("load", &["seq-gap-committed"]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "corruption");
    assert!(message.contains("seq gap"), "{message}");
    for id in ["version-1", "unknown-required"] {
        let r = store.json("inspect", &[id]);
        assert_eq!(r.code, 5, "{id}: {}", r.stderr);
        assert_eq!(r.error().0, "format_unsupported");
    }
    // A database of another schema is refused at open: format unsupported
    // or corruption per the library, never a silent empty list.
    let db = FixtureStore::new("sqlite-bad-schema-16");
    let r = db.json("list", &[]);
    assert_ne!(r.code, 0);
    let (kind, message) = r.error();
    assert_eq!(r.code, exit_code_of(&kind), "{kind}");
    assert!(message.contains("schema version 16"), "{message}");
}

fn exit_code_of(kind: &str) -> i32 {
    match kind {
        "invalid_argument" => 2,
        "not_found" => 3,
        "corruption" => 4,
        "format_unsupported" => 5,
        _ => 1,
    }
}

#[test]
fn raw_on_sqlite_is_unsupported_exit_1() {
    let store = FixtureStore::new("sqlite-corpus");
    let r = store.json("raw", &["conv-basic"]);
    assert_eq!(r.code, 1);
    let (kind, message) = r.error();
    assert_eq!(kind, "unsupported");
    assert!(message.contains("JSONL"), "{message}");
}

#[test]
fn the_open_list_probe_times_an_existing_store_and_creates_none() {
    // The bench's internal `rss-probe --open-list`: on a missing database
    // it fails as not found and leaves no file behind.
    let tmp = TempDir::new("open-list-probe");
    let missing = tmp.path().join("nope.db");
    let r = run([
        "rss-probe",
        "--sqlite",
        missing.to_str().unwrap(),
        "--open-list",
        "3",
    ]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(!missing.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    // On a fixture root it lists every session each run.
    let store = FixtureStore::new("jsonl-none-packed");
    let listed = run([
        "--json",
        "list",
        "--jsonl-raw",
        store.path.to_str().unwrap(),
    ]);
    let want = serde_json::from_str::<serde_json::Value>(&listed.stdout)
        .unwrap()
        .as_array()
        .map(|a| a.len())
        .unwrap();
    let r = run([
        "rss-probe",
        "--jsonl-raw",
        store.path.to_str().unwrap(),
        "--open-list",
        "4",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["listed"].as_u64(), Some(want as u64));
    let runs = v["open_and_list_runs_ms"].as_array().unwrap();
    assert!((3..=4).contains(&runs.len()), "{v}");
    // Neither a session id nor --open-list: a usage error.
    let r = run(["rss-probe", "--jsonl-raw", store.path.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}
