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
use support::conv::{append_opts, complete_turn, user_message};

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
