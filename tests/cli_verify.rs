//! `dsh-persist verify`: every session checked, every defect named, nothing
//! modified (sha256 of every file before and after).

mod cli_common;
mod support;

use cli_common::*;
use serde_json::Value;
use support::*;

fn problems(v: &Value) -> Vec<(String, String, String)> {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap_or("<store>").to_string(),
                p["kind"].as_str().unwrap().to_string(),
                p["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_corrupt_store_exits_4_lists_every_problem_and_is_not_modified() {
    for case in ["jsonl-zstd-refused", "jsonl-none-refused", "sqlite-refused"] {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        let before = store.hashes();
        let r = store.json("verify", &[]);
        assert_eq!(r.code, 4, "{case}: {}", r.stderr);
        let v = r.json();
        let listed = exp["list"]["ok"].as_array().unwrap().len();
        assert_eq!(v["sessions"], listed, "{case}");
        let probs = problems(&v);
        assert_eq!(
            v["ok"].as_u64().unwrap() as usize + probs.len(),
            listed,
            "{case}"
        );
        // Every session whose inspect fails in the dump is named, with the
        // original's message and the matching kind.
        for (id, s) in exp["sessions"].as_object().unwrap() {
            let inspect = resolve(s, "inspect");
            let Some(err) = inspect.get("error") else {
                continue;
            };
            if !ids_of(&exp["list"]["ok"]).contains(id) {
                continue;
            }
            let p = probs
                .iter()
                .find(|p| &p.0 == id)
                .unwrap_or_else(|| panic!("{case}: {id} not reported: {probs:?}"));
            let want_kind = if err["class"] == "SessionFormatUnsupportedError" {
                "format_unsupported"
            } else {
                "corruption"
            };
            assert_eq!(p.1, want_kind, "{case} {id}");
            assert_eq!(
                redact(&p.2, &store.root),
                err["message"].as_str().unwrap(),
                "{case} {id}"
            );
        }
        assert_eq!(before, store.hashes(), "{case}: verify modified the store");
        // Human mode names the problems too.
        let h = run(["verify", store.flag, store.path.to_str().unwrap()]);
        assert_eq!(h.code, 4);
        assert!(h.stdout.contains(&format!("checked {listed} session(s)")));
        assert!(h.stdout.contains("[corruption]"));
        assert_eq!(before, store.hashes());
    }
}

#[test]
fn torn_tails_are_named_but_not_repaired() {
    let store = FixtureStore::new("jsonl-zstd-packed");
    let before = store.hashes();
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 4, "{}", r.stderr);
    let v = r.json();
    assert_eq!(v["sessions"], 26);
    let probs = problems(&v);
    let ids: Vec<&str> = probs.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(ids, ["torn-a", "torn-b", "torn-c", "torn-d"]);
    assert!(probs.iter().all(|p| p.1 == "torn_tail"));
    assert!(
        probs[1].2.contains("recovered from the torn frame"),
        "{}",
        probs[1].2
    );
    assert_eq!(v["ok"], 22);
    assert_eq!(before, store.hashes());
    // After a load repairs them, the store verifies clean.
    for id in ["torn-a", "torn-b", "torn-c", "torn-d"] {
        assert_eq!(store.json("load", &[id]).code, 0);
    }
    let r = store.json("verify", &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(r.json()["ok"], 26);
}

#[test]
fn a_clean_store_exits_0() {
    for case in ["sqlite-corpus", "jsonl-none-legacy", "sqlite-legacy"] {
        let store = FixtureStore::new(case);
        let before = store.hashes();
        let r = store.json("verify", &[]);
        let v = r.json();
        let probs = problems(&v);
        // sqlite-corpus holds torn rows too; everything else must be ok.
        assert!(
            probs.iter().all(|p| p.1 == "torn_tail"),
            "{case}: {probs:?}"
        );
        assert_eq!(r.code, if probs.is_empty() { 0 } else { 4 }, "{case}");
        assert_eq!(before, store.hashes(), "{case}");
    }
}

#[test]
fn a_root_level_failure_is_a_problem() {
    for case in [
        "jsonl-badroot-flat-layout",
        "jsonl-badroot-mixed-encoding",
        "sqlite-bad-schema-16",
    ] {
        let store = FixtureStore::new(case);
        let exp = expected(case);
        let before = store.hashes();
        let r = store.json("verify", &[]);
        assert_ne!(r.code, 0, "{case}");
        let v = r.json();
        let probs = problems(&v);
        assert_eq!(probs.len(), 1, "{case}: {probs:?}");
        assert_eq!(probs[0].0, "<store>");
        assert_eq!(v["problems"][0]["id"], Value::Null);
        assert_eq!(
            redact(&probs[0].2, &store.root),
            exp["list"]["error"]["message"].as_str().unwrap(),
            "{case}"
        );
        assert_eq!(v["sessions"], 0);
        assert_eq!(before, store.hashes(), "{case}");
    }
}
