//! Session management (issue 19, the write half) on every backend: JSONL
//! zstd, JSONL raw, SQLite file, SQLite in memory and PostgreSQL (a schema
//! of its own per test on the server of `DSH_TEST_POSTGRES_URL`; without it
//! the PostgreSQL cases say so and skip): delete, prune, salvage, import.

mod support;

use std::path::{Path, PathBuf};

use dsh_persist::ErrorKind;
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    BackendConfig, Compression, JsonlConfig, PostgresConfig, PruneOptions, SqliteConfig, Store,
    StoreConfig,
};
use support::TempDir;
use support::conv::complete_turn;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    JsonlZstd,
    JsonlRaw,
    SqliteFile,
    SqliteMemory,
    Postgres,
}

fn pg_schema(dir: &TempDir) -> String {
    let name = dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    format!(
        "m{:016x}",
        name.bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b))
                .wrapping_mul(0x100_0000_01b3))
    )
}

impl Kind {
    fn config(self, dir: &TempDir) -> StoreConfig {
        let backend = match self {
            Kind::JsonlZstd | Kind::JsonlRaw => {
                let mut c = JsonlConfig::new(dir.path().join("root"));
                if self == Kind::JsonlRaw {
                    c.compression = Compression::None;
                }
                BackendConfig::Jsonl(c)
            }
            Kind::SqliteFile => BackendConfig::Sqlite(SqliteConfig::new(
                dir.path().join("sessions.db").display().to_string(),
            )),
            Kind::SqliteMemory => BackendConfig::Sqlite(SqliteConfig::new(":memory:")),
            Kind::Postgres => {
                let url = std::env::var(support::pg::URL_ENV).unwrap();
                let schema = pg_schema(dir);
                let (u, s) = (url.clone(), schema.clone());
                dir.on_drop_once("pg-schema", move || support::pg::drop_schema(&u, &s));
                BackendConfig::Postgres(PostgresConfig::new(url).with_schema(schema))
            }
        };
        let mut c = StoreConfig::with_backend(backend);
        c.write_batch_max_delay_ms = 20;
        c
    }

    fn open(self, dir: &TempDir) -> Store {
        Store::open(self.config(dir)).unwrap()
    }

    fn reopen(self, dir: &TempDir) -> Option<Store> {
        (self != Kind::SqliteMemory).then(|| self.open(dir))
    }

    fn is_jsonl(self) -> bool {
        matches!(self, Kind::JsonlZstd | Kind::JsonlRaw)
    }

    /// Runs SQL on the store's database (row stores only).
    fn sql(self, dir: &TempDir, store: &Store, sql: &str) {
        match self {
            Kind::SqliteFile => {
                let c = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
                c.execute_batch(sql).unwrap();
            }
            Kind::SqliteMemory => {
                let _ = store;
                panic!("no second connection to an in-memory database")
            }
            Kind::Postgres => {
                let url = std::env::var(support::pg::URL_ENV).unwrap();
                let mut c = support::pg::admin(&url);
                c.batch_execute(&format!("SET search_path TO {}; {sql}", pg_schema(dir)))
                    .unwrap();
            }
            _ => unreachable!(),
        }
    }
}

fn header(id: &str) -> SessionHeader {
    let mut h = SessionHeader::new(id, 1_785_000_000_000);
    h.cwd = Some("/home/dev/project".into());
    h
}

fn ev(line: &str) -> Event {
    Event::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// A closed turn of three events at `first_seq`, all at `time`.
fn turn_at(turn: u64, first_seq: u64, time: i64) -> Vec<Event> {
    let s = first_seq;
    vec![
        ev(&format!(
            r#"{{"type":"turn/start","seq":{s},"time":{time},"data":{{"turn":{turn}}}}}"#
        )),
        ev(&format!(
            r#"{{"type":"user/message","seq":{},"time":{time},"data":{},"surfaceOp":"append"}}"#,
            s + 1,
            support::conv::user_message(&format!("u{turn}"), "hello")
        )),
        ev(&format!(
            r#"{{"type":"turn/end","seq":{},"time":{time},"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#,
            s + 2
        )),
    ]
}

/// Stores session `id` with `turns` closed turns, one cold append each
/// (JSONL: one frame each), every event at `time`.
fn stored(store: &Store, id: &str, turns: u64, time: i64) {
    store.create(header(id)).unwrap();
    for t in 0..turns {
        store.append(id, turn_at(t + 1, t * 3, time)).unwrap();
    }
}

fn ids(store: &Store) -> Vec<String> {
    let mut v: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
    v.sort();
    v
}

fn jsonl_root(dir: &TempDir) -> PathBuf {
    dir.path().join("root")
}

/// Every file under `dir`, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn log_file(dir: &TempDir, kind: Kind, id: &str) -> PathBuf {
    let name = if kind == Kind::JsonlZstd {
        "session.jsonl.zstd"
    } else {
        "session.jsonl"
    };
    jsonl_root(dir)
        .join("--home-dev-project--")
        .join(id)
        .join(name)
}

