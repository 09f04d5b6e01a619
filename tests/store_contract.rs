//! The store contract (SPEC §6), written once and run against every backend:
//! JSONL zstd, JSONL raw, SQLite file, SQLite in memory and PostgreSQL (a
//! schema of its own per test on the server of `DSH_TEST_POSTGRES_URL`;
//! without it the PostgreSQL cases say so and skip).

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dsh_persist::backend::{
    Backend, BackendKind, Expect, Location, RawArtifact, Revision, ScannedSuffix, StoredLog,
};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::{HeaderSource, SessionHeader};
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, PostgresConfig, PruneOptions,
    SqliteConfig, Store, StoreConfig,
};
use dsh_persist::{Error, ErrorKind, Result};
use parking_lot::Mutex;
use serde_json::Value;
use support::TempDir;
use support::conv::{self, append_opts, complete_turn};

#[derive(Clone, Copy, Debug)]
enum Kind {
    JsonlZstd,
    JsonlRaw,
    SqliteFile,
    SqliteMemory,
    Postgres,
}

impl Kind {
    fn config(self, dir: &TempDir) -> StoreConfig {
        let backend = match self {
            Kind::JsonlZstd | Kind::JsonlRaw => {
                let mut c = JsonlConfig::new(dir.path().join("root"));
                if matches!(self, Kind::JsonlRaw) {
                    c.compression = Compression::None;
                }
                BackendConfig::Jsonl(c)
            }
            Kind::SqliteFile => BackendConfig::Sqlite(SqliteConfig::new(
                dir.path().join("sessions.db").display().to_string(),
            )),
            Kind::SqliteMemory => BackendConfig::Sqlite(SqliteConfig::new(":memory:")),
            Kind::Postgres => {
                // One schema per test directory, dropped with it.
                let url = std::env::var(support::pg::URL_ENV).unwrap();
                let name = dir
                    .path()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                let schema = format!(
                    "c{:016x}",
                    name.bytes()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b))
                            .wrapping_mul(0x100_0000_01b3))
                );
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

    /// A second, independent store on the same storage (not for memory).
    fn reopen(self, dir: &TempDir) -> Option<Store> {
        (!matches!(self, Kind::SqliteMemory)).then(|| self.open(dir))
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

/// Whole events for the cold `append` API: one open turn with an assistant
/// message holding two tool calls, only the first recorded as started.
fn open_turn_events() -> Vec<Event> {
    vec![
        ev(r#"{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}"#),
        ev(&format!(
            r#"{{"type":"user/message","seq":1,"time":11,"data":{},"surfaceOp":"append"}}"#,
            conv::user_message("u1", "go")
        )),
        ev(r#"{"type":"step/start","seq":2,"time":12,"data":{"turn":1,"step":1}}"#),
        ev(&format!(
            r#"{{"type":"assistant/message","seq":3,"time":13,"data":{},"surfaceOp":"append"}}"#,
            conv::assistant_message(1, 1, "a1", "two tools", &[("c1", "bash"), ("c2", "bash")])
        )),
        ev(&format!(
            r#"{{"type":"tool/call","seq":4,"time":14,"data":{}}}"#,
            conv::tool_call(1, 1, "c1")
        )),
    ]
}

fn closed_turn_events(turn: u64, first_seq: u64) -> Vec<Event> {
    let s = first_seq;
    vec![
        ev(&format!(
            r#"{{"type":"turn/start","seq":{s},"time":1,"data":{{"turn":{turn}}}}}"#
        )),
        ev(&format!(
            r#"{{"type":"user/message","seq":{},"time":2,"data":{},"surfaceOp":"append"}}"#,
            s + 1,
            conv::user_message(&format!("u{turn}"), "hello")
        )),
        ev(&format!(
            r#"{{"type":"turn/end","seq":{},"time":3,"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#,
            s + 2
        )),
    ]
}

fn revision(store: &Store, id: &str) -> Option<Revision> {
    store
        .list_snapshots()
        .unwrap()
        .into_iter()
        .find(|(h, _)| h.id == id)
        .map(|(_, r)| r)
}

fn json(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| support::parse(&e.to_json()))
        .collect()
}

// ---------------------------------------------------------------------------
// The contract

fn round_trip(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("rt")).unwrap();
    let n = complete_turn(&live, 1) + complete_turn(&live, 2);
    live.close().unwrap();
    let view = store.load("rt").unwrap();
    assert_eq!(view.events.len(), n);
    assert_eq!(view.header.id, "rt");
    assert_eq!(view.header.cwd.as_deref(), Some("/home/dev/project"));
    for (i, e) in view.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64);
    }
    // Cold append of whole events, in their own key order.
    let events = closed_turn_events(3, n as u64);
    store.append("rt", events.clone()).unwrap();
    let after = store.load("rt").unwrap();
    assert_eq!(json(&after.events[n..]), json(&events));
    assert_eq!(after.events[n].to_json(), events[0].to_json());
    if let Some(other) = kind.reopen(&dir) {
        let again = other.load("rt").unwrap();
        assert_eq!(json(&again.events), json(&after.events));
    }
    store.close().unwrap();
}

