//! A database written by this backend equals the one the original wrote
//! (`sqliteBefore` of `expected-sqlite-corpus.json`): schema SQL, pragmas,
//! the sessions rows and every events row column by column (storage
//! classes, TEXT, BLOB sizes and sha256, varints).
//!
//! The sessions are appended batch by batch as the original did: the batch
//! boundaries are the zstd frames of `jsonl-zstd-packed` (each append batch
//! is one frame; `filesBefore[].zstdFrames[].newlines` counts its records),
//! and the exact event text comes from that root's `readRawBefore` content.
//! Where a JSONL log was cut by the fixture generator (torn-*), the rest of
//! the stored SQLite prefix is appended as one more batch; rows changed by
//! the generator after writing (torn-a, torn-b) are left out of the
//! comparison. `sqlite-byte-bound` exists only in SQLite: one batch.

mod sqlite_common;
mod support;

use std::collections::BTreeMap;

use dsh_persist::backend::{Backend, Expect};
use dsh_persist::codec::chunk_rows::Record;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::{HeaderSource, SessionHeader};
use serde_json::Value;
use sqlite_common::*;

/// Append batches per session id, from the zstd frames of jsonl-zstd-packed.
fn jsonl_batches() -> BTreeMap<String, Vec<Vec<Event>>> {
    let exp = support::expected("jsonl-zstd-packed");
    let files: BTreeMap<&str, &Value> = exp["filesBefore"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f))
        .collect();
    let mut out = BTreeMap::new();
    for (id, s) in exp["sessions"].as_object().unwrap() {
        let Some(path) = s["locate"]["ok"]["path"].as_str() else {
            continue;
        };
        let Some(content) = s["readRawBefore"]["ok"]["content"].as_str() else {
            continue;
        };
        let rel = path.strip_prefix("<ROOT>/").unwrap();
        let frames = files[rel]["zstdFrames"].as_array().unwrap();
        let mut lines = content.split_terminator('\n');
        let mut batches = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let n = f["newlines"].as_u64().unwrap() as usize;
            let batch: Vec<&str> = lines.by_ref().take(n).collect();
            if i == 0 {
                assert!(batch[0].starts_with("{\"type\":\"session\""));
                continue;
            }
            if batch.len() < n {
                break; // torn frame: its lines are not in readRawBefore
            }
            let mut events = Vec::new();
            for line in batch {
                Record::parse_line(line).unwrap().into_events(&mut events);
            }
            batches.push(events);
        }
        out.insert(id.clone(), batches);
    }
    out
}

fn header_from_dump(v: &Value) -> SessionHeader {
    SessionHeader::parse(&v.to_string(), HeaderSource::Host).unwrap()
}

