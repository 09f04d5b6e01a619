//! Fault injection (feature `fault-injection`): every I/O call of a scenario
//! fails in turn.
//!
//! For each backend (JSONL zstd, JSONL raw, SQLite file) and each scenario,
//! a counting run finds the number of I/O calls C; then for every N in
//! 1..=C the scenario runs with call N failing (once, and "sticky": N and
//! every later call fail, so rollbacks fail too). Checks:
//!
//! - the operation that hit the fault returned an error (never a panic, never
//!   a silent success — except the best-effort removal of a temp file);
//! - a fresh store over a copy of the files, taken right after the failure,
//!   loads exactly the events whose append/flush succeeded (byte-identical),
//!   plus the closers of an open turn; nothing half-written: with a single
//!   fault a JSONL log is exactly as long as after the last success. Under
//!   a sticky fault, where the rollback itself fails, the failed batch may
//!   survive only as whole records (a prefix of it) or as a torn tail the
//!   load cuts;
//! - with a single fault, retrying the failed operation on the same store
//!   and finishing the scenario ends in exactly the log of a fault-free run.
//!
//! Run: `cargo test --features fault-injection --test fault_injection`.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use dsh_persist::backend::Location;
use dsh_persist::fault::{self, Op, Plan};
use dsh_persist::model::event::{Event, EventType};
use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::json::JsonText;
use dsh_persist::model::repair::closers;
use dsh_persist::store::{
    BackendConfig, Compression, JsonlConfig, LiveSession, SqliteConfig, Store, StoreConfig,
    open_backend,
};
use dsh_persist::{Error, ErrorKind};
use support::{TempDir, conv};

const ID: &str = "fault-session";
const T0: i64 = 1_790_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Zstd,
    Raw,
    Sqlite,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Zstd, Kind::Raw, Kind::Sqlite];

    fn location(self, dir: &Path) -> PathBuf {
        match self {
            Kind::Sqlite => dir.join("sessions.db"),
            _ => dir.join("root"),
        }
    }

    fn config(self, location: &Path) -> StoreConfig {
        let backend = match self {
            Kind::Zstd | Kind::Raw => BackendConfig::Jsonl(JsonlConfig {
                compression: if self == Kind::Zstd {
                    Compression::Zstd
                } else {
                    Compression::None
                },
                ..JsonlConfig::new(location)
            }),
            Kind::Sqlite => {
                BackendConfig::Sqlite(SqliteConfig::new(location.display().to_string()))
            }
        };
        let mut c = StoreConfig::with_backend(backend);
        // Live sessions write only when flushed.
        c.write_batch_max_delay_ms = 3_600_000;
        c
    }
}

fn open_store(kind: Kind, location: &Path) -> Store {
    let config = kind.config(location);
    let next = Arc::new(AtomicI64::new(0));
    let clock = Arc::new(move || T0 + next.fetch_add(1, Ordering::SeqCst));
    Store::with_backend(open_backend(&config.backend).unwrap(), config, Some(clock))
}

fn header() -> SessionHeader {
    SessionHeader::new(ID, T0 as u64)
}

/// The JSONL log file of the session (None for SQLite).
fn log_file(store: &Store) -> Option<PathBuf> {
    store
        .locate(&header())
        .unwrap()
        .map(|Location::Jsonl { path }| PathBuf::from(path))
}