fn fractional_created_at_is_rejected_without_reserving(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let err =
        SessionHeader::parse(r#"{"id":"frac","createdAt":1.5}"#, HeaderSource::Host).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string()
            .contains("session metadata createdAt must be a non-negative safe integer")
    );
    let ok = SessionHeader::parse(r#"{"id":"frac","createdAt":2}"#, HeaderSource::Host).unwrap();
    store.create(ok.clone()).unwrap();
    assert_eq!(
        store.create(ok).unwrap_err().code(),
        Some("SESSION_ALREADY_EXISTS")
    );
}

fn open_turn_closed_on_load_not_on_inspect(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    store.create(header("open")).unwrap();
    store.append("open", open_turn_events()).unwrap();
    let before = revision(&store, "open").unwrap();
    let inspected = store.inspect("open").unwrap();
    assert_eq!(
        inspected.events.len(),
        5 + 4,
        "two tool results, step/end, turn/end"
    );
    assert_eq!(
        revision(&store, "open").unwrap(),
        before,
        "inspect writes nothing"
    );
    assert_eq!(
        store.read_from("open", 0).unwrap().events.len(),
        5,
        "closers live in memory only"
    );
    let loaded = store.load("open").unwrap();
    assert_eq!(json(&loaded.events), json(&inspected.events));
    assert_ne!(
        revision(&store, "open").unwrap(),
        before,
        "load commits the repair"
    );
    assert_eq!(store.read_from("open", 0).unwrap().events.len(), 9);
    // Now balanced: a second load changes nothing.
    let r = revision(&store, "open").unwrap();
    store.load("open").unwrap();
    assert_eq!(revision(&store, "open").unwrap(), r);
}

fn tool_repairs_carry_codes(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    store.create(header("tools")).unwrap();
    store.append("tools", open_turn_events()).unwrap();
    let v = store.load("tools").unwrap();
    let tail = json(&v.events[5..]);
    assert_eq!(tail[0]["type"], "tool/result");
    assert_eq!(tail[0]["data"]["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
    assert_eq!(tail[0]["data"]["error"]["name"], "ToolOutcomeUnknownError");
    assert_eq!(tail[0]["sourceEventSeqs"], serde_json::json!([4]));
    assert_eq!(
        tail[0]["data"]["message"]["id"],
        "interrupted-tool-result-c1-5"
    );
    assert_eq!(tail[1]["data"]["error"]["code"], "TOOL_NOT_STARTED");
    assert!(tail[1].get("sourceEventSeqs").is_none());
    assert_eq!(tail[2]["type"], "step/end");
    assert_eq!(tail[3]["type"], "turn/end");
    assert_eq!(tail[3]["data"]["reason"]["kind"], "interrupted");
    for t in &tail {
        assert_eq!(t["time"], 14, "closers reuse the last event's time");
    }
}

fn zero_event_sessions_are_not_listed(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    store.create(header("lazy")).unwrap();
    let live = store.start(header("lazy-live")).unwrap();
    live.close().unwrap();
    assert!(store.list().unwrap().is_empty());
    assert!(store.list_snapshots().unwrap().is_empty());
    assert_eq!(store.load("lazy").unwrap_err().kind(), ErrorKind::NotFound);
    store.append("lazy", closed_turn_events(1, 0)).unwrap();
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(ids, vec!["lazy".to_string()]);
}

fn read_from_suffixes(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("rf")).unwrap();
    let n = complete_turn(&live, 1) as i64;
    live.close().unwrap();
    for k in [0, 1, n / 2, n - 1] {
        let v = store.read_from("rf", k).unwrap();
        assert_eq!(v.events.len() as i64, n - k, "k={k}");
        assert_eq!(v.events[0].seq as i64, k);
    }
    assert!(store.read_from("rf", n).unwrap().events.is_empty());
    assert!(store.read_from("rf", n + 3).unwrap().events.is_empty());
    assert_eq!(
        store.read_from("rf", -1).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let missing = store.read_from("nope", 0).unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
    assert_eq!(missing.to_string(), "session \"nope\" not found");
}

fn revisions_are_stable_and_change_on_append(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    store.create(header("rev")).unwrap();
    store.append("rev", closed_turn_events(1, 0)).unwrap();
    let a = revision(&store, "rev").unwrap();
    store.inspect("rev").unwrap();
    store.read_from("rev", 0).unwrap();
    assert_eq!(revision(&store, "rev").unwrap(), a);
    store.append("rev", closed_turn_events(2, 3)).unwrap();
    let b = revision(&store, "rev").unwrap();
    assert_ne!(a, b);
    if let Some(other) = kind.reopen(&dir) {
        let c = revision(&other, "rev").unwrap();
        assert_eq!(
            c,
            revision(&other, "rev").unwrap(),
            "stable in another store too"
        );
    }
}

fn bad_append_batches_are_rejected(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    store.create(header("seqs")).unwrap();
    store.append("seqs", closed_turn_events(1, 0)).unwrap();
    let before = store.read_from("seqs", 0).unwrap().events.len();
    let e = store.append("seqs", closed_turn_events(2, 5)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // The original's wording (DIFFERENCES A.3).
    assert!(
        e.to_string()
            .contains("append seq mismatch for \"seqs\": expected 3 at index 0, got 5"),
        "{e}"
    );
    let mut gap = closed_turn_events(2, 3);
    gap[2].seq = 9;
    let e = store.append("seqs", gap).unwrap_err();
    assert!(
        e.to_string()
            .contains("append seq mismatch for \"seqs\": expected 5 at index 2, got 9"),
        "{e}"
    );
    assert_eq!(
        store.read_from("seqs", 0).unwrap().events.len(),
        before,
        "nothing written"
    );
    assert_eq!(
        store
            .append("missing", closed_turn_events(1, 0))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
}

fn non_lossless_data_is_rejected_naming_the_type(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("lossless")).unwrap();
    for bad in [
        r#"{"x":-0}"#,
        r#"{"x":1e400}"#,
        r#"{"x":NaN}"#,
        r#"{"a":1,"a":2}"#,
    ] {
        let e = live
            .append("session/title", bad, &AppendOptions::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let m = e.to_string();
        assert!(
            m.contains("session/title") && m.contains("losslessly JSON-serializable"),
            "{bad}: {m}"
        );
    }
    assert_eq!(live.len(), 0, "nothing was committed");
    // Canonicalized like JSON.stringify.
    live.append(
        "session/title",
        r#"{ "b" : 1.0, "a" : "\u0041" }"#,
        &AppendOptions::default(),
    )
    .unwrap();
    assert_eq!(live.events(0)[0].data.as_str(), r#"{"b":1,"a":"A"}"#);
    live.close().unwrap();
    store.create(header("lossless-cold")).unwrap();
    let e = store
        .append_json(
            "lossless-cold",
            r#"[{"type":"session/title","seq":0,"time":0,"data":{"n":-0.0}}]"#,
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("losslessly JSON-serializable"),
        "{e}"
    );
}

/// Record types that are not event types (the packed-row tags, SPEC §2,
/// and the legacy types a read converts, §1.8) are refused by a live
/// append, ignorable or not: a reader would take such a record for a row
/// or convert it. A whole-event append refuses the row tags (legacy
/// events are taken there, converted as a load converts them). Nothing is
/// committed or written.
fn reserved_types_are_refused_by_every_append(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("reserved")).unwrap();
    let ignorable = AppendOptions {
        ignorable: true,
        ..AppendOptions::default()
    };
    let row_tags = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];
    let legacy = ["steering/message", "request/header-delta", "mode/set"];
    for name in row_tags.iter().chain(&legacy) {
        for options in [&AppendOptions::default(), &ignorable] {
            let e = live.append(name, "{}", options).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}");
            assert!(
                e.to_string().contains(&format!(
                    "event type \"{name}\" is reserved by the storage format"
                )),
                "{name}: {e}"
            );
        }
    }
    assert_eq!(live.len(), 0, "nothing was committed");
    assert!(live.is_empty());
    live.append(
        "session/title",
        r#"{"title":"t"}"#,
        &AppendOptions::default(),
    )
    .unwrap();
    assert!(!live.is_empty());
    live.close().unwrap();
    assert_eq!(store.load("reserved").unwrap().events.len(), 1);

    store.create(header("reserved-cold")).unwrap();
    for (name, flag) in row_tags
        .iter()
        .flat_map(|n| [(n, ""), (n, r#","ignorable":true"#)])
    {
        let e = store
            .append_json(
                "reserved-cold",
                &format!(r#"[{{"type":"{name}","seq":0,"time":0,"data":{{}}{flag}}}]"#),
            )
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}");
        assert!(
            e.to_string().contains(&format!(
                "event type \"{name}\" at seq 0 is reserved by the storage format"
            )),
            "{name}: {e}"
        );
    }
    store
        .append_json(
            "reserved-cold",
            r#"[{"type":"session/title","seq":0,"time":0,"data":{"title":"t"}}]"#,
        )
        .unwrap();
    let loaded = store.load("reserved-cold").unwrap();
    assert_eq!(json(&loaded.events).len(), 1, "only the title was written");
}

fn live_load_of_balanced_and_open_turns(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("liveload")).unwrap();
    complete_turn(&live, 1);
    let v = store.load("liveload").unwrap();
    assert_eq!(
        v.events.len() as u64,
        live.len(),
        "a balanced live session loads"
    );
    assert_eq!(live.pending_len(), 0, "load flushed the live session");
    live.append("turn/start", r#"{"turn":2}"#, &AppendOptions::default())
        .unwrap();
    let e = store.load("liveload").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    assert!(e.to_string().contains("open turn"), "{e}");
    let ins = store.inspect("liveload").unwrap();
    assert_eq!(
        ins.events.len() as u64,
        live.len(),
        "inspect shows the live snapshot, open turn included"
    );
    live.close().unwrap();
    // Closed: now cold, so load closes the turn synthetically.
    let v = store.load("liveload").unwrap();
    assert_eq!(v.events.last().unwrap().type_str(), "turn/end");
}

/// Wraps a backend to count reads and appends.
struct Counting {
    inner: Arc<dyn Backend>,
    reads: AtomicUsize,
    appends: AtomicUsize,
    fail_appends: AtomicUsize,
    batches: Mutex<Vec<usize>>,
}

impl Counting {
    fn new(inner: Arc<dyn Backend>) -> Arc<Counting> {
        Arc::new(Counting {
            inner,
            reads: AtomicUsize::new(0),
            appends: AtomicUsize::new(0),
            fail_appends: AtomicUsize::new(0),
            batches: Mutex::new(Vec::new()),
        })
    }
}

impl Backend for Counting {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn locate(&self, header: &SessionHeader) -> Result<Option<Location>> {
        self.inner.locate(header)
    }
    fn list(&self) -> Result<dsh_persist::model::session_list::SessionList> {
        self.inner.list()
    }
    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        self.inner.list_snapshots()
    }
    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        self.inner.revision(id)
    }
    fn append(
        &self,
        header: &SessionHeader,
        events: &[Event],
        expect: Expect<'_>,
    ) -> Result<Revision> {
        self.appends.fetch_add(1, Ordering::SeqCst);
        if self.fail_appends.load(Ordering::SeqCst) > 0 {
            self.fail_appends.fetch_sub(1, Ordering::SeqCst);
            return Err(Error::io_msg("injected write failure"));
        }
        let r = self.inner.append(header, events, expect)?;
        self.batches.lock().push(events.len());
        Ok(r)
    }
    fn read(&self, id: &str) -> Result<Option<StoredLog>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read(id)
    }
    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>> {
        self.inner.read_from(id, from_seq)
    }
    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision> {
        self.inner.commit_repair(id, log, closers)
    }
    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>> {
        self.inner.read_raw(id)
    }
    fn lock_writer(&self, id: &str) -> Result<dsh_persist::backend::WriterLock> {
        self.inner.lock_writer(id)
    }
    fn writer_holder(&self, id: &str) -> Result<Option<dsh_persist::backend::WriterHolder>> {
        self.inner.writer_holder(id)
    }
}

fn counting_store(kind: Kind, dir: &TempDir, delay_ms: u64) -> (Arc<Counting>, Store) {
    let mut config = kind.config(dir);
    config.write_batch_max_delay_ms = delay_ms;
    let backend = dsh_persist::store::open_backend(&config.backend).unwrap();
    let counting = Counting::new(backend);
    let store = Store::with_backend(counting.clone(), config, None);
    (counting, store)
}

fn prepare_reuses_inspection_until_an_external_append(kind: Kind) {
    let dir = TempDir::new("contract");
    let (counting, store) = counting_store(kind, &dir, 20);
    store.create(header("prep")).unwrap();
    store.append("prep", open_turn_events()).unwrap();
    store.inspect("prep").unwrap();
    let reads = counting.reads.load(Ordering::SeqCst);
    store.inspect("prep").unwrap();
    assert_eq!(
        counting.reads.load(Ordering::SeqCst),
        reads,
        "inspect reuses the retained inspection"
    );
    let prepared = store.prepare("prep").unwrap();
    assert_eq!(
        counting.reads.load(Ordering::SeqCst),
        reads,
        "prepare reuses it too"
    );
    assert_eq!(prepared.events().len(), 9, "with the repair committed");
    assert_eq!(
        store.prepare("prep").err().unwrap().kind(),
        ErrorKind::Conflict,
        "the id is reserved"
    );
    drop(prepared); // releases the reservation
    let Some(other) = kind.reopen(&dir) else {
        return;
    };
    store.inspect("prep").unwrap();
    let reads = counting.reads.load(Ordering::SeqCst);
    other.append("prep", closed_turn_events(2, 9)).unwrap();
    let prepared = store.prepare("prep").unwrap();
    assert_eq!(
        counting.reads.load(Ordering::SeqCst),
        reads + 1,
        "a stale inspection is re-read"
    );
    assert_eq!(prepared.events().len(), 12);
    let live = store.publish(prepared).unwrap();
    assert_eq!(live.events(12)[0].type_str(), "session/end-seed");
    live.close().unwrap();
    assert_eq!(store.load("prep").unwrap().events.len(), 13);
}

fn resume_and_fork(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("parent")).unwrap();
    let n = complete_turn(&live, 1) as u64;
    live.append("turn/start", r#"{"turn":2}"#, &AppendOptions::default())
        .unwrap();
    live.flush().unwrap();
    // Fork a live source at the end of turn 1.
    let mut child = header("child");
    child.cwd = Some("/elsewhere".into());
    let forked = store
        .fork("parent", Some(n as i64 - 1), Some(child))
        .unwrap();
    assert_eq!(forked.header().parent_session.as_deref(), Some("parent"));
    assert_eq!(forked.header().seed_length, Some(n));
    assert_eq!(forked.header().cwd.as_deref(), Some("/home/dev/project"));
    assert_eq!(forked.events(n)[0].type_str(), "session/end-seed");
    let e = store.fork("parent", None, None).err().unwrap();
    assert_eq!(e.code(), Some("OPEN_TURN"));
    let e = store.fork("parent", Some(999), None).err().unwrap();
    assert_eq!(e.code(), Some("INVALID_BOUNDARY"));
    let e = store.fork("ghost", None, None).err().unwrap();
    assert_eq!(e.code(), Some("SESSION_NOT_FOUND"));
    let e = store
        .fork("parent", Some(n as i64 - 1), Some(header("child")))
        .err()
        .unwrap();
    assert_eq!(e.code(), Some("SESSION_ALREADY_EXISTS"));
    forked.close().unwrap();
    let child_view = store.load("child").unwrap();
    assert_eq!(child_view.events.len() as u64, n + 1);
    // Crash the parent mid-turn (drop without close still drains), then resume.
    live.close().unwrap();
    let resumed = store.resume("parent").unwrap();
    let ev = resumed.events(0);
    assert_eq!(
        ev[ev.len() - 2].type_str(),
        "turn/end",
        "repair closed turn 2"
    );
    assert_eq!(ev.last().unwrap().type_str(), "session/end-seed");
    resumed
        .append("turn/start", r#"{"turn":3}"#, &AppendOptions::default())
        .unwrap();
    resumed.close().unwrap();
    let v = store.inspect("parent").unwrap();
    assert_eq!(
        v.events.last().unwrap().type_str(),
        "turn/end",
        "inspect closes turn 3 in memory"
    );
}

fn write_behind_batches_one_window(kind: Kind) {
    let dir = TempDir::new("contract");
    let (counting, store) = counting_store(kind, &dir, 60_000);
    let live = store.start(header("wb")).unwrap();
    let n = complete_turn(&live, 1);
    assert_eq!(
        counting.appends.load(Ordering::SeqCst),
        0,
        "appends never wait for disk"
    );
    live.flush().unwrap();
    assert_eq!(*counting.batches.lock(), vec![n], "one window, one batch");
    live.close().unwrap();
    // A short window writes by itself.
    let dir2 = TempDir::new("contract");
    let (counting, store) = counting_store(kind, &dir2, 15);
    let live = store.start(header("wb2")).unwrap();
    let n = complete_turn(&live, 1);
    let start = std::time::Instant::now();
    while live.written().1 < n as u64 {
        assert!(start.elapsed().as_secs() < 10, "the window never fired");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert_eq!(counting.batches.lock().iter().sum::<usize>(), n);
    live.close().unwrap();
}

fn write_failures_are_retained_and_retried(kind: Kind) {
    let dir = TempDir::new("contract");
    let (counting, store) = counting_store(kind, &dir, 60_000);
    let live = store.start(header("fail")).unwrap();
    // Told once per failure episode (SPEC §6.1), not once per failed try.
    let told = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = told.clone();
    live.set_error_callback(Some(Arc::new(move |e: &Error| {
        sink.lock().push(e.to_string())
    })));
    let n = complete_turn(&live, 1);
    counting.fail_appends.store(2, Ordering::SeqCst);
    let e = live.flush().unwrap_err();
    assert!(e.to_string().contains("injected write failure"));
    assert_eq!(live.pending_len(), n, "events kept in order");
    assert!(
        live.background_error().is_some(),
        "the failure is retrievable"
    );
    live.flush().unwrap_err();
    assert_eq!(live.pending_len(), n, "events kept in order");
    {
        let told = told.lock();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("injected write failure"), "{told:?}");
    }
    live.flush().unwrap(); // resolved: a new failure is a new episode
    assert!(live.background_error().is_none(), "resolved by the retry");
    complete_turn(&live, 2);
    counting.fail_appends.store(1, Ordering::SeqCst);
    live.flush().unwrap_err();
    assert_eq!(told.lock().len(), 2, "a second episode is told");
    live.close().unwrap(); // close retries at once
    assert!(live.background_error().is_none(), "resolved by the retry");
    assert_eq!(store.load("fail").unwrap().events.len(), 2 * n);
}

fn close_drains_everything(kind: Kind) {
    let dir = TempDir::new("contract");
    let (_, store) = counting_store(kind, &dir, 60_000);
    let a = store.start(header("drain-a")).unwrap();
    let b = store.start(header("drain-b")).unwrap();
    let n = complete_turn(&a, 1);
    complete_turn(&b, 1);
    store.close().unwrap();
    assert_eq!(
        a.append("session/title", "{}", &AppendOptions::default())
            .unwrap_err()
            .kind(),
        ErrorKind::Closed
    );
    if let Some(other) = kind.reopen(&dir) {
        assert_eq!(other.list().unwrap().len(), 2);
        assert_eq!(other.load("drain-a").unwrap().events.len(), n);
    }
}

/// Dropping the last handle of a live session that was never closed
/// drains it (the fallback of a host that forgets `close`): its events are
/// durable and its id is free again. A clone keeps it live.
fn dropping_the_last_handle_drains_and_releases(kind: Kind) {
    let dir = TempDir::new("contract");
    let (_, store) = counting_store(kind, &dir, 60_000);
    let live = store.start(header("dropped")).unwrap();
    let n = complete_turn(&live, 1);
    let clone = live.clone();
    drop(live);
    assert!(store.is_live("dropped"), "a clone keeps it live");
    assert_eq!(clone.pending_len(), n, "nothing written yet (60 s window)");
    drop(clone);
    assert!(!store.is_live("dropped"));
    assert_eq!(store.load("dropped").unwrap().events.len(), n);
    let resumed = store.resume("dropped").unwrap();
    resumed.close().unwrap();
    if let Some(other) = kind.reopen(&dir) {
        assert_eq!(other.load("dropped").unwrap().events.len(), n + 1);
    }
}

fn threads_append_to_many_sessions(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let live = store.start(header(&format!("thread-{t}"))).unwrap();
                let mut n = 0;
                for turn in 1..=5 {
                    n += complete_turn(&live, turn);
                    if turn % 2 == 0 {
                        live.flush().unwrap();
                    }
                }
                live.close().unwrap();
                n
            })
        })
        .collect();
    let counts: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for (t, n) in counts.iter().enumerate() {
        let v = store.load(&format!("thread-{t}")).unwrap();
        assert_eq!(v.events.len(), *n, "thread {t} lost events");
    }
    assert_eq!(store.list().unwrap().len(), 8);
}

