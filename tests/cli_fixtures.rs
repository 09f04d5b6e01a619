//! The `dsh-persist` binary on copies of the original's fixture stores:
//! every reading subcommand's JSON output against the expected dumps.

mod cli_common;
mod support;

use cli_common::*;
use serde_json::Value;
use support::*;

/// Roots whose sessions all read (torn tails repaired on load).
const READABLE: [&str; 4] = [
    "jsonl-zstd-packed",
    "jsonl-none-packed",
    "jsonl-none-unpacked",
    "sqlite-corpus",
];

fn session_ids(exp: &Value) -> Vec<String> {
    let mut ids: Vec<String> = exp["sessions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    ids.sort();
    ids
}

/// The expected exit code and error kind for an `{error}` entry.
fn expected_failure(err: &Value) -> (i32, &'static str) {
    match err["class"].as_str().unwrap() {
        "SessionFormatUnsupportedError" => (5, "format_unsupported"),
        "SessionPersistenceCorruptionError" => (4, "corruption"),
        _ => {
            let m = err["message"].as_str().unwrap();
            if m.contains("not found") {
                (3, "not_found")
            } else {
                (4, "corruption")
            }
        }
    }
}

/// Checks one CLI run against an expected `{ok}` / `{error}` entry.
fn check(run: &Run, want: &Value, store: &FixtureStore, what: &str) {
    if want.get("ok").is_some_and(Value::is_null) {
        // The original returns null for a session it does not hold.
        assert_eq!(run.code, 3, "{what}: stderr {}", run.stderr);
        assert_eq!(run.error().0, "not_found", "{what}");
    } else if let Some(ok) = want.get("ok") {
        assert_eq!(run.code, 0, "{what}: stderr {}", run.stderr);
        assert_eq!(&run.json(), ok, "{what}");
    } else {
        let err = &want["error"];
        let (code, kind) = expected_failure(err);
        assert_eq!(run.code, code, "{what}: stderr {}", run.stderr);
        let (got_kind, message) = run.error();
        assert_eq!(got_kind, kind, "{what}");
        assert_eq!(
            redact(&message, &store.root),
            err["message"].as_str().unwrap(),
            "{what}"
        );
    }
}

#[test]
fn list_matches_the_original_on_every_corpus_root() {
    for case in READABLE
        .iter()
        .chain(&["jsonl-none-legacy", "sqlite-refused"])
    {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        let run = store.json("list", &[]);
        assert_eq!(run.code, 0, "{case}: {}", run.stderr);
        let got = run.json();
        assert_eq!(ids_of(&got), ids_of(&exp["list"]["ok"]), "{case}");
        // Headers are equal as values (sorted by id on both sides).
        let mut want: Vec<Value> = exp["list"]["ok"].as_array().unwrap().clone();
        want.sort_by_key(|h| h["id"].as_str().unwrap().to_string());
        assert_eq!(got, Value::Array(want), "{case}");
        // snapshots: the same headers with a revision string each.
        let snaps = store.json("snapshots", &[]).json();
        let snaps = snaps.as_array().unwrap();
        assert_eq!(snaps.len(), got.as_array().unwrap().len());
        for (s, h) in snaps.iter().zip(got.as_array().unwrap()) {
            assert_eq!(&s["header"], h);
            assert!(!s["revision"].as_str().unwrap().is_empty());
        }
    }
}

#[test]
fn inspect_read_from_raw_and_load_match_the_original() {
    for case in READABLE {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        for id in session_ids(&exp) {
            let s = &exp["sessions"][&id];
            let what = format!("{case} {id}");
            // Read-only calls first, in the dump's order.
            if let Some(raw) = s.get("readRawBefore") {
                let run = store.json("raw", &[&id]);
                check(&run, raw, &store, &format!("{what} raw"));
                if raw.get("ok").is_some_and(|v| !v.is_null()) {
                    assert_eq!(
                        run.json()["content"].as_str().unwrap(),
                        raw["ok"]["content"].as_str().unwrap(),
                        "{what}: raw content byte for byte"
                    );
                }
            }
            for k in s["readFrom"].as_object().unwrap().keys() {
                let want = resolve(s, &format!("readFrom.{k}"));
                let run = store.json("read-from", &[&id, k]);
                check(&run, &want, &store, &format!("{what} read-from {k}"));
            }
            let inspect = resolve(s, "inspect");
            check(
                &store.json("inspect", &[&id]),
                &inspect,
                &store,
                &format!("{what} inspect"),
            );
            if inspect.get("ok").is_some() {
                let cat = run(["cat", store.flag, store.path.to_str().unwrap(), &id]);
                assert_eq!(cat.code, 0, "{what} cat: {}", cat.stderr);
                assert!(
                    cat.stdout
                        .contains(&format!("Session {}", serde_json::to_string(&id).unwrap()))
                );
            }
            let load = resolve(s, "load");
            let run = store.json("load", &[&id]);
            check(&run, &load, &store, &format!("{what} load"));
            if let Some(ok) = load.get("ok").filter(|v| !v.is_null()) {
                assert_eq!(
                    run.json()["events"].as_array().unwrap().len(),
                    ok["events"].as_array().unwrap().len()
                );
            }
            // After the load, raw shows what the load wrote.
            if s["afterLoad"].get("readRaw").is_some() {
                let want = resolve(s, "afterLoad.readRaw");
                check(
                    &store.json("raw", &[&id]),
                    &want,
                    &store,
                    &format!("{what} raw after load"),
                );
            }
        }
    }
}

#[test]
fn refused_sessions_exit_with_their_kind() {
    for case in [
        "jsonl-zstd-refused",
        "jsonl-none-refused",
        "sqlite-refused",
        "jsonl-none-legacy",
        "sqlite-legacy",
    ] {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        for id in session_ids(&exp) {
            let s = &exp["sessions"][&id];
            let inspect = resolve(s, "inspect");
            check(
                &store.json("inspect", &[&id]),
                &inspect,
                &store,
                &format!("{case} {id} inspect"),
            );
            let rf = resolve(s, "readFrom.0");
            check(
                &store.json("read-from", &[&id, "0"]),
                &rf,
                &store,
                &format!("{case} {id} read-from 0"),
            );
        }
    }
}

#[test]
fn human_output_is_readable() {
    let store = FixtureStore::new("jsonl-none-packed");
    let list = run(["list", store.flag, store.path.to_str().unwrap()]);
    assert_eq!(list.code, 0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert!(lines[0].starts_with("ID "), "{}", lines[0]);
    for h in ["CREATED", "CWD", "PARENT", "SEED"] {
        assert!(lines[0].contains(h));
    }
    // Columns align: every row has its created time where the header says.
    let col = lines[0].find("CREATED").unwrap();
    let conv = lines.iter().find(|l| l.starts_with("conv-basic ")).unwrap();
    assert_eq!(&conv[col..col + 24], "2026-07-26T20:23:14.000Z");
    let child = lines
        .iter()
        .find(|l| l.starts_with("subagent-child "))
        .unwrap();
    assert!(
        child.contains("conv-basic") && child.trim_end().ends_with("66"),
        "{child}"
    );
    assert!(lines.last().unwrap().contains("26 session(s)"));

    let cat = run([
        "cat",
        store.flag,
        store.path.to_str().unwrap(),
        "conv-basic",
    ]);
    let t = &cat.stdout;
    for want in [
        "=== turn 1 ===",
        "[user] List the files in this repo and summarize.",
        "-> tool call bash (call_00_Ry17evSfTr0uJnHhg3X93070): {\"command\": \"ls -la\"}",
        "<- tool result (call_00_Ry17evSfTr0uJnHhg3X93070): total 12",
        "<- tool result ERROR (call_02_noname)",
        "--- turn 1 ended: completed",
        "(thinking) The user wants me to list the files",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    let plan = run(["cat", store.flag, store.path.to_str().unwrap(), "plan-mode"]).stdout;
    for want in [
        "[plan mode on]",
        "[plan mode off]",
        "[title] Make a plan first",
        "ended: aborted (user)",
        "ended: error: upstream 529 overloaded [OVERLOADED]",
        "ended: max-tokens",
    ] {
        assert!(plan.contains(want), "missing {want:?} in\n{plan}");
    }
    // An open turn is shown closed as interrupted, and nothing is written.
    let before = store.hashes();
    let open = run(["cat", store.flag, store.path.to_str().unwrap(), "open-turn"]).stdout;
    assert!(open.contains("ended: interrupted"), "{open}");
    assert_eq!(before, store.hashes());
    // cat --json: the model-visible messages.
    let j = store.json("cat", &["conv-basic"]).json();
    assert_eq!(j["meta"]["id"], "conv-basic");
    let msgs = j["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "user");
    assert!(msgs.iter().any(|m| m["role"] == "assistant"));
}
