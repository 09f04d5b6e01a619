//! The catalog reads (issue 19): rich listing, search, follow and export,
//! on every backend (JSONL zstd and raw, SQLite file, PostgreSQL when
//! `DSH_TEST_POSTGRES_URL` is set), each checked against full reads.

mod support;

use std::time::Duration;

use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::catalog::{ExportFormat, ListQuery, SearchQuery, SortKey};
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, PostgresConfig, SqliteConfig, Store,
    StoreConfig,
};
use support::TempDir;
use support::conv::{append_opts, complete_turn, text_delta, user_message};

#[derive(Clone, Copy, Debug)]
enum Kind {
    JsonlZstd,
    JsonlRaw,
    Sqlite,
    Postgres,
}

const KINDS: [Kind; 4] = [
    Kind::JsonlZstd,
    Kind::JsonlRaw,
    Kind::Sqlite,
    Kind::Postgres,
];

fn config(kind: Kind, dir: &TempDir) -> Option<StoreConfig> {
    let backend = match kind {
        Kind::JsonlZstd | Kind::JsonlRaw => {
            let mut c = JsonlConfig::new(dir.path().join("root"));
            if matches!(kind, Kind::JsonlRaw) {
                c.compression = Compression::None;
            }
            BackendConfig::Jsonl(c)
        }
        Kind::Sqlite => BackendConfig::Sqlite(SqliteConfig::new(
            dir.path().join("sessions.db").display().to_string(),
        )),
        Kind::Postgres => {
            let url = support::pg::url("catalog")?;
            let schema = support::pg::unique_schema("catalog");
            let (u, s) = (url.clone(), schema.clone());
            dir.on_drop_once("pg-schema", move || support::pg::drop_schema(&u, &s));
            BackendConfig::Postgres(PostgresConfig::new(url).with_schema(schema))
        }
    };
    let mut c = StoreConfig::with_backend(backend);
    c.write_batch_max_delay_ms = 5;
    Some(c)
}

fn header(id: &str, cwd: &str, created: u64) -> SessionHeader {
    let mut h = SessionHeader::new(id, created);
    h.cwd = Some(cwd.to_string());
    h
}