/// Appends racing a close: each one either is acknowledged, then in the
/// snapshot and on disk, or is refused as closed and appears nowhere.
fn appends_racing_a_close_are_all_or_nothing(kind: Kind) {
    let dir = TempDir::new("contract");
    let (_, store) = counting_store(kind, &dir, 1);
    for round in 0..4 {
        let id = format!("race-{round}");
        let live = store.start(header(&id)).unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        let appenders: Vec<_> = (0..3)
            .map(|t| {
                let (live, acked) = (live.clone(), acked.clone());
                std::thread::spawn(move || {
                    let mut seqs = Vec::new();
                    loop {
                        let data = format!(r#"{{"title":"t{t}-{}"}}"#, seqs.len());
                        match live.append("session/title", &data, &AppendOptions::default()) {
                            Ok(seq) => {
                                seqs.push((seq, data));
                                acked.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(e) => {
                                assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                                return seqs;
                            }
                        }
                    }
                })
            })
            .collect();
        while acked.load(Ordering::SeqCst) < 50 * (round + 1)
            && !appenders.iter().any(|h| h.is_finished())
        {
            std::thread::yield_now();
        }
        live.close().unwrap();
        let mut seqs: Vec<(u64, String)> = appenders
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        seqs.sort();
        let snapshot = live.snapshot();
        let stored = store.load(&id).unwrap().events;
        assert_eq!(snapshot.len(), seqs.len(), "round {round}: snapshot");
        assert_eq!(stored.len(), seqs.len(), "round {round}: stored");
        for (i, (seq, data)) in seqs.iter().enumerate() {
            assert_eq!(*seq, i as u64, "round {round}: seqs are dense");
            assert_eq!(snapshot[i].data.as_str(), data, "round {round}, seq {seq}");
            assert_eq!(stored[i].data.as_str(), data, "round {round}, seq {seq}");
        }
        // The append state saved at close continues the log as stored.
        let n = seqs.len();
        store
            .append_json(
                &id,
                &format!(r#"[{{"type":"session/title","seq":{n},"time":0,"data":{{}}}}]"#),
            )
            .unwrap_or_else(|e| panic!("round {round}: a cold append after the close: {e}"));
        assert_eq!(store.load(&id).unwrap().events.len(), n + 1);
    }
}

/// A store holding the session "source" of one complete turn, and the
/// number of its events.
fn store_with_source(kind: Kind, dir: &TempDir) -> (Store, usize) {
    let store = kind.open(dir);
    let source = store.start(header("source")).unwrap();
    let n = complete_turn(&source, 1);
    source.close().unwrap();
    (store, n)
}

/// Forks racing the store's close: each one either returns a live session
/// whose seed (and end-seed marker) `close` made durable, or is refused as
/// closed with nothing stored.
fn forks_racing_a_store_close_are_drained_or_refused(kind: Kind) {
    for round in 0..4 {
        let dir = TempDir::new("contract");
        let (store, seed_len) = store_with_source(kind, &dir);
        let started = Arc::new(AtomicUsize::new(0));
        let forker = {
            let (store, started) = (store.clone(), started.clone());
            std::thread::spawn(move || {
                let mut outcomes = Vec::new();
                for i in 0.. {
                    let id = format!("fork-{i}");
                    let result = store.fork("source", None, Some(header(&id)));
                    started.fetch_add(1, Ordering::SeqCst);
                    match result {
                        Ok(live) => outcomes.push((id, Some(live))),
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::Closed, "{id}: {e}");
                            outcomes.push((id, None));
                            return outcomes;
                        }
                    }
                }
                unreachable!()
            })
        };
        while started.load(Ordering::SeqCst) < 3 + round && !forker.is_finished() {
            std::thread::yield_now();
        }
        store.close().unwrap();
        let outcomes = forker.join().unwrap();
        // Read before the live handles go (dropping one drains it too).
        if let Some(other) = kind.reopen(&dir) {
            for (id, live) in &outcomes {
                match (live, other.load(id)) {
                    (Some(_), Ok(view)) => assert_eq!(
                        view.events.len(),
                        seed_len + 1,
                        "round {round}: {id}: its seed and marker"
                    ),
                    (Some(_), Err(e)) => {
                        panic!("round {round}: {id} was started but not drained by close: {e}")
                    }
                    (None, Ok(_)) => panic!("round {round}: {id} was refused but stored"),
                    (None, Err(e)) => assert_eq!(e.kind(), ErrorKind::NotFound, "{id}: {e}"),
                }
            }
        }
        drop(outcomes);
    }
}

/// A stored session of one `session/title` event (seq 0), written cold.
fn stored_title_session(store: &Store, id: &str) {
    store.create(header(id)).unwrap();
    store.append(id, vec![title_event(0)]).unwrap();
}

fn title_event(seq: u64) -> Event {
    ev(&format!(
        r#"{{"type":"session/title","seq":{seq},"time":{seq},"data":{{"title":"t{seq}"}}}}"#
    ))
}

/// Runs `op(i)` for i = 0, 1, … until it is refused as closed (any other
/// error fails the test) or `limit` is reached; `done` counts the
/// successes as they happen. Returns the indices that succeeded.
fn until_closed(
    limit: usize,
    done: Arc<AtomicUsize>,
    what: &'static str,
    op: impl Fn(usize) -> Result<()> + Send + 'static,
) -> std::thread::JoinHandle<Vec<usize>> {
    std::thread::spawn(move || {
        let mut ok = Vec::new();
        for i in 0..limit {
            match op(i) {
                Ok(()) => {
                    ok.push(i);
                    done.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Closed, "{what} {i}: {e}");
                    break;
                }
            }
        }
        ok
    })
}