#[test]
fn written_database_matches_the_original_row_for_row() {
    let expected = support::expected("sqlite-corpus");
    let before = &expected["sqliteBefore"];
    let (_fx_tmp, fixture) = fixture_db("sqlite-corpus");
    let original = open(&fixture);
    let (_tmp, path, ours) = fresh_db("writer");
    let batches = jsonl_batches();

    let mut torn_sessions = Vec::new();
    let mut prefix_len: BTreeMap<String, u64> = BTreeMap::new();
    for id in expected["listOrderAsReturned"].as_array().unwrap() {
        let id = id.as_str().unwrap();
        let header = header_from_dump(
            expected["list"]["ok"]
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["id"] == id)
                .unwrap(),
        );
        let stored = original.read(id).unwrap().unwrap();
        let mut plan: Vec<Vec<Event>> = batches.get(id).cloned().unwrap_or_default();
        let covered: usize = plan.iter().map(Vec::len).sum();
        assert!(covered <= stored.events.len(), "{id}");
        // JSONL and SQLite hold the same logical events.
        for (a, b) in plan.iter().flatten().zip(&stored.events) {
            assert_eq!(
                support::parse(&a.to_json()),
                support::parse(&b.to_json()),
                "{id}"
            );
        }
        if covered < stored.events.len() {
            plan.push(stored.events[covered..].to_vec());
            if batches.contains_key(id) {
                torn_sessions.push(id.to_string());
            }
        }
        if stored.torn.is_some() {
            torn_sessions.push(id.to_string());
        }
        prefix_len.insert(id.to_string(), stored.events.len() as u64);
        let mut rev = None;
        for batch in &plan {
            let expect = match &rev {
                None => Expect::New,
                Some(r) => Expect::At(r),
            };
            let r = ours.append(&header, batch, expect).unwrap();
            rev = Some(r);
        }
        assert_eq!(ours.revision(id).unwrap(), rev);
    }
    ours.close().unwrap();

    let conn = rusqlite::Connection::open(&path).unwrap();
    // Schema SQL, exactly.
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        .unwrap();
    let schema: Vec<Value> = stmt
        .query_map([], |r| {
            Ok(serde_json::json!({
                "type": r.get::<_, String>(0)?,
                "name": r.get::<_, String>(1)?,
                "tbl_name": r.get::<_, String>(2)?,
                "sql": r.get::<_, Option<String>>(3)?,
            }))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let mut want_schema = before["schema"].as_array().unwrap().clone();
    want_schema.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    assert_eq!(schema, want_schema);

    // Pragmas.
    for (name, want) in before["pragmas"].as_object().unwrap() {
        let got: rusqlite::types::Value = conn
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap();
        let got = match got {
            rusqlite::types::Value::Integer(i) => Value::from(i),
            rusqlite::types::Value::Text(t) => Value::from(t),
            other => panic!("{other:?}"),
        };
        assert_eq!(&got, want, "PRAGMA {name}");
    }

    // persistence_state: one row holding a random UUID v4.
    let (singleton, store_id): (i64, String) = conn
        .query_row(
            "SELECT singleton, store_id FROM persistence_state",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(singleton, 1);
    assert_eq!(store_id.len(), 36);
    assert_eq!(&store_id[14..15], "4");
    assert_ne!(store_id, before["persistence_state"][0]["store_id"]);

    // sessions rows (incarnation is random; the revision counts appends).
    let mut stmt = conn
        .prepare(
            "SELECT id, version, created_at, cwd, parent_session, seed_length, origin, \
             delegation_depth, typeof(delegation_depth), agent_preset, incarnation, revision \
             FROM sessions ORDER BY rowid",
        )
        .unwrap();
    let sessions: Vec<Value> = stmt
        .query_map([], |r| {
            Ok(serde_json::json!({
                "id": r.get::<_, String>(0)?,
                "version": r.get::<_, i64>(1)?,
                "created_at": r.get::<_, i64>(2)?,
                "cwd": r.get::<_, Option<String>>(3)?,
                "parent_session": r.get::<_, Option<String>>(4)?,
                "seed_length": r.get::<_, Option<i64>>(5)?,
                "origin": r.get::<_, Option<String>>(6)?,
                "delegation_depth": r.get::<_, Option<i64>>(7)?,
                "typeof_delegation_depth": r.get::<_, String>(8)?,
                "agent_preset": r.get::<_, Option<String>>(9)?,
                "incarnation": r.get::<_, String>(10)?,
                "revision": r.get::<_, i64>(11)?,
            }))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let want_sessions = before["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), want_sessions.len());
    for (got, want) in sessions.iter().zip(want_sessions) {
        let id = want["id"].as_str().unwrap();
        for col in [
            "id",
            "version",
            "created_at",
            "cwd",
            "parent_session",
            "seed_length",
            "origin",
            "delegation_depth",
            "typeof_delegation_depth",
            "agent_preset",
        ] {
            assert_eq!(got[col], want[col], "sessions.{col} of {id}");
        }
        let inc = got["incarnation"].as_str().unwrap();
        assert!(inc.len() == 36 && &inc[14..15] == "4", "{inc}");
        assert_ne!(got["incarnation"], want["incarnation"]);
        if !torn_sessions.iter().any(|t| t == id) {
            assert_eq!(got["revision"], want["revision"], "revision of {id}");
        }
    }

    // events rows, column by column.
    let got_rows = dump_rows(&conn);
    let want_rows: Vec<Value> = expected_rows(&before["events"])
        .into_iter()
        .filter(|r| {
            let id = r["session_id"].as_str().unwrap();
            r["seq"].as_u64().unwrap() < prefix_len[id]
        })
        .collect();
    assert_eq!(got_rows.len(), want_rows.len(), "row count");
    for (got, want) in got_rows.iter().zip(&want_rows) {
        assert_eq!(got, want);
    }
    // Spot checks of the shapes the brief names: packed rows, BLOB data, varints.
    let find = |id: &str, seq: i64| {
        got_rows
            .iter()
            .find(|r| r["session_id"] == id && r["seq"] == seq)
            .unwrap()
            .clone()
    };
    assert_eq!(find("long-run-1100", 4)["typeof_data"], "blob");
    assert_eq!(find("long-run-1100", 1028)["type"], "text-chunks");
    assert_eq!(find("long-run-1100", 4)["ignorable"], 0);
    assert_eq!(
        find("sqlite-byte-bound", 4)["data"]["blobHead"]
            .as_str()
            .unwrap()[8..10]
            .to_string(),
        "a0"
    );
    assert_eq!(find("open-turn", 0)["source_event_seqs"], Value::Null);
    assert_eq!(find("surface-replace", 47)["source_event_seqs"], "");
    assert_eq!(
        find("surface-replace", 47)["typeof_source_event_seqs"],
        "blob"
    );
    assert!(!torn_sessions.is_empty());
    eprintln!(
        "compared {} rows; torn/partial sessions: {torn_sessions:?}",
        want_rows.len()
    );
}
