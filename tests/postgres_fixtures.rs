//! The SQLite stores the original wrote, moved into PostgreSQL and back.
//!
//! - Rows: every row of a fixture database (torn and corrupt rows included)
//!   is copied as is into a PostgreSQL schema; the PostgreSQL backend must
//!   then answer every list, full read (events, torn tail, corruption and
//!   refusals, word for word) and suffix read exactly as the SQLite backend
//!   does on the original; and the rows copied back out into a new SQLite
//!   database are identical to the original's, storage class included.
//! - Logs: every session a store can inspect is converted SQLite →
//!   PostgreSQL → SQLite through the `Store` (as `convert` does); each copy
//!   inspects and reads back byte for byte the same logical log.
//!
//! Needs `DSH_TEST_POSTGRES_URL` (see `tests/support/pg.rs`).

mod sqlite_common;
mod support;

use std::path::Path;

use dsh_persist::Result;
use dsh_persist::backend::Backend;
use dsh_persist::backend::postgres::PostgresBackend;
use dsh_persist::backend::sqlite::SqliteBackend;
use dsh_persist::model::event::{Event, KeyOrder};
use dsh_persist::store::{BackendConfig, SqliteConfig, Store, StoreConfig};
use rusqlite::types::Value as SqlValue;
use sqlite_common::{fixture_db, fresh_db, open};
use support::pg::Schema;

const ROOTS: [&str; 2] = ["sqlite-corpus", "sqlite-legacy"];

type Row = Vec<SqlValue>;

fn sqlite_rows(db: &Path, sql: &str) -> Vec<Row> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| (0..n).map(|i| r.get::<_, SqlValue>(i)).collect())
        .unwrap()
        .collect::<rusqlite::Result<Vec<Row>>>()
        .unwrap()
}

const SESSION_COLS: &str = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision";
const EVENT_COLS: &str =
    "session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable";

fn text(v: &SqlValue) -> Option<String> {
    match v {
        SqlValue::Text(t) => Some(t.clone()),
        SqlValue::Null => None,
        other => panic!("not text: {other:?}"),
    }
}

fn int(v: &SqlValue) -> Option<i64> {
    match v {
        SqlValue::Integer(i) => Some(*i),
        SqlValue::Null => None,
        other => panic!("not an integer: {other:?}"),
    }
}

fn blob(v: &SqlValue) -> Option<Vec<u8>> {
    match v {
        SqlValue::Blob(b) => Some(b.clone()),
        SqlValue::Null => None,
        other => panic!("not a blob: {other:?}"),
    }
}