/// Session `a` (cwd /a): two turns, a title, then a third turn left open
/// with a prompt that mentions <zebra>. Session `b` (cwd /b): one turn.
fn populate(store: &Store) {
    let none = AppendOptions::default();
    let a = store.start(header("a", "/a", 1_000)).unwrap();
    complete_turn(&a, 1);
    a.append(
        "session/title",
        r#"{"title":"Old title","messageSeqs":[1],"source":{"kind":"fallback"}}"#,
        &none,
    )
    .unwrap();
    complete_turn(&a, 2);
    a.append(
        "session/title",
        r#"{"title":"Listing files","messageSeqs":[1],"source":{"kind":"fallback"}}"#,
        &none,
    )
    .unwrap();
    a.append("turn/start", r#"{"turn":3}"#, &none).unwrap();
    a.append(
        "user/message",
        &user_message("u3", "where is the <zebra> & co?"),
        &append_opts(),
    )
    .unwrap();
    a.close().unwrap();
    let b = store.start(header("b", "/b", 2_000)).unwrap();
    complete_turn(&b, 1);
    b.close().unwrap();
}

fn each(test: impl Fn(Kind, &Store, &StoreConfig)) {
    for kind in KINDS {
        let dir = TempDir::new(&format!("catalog-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        populate(&store);
        test(kind, &store, &cfg);
        store.close().unwrap();
    }
}

#[test]
fn summaries_match_full_reads() {
    each(|kind, store, _| {
        let rows = store.list_summaries(&ListQuery::default()).unwrap();
        assert_eq!(rows.len(), 2, "{kind:?}");
        for s in &rows {
            let view = store.read_from(&s.header.id, 0).unwrap();
            assert_eq!(s.event_count, view.events.len() as u64, "{kind:?}");
            assert_eq!(s.updated_at, view.events.last().unwrap().time, "{kind:?}");
            assert!(s.bytes > 0, "{kind:?}");
        }
        let a = rows.iter().find(|s| s.header.id == "a").unwrap();
        assert_eq!(a.title.as_deref(), Some("Listing files"), "{kind:?}");
        assert_eq!(a.turn_count, 3, "{kind:?}");
        assert!(a.open_turn, "{kind:?}");
        assert_eq!(a.first_prompt.as_deref(), Some("question 1"), "{kind:?}");
        assert_eq!(
            a.last_prompt.as_deref(),
            Some("where is the <zebra> & co?"),
            "{kind:?}"
        );
        let b = rows.iter().find(|s| s.header.id == "b").unwrap();
        assert_eq!(b.title, None);
        assert_eq!(b.turn_count, 1);
        assert!(!b.open_turn);
        assert_eq!(b.first_prompt.as_deref(), Some("question 1"));
        // b was written last: newest first by update time.
        assert_eq!(rows[0].header.id, "b", "{kind:?}");
        assert_eq!(store.last_updated().unwrap().as_deref(), Some("b"));
        let by_created_asc = store
            .list_summaries(&ListQuery {
                sort: SortKey::Created,
                ascending: true,
                ..ListQuery::default()
            })
            .unwrap();
        assert_eq!(by_created_asc[0].header.id, "a");
        let only_a = store
            .list_summaries(&ListQuery {
                cwd: Some("/a".into()),
                ..ListQuery::default()
            })
            .unwrap();
        assert_eq!(only_a.len(), 1);
        assert_eq!(only_a[0].header.id, "a");
        let future = store
            .list_summaries(&ListQuery {
                updated_since: Some(b.updated_at + 1),
                ..ListQuery::default()
            })
            .unwrap();
        assert!(future.is_empty());
        let forks = store
            .list_summaries(&ListQuery {
                parent: Some("a".into()),
                ..ListQuery::default()
            })
            .unwrap();
        assert!(forks.is_empty());
    });
}

/// Every listed session as the rich listing returns it, by id.
fn listed_by_id(store: &Store) -> Vec<(String, serde_json::Value)> {
    let mut rows: Vec<_> = store
        .list_summaries(&ListQuery::default())
        .unwrap()
        .into_iter()
        .map(|s| (s.header.id.clone(), s.to_value()))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// Every stored session's summary read from its log (`Store::summary`
/// reads a window, never the summary index), by id.
fn read_by_id(store: &Store) -> Vec<(String, serde_json::Value)> {
    let mut ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
    ids.sort();
    ids.into_iter()
        .map(|id| {
            let s = store.summary(&id).unwrap().unwrap();
            (id, s.to_value())
        })
        .collect()
}

#[test]
fn a_rich_listing_reads_again_only_the_sessions_that_changed() {
    use dsh_persist::store::catalog::summary_index;
    for kind in KINDS {
        let dir = TempDir::new(&format!("catalog-summary-index-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        populate(&store);
        assert_eq!(listed_by_id(&store), read_by_id(&store), "{kind:?}");
        // A row held for b's current revision is what the listing shows
        // (its header still the listing's): b's log is not read.
        let b = store.summary("b").unwrap().unwrap();
        let mut planted = b.clone();
        planted.title = Some("planted".into());
        planted.header.cwd = Some("/elsewhere".into());
        summary_index::memory_put(&planted);
        let rows = store.list_summaries(&ListQuery::default()).unwrap();
        let listed_b = rows.iter().find(|s| s.header.id == "b").unwrap();
        assert_eq!(listed_b.title.as_deref(), Some("planted"), "{kind:?}");
        assert_eq!(listed_b.header.cwd.as_deref(), Some("/b"), "{kind:?}");
        // b grows a turn: a new revision, read again.
        let live = store.resume("b").unwrap();
        complete_turn(&live, 2);
        // Acknowledged, not yet flushed: the listing flushes first.
        let rows = listed_by_id(&store);
        live.close().unwrap();
        assert_eq!(rows, read_by_id(&store), "{kind:?}");
        assert_eq!(rows[1].1["turnCount"], 2, "{kind:?}");
        assert_eq!(rows[1].1["title"], serde_json::Value::Null, "{kind:?}");
        // A fork, a deletion, then a new handle of the store.
        store
            .fork("a", None, Some(header("c", "/a", 5_000)))
            .unwrap()
            .close()
            .unwrap();
        assert_eq!(listed_by_id(&store), read_by_id(&store), "{kind:?}");
        store.delete("a").unwrap();
        let rows = listed_by_id(&store);
        assert_eq!(rows, read_by_id(&store), "{kind:?}");
        assert_eq!(rows.len(), 2, "{kind:?}");
        store.close().unwrap();
        let store = Store::open(cfg.clone()).unwrap();
        assert_eq!(listed_by_id(&store), read_by_id(&store), "{kind:?}");
        // Where the store has a cache directory, the index file holds the
        // stored sessions' rows under their current revisions (a's is gone).
        let cache = match kind {
            Kind::JsonlZstd | Kind::JsonlRaw => Some(dir.path().join("root/.dsh-persist-cache")),
            Kind::Sqlite => Some(dir.path().join("sessions.db.dsh-persist-cache")),
            Kind::Postgres => None,
        };
        if let Some(cache) = cache {
            let rows = summary_index::load(&cache);
            let mut ids: Vec<&String> = rows.keys().collect();
            ids.sort();
            assert_eq!(ids, ["b", "c"], "{kind:?}");
            for (id, row) in &rows {
                assert_eq!(
                    row.revision,
                    store.summary(id).unwrap().unwrap().revision,
                    "{kind:?} {id}"
                );
            }
        }
        store.close().unwrap();
    }
}

#[test]
fn search_finds_user_assistant_and_tool_text_and_reuses_its_index() {
    each(|kind, store, _| {
        let r = store
            .search(&SearchQuery::new("ZEBRA"), &mut |_, _| {})
            .unwrap();
        assert_eq!(r.hits.len(), 1, "{kind:?}");
        let hit = &r.hits[0];
        assert_eq!((hit.id.as_str(), hit.role), ("a", "user"));
        let view = store.read_from("a", 0).unwrap();
        assert_eq!(view.events[hit.seq as usize].type_str(), "user/message");
        assert!(hit.snippet.contains("<zebra>"), "{}", hit.snippet);
        assert_eq!(r.indexed, 2, "{kind:?}");
        let tool = store
            .search(&SearchQuery::new("file.txt"), &mut |_, _| {})
            .unwrap();
        assert_eq!(tool.indexed, 0, "{kind:?}: the index is reused");
        assert!(tool.hits.iter().all(|h| h.role == "tool"));
        assert_eq!(tool.hits.len(), 3, "{kind:?}: one per turn");
        let answer = store
            .search(&SearchQuery::new("one file"), &mut |_, _| {})
            .unwrap();
        assert!(answer.hits.iter().all(|h| h.role == "assistant"));
        assert_eq!(answer.hits.len(), 3);
        // A changed log is indexed again.
        let b = store.resume("b").unwrap();
        complete_turn(&b, 2);
        b.close().unwrap();
        let again = store
            .search(&SearchQuery::new("file.txt"), &mut |_, _| {})
            .unwrap();
        assert_eq!(again.indexed, 1, "{kind:?}");
        assert_eq!(again.hits.len(), 4);
        let mut limited = SearchQuery::new("file.txt");
        limited.limit = 2;
        let l = store.search(&limited, &mut |_, _| {}).unwrap();
        assert_eq!(l.hits.len(), 2);
        assert!(l.truncated);
    });
}

#[test]
fn follow_yields_what_another_store_appends() {
    each(|kind, store, cfg| {
        let other = Store::open(cfg.clone()).unwrap();
        let mut f = store.follow("b", None).unwrap();
        let start = f.next_seq();
        assert!(f.next_batch(Duration::from_millis(10)).unwrap().is_empty());
        let live = other.resume("b").unwrap();
        let n = complete_turn(&live, 2);
        live.flush().unwrap();
        let mut got = Vec::new();
        for _ in 0..200 {
            got.extend(f.next_batch(Duration::from_millis(100)).unwrap());
            if got.len() >= n {
                break;
            }
        }
        live.close().unwrap();
        // Resume may add a seed marker; every event from `start` on comes
        // once, in order.
        let view = store.read_from("b", start as i64).unwrap();
        let want: Vec<u64> = view.events.iter().map(|e| e.seq).collect();
        let mut seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
        seqs.extend(
            f.next_batch(Duration::from_millis(10))
                .unwrap()
                .iter()
                .map(|e| e.seq),
        );
        assert_eq!(seqs, want, "{kind:?}");
        assert!(seqs.len() >= n);
        other.close().unwrap();
        let mut from_zero = store.follow("a", Some(0)).unwrap();
        let all = from_zero.next_batch(Duration::from_millis(10)).unwrap();
        assert_eq!(all.len(), store.read_from("a", 0).unwrap().events.len());
        assert!(store.follow("nope", None).is_err());
    });
}

#[test]
fn export_renders_turns_tools_and_escapes_html() {
    each(|kind, store, _| {
        let md = store.export("a", ExportFormat::Markdown).unwrap();
        assert!(md.starts_with("# Listing files\n"), "{kind:?}: {md}");
        for want in [
            "## Turn 1",
            "## Turn 3",
            "question 2",
            "**Tool call** `bash`",
            "file.txt",
            "There is one file.",
            "where is the <zebra> & co?",
        ] {
            assert!(md.contains(want), "{kind:?}: {want} in {md}");
        }
        let html = store.export("a", ExportFormat::Html).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("where is the &lt;zebra&gt; &amp; co?"));
        assert!(!html.contains("<zebra>"));
        assert!(!html.contains("<script") && !html.contains("http"));
    });
}

#[test]
fn a_torn_tail_is_not_there_yet_and_the_cache_is_not_a_session() {
    for kind in [Kind::JsonlZstd, Kind::JsonlRaw] {
        let dir = TempDir::new(&format!("catalog-torn-{kind:?}"));
        let store = Store::open(config(kind, &dir).unwrap()).unwrap();
        populate(&store);
        let before = store.summary("b").unwrap().unwrap();
        store
            .search(&SearchQuery::new("file"), &mut |_, _| {})
            .unwrap();
        let root = dir.path().join("root");
        assert!(root.join(".dsh-persist-cache").join("search").is_dir());
        let log = store.locate(&before.header).unwrap().unwrap();
        let dsh_persist::backend::Location::Jsonl { path } = log;
        let mut bytes = std::fs::read(&path).unwrap();
        // Half a record (raw) or half a frame (zstd), as a writer leaves it
        // mid-write.
        match kind {
            Kind::JsonlRaw => bytes.extend_from_slice(b"{\"type\":\"turn/start\",\"seq\":99"),
            _ => bytes.extend_from_slice(&[0x28, 0xB5, 0x2F, 0xFD, 0x00]),
        }
        std::fs::write(&path, &bytes).unwrap();
        let after = store.summary("b").unwrap().unwrap();
        assert_eq!(after.event_count, before.event_count, "{kind:?}");
        assert_eq!(after.open_turn, before.open_turn);
        assert_eq!(store.list().unwrap().len(), 2, "the cache holds no session");
        store.close().unwrap();
    }
}

/// Runs `stmt` on the row store of `cfg` directly (a crash leftover no
/// writer of this crate makes).
fn row_store_sql(cfg: &StoreConfig, stmt: &str) {
    match &cfg.backend {
        BackendConfig::Sqlite(c) => {
            let conn = rusqlite::Connection::open(&c.path).unwrap();
            conn.execute_batch(stmt).unwrap();
        }
        BackendConfig::Postgres(c) => {
            let mut client = support::pg::admin(&c.url);
            client
                .batch_execute(&format!("SET search_path TO \"{}\"; {stmt}", c.schema))
                .unwrap();
        }
        BackendConfig::Jsonl(_) => unreachable!("not a row store"),
    }
}

#[test]
fn a_seq_gap_after_the_last_turn_end_is_counted_as_load_cuts_it() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let dir = TempDir::new(&format!("catalog-gap-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        populate(&store);
        let before = store.summary("a").unwrap().unwrap();
        assert!(before.open_turn, "{kind:?}");
        let full = store.read_from("a", 0).unwrap().events;
        assert_eq!(before.event_count, full.len() as u64, "{kind:?}");
        // Session `a` ends with an open turn 3: turn/start, user/message.
        // Remove the turn/start row: the user/message after the gap is a
        // torn tail that load cuts.
        let start_seq = full
            .iter()
            .rev()
            .find(|e| e.type_str() == "turn/start")
            .unwrap()
            .seq;
        row_store_sql(
            &cfg,
            &format!("DELETE FROM events WHERE session_id = 'a' AND seq = {start_seq}"),
        );
        store.close().unwrap();
        let store = Store::open(cfg.clone()).unwrap();
        let durable = store.read_from("a", 0).unwrap().events;
        assert_eq!(durable.len() as u64, start_seq, "{kind:?}");
        let after = store.summary("a").unwrap().unwrap();
        assert_eq!(after.event_count, durable.len() as u64, "{kind:?}");
        assert!(!after.open_turn, "{kind:?}: the open turn is torn off");
        assert_eq!(after.updated_at, durable.last().unwrap().time, "{kind:?}");
        store.close().unwrap();
    }
}

#[test]
fn follow_of_a_deleted_session_reports_not_found() {
    each(|kind, store, cfg| {
        // On PostgreSQL the delete notifies `<schema>.batches` (kind
        // `delete`), so a follower wakes at once.
        let mut listener = match &cfg.backend {
            BackendConfig::Postgres(c) => {
                let mut client = support::pg::admin(&c.url);
                client
                    .batch_execute(&format!("LISTEN \"{}.batches\"", c.schema))
                    .unwrap();
                Some(client)
            }
            _ => None,
        };
        let mut f = store.follow("b", None).unwrap();
        assert!(f.next_batch(Duration::from_millis(10)).unwrap().is_empty());
        store.delete("b").unwrap();
        let e = f.next_batch(Duration::from_millis(100)).unwrap_err();
        assert_eq!(e.kind(), dsh_persist::ErrorKind::NotFound, "{kind:?}: {e}");
        if let Some(client) = listener.as_mut() {
            let mut n = client.notifications();
            let mut iter = n.timeout_iter(Duration::from_secs(30));
            let note = postgres::fallible_iterator::FallibleIterator::next(&mut iter)
                .unwrap()
                .expect("a delete notification");
            let payload: serde_json::Value = serde_json::from_str(note.payload()).unwrap();
            assert_eq!(payload["kind"], "delete", "{payload}");
            assert_eq!(payload["id"], "b", "{payload}");
        }
        // The other session is still followed.
        let mut a = store.follow("a", Some(0)).unwrap();
        assert!(!a.next_batch(Duration::from_millis(10)).unwrap().is_empty());
    });
}

/// A session of the workload's first 1,000 events: turn 1 complete, turn 2
/// left open while it streamed (its chunk runs are packed rows in a row
/// store, so the rows after the last `turn/end` are not one per seq).
fn open_streamed_turn(store: &Store) -> Vec<dsh_persist::model::event::Event> {
    let events = support::workload(1000);
    store.create(header("w", "/w", 1_000)).unwrap();
    store.append("w", events.clone()).unwrap();
    events
}

/// The summary fields a window decides (not its size or revision).
fn summary_fields(
    s: &dsh_persist::store::catalog::SessionSummary,
) -> (
    u64,
    i64,
    u64,
    bool,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    (
        s.event_count,
        s.updated_at,
        s.turn_count,
        s.open_turn,
        s.title.clone(),
        s.first_prompt.clone(),
        s.last_prompt.clone(),
    )
}

/// Runs `query` (one integer) on the SQLite store of `cfg`.
fn sqlite_int(cfg: &StoreConfig, query: &str) -> i64 {
    let BackendConfig::Sqlite(c) = &cfg.backend else {
        unreachable!("a SQLite store")
    };
    let conn = rusqlite::Connection::open(&c.path).unwrap();
    conn.query_row(query, [], |r| r.get(0)).unwrap()
}

const PACKED_BEFORE_LAST_IN_OPEN_TURN: &str = "SELECT count(*) FROM events WHERE session_id = 'w' AND ignorable = 0 \
     AND seq > (SELECT max(seq) FROM events WHERE session_id = 'w' AND type = 'turn/end') \
     AND seq < (SELECT max(seq) FROM events WHERE session_id = 'w')";

#[test]
fn an_open_turn_streamed_into_packed_rows_is_summarised_as_a_read_sees_it() {
    let mut reference = None;
    for kind in KINDS {
        let dir = TempDir::new(&format!("catalog-open-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        let written = open_streamed_turn(&store);
        if matches!(kind, Kind::Sqlite) {
            assert!(
                sqlite_int(&cfg, PACKED_BEFORE_LAST_IN_OPEN_TURN) > 0,
                "the open turn holds packed rows before its last row"
            );
        }
        let s = store.summary("w").unwrap().unwrap();
        let read = store.read_from("w", 0).unwrap().events;
        assert_eq!(read.len(), written.len(), "{kind:?}");
        assert_eq!(s.event_count, read.len() as u64, "{kind:?}");
        assert_eq!(s.updated_at, read.last().unwrap().time, "{kind:?}");
        assert!(s.open_turn, "{kind:?}");
        assert_eq!(s.turn_count, 2, "{kind:?}");
        assert!(s.last_prompt.is_some() && s.bytes > 0, "{kind:?}");
        // Every backend's window agrees with the JSONL one (head and tail
        // frames: another reader of the same events).
        let fields = summary_fields(&s);
        match &reference {
            None => reference = Some(fields),
            Some(r) => assert_eq!(&fields, r, "{kind:?}"),
        }
        store.close().unwrap();
    }
}

#[test]
fn a_row_store_summary_reads_the_open_turn_not_the_whole_log() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let dir = TempDir::new(&format!("catalog-rows-only-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        open_streamed_turn(&store);
        let before = store.summary("w").unwrap().unwrap();
        store.close().unwrap();
        // A row inside turn 1 that no window asks for, damaged: a load
        // refuses the log; the listing, which judges nothing (as JSONL's
        // head and tail reads), lists it as before.
        row_store_sql(
            &cfg,
            "UPDATE events SET data = '{\"broken\":' WHERE session_id = 'w' AND type = 'request/header'",
        );
        let store = Store::open(cfg.clone()).unwrap();
        let err = store.load("w").unwrap_err();
        assert_eq!(
            err.kind(),
            dsh_persist::ErrorKind::Corruption,
            "{kind:?}: {err}"
        );
        let after = store.summary("w").unwrap().unwrap();
        assert_eq!(summary_fields(&after), summary_fields(&before), "{kind:?}");
        store.close().unwrap();
    }
}

#[test]
fn a_gap_inside_a_packed_open_turn_is_cut_as_a_load_cuts_it() {
    for kind in [Kind::Sqlite, Kind::Postgres] {
        let dir = TempDir::new(&format!("catalog-packed-gap-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        let written = open_streamed_turn(&store);
        let before = store.summary("w").unwrap().unwrap();
        assert_eq!(before.event_count, written.len() as u64);
        store.close().unwrap();
        // The open turn's last packed row below the last row goes: the
        // rows after it are a torn tail that a load cuts.
        let gap = "(SELECT max(seq) FROM events WHERE session_id = 'w' AND ignorable = 0 \
             AND seq < (SELECT max(seq) FROM events WHERE session_id = 'w'))";
        let gap_seq = if matches!(kind, Kind::Sqlite) {
            Some(sqlite_int(&cfg, &format!("SELECT {gap}")))
        } else {
            None
        };
        let stored_before = if matches!(kind, Kind::Sqlite) {
            Some(sqlite_int(&cfg, STORED_BYTES_OF_W))
        } else {
            None
        };
        row_store_sql(
            &cfg,
            &format!("DELETE FROM events WHERE session_id = 'w' AND seq = {gap}"),
        );
        let store = Store::open(cfg.clone()).unwrap();
        let durable = store.read_from("w", 0).unwrap().events;
        if let Some(seq) = gap_seq {
            assert_eq!(durable.len() as i64, seq, "{kind:?}: cut at the gap");
        }
        assert!(durable.len() < written.len(), "{kind:?}");
        let after = store.summary("w").unwrap().unwrap();
        assert_eq!(after.event_count, durable.len() as u64, "{kind:?}");
        assert_eq!(after.updated_at, durable.last().unwrap().time, "{kind:?}");
        // The size is the rows' as stored whichever way the window was
        // read: the full read's window reports the rows left.
        if let Some(stored) = stored_before {
            assert_eq!(before.bytes, stored as u64, "{kind:?}");
            assert_eq!(after.bytes, sqlite_int(&cfg, STORED_BYTES_OF_W) as u64);
            assert!(after.bytes < before.bytes);
        }
        store.close().unwrap();
    }
}

/// The stored size of session `w`'s rows, as a summary reports it.
const STORED_BYTES_OF_W: &str = "SELECT sum(octet_length(type) + octet_length(data) \
     + coalesce(octet_length(source_event_seqs), 0) + coalesce(octet_length(surface_op), 0) + 16) \
     FROM events WHERE session_id = 'w'";

/// A session whose open turn streamed `pieces` (as text deltas) after one
/// complete turn.
fn open_turn_of(store: &Store, pieces: impl Iterator<Item = String>) {
    let none = AppendOptions::default();
    let s = store.start(header("big", "/big", 1_000)).unwrap();
    complete_turn(&s, 1);
    s.append("turn/start", r#"{"turn":2}"#, &none).unwrap();
    s.append("user/message", &user_message("u2", "go on"), &append_opts())
        .unwrap();
    s.append("step/start", r#"{"turn":2,"step":1}"#, &none)
        .unwrap();
    for piece in pieces {
        s.append("assistant/chunk", &text_delta(2, 1, &piece), &none)
            .unwrap();
    }
    s.close().unwrap();
}

#[test]
fn an_open_turn_past_max_log_bytes_fails_the_summary_as_it_fails_a_load() {
    // 4 MiB of streamed text, left open: packed rows that decode past the
    // 2 MiB limit below, all after the last `turn/end`. Once the same
    // piece (the rows store little: their decoding goes past the limit),
    // once all different (the rows themselves store more than the limit).
    let distinct = support::incompressible_text(4 << 20);
    for same in [true, false] {
        for kind in [Kind::Sqlite, Kind::Postgres] {
            let dir = TempDir::new(&format!("catalog-tail-limit-{kind:?}"));
            let Some(cfg) = config(kind, &dir) else {
                eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
                continue;
            };
            let store = Store::open(cfg.clone()).unwrap();
            let pieces = (0..4096).map(|i| {
                let at = if same { 0 } else { i * 1024 };
                distinct[at..at + 1024].to_string()
            });
            open_turn_of(&store, pieces);
            let s = store.summary("big").unwrap().unwrap();
            assert!(s.open_turn);
            assert_eq!(s.bytes > 2 << 20, !same, "{kind:?}: {}", s.bytes);
            store.close().unwrap();
            let mut small = cfg.clone();
            let limits = dsh_persist::backend::limits::Limits::new(2 << 20, 2 << 20).unwrap();
            match &mut small.backend {
                BackendConfig::Sqlite(c) => c.limits = limits,
                BackendConfig::Postgres(c) => c.limits = limits,
                BackendConfig::Jsonl(_) => unreachable!("a row store"),
            }
            let store = Store::open(small).unwrap();
            let load = store.load("big").unwrap_err();
            assert_eq!(
                load.kind(),
                dsh_persist::ErrorKind::Corruption,
                "{kind:?}: {load}"
            );
            // The rows after the last `turn/end` are read under the same
            // bounds: a listing holds no more of a log than a load may.
            let summary = store.summary("big").unwrap_err();
            assert_eq!(summary.kind(), load.kind(), "{kind:?}: {summary}");
            assert!(
                summary.to_string().contains("maxLogBytes"),
                "{kind:?}: {summary}"
            );
            store.close().unwrap();
        }
    }
}

#[test]
fn a_listing_and_a_search_of_many_sessions_are_what_a_loop_gives() {
    // JSONL and PostgreSQL (a pool of two or more) read the windows and
    // texts on two threads; what a listing or search returns (and which
    // session's error it fails with) is a plain loop's, on every backend.
    for kind in KINDS {
        let dir = TempDir::new(&format!("catalog-many-{kind:?}"));
        let Some(cfg) = config(kind, &dir) else {
            eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
            continue;
        };
        let store = Store::open(cfg.clone()).unwrap();
        for i in 0..60u64 {
            let id = format!("s{i:02}");
            let live = store.start(header(&id, "/m", 1_000 + i)).unwrap();
            for turn in 1..=(1 + i % 3) {
                complete_turn(&live, turn);
            }
            live.close().unwrap();
        }
        let ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
        assert_eq!(ids.len(), 60);
        let listed = store
            .list_summaries(&ListQuery {
                sort: SortKey::Created,
                ascending: true,
                ..ListQuery::default()
            })
            .unwrap();
        let mut one_by_one: Vec<_> = ids
            .iter()
            .map(|id| store.summary(id).unwrap().unwrap())
            .collect();
        one_by_one.sort_by_key(|s| s.created_at);
        assert_eq!(
            listed
                .iter()
                .map(|s| (s.header.id.clone(), summary_fields(s), s.bytes))
                .collect::<Vec<_>>(),
            one_by_one
                .iter()
                .map(|s| (s.header.id.clone(), summary_fields(s), s.bytes))
                .collect::<Vec<_>>()
        );
        // Search reads the sessions' texts on two threads too, in batches:
        // hits, progress and truncation are in session order.
        let turns = |id: &str| 1 + id[1..].parse::<u64>().unwrap() % 3;
        let mut calls = Vec::new();
        let all = store
            .search(&SearchQuery::new("file.txt"), &mut |done, total| {
                calls.push((done, total))
            })
            .unwrap();
        assert_eq!(calls, (1..=60).map(|i| (i, 60)).collect::<Vec<_>>());
        let hits: Vec<(String, u64)> = all.hits.iter().map(|h| (h.id.clone(), h.seq)).collect();
        let expected = tool_results(&store, &ids);
        assert_eq!(
            expected.len() as u64,
            ids.iter().map(|id| turns(id)).sum::<u64>()
        );
        assert_eq!(hits, expected[..hits.len()]);
        assert_eq!(hits.len(), 100.min(expected.len()));
        let mut limited = SearchQuery::new("file.txt");
        limited.limit = 50;
        let l = store.search(&limited, &mut |_, _| {}).unwrap();
        assert!(l.truncated);
        assert_eq!(
            l.hits
                .iter()
                .map(|h| (h.id.clone(), h.seq))
                .collect::<Vec<_>>(),
            expected[..50]
        );
        // Every 7th session grows a turn: its texts are read again, the
        // others come from the index held in memory, in the same batches;
        // hits and progress stay in session order.
        let grown: Vec<&String> = ids.iter().step_by(7).collect();
        for id in &grown {
            let live = store.resume(id).unwrap();
            complete_turn(&live, turns(id) + 1);
            live.close().unwrap();
        }
        let mut calls = Vec::new();
        let mut unlimited = SearchQuery::new("file.txt");
        unlimited.limit = usize::MAX;
        let mixed = store
            .search(&unlimited, &mut |done, total| calls.push((done, total)))
            .unwrap();
        assert_eq!(calls, (1..=60).map(|i| (i, 60)).collect::<Vec<_>>());
        assert_eq!(mixed.indexed, grown.len());
        let expected = tool_results(&store, &ids);
        let total_turns: u64 = ids.iter().map(|id| turns(id)).sum();
        assert_eq!(expected.len() as u64, total_turns + grown.len() as u64);
        assert_eq!(
            mixed
                .hits
                .iter()
                .map(|h| (h.id.clone(), h.seq))
                .collect::<Vec<_>>(),
            expected
        );
        if matches!(kind, Kind::JsonlRaw) {
            broken_sessions_fail_in_order(&store, &dir, &ids);
        }
        store.close().unwrap();
    }
}

/// `(id, seq)` of every `tool/result` event of the sessions `ids`, in
/// that order, from full reads.
fn tool_results(store: &Store, ids: &[String]) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for id in ids {
        let view = store.read_from(id, 0).unwrap();
        for e in view.events.iter().filter(|e| e.type_str() == "tool/result") {
            out.push((id.clone(), e.seq));
        }
    }
    out
}

/// Two sessions of the raw JSONL store in `dir` broken inside their logs (a
/// line that does not parse, before the last): the listing fails with the
/// first one's error, in the order `list` gives (`ids`), every time.
fn broken_sessions_fail_in_order(store: &Store, dir: &TempDir, ids: &[String]) {
    let root = dir.path().join("root");
    for id in [&ids[41], &ids[17]] {
        support::break_raw_log(&root, id);
    }
    let first = store.summary(&ids[17]).unwrap_err();
    assert_eq!(first.kind(), dsh_persist::ErrorKind::Corruption, "{first}");
    for _ in 0..10 {
        let err = store.list_summaries(&ListQuery::default()).unwrap_err();
        assert_eq!(err.kind(), first.kind());
        // The listing's error names the session.
        assert_eq!(err.to_string(), format!("session \"{}\": {first}", ids[17]));
    }
    // A search skips them (their index entries are stale), in order.
    let skipped = store
        .search(&SearchQuery::new("file.txt"), &mut |_, _| {})
        .unwrap()
        .skipped;
    assert_eq!(
        skipped,
        vec![
            (ids[17].clone(), first.to_string()),
            (
                ids[41].clone(),
                store.summary(&ids[41]).unwrap_err().to_string()
            )
        ]
    );
}
