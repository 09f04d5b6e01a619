//! `dsh-persist convert`: logical logs copied byte for byte between
//! backends; the source never modified; existing ids never overwritten.

mod cli_common;
mod support;

use cli_common::*;
use serde_json::Value;
use support::*;

/// `inspect --json` of every listed session: the header and every event's
/// text, in the store's own byte order.
fn logical_logs(flag: &str, path: &str) -> Vec<(String, String)> {
    let list = run(["--json", "list", flag, path]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    ids_of(&list.json())
        .into_iter()
        .map(|id| {
            let r = run(["--json", "inspect", flag, path, &id]);
            assert_eq!(r.code, 0, "{id}: {}", r.stderr);
            (id, r.stdout)
        })
        .collect()
}

#[test]
fn jsonl_to_sqlite_to_jsonl_raw_keeps_every_event_byte_for_byte() {
    let src = FixtureStore::new("jsonl-zstd-packed");
    let src_path = src.path.to_str().unwrap().to_string();
    let before = src.hashes();
    let original = logical_logs("--jsonl", &src_path);
    assert_eq!(original.len(), 26);

    let tmp = TempDir::new("cli-convert");
    let db = tmp.path().join("sessions.db");
    let r = run([
        "--json",
        "convert",
        "--jsonl",
        &src_path,
        "--to-sqlite",
        db.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json(), serde_json::json!({"converted": 26}));
    assert_eq!(before, src.hashes(), "convert modified its source");

    let raw = tmp.path().join("raw-root");
    let r = run([
        "--json",
        "convert",
        "--sqlite",
        db.to_str().unwrap(),
        "--to-jsonl-raw",
        raw.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["converted"], 26);

    // The inspect output (header + every event's text) is identical in all
    // three stores, except the envelope key order of the synthetic closers
    // (written `surfaceOp` before `sourceEventSeqs`), which SQLite, keeping
    // the envelope in columns, rebuilds in the live order.
    let via_sqlite = logical_logs("--sqlite", db.to_str().unwrap());
    let via_raw = logical_logs("--jsonl-raw", raw.to_str().unwrap());
    assert_eq!(via_sqlite, via_raw, "SQLite -> JSONL raw is exact");
    let mut reordered = Vec::new();
    for ((id, a), (id2, b)) in original.iter().zip(&via_sqlite) {
        assert_eq!(id, id2);
        if a == b {
            continue;
        }
        let a: Value = serde_json::from_str(a).unwrap();
        let b: Value = serde_json::from_str(b).unwrap();
        assert_eq!(a["meta"].to_string(), b["meta"].to_string(), "{id}");
        let (ea, eb) = (
            a["events"].as_array().unwrap(),
            b["events"].as_array().unwrap(),
        );
        assert_eq!(ea.len(), eb.len(), "{id}");
        for (x, y) in ea.iter().zip(eb) {
            if serde_json::to_string(x).unwrap() == serde_json::to_string(y).unwrap() {
                continue;
            }
            // Same keys, same values (data text included), other order.
            assert_eq!(x, y, "{id}");
            let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
            assert_eq!(
                keys(x)[4..6],
                ["surfaceOp".to_string(), "sourceEventSeqs".to_string()],
                "{id}"
            );
            assert_eq!(
                keys(y)[4..6],
                ["sourceEventSeqs".to_string(), "surfaceOp".to_string()],
                "{id}"
            );
            assert_eq!(x["data"].to_string(), y["data"].to_string());
            assert!(
                x["data"]["message"]["id"]
                    .as_str()
                    .unwrap()
                    .starts_with("interrupted-tool-result-"),
                "{id}: {x}"
            );
            reordered.push(format!("{id}#{}", x["seq"]));
        }
    }
    // Only closers that carry both fields differ: synthetic interrupted
    // tool results (open-turn, and torn-d whose recovered tail is closed).
    assert_eq!(reordered, ["open-turn#161", "torn-d#31"]);
    // The copies are balanced: nothing left to repair.
    let v = run(["--json", "verify", "--jsonl-raw", raw.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    // The raw JSONL copy is plain text with one event per line (packed rows
    // aside): the header line opens each log.
    let raw_conv = run([
        "--json",
        "raw",
        "--jsonl-raw",
        raw.to_str().unwrap(),
        "conv-basic",
    ]);
    assert!(
        raw_conv.json()["content"]
            .as_str()
            .unwrap()
            .starts_with("{\"type\":\"session\",\"version\":0,\"id\":\"conv-basic\"")
    );
}

#[test]
fn convert_refuses_to_overwrite_and_writes_nothing() {
    let src = FixtureStore::new("jsonl-none-packed");
    let src_path = src.path.to_str().unwrap().to_string();
    let tmp = TempDir::new("cli-convert-conflict");
    let target = tmp.path().join("target");
    // Put one of the source's sessions in the target first.
    let one = FixtureStore::new("jsonl-none-legacy");
    let r = run([
        "convert",
        "--jsonl-raw",
        one.path.to_str().unwrap(),
        "--to-jsonl",
        target.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("converted 1 session(s)"), "{}", r.stdout);
    let r = run([
        "convert",
        "--jsonl-raw",
        &src_path,
        "--to-jsonl",
        target.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "no clash yet: {}", r.stderr);
    let before = tree_hashes(&target);
    // Converting the same source again clashes on every id: nothing written.
    let r = run([
        "--json",
        "convert",
        "--jsonl-raw",
        &src_path,
        "--to-jsonl",
        target.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "conflict");
    assert!(message.contains("\"conv-basic\"") && message.contains("nothing was written"));
    assert_eq!(before, tree_hashes(&target));
    // Converting into the source itself is refused.
    let r = run([
        "--json",
        "convert",
        "--jsonl-raw",
        &src_path,
        "--to-jsonl-raw",
        &src_path,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn a_corrupt_source_stops_before_writing() {
    let src = FixtureStore::new("jsonl-none-refused");
    let tmp = TempDir::new("cli-convert-corrupt");
    let db = tmp.path().join("sessions.db");
    let r = run([
        "--json",
        "convert",
        "--jsonl-raw",
        src.path.to_str().unwrap(),
        "--to-sqlite",
        db.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let (kind, message) = r.error();
    assert_eq!(kind, "corruption");
    assert!(
        message.starts_with("cannot convert session \"bad-assistant-source\""),
        "{message}"
    );
    assert!(!db.exists(), "the target was created");
}

#[test]
fn jsonl_to_jsonl_raw_to_jsonl_is_exact_byte_for_byte() {
    let src = FixtureStore::new("jsonl-zstd-packed");
    let src_path = src.path.to_str().unwrap().to_string();
    let original = logical_logs("--jsonl", &src_path);
    let tmp = TempDir::new("cli-convert-jsonl");
    let raw = tmp.path().join("raw");
    let back = tmp.path().join("back");
    let r = run([
        "convert",
        "--jsonl",
        &src_path,
        "--to-jsonl-raw",
        raw.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = run([
        "convert",
        "--jsonl-raw",
        raw.to_str().unwrap(),
        "--to-jsonl",
        back.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(original, logical_logs("--jsonl-raw", raw.to_str().unwrap()));
    assert_eq!(original, logical_logs("--jsonl", back.to_str().unwrap()));
}
