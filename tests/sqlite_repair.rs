//! Torn-tail repairs on the original's corpus database: `commit_repair`
//! deletes the torn rows and appends the closers in one transaction; the
//! rows afterwards equal `sqliteAfter` (`eventRowsRemoved`/`eventRowsAdded`).
//!
//! The closers are built from the expected load output beyond the stored
//! prefix (type, seq, time, surfaceOp, sourceEventSeqs) with the exact data
//! text the original wrote (`eventRowsAdded[].data.text`, checked equal to
//! the load output's data); computing closers is the store's job (SPEC §5).

mod sqlite_common;
mod support;

use dsh_persist::ErrorKind;
use dsh_persist::backend::Backend;
use dsh_persist::model::event::{Event, KeyOrder};
use serde_json::Value;
use sqlite_common::*;

fn closers_for(expected: &Value, id: &str, stored: usize) -> Vec<Event> {
    let s = session(expected, id);
    let load = support::resolve(s, "load");
    let events = load["ok"]["events"].as_array().unwrap();
    let added = expected["sqliteAfter"]["eventRowsAdded"]
        .as_array()
        .unwrap();
    events[stored..]
        .iter()
        .map(|e| {
            let row = added
                .iter()
                .find(|r| r["session_id"] == id && r["seq"] == e["seq"])
                .unwrap_or_else(|| panic!("{id}: no added row at seq {}", e["seq"]));
            let data = row["data"]["text"].as_str().unwrap();
            assert_eq!(support::parse(data), e["data"], "{id}");
            let mut text = format!(
                "{{\"type\":{},\"seq\":{},\"time\":{},\"data\":{data}",
                e["type"], e["seq"], e["time"]
            );
            if let Some(op) = e.get("surfaceOp") {
                text.push_str(&format!(",\"surfaceOp\":{op}"));
            }
            if let Some(ses) = e.get("sourceEventSeqs") {
                text.push_str(&format!(",\"sourceEventSeqs\":{ses}"));
            }
            text.push('}');
            let mut ev = event(&text);
            ev.key_order = KeyOrder::CLOSER;
            ev
        })
        .collect()
}

fn session_rows(conn: &rusqlite::Connection, id: &str) -> Vec<Value> {
    dump_rows(conn)
        .into_iter()
        .filter(|r| r["session_id"] == id)
        .collect()
}

#[test]
fn repairs_equal_the_originals_load() {
    let expected = support::expected("sqlite-corpus");
    let (_tmp, db) = fixture_db("sqlite-corpus");
    let b = open(&db);
    let after = &expected["sqliteAfter"];
    let removed = expected_rows(&after["eventRowsRemoved"]);
    let added = expected_rows(&after["eventRowsAdded"]);
    let before = expected_rows(&expected["sqliteBefore"]["events"]);
    let mut repaired = Vec::new();
    for id in session_ids("sqlite-corpus") {
        let Some(log) = b.read(&id).unwrap() else {
            continue;
        };
        let s = session(&expected, &id);
        let closers = closers_for(&expected, &id, log.events.len());
        let changed = s["revisionChangedByLoad"].as_bool().unwrap();
        assert_eq!(changed, log.torn.is_some() || !closers.is_empty(), "{id}");
        let rev = b.commit_repair(&id, &log, &closers).unwrap();
        assert_eq!(rev != log.revision, changed, "{id}: revision change");
        assert_eq!(b.revision(&id).unwrap().as_ref(), Some(&rev));
        if !changed {
            continue;
        }
        repaired.push(id.clone());
        // The repaired log reads back whole: prefix + closers, nothing torn.
        let again = b.read(&id).unwrap().unwrap();
        assert_eq!(again.torn, None, "{id}");
        assert_eq!(again.revision, rev);
        let load = support::resolve(s, "load");
        assert_eq!(
            &events_value(&again.events),
            load["ok"]["events"].as_array().unwrap(),
            "{id}"
        );
        // A second repair from the stale read is refused.
        let e = b.commit_repair(&id, &log, &closers).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{id}: {e}");
    }
    assert_eq!(
        repaired,
        ["open-turn", "open-turn-nostep", "torn-a", "torn-b"]
    );
    b.close().unwrap();

    // Every row of the database: before − removed + added.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut want: Vec<Value> = before
        .into_iter()
        .filter(|r| !removed.contains(r))
        .chain(added)
        .collect();
    want.sort_by(|a, b| {
        (a["session_id"].as_str(), a["seq"].as_i64())
            .cmp(&(b["session_id"].as_str(), b["seq"].as_i64()))
    });
    let got = dump_rows(&conn);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    assert_eq!(session_rows(&conn, "torn-a").last().unwrap()["seq"], 29);
    // sessions.revision as the original left it.
    for s in after["sessions"].as_array().unwrap() {
        let rev: i64 = conn
            .query_row(
                "SELECT revision FROM sessions WHERE id = ?1",
                [s["id"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rev, s["revision"].as_i64().unwrap(), "{}", s["id"]);
    }
}

#[test]
fn repair_refuses_a_log_read_before_another_append() {
    let (_tmp, db) = fixture_db("sqlite-corpus");
    let b = open(&db);
    let other = open(&db);
    let log = b.read("open-turn-nostep").unwrap().unwrap();
    let stale = log.clone();
    // Another backend repairs first.
    let expected = support::expected("sqlite-corpus");
    let closers = closers_for(&expected, "open-turn-nostep", log.events.len());
    other
        .commit_repair("open-turn-nostep", &log, &closers)
        .unwrap();
    let e = b
        .commit_repair("open-turn-nostep", &stale, &closers)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.to_string().contains("changed since it was read"), "{e}");
    // Exactly one turn/end closer was written.
    let again = b.read("open-turn-nostep").unwrap().unwrap();
    assert_eq!(again.events.len(), log.events.len() + 1);
}

#[test]
fn closers_must_continue_the_intact_log() {
    let (_tmp, db) = fixture_db("sqlite-corpus");
    let b = open(&db);
    let log = b.read("open-turn-nostep").unwrap().unwrap();
    let expected = support::expected("sqlite-corpus");
    let mut closers = closers_for(&expected, "open-turn-nostep", log.events.len());
    closers[0].seq += 1;
    let e = b
        .commit_repair("open-turn-nostep", &log, &closers)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_eq!(b.revision("open-turn-nostep").unwrap(), Some(log.revision));
}