/// Cold appends, deletes and salvages racing the store's close: each one
/// either took effect (and a second store sees it) or was refused as closed
/// and changed nothing.
fn management_racing_a_store_close_is_done_or_refused(kind: Kind) {
    const DELETABLE: usize = 40;
    for round in 0..3 {
        let dir = TempDir::new("contract");
        let (store, source_len) = store_with_source(kind, &dir);
        stored_title_session(&store, "cold");
        for i in 0..DELETABLE {
            stored_title_session(&store, &format!("del-{i}"));
        }
        let counters: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::default()).collect();
        let appender = {
            let store = store.clone();
            until_closed(100_000, counters[0].clone(), "cold append", move |i| {
                store.append("cold", vec![title_event(i as u64 + 1)])
            })
        };
        let deleter = {
            let store = store.clone();
            until_closed(DELETABLE, counters[1].clone(), "delete", move |i| {
                store.delete(&format!("del-{i}"))
            })
        };
        let salvager = {
            let store = store.clone();
            until_closed(100_000, counters[2].clone(), "salvage", move |i| {
                store.salvage("source", &format!("salv-{i}")).map(|r| {
                    assert_eq!(r.kept_events, source_len);
                })
            })
        };
        // Close once each has done a few (or one has stopped: a failure
        // is then reported by its join, not hidden by a wait).
        while counters
            .iter()
            .any(|c| c.load(Ordering::SeqCst) < 2 + 3 * round)
            && ![&appender, &deleter, &salvager]
                .iter()
                .any(|h| h.is_finished())
        {
            std::thread::yield_now();
        }
        store.close().unwrap();
        let appended = appender.join().unwrap();
        let deleted = deleter.join().unwrap();
        let salvaged = salvager.join().unwrap();
        let Some(other) = kind.reopen(&dir) else {
            continue;
        };
        let cold = other.load("cold").unwrap().events;
        assert_eq!(
            cold.len(),
            appended.len() + 1,
            "round {round}: acknowledged cold appends"
        );
        // The next append continues the log as stored.
        other
            .append("cold", vec![title_event(cold.len() as u64)])
            .unwrap_or_else(|e| panic!("round {round}: appending after the close: {e}"));
        for i in 0..DELETABLE {
            let id = format!("del-{i}");
            match other.load(&id) {
                Ok(view) => {
                    assert!(
                        !deleted.contains(&i),
                        "round {round}: {id} deleted but stored"
                    );
                    assert_eq!(view.events.len(), 1, "round {round}: {id}");
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::NotFound, "{id}: {e}");
                    assert!(deleted.contains(&i), "round {round}: {id} lost");
                }
            }
        }
        for i in 0..=salvaged.len() {
            let id = format!("salv-{i}");
            match other.load(&id) {
                Ok(view) => {
                    assert!(i < salvaged.len(), "round {round}: {id} refused but stored");
                    assert_eq!(view.events.len(), source_len, "round {round}: {id}");
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::NotFound, "{id}: {e}");
                    assert!(i == salvaged.len(), "round {round}: {id} lost");
                }
            }
        }
        other.close().unwrap();
    }
}

