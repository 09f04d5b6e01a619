//! Helpers shared by the `sqlite_*` integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use dsh_persist::backend::sqlite::{SqliteBackend, SqliteConfig};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use serde_json::Value;

use crate::support::{self, TempDir};

/// A private copy (dir 0700, file 0600) of the database of a SQLite root of
/// `cases.json`, e.g. `sqlite-corpus`. Returns the temp dir and the db path.
pub fn fixture_db(root: &str) -> (TempDir, PathBuf) {
    let case = support::case_root(root);
    let rel = case["path"].as_str().unwrap();
    let dir_rel = rel.rsplit_once('/').unwrap().0;
    let (tmp, dir) = support::fixture_copy(dir_rel);
    let db = dir.join(rel.rsplit_once('/').unwrap().1);
    (tmp, db)
}

/// Opens the database at `path` with default options.
pub fn open(path: &std::path::Path) -> SqliteBackend {
    SqliteBackend::open(&SqliteConfig::new(path.to_str().unwrap()))
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

/// A fresh private database file inside a new temp dir.
pub fn fresh_db(tag: &str) -> (TempDir, PathBuf, SqliteBackend) {
    let tmp = TempDir::new(tag);
    let path = tmp.path().join("sessions.db");
    let b = open(&path);
    // The file is created at the first write; these tests want it now.
    b.initialise().unwrap();
    (tmp, path, b)
}

pub fn events_value(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| support::parse(&e.to_json()))
        .collect()
}

pub fn header_value(h: &SessionHeader) -> Value {
    support::parse(&h.to_json())
}

/// `sessions.<id>` of an expected dump.
pub fn session<'a>(expected: &'a Value, id: &str) -> &'a Value {
    &expected["sessions"][id]
}

/// The session ids of a root, as `cases.json` lists them, plus its probe ids.
pub fn session_ids(root: &str) -> Vec<String> {
    let case = support::case_root(root);
    let mut ids: Vec<String> = case["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    for p in case["probeIds"].as_array().into_iter().flatten() {
        let p = p.as_str().unwrap().to_string();
        if !ids.contains(&p) {
            ids.push(p);
        }
    }
    ids
}

/// Parses one event line (exact text, original key order).
pub fn event(text: &str) -> Event {
    Event::parse(text).unwrap_or_else(|e| panic!("bad event {text}: {e}"))
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(b))
}

/// The `events` rows of a database in the dump's shape (MANIFEST "Dump
/// format"), without `rowid`, keyed by (session_id, seq).
pub fn dump_rows(conn: &rusqlite::Connection) -> Vec<Value> {
    let mut stmt = conn
        .prepare(
            "SELECT session_id, seq, type, time, data, typeof(data), source_event_seqs, \
             typeof(source_event_seqs), surface_op, ignorable FROM events ORDER BY session_id, seq",
        )
        .unwrap();
    stmt.query_map([], |r| {
        use rusqlite::types::Value as V;
        let data: V = r.get(4)?;
        let data = match data {
            V::Text(t) => serde_json::json!({ "text": t }),
            V::Blob(b) => {
                let dec = zstd::stream::decode_all(&b[..]).unwrap();
                let head: String = String::from_utf8(dec.clone())
                    .unwrap()
                    .chars()
                    .take(200)
                    .collect();
                serde_json::json!({
                    "blobBytes": b.len(),
                    "blobHead": hex(&b[..16.min(b.len())]),
                    "blobSha256": sha256_hex(&b),
                    "zstdDecodedBytes": dec.len(),
                    "zstdDecodedHead": head,
                    "zstdDecodedSha256": sha256_hex(&dec),
                })
            }
            other => panic!("unexpected data {other:?}"),
        };
        let ses: V = r.get(6)?;
        let ses = match ses {
            V::Null => Value::Null,
            V::Blob(b) => Value::String(hex(&b)),
            other => panic!("unexpected source_event_seqs {other:?}"),
        };
        let ign: Option<i64> = r.get(9)?;
        Ok(serde_json::json!({
            "session_id": r.get::<_, String>(0)?,
            "seq": r.get::<_, i64>(1)?,
            "type": r.get::<_, String>(2)?,
            "time": r.get::<_, i64>(3)?,
            "data": data,
            "typeof_data": r.get::<_, String>(5)?,
            "source_event_seqs": ses,
            "typeof_source_event_seqs": r.get::<_, String>(7)?,
            "surface_op": r.get::<_, Option<String>>(8)?,
            "ignorable": ign,
        }))
    })
    .unwrap()
    .collect::<rusqlite::Result<Vec<_>>>()
    .unwrap()
}

/// The dump's rows without `rowid`, sorted like [`dump_rows`].
pub fn expected_rows(rows: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.as_object_mut().unwrap().remove("rowid");
            r
        })
        .collect();
    out.sort_by(|a, b| {
        (a["session_id"].as_str(), a["seq"].as_i64())
            .cmp(&(b["session_id"].as_str(), b["seq"].as_i64()))
    });
    out
}