// ---------------------------------------------------------------------------
// delete

fn delete_removes_the_session_and_frees_the_id(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    let live = store.start(header("d1")).unwrap();
    complete_turn(&live, 1);
    live.close().unwrap();
    stored(&store, "keep", 1, 5);
    // Caches filled: an inspection and a cold append's tail.
    assert!(store.inspect("d1").unwrap().events.len() > 3);
    // A link inside the session directory is removed, never followed.
    let outside = dir.path().join("outside.txt");
    if kind.is_jsonl() {
        std::fs::write(&outside, "keep me").unwrap();
        let sdir = log_file(&dir, kind, "d1").parent().unwrap().to_path_buf();
        std::os::unix::fs::symlink(dir.path(), sdir.join("link-to-dir")).unwrap();
        std::os::unix::fs::symlink(&outside, sdir.join("link-to-file")).unwrap();
    }
    store.delete("d1").unwrap();
    if kind.is_jsonl() {
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me");
        assert!(!log_file(&dir, kind, "d1").parent().unwrap().exists());
    }
    assert_eq!(ids(&store), ["keep"]);
    assert_eq!(store.load("d1").unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(store.inspect("d1").unwrap_err().kind(), ErrorKind::NotFound);
    let again = store.delete("d1").unwrap_err();
    assert_eq!(again.kind(), ErrorKind::NotFound, "{again}");
    assert!(again.to_string().contains("\"d1\""), "{again}");
    if let Some(other) = kind.reopen(&dir) {
        assert_eq!(ids(&other), ["keep"]);
    }
    // The id is free: a new session of that id, shorter than the old one,
    // reads back as itself (no stale inspection or tail).
    stored(&store, "d1", 1, 7);
    assert_eq!(store.inspect("d1").unwrap().events.len(), 3);
    store.append("d1", turn_at(2, 3, 8)).unwrap();
    assert_eq!(store.load("d1").unwrap().events.len(), 6);
    // The other session is untouched.
    assert_eq!(store.load("keep").unwrap().events.len(), 3);
    if kind.is_jsonl() {
        // Nothing is left in the trash.
        let trash = jsonl_root(&dir).join(".dsh-persist-trash");
        let left: Vec<_> = std::fs::read_dir(&trash).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
    store.close().unwrap();
}

fn delete_of_a_held_session_is_busy(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    stored(&store, "held", 1, 5);
    let live = store.resume("held").unwrap();
    let e = store.delete("held").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    if let Some(other) = kind.reopen(&dir) {
        // Another store handle: the writer lock says busy.
        let e = other.delete("held").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        assert_eq!(ids(&other), ["held"]);
    }
    live.close().unwrap();
    store.delete("held").unwrap();
    assert!(ids(&store).is_empty());
}

fn delete_of_a_created_session_unregisters_it(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    store.create(header("c")).unwrap();
    store.delete("c").unwrap();
    // Free again: create works.
    store.create(header("c")).unwrap();
    assert_eq!(
        store.delete("never").unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

// ---------------------------------------------------------------------------
// prune

/// Three sessions updated at 1000, 2000 and 3000 ms (JSONL: the logs'
/// mtimes are set to those instants).
fn three_ages(kind: Kind, dir: &TempDir, store: &Store) {
    for (id, t) in [("old", 1000), ("mid", 2000), ("new", 3000)] {
        stored(store, id, 1, t);
        if kind.is_jsonl() {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(log_file(dir, kind, id))
                .unwrap();
            f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(t as u64))
                .unwrap();
        }
    }
}

fn prune_keeps_the_newest(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    three_ages(kind, &dir, &store);
    let opts = PruneOptions {
        keep_newest: Some(1),
        dry_run: true,
        ..PruneOptions::default()
    };
    let mut calls = Vec::new();
    let r = store.prune(&opts, &mut |d, t| calls.push((d, t))).unwrap();
    let deleted: Vec<_> = r.deleted.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(deleted, ["mid", "old"]);
    assert_eq!(r.deleted[0].updated_at, 2000);
    assert_eq!(r.kept, 1);
    assert_eq!(calls, [(1, 2), (2, 2)]);
    assert_eq!(ids(&store).len(), 3, "a dry run deletes nothing");
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["dryRun"], true);
    assert_eq!(
        json["updatedFrom"],
        if kind.is_jsonl() {
            "fileMtime"
        } else {
            "lastEventTime"
        }
    );
    let r = store
        .prune(
            &PruneOptions {
                dry_run: false,
                ..opts
            },
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!(r.deleted.len(), 2);
    assert_eq!(ids(&store), ["new"]);
}

fn prune_by_age_skips_busy_sessions(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    three_ages(kind, &dir, &store);
    // "old" is held (prepared for resume: its writer lock is taken).
    let prepared = store.prepare("old").unwrap();
    let opts = PruneOptions {
        older_than_ms: Some(1000),
        now_ms: Some(3500),
        ..PruneOptions::default()
    };
    let r = store.prune(&opts, &mut |_, _| {}).unwrap();
    let deleted: Vec<_> = r.deleted.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(deleted, ["mid"]);
    assert_eq!(r.busy.len(), 1);
    assert_eq!(r.busy[0].0, "old");
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    assert_eq!(r.kept, 1);
    drop(prepared);
    assert_eq!(ids(&store), ["new", "old"]);
    // Both criteria: deleted only when both select it.
    let r = store
        .prune(
            &PruneOptions {
                older_than_ms: Some(0),
                keep_newest: Some(1),
                now_ms: Some(3500),
                ..PruneOptions::default()
            },
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!(r.deleted.len(), 1);
    assert_eq!(ids(&store), ["new"]);
    let none = store.prune(&PruneOptions::default(), &mut |_, _| {});
    assert_eq!(none.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

// ---------------------------------------------------------------------------
// salvage

/// Breaks a record in the middle of session `id` (three turns, one append
/// each) so that it no longer loads: the second turn's first record.
fn corrupt_the_middle(kind: Kind, dir: &TempDir, store: &Store, id: &str) {
    match kind {
        Kind::JsonlRaw => {
            let path = log_file(dir, kind, id);
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
            lines[4] = "{\"type\":\"turn/start\",\"seq\":3,BROKEN\n";
            std::fs::write(&path, lines.concat()).unwrap();
        }
        Kind::JsonlZstd => {
            let path = log_file(dir, kind, id);
            let mut bytes = std::fs::read(&path).unwrap();
            let scan = dsh_persist::backend::jsonl::frames::scan(&bytes).unwrap();
            // Frames: header, turn 1, turn 2, turn 3.
            let f = scan.frames[2];
            let at = ((f.start + f.end) / 2) as usize;
            bytes[at] ^= 0x55;
            std::fs::write(&path, bytes).unwrap();
        }
        Kind::SqliteFile => kind.sql(
            dir,
            store,
            &format!(
                "UPDATE events SET data = x'28b52ffd00000000' WHERE session_id = '{id}' AND seq = 3"
            ),
        ),
        Kind::Postgres => kind.sql(
            dir,
            store,
            &format!(
                "UPDATE events SET data = NULL, data_zstd = '\\x28b52ffd00000000'::bytea WHERE session_id = '{id}' AND seq = 3"
            ),
        ),
        Kind::SqliteMemory => unreachable!(),
    }
}

fn source_bytes(kind: Kind, dir: &TempDir) -> Vec<(PathBuf, Vec<u8>)> {
    if kind.is_jsonl() {
        snapshot(&jsonl_root(dir).join("--home-dev-project--").join("broken"))
    } else {
        Vec::new()
    }
}

fn salvage_copies_the_prefix_before_a_corrupt_middle_record(kind: Kind) {
    if kind == Kind::SqliteMemory {
        return; // no second connection to corrupt a row with
    }
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    stored(&store, "broken", 3, 9);
    corrupt_the_middle(kind, &dir, &store, "broken");
    let store = kind.open(&dir);
    let refused = store.load("broken").unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Corruption, "{refused}");
    let before = source_bytes(kind, &dir);
    let r = store.salvage("broken", "rescued").unwrap();
    assert_eq!(r.kept_events, 3, "{r:?}");
    assert_eq!(r.closers, 0);
    assert!(r.stopped.is_some());
    let view = store.load("rescued").unwrap();
    assert_eq!(view.events.len(), 3);
    assert_eq!(view.header.cwd.as_deref(), Some("/home/dev/project"));
    assert_eq!(view.events[2].event_type(), "turn/end");
    // The source is untouched: still refused, same bytes.
    assert_eq!(source_bytes(kind, &dir), before);
    assert_eq!(
        store.load("broken").unwrap_err().kind(),
        ErrorKind::Corruption
    );
    // The new id is taken now; the old one cannot be a target.
    let again = store.salvage("broken", "rescued").unwrap_err();
    assert_eq!(again.code(), Some("SESSION_ALREADY_EXISTS"), "{again}");
    if let Some(other) = kind.reopen(&dir) {
        assert_eq!(other.load("rescued").unwrap().events.len(), 3);
    }
}

fn salvage_closes_an_open_turn(kind: Kind) {
    let dir = TempDir::new("manage");
    let store = kind.open(&dir);
    store.create(header("open")).unwrap();
    let mut events = turn_at(1, 0, 5);
    events.push(ev(
        r#"{"type":"turn/start","seq":3,"time":6,"data":{"turn":2}}"#,
    ));
    store.append("open", events).unwrap();
    let r = store.salvage("open", "closed").unwrap();
    assert_eq!((r.kept_events, r.closers), (4, 1));
    assert_eq!(r.stopped, None);
    let view = store.inspect("closed").unwrap();
    assert_eq!(view.events.len(), 5);
    assert_eq!(view.events[4].event_type(), "turn/end");
    assert!(view.events[4].data.as_str().contains("interrupted"));
    // The source still ends in its open turn (never repaired).
    let raw = store.read_from("open", 0).unwrap();
    assert_eq!(raw.events.len(), 4);
    assert_eq!(
        store.salvage("none", "x").unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store.salvage("open", "open").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

// ---------------------------------------------------------------------------
// import

fn import_takes_a_stored_log_and_refuses_bad_lines(kind: Kind) {
    let dir = TempDir::new("manage");
    // The source text: a JSONL log with a header line and packed chunk rows.
    let src_dir = TempDir::new("manage-src");
    let src = Kind::JsonlRaw.open(&src_dir);
    let live = src.start(header("orig")).unwrap();
    complete_turn(&live, 1);
    complete_turn(&live, 2);
    live.close().unwrap();
    let text = src.read_raw("orig").unwrap().unwrap().content;
    assert!(
        text.contains("\"text-chunks\""),
        "packed rows in the source"
    );
    let want: Vec<String> = src
        .load("orig")
        .unwrap()
        .events
        .iter()
        .map(|e| e.to_json())
        .collect();

    let store = kind.open(&dir);
    let r = store.import_jsonl("copy", &text).unwrap();
    assert!(r.had_header);
    assert_eq!(r.events, want.len());
    let view = store.load("copy").unwrap();
    assert_eq!(view.header.id, "copy");
    assert_eq!(view.header.cwd.as_deref(), Some("/home/dev/project"));
    let got: Vec<serde_json::Value> = view
        .events
        .iter()
        .map(|e| support::parse(&e.to_json()))
        .collect();
    let want: Vec<serde_json::Value> = want.iter().map(|t| support::parse(t)).collect();
    assert_eq!(got, want);

    // Without a header line: events only.
    let lines: Vec<String> = turn_at(1, 0, 4).iter().map(|e| e.to_json()).collect();
    let r = store.import_jsonl("bare", &lines.join("\n")).unwrap();
    assert!(!r.had_header);
    assert_eq!(store.load("bare").unwrap().events.len(), 3);

    // All or nothing: a seq gap, a broken line, a rule violation.
    let mut gap = lines.clone();
    gap[2] = gap[2].replace("\"seq\":2", "\"seq\":5");
    let mut broken = lines.clone();
    broken[1] = "{\"type\":".to_string();
    let mut open_end = lines.clone();
    open_end.remove(0); // user/message and turn/end without a turn/start
    for (bad, what) in [(gap, "seq"), (broken, "line 2"), (open_end, "")] {
        let e = store.import_jsonl("bad", &bad.join("\n")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(what), "{e}");
        assert!(!ids(&store).contains(&"bad".to_string()));
    }
    // The id was never taken.
    store.create(header("bad")).unwrap();
    let taken = store.import_jsonl("copy", &text).unwrap_err();
    assert_eq!(taken.code(), Some("SESSION_ALREADY_EXISTS"), "{taken}");
}

macro_rules! each_backend {
    ($($name:ident),* $(,)?) => {
        mod jsonl_zstd { $( #[test] fn $name() { super::$name(super::Kind::JsonlZstd) } )* }
        mod jsonl_raw { $( #[test] fn $name() { super::$name(super::Kind::JsonlRaw) } )* }
        mod sqlite_file { $( #[test] fn $name() { super::$name(super::Kind::SqliteFile) } )* }
        mod sqlite_memory { $( #[test] fn $name() { super::$name(super::Kind::SqliteMemory) } )* }
        mod postgres { $( #[test] fn $name() {
            if super::support::pg::url(concat!("store_manage postgres::", stringify!($name))).is_some() {
                super::$name(super::Kind::Postgres)
            }
        } )* }
    };
}

each_backend!(
    delete_removes_the_session_and_frees_the_id,
    delete_of_a_held_session_is_busy,
    delete_of_a_created_session_unregisters_it,
    prune_keeps_the_newest,
    prune_by_age_skips_busy_sessions,
    salvage_copies_the_prefix_before_a_corrupt_middle_record,
    salvage_closes_an_open_turn,
    import_takes_a_stored_log_and_refuses_bad_lines,
    the_store_clock_stamps_the_headers_it_makes,
);

/// A delete that crashed between moving a session into the trash and
/// removing it leaves a slot there; the next open of the store removes the
/// slots of processes that no longer run and keeps those of running ones
/// (a delete in progress), and the listing never shows either.
#[test]
fn jsonl_open_sweeps_what_a_crashed_delete_left_in_the_trash() {
    let dir = TempDir::new("manage-trash");
    let store = Kind::JsonlZstd.open(&dir);
    stored(&store, "keep", 1, 5);
    store.close().unwrap();
    let trash = jsonl_root(&dir).join(".dsh-persist-trash");
    // A process that has exited: its pid names the crashed delete's slot.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let slot = |pid: u32| {
        let s = trash.join(format!("{pid}.gone.00000000000000aa"));
        std::fs::create_dir_all(s.join("gone")).unwrap();
        std::fs::write(s.join("gone").join("session.jsonl.zstd"), b"x").unwrap();
        s
    };
    let crashed = slot(dead);
    let running = slot(std::process::id());
    let store = Kind::JsonlZstd.open(&dir);
    assert!(
        !crashed.exists(),
        "the dead process's slot is swept at open"
    );
    assert!(running.exists(), "a running process's slot is left alone");
    assert_eq!(ids(&store), ["keep"]);
    store.close().unwrap();
}

/// The store's clock (`Store::with_backend`) gives the `createdAt` of every
/// header the store makes itself, and `prune`'s "now": a host (or a test)
/// that sets it gets reproducible headers, as it gets reproducible events.
fn the_store_clock_stamps_the_headers_it_makes(kind: Kind) {
    // In 2033: later than the JSONL logs' mtimes (their "updated"), too.
    const NOW: i64 = 2_000_000_123_456;
    let dir = TempDir::new("manage-clock");
    let config = kind.config(&dir);
    let backend = dsh_persist::store::open_backend(&config.backend).unwrap();
    let clock: dsh_persist::store::Clock = std::sync::Arc::new(|| NOW);
    let store = Store::with_backend(backend, config, Some(clock));
    stored(&store, "src", 2, 5);
    let created = |id: &str| {
        let h = store.list().unwrap().into_iter().find(|h| h.id == id);
        h.unwrap_or_else(|| panic!("{id} is not listed")).created_at
    };
    store.salvage("src", "salvaged").unwrap();
    assert_eq!(created("salvaged"), NOW as u64, "salvage");
    let line = turn_at(1, 0, 7)
        .iter()
        .map(|e| e.to_json())
        .collect::<Vec<_>>()
        .join("\n");
    store.import_jsonl("imported", &line).unwrap();
    assert_eq!(created("imported"), NOW as u64, "import without a header");
    let child = store.fork("src", Some(5), None).unwrap();
    assert_eq!(
        child.header().created_at,
        NOW as u64,
        "fork without a child header"
    );
    child.close().unwrap();
    // Every session was updated more than a day before the clock's now.
    let report = store
        .prune(
            &PruneOptions {
                older_than_ms: Some(86_400_000),
                dry_run: true,
                ..Default::default()
            },
            &mut |_, _| {},
        )
        .unwrap();
    assert!(
        report.to_json().contains("\"src\""),
        "prune measured age by the store's clock: {}",
        report.to_json()
    );
    store.close().unwrap();
}