/// A prune the store's close interrupts: what it reports deleted is gone,
/// every other session is intact, and what it could not delete is reported
/// failed as closed.
fn prune_interrupted_by_a_store_close_reports_what_it_did(kind: Kind) {
    const SESSIONS: usize = 30;
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    for i in 0..SESSIONS {
        stored_title_session(&store, &format!("old-{i:02}"));
    }
    let progressed = Arc::new(AtomicUsize::new(0));
    let pruner = {
        let (store, progressed) = (store.clone(), progressed.clone());
        std::thread::spawn(move || {
            let options = PruneOptions {
                keep_newest: Some(0),
                ..PruneOptions::default()
            };
            store.prune(&options, &mut |done, _| {
                progressed.store(done, Ordering::SeqCst);
            })
        })
    };
    while progressed.load(Ordering::SeqCst) < 5 && !pruner.is_finished() {
        std::thread::yield_now();
    }
    store.close().unwrap();
    let report = pruner.join().unwrap().unwrap();
    assert!(report.busy.is_empty(), "{:?}", report.busy);
    for (id, why) in &report.failed {
        assert!(why.contains("closed"), "{id}: {why}");
    }
    assert!(report.deleted.len() >= 5);
    assert_eq!(report.deleted.len() + report.failed.len(), SESSIONS);
    let Some(other) = kind.reopen(&dir) else {
        return;
    };
    let gone: Vec<&str> = report.deleted.iter().map(|s| s.id.as_str()).collect();
    for i in 0..SESSIONS {
        let id = format!("old-{i:02}");
        match other.load(&id) {
            Ok(view) => {
                assert!(!gone.contains(&id.as_str()), "{id} reported deleted");
                assert_eq!(view.events.len(), 1, "{id}");
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::NotFound, "{id}: {e}");
                assert!(gone.contains(&id.as_str()), "{id} lost");
            }
        }
    }
    other.close().unwrap();
}

