//! The SQLite backend against every SQLite root the original wrote
//! (`cases.json`, `expected-sqlite-*.json`): list, read_from, full reads and
//! torn-tail detection, refusals.
//!
//! The backend returns the *stored* log. The store layer adds model
//! validation (unknown types, message shapes, legacy records), legacy
//! conversion and closers; where an expected result depends on those rules,
//! only the backend's part is compared (see `store_level_error`).

mod sqlite_common;
mod support;

use dsh_persist::ErrorKind;
use dsh_persist::backend::sqlite::{SqliteBackend, SqliteConfig};
use dsh_persist::backend::{Backend, TornTail};
use serde_json::Value;
use sqlite_common::*;

/// Errors the original raised above the backend (store-level validation):
/// the backend must read these sessions fine.
fn store_level_error(message: &str) -> bool {
    message.contains("unknown to this harness and not marked ignorable")
        || message.contains("message must have")
        || message.contains("contains unsupported legacy")
}

fn check_root(root: &str, legacy: bool) {
    let expected = support::expected(root);
    let (_tmp, db) = fixture_db(root);
    let b = open(&db);

    // list: headers equal the dump's, in rowid order.
    let listed = b.list().unwrap();
    let order: Vec<String> = listed.iter().map(|h| h.id.to_owned()).collect();
    let expected_order: Vec<String> = expected["listOrderAsReturned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(order, expected_order, "{root}: list order");
    for h in &listed {
        let want = expected["list"]["ok"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == h.id)
            .unwrap();
        assert_eq!(
            &header_value(&h.to_header()),
            want,
            "{root}: list header {}",
            h.id
        );
    }
    let snaps = b.list_snapshots().unwrap();
    assert_eq!(snaps.len(), listed.len());
    for (h, rev) in &snaps {
        assert_eq!(b.revision(&h.id).unwrap().as_ref(), Some(rev));
        assert!(rev.0.starts_with("file:"), "{}", rev.0);
        assert!(
            rev.0
                .contains(&format!(":store:{}:incarnation:", b.store_id().unwrap()))
        );
    }

    for id in session_ids(root) {
        let s = session(&expected, &id);
        let read_from = s["readFrom"].as_object().unwrap();
        for k in read_from.keys() {
            let want = support::resolve(s, &format!("readFrom.{k}"));
            let k: u64 = k.parse().unwrap();
            let got = b.read_from(&id, k);
            if let Some(err) = want.get("error") {
                let msg = err["message"].as_str().unwrap();
                if msg.ends_with("not found") {
                    assert!(got.unwrap().is_none(), "{root}/{id}@{k}: expected absent");
                } else if store_level_error(msg) {
                    assert!(got.unwrap().is_some(), "{root}/{id}@{k}");
                } else {
                    let e = got
                        .err()
                        .unwrap_or_else(|| panic!("{root}/{id}@{k}: expected {msg}"));
                    assert_eq!(e.to_string(), msg, "{root}/{id}@{k}");
                    let kind = if err["class"] == "SessionFormatUnsupportedError" {
                        ErrorKind::FormatUnsupported
                    } else {
                        ErrorKind::Corruption
                    };
                    assert_eq!(e.kind(), kind, "{root}/{id}@{k}");
                }
                continue;
            }
            let got = got
                .unwrap_or_else(|e| panic!("{root}/{id}@{k}: {e}"))
                .unwrap_or_else(|| panic!("{root}/{id}@{k}: absent"));
            let ok = &want["ok"];
            assert_eq!(
                header_value(&got.header),
                ok["meta"],
                "{root}/{id}@{k}: meta"
            );
            let want_events = ok["events"].as_array().unwrap();
            if legacy {
                // The dump shows the converted log (SPEC §1.9, a store-level
                // rule): compare positions only.
                let seqs: Vec<u64> = got.events.iter().map(|e| e.seq).collect();
                let want_seqs: Vec<u64> = want_events
                    .iter()
                    .map(|e| e["seq"].as_u64().unwrap())
                    .collect();
                assert_eq!(seqs, want_seqs, "{root}/{id}@{k}");
            } else {
                assert_eq!(&events_value(&got.events), want_events, "{root}/{id}@{k}");
            }
        }

        // Full read: the stored prefix is readFrom(0) when that succeeded.
        let r0 = support::resolve(s, "readFrom.0");
        let full = b.read(&id);
        match r0.get("ok") {
            Some(ok) => {
                let log = full.unwrap().unwrap();
                let want_events = ok["events"].as_array().unwrap();
                if legacy {
                    assert_eq!(log.events.len(), want_events.len());
                } else {
                    assert_eq!(&events_value(&log.events), want_events, "{root}/{id}: read");
                }
                assert_eq!(Some(&log.revision), b.revision(&id).unwrap().as_ref());
                assert!(log.raw_log.is_none());
                // A torn tail exactly where rows were removed by the load.
                let removed: Vec<i64> = expected["sqliteAfter"]["eventRowsRemoved"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["session_id"] == id.as_str())
                    .map(|r| r["seq"].as_i64().unwrap())
                    .collect();
                match removed.iter().min() {
                    Some(&from) => assert_eq!(
                        log.torn,
                        Some(TornTail::Sqlite {
                            from_seq: from as u64
                        }),
                        "{root}/{id}"
                    ),
                    None => assert_eq!(log.torn, None, "{root}/{id}"),
                }
            }
            None => {
                let msg = r0["error"]["message"].as_str().unwrap();
                if msg.ends_with("not found") {
                    assert!(full.unwrap().is_none());
                } else if store_level_error(msg) {
                    assert!(full.unwrap().is_some());
                } else {
                    assert_eq!(full.err().unwrap().to_string(), msg, "{root}/{id}: read");
                }
            }
        }
    }
}

#[test]
fn corpus_matches_the_original() {
    check_root("sqlite-corpus", false);
}

#[test]
fn refused_roots_fail_at_the_backend_only_where_the_original_did() {
    check_root("sqlite-refused", false);
}

#[test]
fn legacy_root_reads_the_stored_records() {
    check_root("sqlite-legacy", true);
}

#[test]
fn every_sqlite_root_of_cases_json_is_covered() {
    let cases = support::cases();
    let roots: Vec<&str> = cases["roots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "sqlite")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        roots,
        [
            "sqlite-corpus",
            "sqlite-refused",
            "sqlite-legacy",
            "sqlite-bad-schema-16"
        ]
    );
}

#[test]
fn schema_16_database_is_refused_unchanged() {
    let root = "sqlite-bad-schema-16";
    let expected = support::expected(root);
    let (_tmp, db) = fixture_db(root);
    let before = std::fs::read(&db).unwrap();
    let err = SqliteBackend::open(&SqliteConfig::new(db.to_str().unwrap()))
        .err()
        .expect("schema 16 must be refused");
    let want = expected["list"]["error"]["message"].as_str().unwrap();
    assert_eq!(support::redact(&err.to_string(), &db), want);
    assert_eq!(err.kind(), ErrorKind::FormatUnsupported);
    // Every call of the dump failed the same way; nothing was changed.
    let s = session(&expected, "s");
    for k in ["inspect", "load", "readFrom.0", "readFrom.1", "readFrom.3"] {
        assert_eq!(support::resolve(s, k)["error"]["message"], want);
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "refusal changed the file"
    );
    assert!(!db.with_extension("db-wal").exists());
    let _: Value = expected["sqliteAfter"]["schemaUnchanged"].clone();
}
