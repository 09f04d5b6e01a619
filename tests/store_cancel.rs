//! Cancellation of long reads (issue 18) on every backend: a load of a
//! 100k-event log cancelled in the middle of its read returns `Cancelled`
//! and changes nothing (the pending repair is not committed, the stored
//! bytes or rows are as they were), and the same load without a token then
//! repairs; inspect, read_from, list and list_snapshots likewise.

mod support;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    AppendOptions, BackendConfig, Cancel, Compression, JsonlConfig, PostgresConfig, SqliteConfig,
    Store, StoreConfig,
};
use support::TempDir;
use support::conv::{append_opts, complete_turn, user_message};

/// Events in the big log (whole turns of 15, then an open turn of 2).
const EVENTS: usize = 100_000;

#[derive(Clone, Copy, Debug)]
enum Kind {
    JsonlZstd,
    JsonlRaw,
    Sqlite,
    Postgres,
}

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
            let url = support::pg::url("store_cancel")?;
            let schema = support::pg::unique_schema("cancel");
            let (u, s) = (url.clone(), schema.clone());
            dir.on_drop_once("pg-schema", move || support::pg::drop_schema(&u, &s));
            BackendConfig::Postgres(PostgresConfig::new(url).with_schema(schema))
        }
    };
    Some(StoreConfig::with_backend(backend))
}

/// What is stored, byte for byte: every file under the dir (JSONL, SQLite)
/// or the rows (PostgreSQL: seq and type of every event).
fn stored_state(store: &Store, dir: &TempDir, id: &str) -> String {
    if let BackendConfig::Postgres(_) = store.config().backend {
        let v = store.read_from(id, 0).unwrap();
        return format!(
            "{} events, last {:?}",
            v.events.len(),
            v.events.last().map(|e| e.event_type())
        );
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let bytes = std::fs::read(e.path()).unwrap();
                let name = e.path().display().to_string();
                if name.ends_with("-shm") {
                    continue; // SQLite's shared-memory index, rewritten by any reader
                }
                out.push(format!("{name} {} {:x}", bytes.len(), fnv(&bytes)));
            }
        }
    }
    out.sort();
    out.join("\n")
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A 100k-event log whose last turn is open: a cold load must repair it
/// (append the closers), so a load that is not cancelled writes.
fn big_open_log(store: &Store, id: &str) -> usize {
    let mut h = SessionHeader::new(id, 1_785_000_000_000);
    h.cwd = Some("/home/dev/project".into());
    let s = store.start(h).unwrap();
    let mut n = 0;
    let mut turn = 1;
    while n + 15 + 2 <= EVENTS {
        n += complete_turn(&s, turn);
        turn += 1;
    }
    let none = AppendOptions::default();
    s.append("turn/start", &format!(r#"{{"turn":{turn}}}"#), &none)
        .unwrap();
    s.append(
        "user/message",
        &user_message("last", "go on"),
        &append_opts(),
    )
    .unwrap();
    n += 2;
    s.close().unwrap();
    n
}

fn check(kind: Kind) {
    let dir = TempDir::new("store-cancel");
    let Some(config) = config(kind, &dir) else {
        eprintln!("SKIPPED {kind:?}: no PostgreSQL server");
        return;
    };
    let store = Store::open(config).unwrap();
    let id = "cancel-big";
    let n = big_open_log(&store, id);
    let before = stored_state(&store, &dir, id);

    // Cancelled in the read (the 2nd checkpoint: the call's entry is the
    // first, the read's first frame, line stretch or row the second; how
    // many frames a log has depends on the write batching).
    for (what, r) in [
        (
            "load",
            store
                .load_with_cancel(id, &Cancel::after_checkpoints(2))
                .map(|_| ()),
        ),
        (
            "inspect",
            store
                .inspect_with_cancel(id, &Cancel::after_checkpoints(2))
                .map(|_| ()),
        ),
        (
            "read_from",
            store
                .read_from_with_cancel(id, 10, &Cancel::after_checkpoints(2))
                .map(|_| ()),
        ),
        (
            "resume",
            store
                .resume_with_cancel(id, &Cancel::after_checkpoints(2))
                .map(|_| ()),
        ),
    ] {
        let e = r.expect_err(what);
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{kind:?} {what}: {e}");
        assert!(e.to_string().contains("cancelled"), "{e}");
        assert_eq!(
            stored_state(&store, &dir, id),
            before,
            "{kind:?} {what} changed the store"
        );
    }
    // Cancelled before it starts: lists too.
    let done = Cancel::new();
    done.cancel();
    for (what, r) in [
        ("list", store.list_with_cancel(&done).map(|_| ())),
        (
            "list_snapshots",
            store.list_snapshots_with_cancel(&done).map(|_| ()),
        ),
        (
            "read_raw",
            store.read_raw_with_cancel(id, &done).map(|_| ()),
        ),
        ("load", store.load_with_cancel(id, &done).map(|_| ())),
    ] {
        assert_eq!(
            r.expect_err(what).kind(),
            ErrorKind::Cancelled,
            "{kind:?} {what}"
        );
    }
    assert_eq!(stored_state(&store, &dir, id), before);

    // An inspection that is cached is not lost by a cancelled load.
    let viewed = store.inspect(id).unwrap();
    let closers = viewed.events.len() - n;
    assert!(closers > 0, "the open turn is closed in memory");
    let e = store.load_with_cancel(id, &done).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled);
    assert_eq!(stored_state(&store, &dir, id), before);

    // Not cancelled: the load repairs (the closers are committed).
    let token = Cancel::new();
    let loaded = store.load_with_cancel(id, &token).unwrap();
    assert_eq!(loaded.events.len(), n + closers);
    assert_ne!(
        stored_state(&store, &dir, id),
        before,
        "{kind:?}: load repaired"
    );
    assert_eq!(store.list_with_cancel(&token).unwrap().len(), 1);
    assert_eq!(store.list_snapshots_with_cancel(&token).unwrap().len(), 1);
    let tail = store.read_from_with_cancel(id, n as i64, &token).unwrap();
    assert_eq!(tail.events.len(), closers);
    store.close().unwrap();
}

#[test]
fn cancel_jsonl_zstd() {
    check(Kind::JsonlZstd);
}

#[test]
fn cancel_jsonl_raw() {
    check(Kind::JsonlRaw);
}

#[test]
fn cancel_sqlite() {
    check(Kind::Sqlite);
}

#[test]
fn cancel_postgres() {
    check(Kind::Postgres);
}