fn surface_rules_apply_to_live_appends(kind: Kind) {
    let dir = TempDir::new("contract");
    let store = kind.open(&dir);
    let live = store.start(header("surface")).unwrap();
    live.append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())
        .unwrap();
    let e = live
        .append(
            "user/message",
            &conv::user_message("u", "x"),
            &AppendOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("requires a surfaceOp marker"), "{e}");
    let e = live
        .append("turn/start", r#"{"turn":2}"#, &AppendOptions::default())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = live
        .append("future/thing", "{}", &AppendOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("unknown"), "{e}");
    let ign = AppendOptions {
        ignorable: true,
        ..Default::default()
    };
    live.append("future/thing", "{}", &ign).unwrap();
    live.append(
        "user/message",
        &conv::user_message("u", "x"),
        &append_opts(),
    )
    .unwrap();
    assert_eq!(live.messages().len(), 1);
    live.close().unwrap();
}

macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod jsonl_zstd { $( #[test] fn $name() { super::$name(super::Kind::JsonlZstd) } )* }
        mod jsonl_raw { $( #[test] fn $name() { super::$name(super::Kind::JsonlRaw) } )* }
        mod sqlite_file { $( #[test] fn $name() { super::$name(super::Kind::SqliteFile) } )* }
        mod sqlite_memory { $( #[test] fn $name() { super::$name(super::Kind::SqliteMemory) } )* }
        mod postgres { $( #[test] fn $name() {
            if super::support::pg::url(concat!("store_contract postgres::", stringify!($name))).is_some() {
                super::$name(super::Kind::Postgres)
            }
        } )* }
    };
}

contract!(
    round_trip,
    fractional_created_at_is_rejected_without_reserving,
    open_turn_closed_on_load_not_on_inspect,
    tool_repairs_carry_codes,
    zero_event_sessions_are_not_listed,
    read_from_suffixes,
    revisions_are_stable_and_change_on_append,
    bad_append_batches_are_rejected,
    non_lossless_data_is_rejected_naming_the_type,
    reserved_types_are_refused_by_every_append,
    live_load_of_balanced_and_open_turns,
    prepare_reuses_inspection_until_an_external_append,
    resume_and_fork,
    write_behind_batches_one_window,
    write_failures_are_retained_and_retried,
    close_drains_everything,
    dropping_the_last_handle_drains_and_releases,
    threads_append_to_many_sessions,
    appends_racing_a_close_are_all_or_nothing,
    forks_racing_a_store_close_are_drained_or_refused,
    management_racing_a_store_close_is_done_or_refused,
    prune_interrupted_by_a_store_close_reports_what_it_did,
    surface_rules_apply_to_live_appends,
);