fn file_len(path: &Option<PathBuf>) -> u64 {
    path.as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

/// (type, data, surface append) of turn `t`: a user message, a step with
/// four streamed deltas (packed) and a tool call and result, a final step.
fn turn(t: u64) -> Vec<(&'static str, String, bool)> {
    let call = format!("call-{t}");
    let mut v = vec![
        ("turn/start", format!(r#"{{"turn":{t}}}"#), false),
        (
            "user/message",
            conv::user_message(&format!("u{t}"), &format!("question {t}")),
            true,
        ),
        ("step/start", format!(r#"{{"turn":{t},"step":1}}"#), false),
    ];
    for piece in ["Let", " me", " look", "."] {
        v.push(("assistant/chunk", conv::text_delta(t, 1, piece), false));
    }
    v.extend([
        (
            "assistant/message",
            conv::assistant_message(t, 1, &format!("a{t}"), "Let me look.", &[(&call, "bash")]),
            true,
        ),
        ("tool/call", conv::tool_call(t, 1, &call), false),
        (
            "tool/result",
            conv::tool_result(t, 1, &call, "file.txt"),
            true,
        ),
        ("step/end", format!(r#"{{"turn":{t},"step":1}}"#), false),
        (
            "turn/end",
            format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#),
            false,
        ),
    ]);
    v
}

fn events_of(steps: &[(&'static str, String, bool)], first_seq: u64) -> Vec<Event> {
    steps
        .iter()
        .enumerate()
        .map(|(i, (ty, data, op))| {
            let seq = first_seq + i as u64;
            let mut e = Event::new(
                EventType::new(ty),
                seq,
                T0 + seq as i64,
                JsonText::from_trusted(data.as_str()),
            );
            if *op {
                e.set_surface_op(Some(JsonText::from_trusted("\"append\"")));
            }
            e
        })
        .collect()
}

/// Writes a torn tail behind the store's back (not counted as an I/O point).
fn inject_torn_tail(kind: Kind, location: &Path, log: &Option<PathBuf>, next_seq: u64) {
    use std::io::Write;
    match kind {
        Kind::Raw => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(log.as_ref().unwrap())
                .unwrap();
            f.write_all(br#"{"type":"assistant/chunk","seq":"#).unwrap();
        }
        Kind::Zstd => {
            let line = format!(
                "{{\"type\":\"assistant/chunk\",\"seq\":{next_seq},\"time\":1,\"data\":{{}}}}\n"
            );
            let frame = zstd::encode_all(line.as_bytes(), 3).unwrap();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(log.as_ref().unwrap())
                .unwrap();
            f.write_all(&frame[..frame.len() / 2]).unwrap();
        }
        Kind::Sqlite => {
            let c = rusqlite::Connection::open(location).unwrap();
            c.execute(
                "INSERT INTO events (session_id, seq, type, time, data) VALUES (?1, ?2, 'assistant/chunk', 1, '{\"turn\":')",
                rusqlite::params![ID, next_seq as i64],
            )
            .unwrap();
        }
    }
}

/// Copies the store files (as they are now) to `dst`.
fn copy_store(kind: Kind, location: &Path, dst: &Path) {
    match kind {
        Kind::Sqlite => {
            for suffix in ["", "-wal"] {
                let src = PathBuf::from(format!("{}{suffix}", location.display()));
                if src.exists() {
                    std::fs::copy(&src, format!("{}{suffix}", dst.display())).unwrap();
                }
            }
        }
        _ => {
            if location.exists() {
                support::copy_tree(location, dst);
            }
        }
    }
}

/// What a fresh store loads from a copy of `location`; `None` when the
/// session is not stored.
fn fresh_load(kind: Kind, location: &Path, scratch: &Path) -> Result<Option<Vec<Event>>, Error> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let copy = kind.location(scratch);
    copy_store(kind, location, &copy);
    if !copy.exists() {
        return Ok(None);
    }
    let store = Store::open(kind.config(&copy))?;
    // A leftover temp file must not disturb listing.
    store.list()?;
    let out = match store.load(ID) {
        Ok(v) => Ok(Some(v.events)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    store.close()?;
    out
}

fn json_of(events: &[Event]) -> Vec<String> {
    events.iter().map(Event::to_json).collect()
}

// ---------------------------------------------------------------------------
// Scenarios: a list of steps driven over one store; a step's success makes
// its events durable.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    /// `Store::append` batches (create, appends, an open turn), a torn tail
    /// written behind the store's back, a repairing `load` in a reopened
    /// store, an append after the repair.
    Cold,
    /// A `LiveSession`: appends, `flush`es, `close`.
    Live,
}

struct Driver {
    kind: Kind,
    location: PathBuf,
    store: Store,
    live: Option<LiveSession>,
    /// Events known durable (their append/flush/load succeeded).
    committed: Vec<Event>,
    /// JSONL file length after the last successful step.
    committed_len: u64,
    created: bool,
}

impl Driver {
    fn new(kind: Kind, location: PathBuf) -> Driver {
        let store = open_store(kind, &location);
        Driver {
            kind,
            location,
            store,
            live: None,
            committed: Vec::new(),
            committed_len: 0,
            created: false,
        }
    }

    fn steps(scenario: Scenario) -> usize {
        match scenario {
            Scenario::Cold => 7,
            Scenario::Live => 4,
        }
    }

    /// The events step `i` makes durable, when known before running it.
    fn batch(&self, scenario: Scenario, i: usize) -> Vec<Event> {
        let next = self.committed.len() as u64;
        match (scenario, i) {
            (Scenario::Cold, 0) => events_of(&turn(1), 0),
            (Scenario::Cold, 1) => events_of(&turn(2)[..6], next),
            (Scenario::Cold, 2) => events_of(&turn(2)[6..], next),
            (Scenario::Cold, 3) => events_of(&turn(3)[..8], next),
            (Scenario::Cold, 6) => events_of(&turn(4), next),
            _ => Vec::new(),
        }
    }

    /// Runs step `i`. `Err` is the error the faulted operation returned.
    fn run(&mut self, scenario: Scenario, i: usize) -> Result<(), Error> {
        let log = log_file(&self.store);
        match (scenario, i) {
            (Scenario::Cold, 0) if !self.created => {
                self.store.create(header())?;
                self.created = true;
            }
            (Scenario::Cold, 4) => {
                self.store.close()?;
                inject_torn_tail(self.kind, &self.location, &log, self.committed.len() as u64);
                self.store = open_store(self.kind, &self.location);
                return Ok(());
            }
            (Scenario::Cold, 5) => {
                let view = self.store.load(ID)?;
                self.committed = view.events;
                self.committed_len = file_len(&log);
                return Ok(());
            }
            _ => {}
        }
        match scenario {
            Scenario::Cold => {
                let batch = self.batch(scenario, i);
                self.store.append(ID, batch.clone())?;
                self.committed.extend(batch);
            }
            Scenario::Live => {
                if self.live.is_none() {
                    self.live = Some(self.store.start(header())?);
                }
                let live = self.live.clone().unwrap();
                // Step i appends its events (only on the first attempt) and
                // flushes; the last step closes.
                let want: Vec<(&str, String, bool)> = match i {
                    0 => turn(1),
                    1 => turn(2)[..5].to_vec(),
                    2 => turn(2)[5..]
                        .iter()
                        .cloned()
                        .chain(turn(3)[..7].to_vec())
                        .collect(),
                    _ => Vec::new(),
                };
                let all = turn(1).len() + turn(2).len() + 7;
                let target = [turn(1).len(), turn(1).len() + 5, all, all][i];
                if (live.len() as usize) < target {
                    for (ty, data, op) in want {
                        let o = if op {
                            conv::append_opts()
                        } else {
                            Default::default()
                        };
                        live.append(ty, &data, &o).unwrap();
                    }
                }
                if i == 3 {
                    live.close()?;
                } else {
                    live.flush()?;
                }
                self.committed = live.snapshot();
            }
        }
        self.committed_len = file_len(&log);
        Ok(())
    }
}

struct Figures {
    calls: u64,
    runs: u64,
    ops: std::collections::BTreeMap<String, u64>,
}

/// What one armed run left: the driver, the failed step and its error, the
/// injected faults, the I/O calls counted.
type Outcome = (Driver, Option<(usize, Error)>, Vec<(u64, Op)>, u64);

/// Runs `scenario` on `kind` with `plan` armed.
fn run_with(kind: Kind, scenario: Scenario, dir: &Path, plan: Plan) -> Outcome {
    // The JSONL root exists before faults are armed (creating it is a
    // directory fsync of its own, tested apart).
    if kind != Kind::Sqlite {
        std::fs::create_dir_all(kind.location(dir)).unwrap();
    }
    let armed = fault::arm(plan);
    let mut d = Driver::new(kind, kind.location(dir));
    let mut failure = None;
    for i in 0..Driver::steps(scenario) {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| d.run(scenario, i)));
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                failure = Some((i, e));
                break;
            }
            Err(_) => {
                armed.disarm();
                panic!("{kind:?} {scenario:?} {plan:?}: step {i} panicked under a fault");
            }
        }
    }
    let fired = armed.fired();
    let calls = armed.calls();
    armed.disarm();
    drop(armed);
    (d, failure, fired, calls)
}

fn finish(d: &mut Driver, scenario: Scenario, from: usize, ctx: &str) {
    for i in from..Driver::steps(scenario) {
        d.run(scenario, i)
            .unwrap_or_else(|e| panic!("{ctx}: step {i} failed after the fault was lifted: {e}"));
    }
}

fn final_log(kind: Kind, dir: &Path) -> Vec<String> {
    let scratch = dir.join("final");
    let events = fresh_load(kind, &kind.location(dir), &scratch)
        .unwrap()
        .expect("the session is stored");
    json_of(&events)
}

fn check_scenario(kind: Kind, scenario: Scenario) -> Figures {
    // Baseline: count the calls, keep the fault-free final log.
    let base_dir = TempDir::new("fault-base");
    let (d, failure, _, calls) = run_with(kind, scenario, base_dir.path(), Plan::count_only());
    assert!(
        failure.is_none(),
        "baseline failed: {:?}",
        failure.map(|f| f.1.to_string())
    );
    d.store.close().unwrap();
    let baseline = final_log(kind, base_dir.path());
    let trace = {
        let dir = TempDir::new("fault-trace");
        if kind != Kind::Sqlite {
            std::fs::create_dir_all(kind.location(dir.path())).unwrap();
        }
        let a = fault::arm(Plan::count_only());
        let mut d = Driver::new(kind, kind.location(dir.path()));
        finish(&mut d, scenario, 0, "trace");
        let t = a.trace();
        d.store.close().unwrap();
        t
    };
    assert_eq!(trace.len() as u64, calls);
    assert!(calls > 0, "{kind:?} {scenario:?}: no I/O point was hit");
    let mut figures = Figures {
        calls,
        runs: 0,
        ops: Default::default(),
    };
    for op in &trace {
        *figures.ops.entry(format!("{op:?}")).or_default() += 1;
    }
    for n in 1..=calls + 1 {
        for sticky in [false, true] {
            let plan = if sticky {
                Plan::sticky(n)
            } else {
                Plan::once(n)
            };
            let ctx = format!(
                "{kind:?} {scenario:?} fault at call {n} ({:?}), {plan:?}",
                trace.get(n as usize - 1)
            );
            let dir = TempDir::new("fault-run");
            let (mut d, failure, fired, _) = run_with(kind, scenario, dir.path(), plan);
            figures.runs += 1;
            if n > calls {
                assert!(
                    fired.is_empty() && failure.is_none(),
                    "{ctx}: past the last call"
                );
                continue;
            }
            assert_eq!(
                fired.first().map(|f| f.0),
                Some(n),
                "{ctx}: the fault did not fire"
            );
            let failed_step = match &failure {
                Some((step, e)) => {
                    assert!(
                        matches!(e.kind(), ErrorKind::Io | ErrorKind::Conflict),
                        "{ctx}: unexpected error kind {:?}: {e}",
                        e.kind()
                    );
                    Some(*step)
                }
                None => {
                    // Only the best-effort removal of a temp file may fail
                    // without failing the operation, and a lost commit
                    // acknowledgement, which the append resolves by reading
                    // back what is stored (D9: the commit is there).
                    assert!(
                        fired
                            .iter()
                            .all(|f| f.1 == Op::Unlink || f.1 == Op::SqliteCommitAck),
                        "{ctx}: a fault was swallowed: {fired:?}"
                    );
                    None
                }
            };
            // A fresh store over a copy taken now.
            let loaded = fresh_load(kind, &d.location, &dir.path().join("copy"))
                .unwrap_or_else(|e| panic!("{ctx}: a fresh load failed: {e}"))
                .unwrap_or_default();
            let committed = d.committed.clone();
            let mut expect = committed.clone();
            expect.extend(closers(&committed));
            let log = log_file(&d.store);
            if let (true, Some(step)) = (sticky, failed_step) {
                // Sticky: the rollback failed too. Whatever survives beyond
                // the committed events is a prefix of the failed batch (whole
                // records), then the closers.
                let batch = match scenario {
                    Scenario::Cold => d.batch(scenario, step),
                    Scenario::Live => d
                        .live
                        .as_ref()
                        .map(|l| l.events(committed.len() as u64))
                        .unwrap_or_default(),
                };
                assert!(
                    loaded.len() >= committed.len(),
                    "{ctx}: committed events lost"
                );
                assert_eq!(
                    json_of(&loaded[..committed.len()]),
                    json_of(&committed),
                    "{ctx}: committed events differ"
                );
                let mut p = 0;
                while committed.len() + p < loaded.len()
                    && p < batch.len()
                    && loaded[committed.len() + p].to_json() == batch[p].to_json()
                {
                    p += 1;
                }
                let mut kept = committed.clone();
                kept.extend(batch[..p].iter().cloned());
                let mut expect = kept.clone();
                expect.extend(closers(&kept));
                assert_eq!(
                    json_of(&loaded),
                    json_of(&expect),
                    "{ctx}: beyond the committed events only a prefix of the failed batch and closers may remain"
                );
            } else {
                assert_eq!(
                    json_of(&loaded),
                    json_of(&expect),
                    "{ctx}: the fresh load differs from the committed events"
                );
                let cold_append =
                    scenario == Scenario::Cold && !matches!(failed_step, Some(4) | Some(5));
                if log.is_some()
                    && failed_step.is_some()
                    && (cold_append || scenario == Scenario::Live)
                {
                    assert_eq!(
                        file_len(&log),
                        d.committed_len,
                        "{ctx}: the log is not back at its committed length"
                    );
                }
            }
            // A single fault: retry and finish on the same store; the result
            // equals the fault-free run.
            if !sticky {
                if let Some(step) = failed_step {
                    finish(&mut d, scenario, step, &ctx);
                }
                d.store.close().unwrap();
                assert_eq!(
                    final_log(kind, dir.path()),
                    baseline,
                    "{ctx}: the log after retrying differs from a fault-free run"
                );
            } else {
                let _ = d.store.close();
            }
        }
    }
    figures
}

/// The fault counters are process-wide: the tests of this binary run one at
/// a time, so no test's I/O is counted in another's armed scope.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn every_io_call_fails_once_and_sticky() {
    let _serial = serial();
    let mut report = Vec::new();
    for kind in Kind::ALL {
        for scenario in [Scenario::Cold, Scenario::Live] {
            let f = check_scenario(kind, scenario);
            report.push(format!(
                "fault {kind:?} {scenario:?}: {} I/O calls {:?}, {} faulted runs, all recovered",
                f.calls, f.ops, f.runs
            ));
        }
    }
    for line in report {
        println!("{line}");
    }
}

// ---------------------------------------------------------------------------
// Ambiguous writes (reliability D9): a write whose failure left its bytes or
// rows behind (the rollback failed too, or the commit went through and only
// its acknowledgement was lost). The retry must find out what is stored and
// never store the batch twice; the outcome the caller sees is exact.

/// The user-message ids of a log, in order (each turn has its own).
fn turn_tags(events: &[Event]) -> Vec<String> {
    json_of(events)
        .iter()
        .filter(|j| j.contains("\"user/message\""))
        .map(|j| {
            j.split("\"id\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn live_turn(live: &LiveSession, t: u64) {
    for (ty, data, op) in turn(t) {
        let o = if op {
            conv::append_opts()
        } else {
            Default::default()
        };
        live.append(ty, &data, &o).unwrap();
    }
}

#[test]
fn an_ambiguous_jsonl_write_is_retried_without_writing_twice() {
    let _serial = serial();
    // (Write, Fsync) and (Fsync, Truncate) of the flush of turn 2: the write
    // (half of it, or all of it) stays in the file, unsynced, and the
    // rollback that should have removed it fails.
    for kind in [Kind::Zstd, Kind::Raw] {
        for (plan, what) in [
            (Plan::calls(1, 2), "a short write whose rollback failed"),
            (Plan::calls(2, 3), "a failed fsync whose rollback failed"),
        ] {
            let dir = TempDir::new("fault-ambiguous");
            let location = kind.location(dir.path());
            let store = open_store(kind, &location);
            let live = store.start(header()).unwrap();
            live_turn(&live, 1);
            live.flush().unwrap();
            live_turn(&live, 2);
            let log = log_file(&store);
            let before = file_len(&log);
            {
                let armed = fault::arm(plan);
                let e = live.flush().unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Io, "{kind:?} {what}: {e}");
                assert_eq!(armed.fired().len(), 2, "{kind:?} {what}");
            }
            assert!(
                file_len(&log) > before,
                "{kind:?} {what}: bytes were left behind"
            );
            // The retry (the same pending events plus one more turn).
            live_turn(&live, 3);
            live.flush().unwrap();
            live.close().unwrap();
            store.close().unwrap();
            let loaded = fresh_load(kind, &location, &dir.path().join("copy"))
                .unwrap()
                .unwrap();
            assert_eq!(
                json_of(&loaded),
                json_of(&live.snapshot()),
                "{kind:?} {what}: the log after the retry is the session, each event once"
            );
            assert_eq!(turn_tags(&loaded).len(), 3, "{kind:?} {what}");
        }
    }
}

#[test]
fn a_cold_append_resent_after_an_ambiguous_failure_is_stored_once() {
    let _serial = serial();
    for kind in Kind::ALL {
        let dir = TempDir::new("fault-resend");
        let location = kind.location(dir.path());
        let store = open_store(kind, &location);
        store.create(header()).unwrap();
        let first = events_of(&turn(1), 0);
        store.append(ID, first.clone()).unwrap();
        let second = events_of(&turn(2), first.len() as u64);
        match kind {
            // The bytes of the failed append stay behind (fsync and rollback fail).
            Kind::Zstd | Kind::Raw => {
                let _armed = fault::arm(Plan::calls(2, 3));
                let e = store.append(ID, second.clone()).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Io, "{e}");
            }
            // The commit happens, its acknowledgement is lost: the append
            // finds its rows stored and succeeds.
            Kind::Sqlite => {
                let armed = fault::arm(Plan::count_only());
                store.append(ID, second.clone()).unwrap();
                assert!(armed.trace().contains(&Op::SqliteCommitAck));
                drop(armed);
                let third = events_of(&turn(3), (first.len() + second.len()) as u64);
                let armed = fault::arm(Plan::once(
                    // Fail the acknowledgement of this append's commit.
                    2,
                ));
                store.append(ID, third.clone()).unwrap();
                assert_eq!(armed.fired(), vec![(2, Op::SqliteCommitAck)]);
                drop(armed);
                // A host that did not trust the outcome sends it again. The
                // settled append left the session's revision as stored: the
                // store's state of the session serves, no log is read again.
                let reads = store.cold_reads();
                store.append(ID, third.clone()).unwrap();
                assert_eq!(store.cold_reads(), reads, "the log was read again");
                let all = store.read_from(ID, 0).unwrap().events;
                assert_eq!(turn_tags(&all).len(), 3, "stored once");
                store.close().unwrap();
                continue;
            }
        }
        // The host sends the same batch again: stored once.
        store.append(ID, second.clone()).unwrap();
        store.append(ID, second.clone()).unwrap();
        // A different batch at those seqs is refused.
        let other = events_of(&turn(5), first.len() as u64);
        let e = store.append(ID, other).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        let want = format!(
            "append seq mismatch for {}: expected {} at index 0, got {}",
            dsh_persist::model::json::quote(ID),
            first.len() + second.len(),
            first.len()
        );
        assert!(e.to_string().contains(&want), "{e}");
        store.close().unwrap();
        let loaded = fresh_load(kind, &location, &dir.path().join("copy"))
            .unwrap()
            .unwrap();
        let mut want = first.clone();
        want.extend(second);
        assert_eq!(json_of(&loaded), json_of(&want), "{kind:?}");
    }
}

/// A new log is published as SPEC §3.4 says (a temp file created, written
/// and synced, linked to its name, unlinked, then the directory synced).
/// Each of those calls failing once: the call that made the log reports an
/// `io` error (a failed create is not retried under another name as a name
/// taken is; a failed link is not a conflict; a failed directory fsync, which
/// leaves the name's durability unknown, withdraws the log), and a retry
/// stores the events once. Only the temp file's unlink may fail unreported:
/// the log is durable by then, and the leftover is swept later.
#[test]
fn each_failed_io_call_of_a_new_log_is_reported_and_nothing_half_made_stays() {
    let _serial = serial();
    for kind in [Kind::Zstd, Kind::Raw] {
        // The I/O calls of a create and the first append.
        let dir = TempDir::new(&format!("fault-new-log-count-{kind:?}"));
        let store = open_store(kind, &kind.location(dir.path()));
        let counting = fault::arm(Plan::count_only());
        store.create(header()).unwrap();
        let after_create = counting.calls();
        store.append(ID, events_of(&turn(1), 0)).unwrap();
        let trace = counting.trace();
        drop(counting);
        store.close().unwrap();
        assert!(
            trace.ends_with(&[
                Op::Create,
                Op::Write,
                Op::Fsync,
                Op::Link,
                Op::Unlink,
                Op::DirFsync
            ]),
            "{kind:?}: {trace:?}"
        );
        for n in 1..=trace.len() as u64 {
            let op = trace[n as usize - 1];
            let dir = TempDir::new(&format!("fault-new-log-{kind:?}-{n}"));
            let store = open_store(kind, &kind.location(dir.path()));
            let armed = fault::arm(Plan::once(n));
            let created = store.create(header());
            let appended = created
                .is_ok()
                .then(|| store.append(ID, events_of(&turn(1), 0)));
            assert_eq!(armed.fired(), [(n, op)], "{kind:?}");
            drop(armed);
            let create_failed = created.is_err();
            let failed = if n <= after_create {
                created.err()
            } else {
                appended.and_then(|r| r.err())
            };
            let ctx = format!("{kind:?}: {op:?} (I/O call {n} of {trace:?})");
            match (op, failed) {
                (Op::Unlink, None) => {}
                (Op::Unlink, Some(e)) => panic!("{ctx}: the log was durable, yet {e}"),
                (_, None) => panic!("{ctx} failed and the call reported success"),
                (_, Some(e)) => {
                    assert_eq!(e.kind(), ErrorKind::Io, "{ctx}: {e}");
                    if create_failed {
                        store.create(header()).unwrap();
                    } else {
                        assert_eq!(file_len(&log_file(&store)), 0, "{ctx}: no log left");
                    }
                    store.append(ID, events_of(&turn(1), 0)).unwrap();
                }
            }
            let stored = store.load(ID).unwrap().events;
            assert_eq!(json_of(&stored), json_of(&events_of(&turn(1), 0)), "{ctx}");
            store.close().unwrap();
        }
    }
}

/// `mkdir -p` (D13) fsyncs the parent of each directory it makes, once
/// each, and nothing when the path is already there; a `mkdir` that finds
/// the directory made (perhaps by a racing creator whose entry is not
/// durable yet) fsyncs the parent too, but a file there is an error. A
/// failed fsync is reported, naming the directory.
#[test]
fn mkdir_p_fsyncs_the_parent_of_each_directory_it_makes() {
    use dsh_persist::backend::dirs::{create_dir, create_dir_all};
    let _serial = serial();
    let tmp = TempDir::new("fault-mkdir-p");
    let deep = tmp.path().join("a").join("b").join("c");
    let traced = |f: &dyn Fn()| {
        let counting = fault::arm(Plan::count_only());
        f();
        counting.trace()
    };
    assert_eq!(
        traced(&|| create_dir_all(&deep).unwrap()),
        [Op::DirFsync; 3]
    );
    assert!(deep.is_dir());
    assert_eq!(traced(&|| create_dir_all(&deep).unwrap()), Vec::<Op>::new());
    assert_eq!(
        traced(&|| assert!(!create_dir(&deep).unwrap(), "already there")),
        [Op::DirFsync]
    );

    // A file where the directory should be is an error, not "already there".
    let file = tmp.path().join("f");
    std::fs::write(&file, "").unwrap();
    let e = create_dir(&file).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("cannot create directory"), "{e}");

    let x = tmp.path().join("x");
    let armed = fault::arm(Plan::once(2));
    let e = create_dir_all(&x.join("y")).unwrap_err();
    drop(armed);
    assert_eq!(e.kind(), ErrorKind::Io);
    let message = e.to_string();
    assert!(
        message.contains(&format!("cannot fsync directory {}", x.display())),
        "{message}"
    );
}
