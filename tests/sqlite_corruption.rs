//! Damaged rows (SPEC §4.3 last-turn/end rule): a row that fails to decode
//! or breaks contiguity at or before the last row holding a `turn/end` is
//! corruption; after it, it starts the torn tail. Plus the stale-writer
//! check of appends with two backends on one file.

mod sqlite_common;
mod support;

use std::path::Path;

use dsh_persist::ErrorKind;
use dsh_persist::backend::sqlite::SqliteBackend;
use dsh_persist::backend::{Backend, Expect, TornTail};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use sqlite_common::*;

/// 0 turn/start, 1 step/start, 2 user/message, 3..=5 text deltas (one
/// packed row), 6 assistant/message, 7 step/end, 8 turn/end, 9 turn/start,
/// 10 step/start (an open turn after the last turn/end).
fn log() -> Vec<Event> {
    let mut v = vec![
        event(r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}"#),
        event(r#"{"type":"step/start","seq":1,"time":11,"data":{"turn":1,"step":1}}"#),
        event(
            r#"{"type":"user/message","seq":2,"time":12,"data":{"id":"u1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#,
        ),
    ];
    for (i, t) in ["a", "b", "c"].iter().enumerate() {
        v.push(event(&format!(
            r#"{{"type":"assistant/chunk","seq":{},"time":{},"data":{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{t}"}}}}}}"#,
            3 + i,
            13 + i
        )));
    }
    v.extend([
        event(
            r#"{"type":"assistant/message","seq":6,"time":16,"data":{"turn":1,"step":1,"message":{"id":"a1","role":"assistant","content":[{"type":"text","text":"abc"}],"source":{"kind":"model","provider":"p","model":"m"}}},"sourceEventSeqs":[2,3,5,4],"surfaceOp":"append"}"#,
        ),
        event(r#"{"type":"step/end","seq":7,"time":17,"data":{"turn":1,"step":1}}"#),
        event(r#"{"type":"turn/end","seq":8,"time":18,"data":{"turn":1,"reason":{"kind":"completed"}}}"#),
        event(r#"{"type":"turn/start","seq":9,"time":19,"data":{"turn":2}}"#),
        event(r#"{"type":"step/start","seq":10,"time":20,"data":{"turn":2,"step":1}}"#),
    ]);
    v
}

fn written(tag: &str) -> (support::TempDir, std::path::PathBuf, SqliteBackend) {
    let (tmp, path, b) = fresh_db(tag);
    b.append(&SessionHeader::new("s", 1), &log(), Expect::New)
        .unwrap();
    (tmp, path, b)
}

fn sql(path: &Path, stmt: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(stmt).unwrap();
}

fn zstd_hex(bytes: &[u8]) -> String {
    hex(&zstd::bulk::compress(bytes, 3).unwrap())
}

fn assert_corrupt_at(b: &SqliteBackend, seq: i64) {
    let want = format!("corrupt session log: invalid committed physical row at seq {seq}");
    let e = b.read("s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert_eq!(e.to_string(), want);
    let e = b.read_from("s", 0).unwrap_err();
    assert_eq!(e.to_string(), want);
}

fn assert_torn_at(b: &SqliteBackend, seq: u64) {
    let log = b.read("s").unwrap().unwrap();
    assert_eq!(log.torn, Some(TornTail::Sqlite { from_seq: seq }));
    assert_eq!(log.events.len() as u64, seq);
    assert_eq!(
        b.read_from("s", 0).unwrap().unwrap().events.len() as u64,
        seq
    );
    assert!(b.read_from("s", seq).unwrap().unwrap().events.is_empty());
}

#[test]
fn intact_log_reads_back_exactly() {
    let (_tmp, path, b) = written("intact");
    let got = b.read("s").unwrap().unwrap();
    assert_eq!(got.torn, None);
    let want: Vec<String> = log().iter().map(Event::to_json).collect();
    let got_text: Vec<String> = got.events.iter().map(Event::to_json).collect();
    assert_eq!(got_text, want);
    // read_from inside the packed row returns only members >= k.
    let suffix = b.read_from("s", 4).unwrap().unwrap();
    assert_eq!(suffix.events.first().unwrap().seq, 4);
    assert_eq!(suffix.events.len(), 7);
    assert!(b.read_from("s", 11).unwrap().unwrap().events.is_empty());
    assert!(b.read_from("s", 99).unwrap().unwrap().events.is_empty());
    assert!(b.read_from("nope", 0).unwrap().is_none());
    assert!(b.read("nope").unwrap().is_none());
    // One packed row at seq 3; the varint of [2,3,5,4].
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (ty, ign): (String, i64) = conn
        .query_row(
            "SELECT type, ignorable FROM events WHERE seq = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((ty.as_str(), ign), ("text-chunks", 0));
    let n: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 9);
    let ses: Vec<u8> = conn
        .query_row(
            "SELECT source_event_seqs FROM events WHERE seq = 6",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hex(&ses), "02020401");
}

#[test]
fn bad_varint_before_the_last_turn_end_is_corruption() {
    let (_tmp, path, b) = written("varint");
    sql(
        &path,
        "UPDATE events SET source_event_seqs = x'8100' WHERE seq = 6",
    );
    assert_corrupt_at(&b, 6);
    // Seeking past the bad row does not see it.
    assert_eq!(b.read_from("s", 7).unwrap().unwrap().events.len(), 4);
}

#[test]
fn bad_utf8_before_the_last_turn_end_is_corruption() {
    let (_tmp, path, b) = written("utf8");
    sql(
        &path,
        &format!(
            "UPDATE events SET data = x'{}' WHERE seq = 1",
            zstd_hex(&[0x7b, 0xff, 0xfe, 0x7d])
        ),
    );
    assert_corrupt_at(&b, 1);
    sql(&path, "UPDATE events SET data = x'00112233' WHERE seq = 1");
    assert_corrupt_at(&b, 1);
}

#[test]
fn oversized_packed_data_is_corruption() {
    let (_tmp, path, b) = written("oversized");
    let big = format!(
        r#"{{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["{}","b","c"]}}"#,
        "a".repeat(1024 * 1024)
    );
    sql(
        &path,
        &format!(
            "UPDATE events SET data = x'{}' WHERE seq = 3",
            zstd_hex(big.as_bytes())
        ),
    );
    assert_corrupt_at(&b, 3);
    // A malformed packed row (dt arity) is corruption too.
    sql(
        &path,
        r#"UPDATE events SET data = '{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}' WHERE seq = 3"#,
    );
    assert_corrupt_at(&b, 3);
}

#[test]
fn gap_before_the_last_turn_end_is_corruption() {
    let (_tmp, path, b) = written("gap-before");
    sql(&path, "UPDATE events SET seq = 30 WHERE seq = 7");
    assert_corrupt_at(&b, 8);
}

#[test]
fn damage_after_the_last_turn_end_is_a_torn_tail() {
    let (_tmp, path, b) = written("gap-after");
    sql(&path, "DELETE FROM events WHERE seq = 9");
    assert!(b.read_from("s", 9).unwrap().unwrap().events.is_empty());
    assert_eq!(b.read_from("s", 0).unwrap().unwrap().events.len(), 9);
    let log = b.read("s").unwrap().unwrap();
    assert_eq!(log.torn, Some(TornTail::Sqlite { from_seq: 10 }));
    assert_eq!(log.events.len(), 9);
    // The repair deletes the torn rows; the log is whole again.
    let rev = b.commit_repair("s", &log, &[]).unwrap();
    assert_ne!(rev, log.revision);
    let again = b.read("s").unwrap().unwrap();
    assert_eq!(again.torn, None);
    assert_eq!(again.events.len(), 9);
    // Appends continue from the repaired tail.
    let next = event(r#"{"type":"turn/start","seq":9,"time":30,"data":{"turn":2}}"#);
    b.append(&SessionHeader::new("s", 1), &[next], Expect::At(&rev))
        .unwrap();
    assert_eq!(b.read("s").unwrap().unwrap().events.len(), 10);
}

#[test]
fn undecodable_rows_after_the_last_turn_end_are_torn() {
    for (tag, stmt) in [
        (
            "utf8",
            format!(
                "UPDATE events SET data = x'{}' WHERE seq = 9",
                zstd_hex(&[0xff])
            ),
        ),
        (
            "json",
            "UPDATE events SET data = 'not json{' WHERE seq = 9".to_string(),
        ),
        (
            "surface",
            "UPDATE events SET surface_op = '{' WHERE seq = 9".to_string(),
        ),
        (
            "marker",
            "UPDATE events SET ignorable = 0 WHERE seq = 9".to_string(),
        ),
    ] {
        let (_tmp, path, b) = written(&format!("torn-{tag}"));
        sql(&path, &stmt);
        assert_torn_at(&b, 9);
        // The tail check refuses appends until the repair.
        let log = b.read("s").unwrap().unwrap();
        let next = event(r#"{"type":"turn/start","seq":9,"time":30,"data":{"turn":2}}"#);
        let e = b
            .append(
                &SessionHeader::new("s", 1),
                &[next],
                Expect::At(&log.revision),
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{tag}: {e}");
    }
}

/// A row whose columns the original's `decodeEventRow` refuses (here a
/// `time` beyond 2^53) fails the whole read even after the last turn/end:
/// never a torn tail (DIFFERENCES A.1 #13).
#[test]
fn a_damaged_row_after_the_last_turn_end_is_an_error_not_a_tail() {
    let (_tmp, path, b) = written("damaged-time");
    sql(
        &path,
        "UPDATE events SET time = 9007199254740992 WHERE seq = 9",
    );
    for e in [b.read("s").unwrap_err(), b.read_from("s", 0).unwrap_err()] {
        assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
        assert!(
            e.to_string()
                .contains("the events row at seq 9 is damaged: stored time 9007199254740992"),
            "{e}"
        );
    }
}

#[test]
fn stored_version_other_than_0_is_refused() {
    let (_tmp, path, b) = written("version");
    sql(&path, "UPDATE sessions SET version = 1");
    let want = "session \"s\" uses log format v1, but this harness reads only v0: the log was written by a newer harness \u{2014} upgrade the harness to open it";
    for e in [
        b.read("s").unwrap_err(),
        b.read_from("s", 0).unwrap_err(),
        b.append(
            &SessionHeader::new("s", 1),
            &[event(
                r#"{"type":"turn/start","seq":11,"time":1,"data":{"turn":3}}"#,
            )],
            Expect::At(&dsh_persist::backend::Revision(String::new())),
        )
        .unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
        assert_eq!(e.to_string(), want);
    }
}

#[test]
fn stale_writer_is_refused_before_any_change() {
    let (_tmp, path, a) = fresh_db("stale");
    let b = open(&path);
    let events = log();
    let header = SessionHeader::new("s", 1);
    let r1 = a.append(&header, &events[..2], Expect::New).unwrap();
    assert_eq!(b.revision("s").unwrap(), Some(r1.clone()));
    // Both writers believe they are at r1; a wins.
    let r2 = a.append(&header, &events[2..4], Expect::At(&r1)).unwrap();
    // The very batch a stored, at its seqs, is stored already (what the
    // retry of an append whose commit was not acknowledged finds): accepted,
    // not written twice.
    assert_eq!(
        b.append(&header, &events[2..4], Expect::At(&r1)).unwrap(),
        r2
    );
    let mut other: Vec<Event> = events[2..4].to_vec();
    for e in &mut other {
        e.time += 1;
    }
    let e = b.append(&header, &other, Expect::At(&r1)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert_eq!(
        e.to_string(),
        "stale append to session \"s\": the stored log continues at seq 4, but this batch starts at seq 2 (another writer appended)"
    );
    assert_eq!(b.revision("s").unwrap(), Some(r2.clone()));
    // Creating it again is a conflict; so is appending to an absent session.
    let e = b.append(&header, &events[..2], Expect::New).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let e = b
        .append(&SessionHeader::new("t", 1), &events[..2], Expect::At(&r2))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    // A batch with a gap is refused outright.
    let e = b
        .append(
            &header,
            &[events[4].clone(), events[6].clone()],
            Expect::At(&r2),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // b continues from the stored tail.
    let r3 = b.append(&header, &events[4..], Expect::At(&r2)).unwrap();
    assert!(r3.0.ends_with(":revision:3"), "{r3}");
    let all: Vec<String> = a
        .read("s")
        .unwrap()
        .unwrap()
        .events
        .iter()
        .map(Event::to_json)
        .collect();
    assert_eq!(all, events.iter().map(Event::to_json).collect::<Vec<_>>());
}

#[test]
fn one_backend_serves_many_threads() {
    let (_tmp, _path, b) = fresh_db("threads");
    let events = log();
    std::thread::scope(|s| {
        for t in 0..4 {
            let b = &b;
            let events = &events;
            s.spawn(move || {
                let h = SessionHeader::new(format!("s{t}"), t);
                let r = b.append(&h, &events[..5], Expect::New).unwrap();
                b.append(&h, &events[5..], Expect::At(&r)).unwrap();
            });
        }
    });
    let mut ids: Vec<String> = b.list().unwrap().into_iter().map(|h| h.id).collect();
    ids.sort();
    assert_eq!(ids, ["s0", "s1", "s2", "s3"]);
    for id in ids {
        assert_eq!(b.read(&id).unwrap().unwrap().events.len(), events.len());
    }
}

/// A suffix read from `k` fetches the packed rows that may cover `k` (a
/// SQLite chunk row holds at most 1024 events) and fails closed when one of
/// them does not decode (DIFFERENCES A.1 #14): an undecodable packed row at
/// seq 5 fails the reads from 6 up to 5 + 1023, the last seq it could hold,
/// and not from 5 + 1024 on, where it cannot reach.
#[test]
fn a_suffix_read_looks_back_exactly_as_far_as_a_packed_row_reaches() {
    let (_tmp, path, b) = fresh_db("lookback");
    let events: Vec<Event> = (0..1100)
        .map(|seq| {
            event(&format!(
                r#"{{"type":"session/title","seq":{seq},"time":1,"data":"t{seq}"}}"#
            ))
        })
        .collect();
    b.append(&SessionHeader::new("s", 1), &events, Expect::New)
        .unwrap();
    sql(
        &path,
        "UPDATE events SET type = 'text-chunks', ignorable = 0, data = '{not json' WHERE seq = 5",
    );
    for k in [6, 500, 5 + 1023] {
        let e = b.read_from("s", k).unwrap_err();
        assert_eq!(
            e.to_string(),
            "corrupt session log: invalid committed physical row at seq 5",
            "from {k}"
        );
    }
    for k in [5 + 1024, 1099] {
        let got = b.read_from("s", k).unwrap().unwrap();
        assert_eq!(got.events.len() as u64, 1100 - k, "from {k}");
        assert_eq!(got.events[0].seq, k);
    }
}