/// Copies every sessions and events row of `db` (in rowid order) into the
/// tables of `schema`, the store identity kept apart.
fn copy_into_postgres(db: &Path, schema: &Schema) {
    let mut pg = schema.admin();
    let mut tx = pg.transaction().unwrap();
    for r in sqlite_rows(
        db,
        &format!("SELECT {SESSION_COLS} FROM sessions ORDER BY rowid"),
    ) {
        tx.execute(
            &format!(
                "INSERT INTO sessions ({SESSION_COLS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)"
            ),
            &[
                &text(&r[0]),
                &int(&r[1]),
                &int(&r[2]),
                &text(&r[3]),
                &text(&r[4]),
                &int(&r[5]),
                &text(&r[6]),
                &int(&r[7]),
                &text(&r[8]),
                &text(&r[9]),
                &int(&r[10]),
            ],
        )
        .unwrap();
    }
    for r in sqlite_rows(
        db,
        &format!("SELECT {EVENT_COLS} FROM events ORDER BY rowid"),
    ) {
        let (data, data_zstd) = match &r[4] {
            SqlValue::Text(t) => (Some(t.clone()), None),
            SqlValue::Blob(b) => (None, Some(b.clone())),
            other => panic!("data {other:?} has no PostgreSQL column"),
        };
        tx.execute(
            "INSERT INTO events (session_id, seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable) \
             VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
            &[
                &text(&r[0]),
                &int(&r[1]),
                &text(&r[2]),
                &int(&r[3]),
                &data,
                &data_zstd,
                &blob(&r[5]),
                &text(&r[6]),
                &int(&r[7]).map(|v| v as i16),
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// The rows of `schema`, as SQLite values, in the SQLite column order.
fn postgres_rows(schema: &Schema) -> (Vec<Row>, Vec<Row>) {
    let mut pg = schema.admin();
    let t = |v: Option<String>| v.map_or(SqlValue::Null, SqlValue::Text);
    let i = |v: Option<i64>| v.map_or(SqlValue::Null, SqlValue::Integer);
    let sessions = pg
        .query(
            &format!("SELECT {SESSION_COLS} FROM sessions ORDER BY list_order"),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| {
            vec![
                t(r.get(0)),
                i(r.get(1)),
                i(r.get(2)),
                t(r.get(3)),
                t(r.get(4)),
                i(r.get(5)),
                t(r.get(6)),
                i(r.get(7)),
                t(r.get(8)),
                t(r.get(9)),
                i(r.get(10)),
            ]
        })
        .collect();
    let events = pg
        .query(
            "SELECT session_id, seq, type, time, data, data_zstd, source_event_seqs, surface_op, ignorable FROM events",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| {
            let data = match (r.get::<_, Option<String>>(4), r.get::<_, Option<Vec<u8>>>(5)) {
                (Some(s), None) => SqlValue::Text(s),
                (None, Some(b)) => SqlValue::Blob(b),
                other => panic!("data columns {other:?}"),
            };
            vec![
                t(r.get(0)),
                i(r.get(1)),
                t(r.get(2)),
                i(r.get(3)),
                data,
                r.get::<_, Option<Vec<u8>>>(6).map_or(SqlValue::Null, SqlValue::Blob),
                t(r.get(7)),
                i(r.get::<_, Option<i16>>(8).map(i64::from)),
            ]
        })
        .collect();
    (sessions, events)
}

/// What a backend answers, as comparable text.
fn outcome<T>(r: Result<T>, show: impl Fn(T) -> String) -> String {
    match r {
        Ok(v) => show(v),
        Err(e) => format!("error {:?}: {e}", e.kind()),
    }
}

fn events_text(events: &[Event]) -> String {
    events.iter().map(|e| e.to_json() + "\n").collect()
}

fn compare_backends(root: &str, sqlite: &SqliteBackend, pg: &PostgresBackend) -> usize {
    let ids: Vec<String> = sqlite.list().unwrap().into_iter().map(|h| h.id).collect();
    let pg_list = pg.list().unwrap();
    assert_eq!(
        pg_list.iter().map(|h| h.to_json()).collect::<Vec<_>>(),
        sqlite
            .list()
            .unwrap()
            .iter()
            .map(|h| h.to_json())
            .collect::<Vec<_>>(),
        "{root}: list"
    );
    let mut torn = 0;
    for id in ids.iter().map(String::as_str).chain(["missing-session"]) {
        let show_log = |log: Option<dsh_persist::backend::StoredLog>| match log {
            None => "absent".to_string(),
            Some(l) => format!(
                "{}\n{}torn {:?}",
                l.header.to_json(),
                events_text(&l.events),
                l.torn
            ),
        };
        let a = outcome(sqlite.read(id), show_log);
        let b = outcome(pg.read(id), show_log);
        assert_eq!(b, a, "{root}/{id}: read");
        torn += usize::from(a.contains("torn Some"));
        let n = sqlite
            .read(id)
            .ok()
            .flatten()
            .map_or(3, |l| l.events.len() as u64);
        for k in [0, 1, n / 2, n.saturating_sub(1), n, n + 5] {
            let show = |s: Option<dsh_persist::backend::ScannedSuffix>| match s {
                None => "absent".to_string(),
                Some(s) => format!("{}\n{}", s.header.to_json(), events_text(&s.events)),
            };
            let a = outcome(sqlite.read_from(id, k), show);
            let b = outcome(pg.read_from(id, k), show);
            assert_eq!(b, a, "{root}/{id}: read_from {k}");
        }
    }
    torn
}

#[test]
fn fixture_rows_read_the_same_in_postgres_and_copy_back_identically() {
    let Some(url) = support::pg::url("fixture_rows_read_the_same_in_postgres") else {
        return;
    };
    for root in ROOTS {
        let (_tmp, db) = fixture_db(root);
        let schema = Schema::new(&url, "fxrows");
        let pg = PostgresBackend::open(&schema.config()).unwrap();
        copy_into_postgres(&db, &schema);
        let sqlite = open(&db);
        let torn = compare_backends(root, &sqlite, &pg);
        eprintln!(
            "{root}: {} sessions read alike ({torn} with a torn tail)",
            sqlite.list().unwrap().len()
        );
        drop(sqlite);

        // And back out: the same rows, storage classes included.
        let (_tmp2, back, fresh) = fresh_db("pgback");
        drop(fresh);
        let (sessions, events) = postgres_rows(&schema);
        let c = rusqlite::Connection::open(&back).unwrap();
        for r in &sessions {
            c.execute(
                &format!("INSERT INTO sessions ({SESSION_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"),
                rusqlite::params_from_iter(r.iter()),
            )
            .unwrap();
        }
        for r in &events {
            c.execute(
                &format!("INSERT INTO events ({EVENT_COLS}) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)"),
                rusqlite::params_from_iter(r.iter()),
            )
            .unwrap();
        }
        drop(c);
        let order = |sql: &str| format!("{sql} ORDER BY 1, 2");
        assert_eq!(
            sqlite_rows(
                &back,
                &order(&format!("SELECT {SESSION_COLS} FROM sessions"))
            ),
            sqlite_rows(&db, &order(&format!("SELECT {SESSION_COLS} FROM sessions"))),
            "{root}: sessions rows"
        );
        let typed =
            format!("SELECT {EVENT_COLS}, typeof(data), typeof(source_event_seqs) FROM events");
        assert_eq!(
            sqlite_rows(&back, &order(&typed)),
            sqlite_rows(&db, &order(&typed)),
            "{root}: events rows"
        );
    }
}

fn sqlite_store(db: &Path) -> Store {
    let mut c = StoreConfig::with_backend(BackendConfig::Sqlite(SqliteConfig::new(
        db.to_str().unwrap(),
    )));
    c.prepared_session_cache_size = 0;
    Store::open(c).unwrap()
}

/// Copies every session `src` can inspect into `dst` (as `convert` does);
/// returns the ids copied.
fn copy_logs(src: &Store, dst: &Store) -> Vec<String> {
    let mut copied = Vec::new();
    for h in src.list().unwrap() {
        let Ok(view) = src.inspect(&h.id) else {
            continue;
        };
        if view.events.is_empty() {
            continue;
        }
        dst.create(view.header.clone()).unwrap();
        dst.append(&h.id, view.events.clone()).unwrap();
        copied.push(h.id);
    }
    copied
}

/// The balanced log a store shows for `id`, each event in the live key
/// order (a row store keeps the envelope in columns, not its key order,
/// and rebuilds it in that order: `convert` compares so too).
fn inspected_live(store: &Store, id: &str) -> String {
    let v = store.inspect(id).unwrap();
    let live: Vec<Event> = v
        .events
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.key_order = KeyOrder::LIVE;
            e
        })
        .collect();
    format!("{}\n{}", v.header.to_json(), events_text(&live))
}

/// The stored log and the balanced log of `id`, as they are.
fn logical(store: &Store, id: &str) -> String {
    let v = store.inspect(id).unwrap();
    let r = store.read_from(id, 0).unwrap();
    format!(
        "{}\n{}--\n{}",
        v.header.to_json(),
        events_text(&v.events),
        events_text(&r.events)
    )
}

#[test]
fn fixture_logs_convert_to_postgres_and_back_byte_for_byte() {
    let Some(url) = support::pg::url("fixture_logs_convert_to_postgres_and_back") else {
        return;
    };
    for root in ROOTS {
        let (_tmp, db) = fixture_db(root);
        let src = sqlite_store(&db);
        let schema = Schema::new(&url, "fxlogs");
        let pg = Store::open(StoreConfig::with_backend(BackendConfig::Postgres(
            schema.config(),
        )))
        .unwrap();
        let ids = copy_logs(&src, &pg);
        assert!(!ids.is_empty(), "{root}: nothing to convert");
        let (_tmp2, back_db, fresh) = fresh_db("pglogs");
        drop(fresh);
        let back = sqlite_store(&back_db);
        assert_eq!(copy_logs(&pg, &back), ids, "{root}: every copy reads back");
        for id in &ids {
            assert_eq!(
                inspected_live(&pg, id),
                inspected_live(&src, id),
                "{root}/{id}: in PostgreSQL"
            );
            // Row store to row store: everything byte for byte as it is.
            assert_eq!(
                logical(&back, id),
                logical(&pg, id),
                "{root}/{id}: back in SQLite"
            );
        }
        eprintln!(
            "{root}: {} sessions converted SQLite -> PostgreSQL -> SQLite",
            ids.len()
        );
        pg.close().unwrap();
    }
}
