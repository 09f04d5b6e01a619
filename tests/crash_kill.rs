//! Crash harness (issue 10: "prove that nothing committed is ever lost").
//!
//! The parent re-executes this test binary as a child
//! (`DSH_CRASH_CHILD=<config> <exe> --exact child_process --nocapture`). The
//! child opens a store, resumes (or starts) one session and appends complete
//! turns through a `LiveSession`, flushing after every turn and printing
//! `durable <seq>` once each flush returned. The parent SIGKILLs it after a
//! random (seeded) delay — some right after start, while it opens, resumes
//! and repairs — then checks, on a copy of the store opened fresh and
//! `load`ed:
//!
//! - every event acknowledged durable (seq <= the last `durable N` of any
//!   run) is present and byte-identical to what the child appended (the
//!   child's events are a pure function of the log it resumed from, with a
//!   deterministic clock, so the parent recomputes them);
//! - the load succeeds (a crash-only history is never corruption) and the
//!   log is balanced.
//!
//! The original store is left as the kill left it, so the next child has to
//! resume (and repair) it itself, and may be killed while doing so.
//!
//! PostgreSQL runs too when `DSH_TEST_POSTGRES_URL` names a server: the
//! child writes to a schema of its own, the parent checks a copy of its
//! rows in a second schema.
//! A second process, the reader (`DSH_CRASH_READER=…`), runs the whole
//! time: it loops `list`, `load` and `inspect` over the store the children
//! write, while they write and when they are killed. It never repairs under
//! a live child (the child holds the writer lock); after a kill it may
//! repair the crash leftovers itself, which the next child then resumes.
//! Any reader error other than `busy` (a load of an open turn a child is
//! still writing) fails the run. The reader pauses while the parent copies
//! the store, so the copy is of a quiet store.
//!
//! `DSH_CRASH_KILLS=<n>` sets the kills per backend (default 20);
//! `DSH_CRASH_SEED=<u64>` replays a run.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dsh_persist::model::event::{Event, EventType, KeyOrder};
use dsh_persist::model::header::SessionHeader;
use dsh_persist::model::json::JsonText;
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, LiveSession, PostgresConfig,
    SqliteConfig, Store, StoreConfig, open_backend,
};
use dsh_persist::{Error, ErrorKind};
use support::TempDir;
use support::conv;

const CHILD_ENV: &str = "DSH_CRASH_CHILD";
const READER_ENV: &str = "DSH_CRASH_READER";
/// Base of the deterministic clock: event `seq` gets time `T0 + 3 * seq`.
const T0: i64 = 1_790_000_000_000;
/// Kills per session before the harness moves on to a fresh session (keeps
/// the logs, and the parent's loads, small in long runs).
const KILLS_PER_SESSION: usize = 25;

// ---------------------------------------------------------------------------
// The deterministic workload, shared by child and parent.

/// One append of the workload.
#[derive(Clone, Debug)]
struct Step {
    ty: &'static str,
    data: String,
    append_op: bool,
}

fn step(ty: &'static str, data: String, append_op: bool) -> Step {
    Step {
        ty,
        data,
        append_op,
    }
}

/// The appends of turn `t`: 1–3 steps, each with 0–4 streamed deltas (runs
/// of 3+ are packed into chunk rows), tool calls answered in all but the
/// last step.
fn turn_steps(t: u64) -> Vec<Step> {
    let mut out = vec![
        step("turn/start", format!(r#"{{"turn":{t}}}"#), false),
        step(
            "user/message",
            conv::user_message(&format!("u{t}"), &format!("question {t} é \u{1F600}")),
            true,
        ),
    ];
    let steps = 1 + t % 3;
    for s in 1..=steps {
        out.push(step(
            "step/start",
            format!(r#"{{"turn":{t},"step":{s}}}"#),
            false,
        ));
        for k in 0..(t + s) % 5 {
            out.push(step(
                "assistant/chunk",
                conv::text_delta(t, s, &format!("piece {k} of {t}.{s} ")),
                false,
            ));
        }
        if s < steps {
            let call = format!("call-{t}-{s}");
            out.push(step(
                "assistant/message",
                conv::assistant_message(
                    t,
                    s,
                    &format!("a{t}-{s}"),
                    "Let me look.",
                    &[(&call, "bash")],
                ),
                true,
            ));
            out.push(step("tool/call", conv::tool_call(t, s, &call), false));
            out.push(step(
                "tool/result",
                conv::tool_result(t, s, &call, &format!("output of {call}")),
                true,
            ));
        } else {
            out.push(step(
                "assistant/message",
                conv::assistant_message(t, s, &format!("a{t}-{s}"), "Done.", &[]),
                true,
            ));
        }
        out.push(step(
            "step/end",
            format!(r#"{{"turn":{t},"step":{s}}}"#),
            false,
        ));
    }
    out.push(step(
        "turn/end",
        format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#),
        false,
    ));
    out
}

/// The first turn number a child appends after `history`.
fn first_turn(history: &[Event]) -> u64 {
    history
        .iter()
        .filter(|e| e.event_type() == "turn/start")
        .count() as u64
        + 1
}

fn time_of(seq: u64) -> i64 {
    T0 + 3 * seq as i64
}

/// Whether resuming `history` appends a `session/end-seed` marker first.
fn resume_marker(history: &[Event]) -> bool {
    !history.is_empty() && history.last().unwrap().event_type() != "session/end-seed"
}

/// The events a child appends after resuming (or starting, when empty)
/// `history`, up to `count` of them.
fn expected_appends(history: &[Event], count: usize) -> Vec<Event> {
    let mut out = Vec::with_capacity(count);
    let mut seq = history.len() as u64;
    if resume_marker(history) && out.len() < count {
        out.push(Event::new(
            EventType::new("session/end-seed"),
            seq,
            time_of(seq),
            JsonText::from_trusted("{}"),
        ));
        seq += 1;
    }
    let mut t = first_turn(history);
    while out.len() < count {
        for s in turn_steps(t) {
            if out.len() == count {
                break;
            }
            let mut e = Event::new(
                EventType::new(s.ty),
                seq,
                time_of(seq),
                JsonText::from_trusted(s.data),
            );
            if s.append_op {
                e.set_surface_op(Some(JsonText::from_trusted("\"append\"")));
            }
            out.push(e);
            seq += 1;
        }
        t += 1;
    }
    out
}

/// The text an event is compared by. SQLite keeps no envelope key order: a
/// repair's closers, returned by `load` in the closer order (`surfaceOp`
/// before `sourceEventSeqs`), read back in the live order, as in the
/// original. JSONL keeps the written bytes, so its text is compared as is.
fn text_of(kind: Kind, e: &Event) -> String {
    if matches!(kind, Kind::Sqlite | Kind::Postgres) {
        let mut e = e.clone();
        e.key_order = KeyOrder::LIVE;
        e.to_json()
    } else {
        e.to_json()
    }
}

// ---------------------------------------------------------------------------
// Backends and store copies.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Zstd,
    Raw,
    Sqlite,
    /// A schema on the server of `DSH_TEST_POSTGRES_URL`, named after the
    /// location (a path that only names it; see [`pg_schema`]).
    Postgres,
}

/// The PostgreSQL schema a location stands for.
fn pg_schema(location: &Path) -> String {
    let h = location
        .display()
        .to_string()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    format!("k{h:016x}")
}

fn pg_url() -> String {
    std::env::var(support::pg::URL_ENV).unwrap()
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Zstd => "jsonl-zstd",
            Kind::Raw => "jsonl-raw",
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }

    fn parse(s: &str) -> Kind {
        match s {
            "jsonl-zstd" => Kind::Zstd,
            "jsonl-raw" => Kind::Raw,
            "sqlite" => Kind::Sqlite,
            "postgres" => Kind::Postgres,
            other => panic!("unknown backend {other}"),
        }
    }

    /// The store location inside a work dir.
    fn location(self, dir: &Path) -> PathBuf {
        match self {
            Kind::Sqlite => dir.join("sessions.db"),
            Kind::Postgres => dir.join("pg.schema"),
            _ => dir.join("root"),
        }
    }

    fn config(self, location: &Path, delay_ms: u64) -> StoreConfig {
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
            Kind::Postgres => BackendConfig::Postgres(
                PostgresConfig::new(pg_url()).with_schema(pg_schema(location)),
            ),
        };
        let mut c = StoreConfig::with_backend(backend);
        c.write_batch_max_delay_ms = delay_ms;
        c
    }
}

/// Copies the store at `location` (as a killed child left it) to `dst`
/// (PostgreSQL: the schema's rows into a fresh schema for `dst`, and a
/// marker file at `dst` when there was a store).
fn copy_store(kind: Kind, location: &Path, dst: &Path) {
    match kind {
        Kind::Postgres => {
            let (src, to) = (pg_schema(location), pg_schema(dst));
            support::pg::drop_schema(&pg_url(), &to);
            let mut admin = support::pg::admin(&pg_url());
            let exists: bool = admin
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'persistence_state')",
                    &[&src],
                )
                .unwrap()
                .get(0);
            if !exists {
                return;
            }
            let config = PostgresConfig::new(pg_url()).with_schema(to.clone());
            drop(dsh_persist::backend::postgres::PostgresBackend::open(&config).unwrap());
            admin
                .batch_execute(&format!(
                    "BEGIN;
                     INSERT INTO \"{to}\".sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision, list_order) OVERRIDING SYSTEM VALUE SELECT * FROM \"{src}\".sessions;
                     INSERT INTO \"{to}\".events SELECT * FROM \"{src}\".events;
                     UPDATE \"{to}\".persistence_state SET store_id = (SELECT store_id FROM \"{src}\".persistence_state);
                     COMMIT;"
                ))
                .unwrap();
            std::fs::write(dst, to).unwrap();
        }
        Kind::Sqlite => {
            // The database and its WAL; the shared-memory index is rebuilt
            // by the first connection.
            for suffix in ["", "-wal", "-journal"] {
                let src = PathBuf::from(format!("{}{suffix}", location.display()));
                if src.exists() {
                    support::copy_tree(&src, &PathBuf::from(format!("{}{suffix}", dst.display())));
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

// ---------------------------------------------------------------------------
// The child.

fn out_line(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// Child mode: runs only when re-executed by the parent with
/// `DSH_CRASH_CHILD=<backend>|<location>|<session id>|<write delay ms>|<pause us>`
/// (the pause, taken after every third append, makes the write-behind
/// timer cut batches inside turns, so kills leave open turns).
#[test]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (kind, location, id, delay_ms, pause_us) = (
        Kind::parse(parts[0]),
        PathBuf::from(parts[1]),
        parts[2].to_string(),
        parts[3].parse::<u64>().unwrap(),
        parts[4].parse::<u64>().unwrap(),
    );
    let config = kind.config(&location, delay_ms);
    let backend = open_backend(&config.backend).unwrap_or_else(|e| panic!("open: {e}"));
    if kind == Kind::Postgres {
        // The schema exists now: a marker at the location tells the reader.
        std::fs::write(&location, pg_schema(&location)).unwrap();
    }
    // The clock continues from the resumed log's length, so an event's time
    // is a function of its seq (set once the history length is known).
    let next = Arc::new(AtomicI64::new(0));
    let clock_next = next.clone();
    let clock = Arc::new(move || time_of(clock_next.fetch_add(1, Ordering::SeqCst) as u64));
    let store = Store::with_backend(backend, config, Some(clock));
    // The reader may be repairing a crash leftover (it holds the writer lock
    // for that): wait for it.
    let prepared = {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match store.prepare(&id) {
                Err(Error::Busy(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                other => break other,
            }
        }
    };
    let (live, history): (LiveSession, Vec<Event>) = match prepared {
        Ok(prepared) => {
            let history = prepared.events().to_vec();
            next.store(history.len() as i64, Ordering::SeqCst);
            (store.publish(prepared).unwrap(), history)
        }
        Err(Error::NotFound { .. }) => {
            let live = store
                .start(SessionHeader::new(id.clone(), T0 as u64))
                .unwrap();
            (live, Vec::new())
        }
        Err(e) => panic!("prepare {id}: {e}"),
    };
    out_line(&format!("start {}", history.len()));
    let append = AppendOptions {
        surface_op: Some("\"append\"".into()),
        ..Default::default()
    };
    let none = AppendOptions::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut t = first_turn(&history);
    while Instant::now() < deadline {
        for (i, s) in turn_steps(t).into_iter().enumerate() {
            live.append(s.ty, &s.data, if s.append_op { &append } else { &none })
                .unwrap_or_else(|e| panic!("append {}: {e}", s.ty));
            if pause_us > 0 && i % 3 == 2 {
                std::thread::sleep(Duration::from_micros(pause_us));
            }
        }
        live.flush().unwrap_or_else(|e| panic!("flush: {e}"));
        out_line(&format!("durable {}", live.len() - 1));
        t += 1;
    }
    panic!("the crash child was never killed");
}

// ---------------------------------------------------------------------------
// The reader.

/// Reader mode: `DSH_CRASH_READER=<backend>|<location>|<pause file>`.
/// Loops list/load/inspect over every session until killed; prints
/// `reads <loads ok> <loads busy> <inspects ok>` now and then and `bad
/// <message>` for any other error. While the pause file exists it closes
/// its store, creates `<pause file>.ack` and waits.
#[test]
fn reader_process() {
    let Ok(spec) = std::env::var(READER_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let (kind, location, pause) = (
        Kind::parse(parts[0]),
        PathBuf::from(parts[1]),
        PathBuf::from(parts[2]),
    );
    let ack = pause.with_extension("ack");
    let (mut ok, mut busy, mut inspected) = (0u64, 0u64, 0u64);
    for round in 0u64.. {
        if pause.exists() {
            std::fs::write(&ack, b"").unwrap();
            while pause.exists() {
                std::thread::sleep(Duration::from_micros(200));
            }
            let _ = std::fs::remove_file(&ack);
        }
        if !location.exists() {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let store = match Store::open(kind.config(&location, 200)) {
            Ok(s) => s,
            Err(e) => {
                out_line(&format!("bad open: {e}"));
                continue;
            }
        };
        let ids: Vec<String> = match store.list() {
            Ok(h) => h.into_iter().map(|h| h.id).collect(),
            Err(e) => {
                out_line(&format!("bad list: {e}"));
                Vec::new()
            }
        };
        for id in ids {
            match store.load(&id) {
                Ok(v) => {
                    if dsh_persist::store::view::has_open_turn(&v.events) {
                        out_line(&format!("bad load of {id}: an open turn"));
                    }
                    ok += 1;
                }
                Err(Error::Busy(_)) => busy += 1,
                Err(e) => out_line(&format!("bad load of {id}: {e}")),
            }
            match store.inspect(&id) {
                Ok(_) => inspected += 1,
                Err(e) => out_line(&format!("bad inspect of {id}: {e}")),
            }
        }
        if let Err(e) = store.close() {
            out_line(&format!("bad close: {e}"));
        }
        if round % 20 == 0 {
            out_line(&format!("reads {ok} {busy} {inspected}"));
        }
    }
}

/// The reader process and what it printed.
struct Reader {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    pause: PathBuf,
}

impl Reader {
    fn start(kind: Kind, location: &Path, work: &Path) -> Reader {
        let pause = work.join("reader.pause");
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "reader_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                READER_ENV,
                format!("{}|{}|{}", kind.name(), location.display(), pause.display()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let l2 = lines.clone();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                l2.lock().unwrap().push(line);
            }
        });
        Reader {
            child,
            lines,
            pause,
        }
    }

    /// Runs `f` while the reader is paused (its store closed).
    fn paused<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let ack = self.pause.with_extension("ack");
        std::fs::write(&self.pause, b"").unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ack.exists() {
            assert!(
                self.child.try_wait().unwrap().is_none(),
                "the reader died: {:?}",
                self.lines.lock().unwrap()
            );
            assert!(Instant::now() < deadline, "the reader does not pause");
            std::thread::sleep(Duration::from_micros(200));
        }
        let r = f();
        std::fs::remove_file(&self.pause).unwrap();
        r
    }

    /// Stops the reader; returns (loads ok, loads busy, inspects ok) and
    /// its complaints.
    fn stop(mut self) -> ((u64, u64, u64), Vec<String>) {
        // Let it report once more, then stop it.
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(20));
        let lines = self.lines.lock().unwrap();
        let bad: Vec<String> = lines
            .iter()
            .filter(|l| l.contains("bad "))
            .cloned()
            .collect();
        let last = lines
            .iter()
            .rev()
            .find_map(|l| {
                let i = l.find("reads ")?;
                let n: Vec<u64> = l[i + 6..]
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (n.len() == 3).then(|| (n[0], n[1], n[2]))
            })
            .unwrap_or((0, 0, 0));
        (last, bad)
    }
}

// ---------------------------------------------------------------------------
// The parent.

/// A small deterministic PRNG (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

struct RunOutput {
    start_len: Option<u64>,
    durable: Option<u64>,
}

/// Spawns a child, kills it after `delay`, returns what it printed.
fn run_child(
    kind: Kind,
    location: &Path,
    id: &str,
    write_delay: u64,
    pause_us: u64,
    delay: Duration,
) -> RunOutput {
    let exe = std::env::current_exe().unwrap();
    let stderr_path = location.with_extension("stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!(
                "{}|{}|{id}|{write_delay}|{pause_us}",
                kind.name(),
                location.display()
            ),
        )
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = lines.clone();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => lines.lock().unwrap().push(l),
                    Err(_) => break,
                }
            }
        })
    };
    std::thread::sleep(delay);
    if let Some(status) = child.try_wait().unwrap() {
        reader.join().unwrap();
        panic!(
            "crash child exited by itself ({status}) before the kill:\n{}\nstdout: {:?}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default(),
            lines.lock().unwrap()
        );
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    let lines = lines.lock().unwrap();
    let number = |prefix: &str| {
        lines.iter().rev().find_map(|l| {
            // libtest may print "test child_process ... " on the same line
            // before the child's first line.
            l.find(prefix)
                .map(|i| l[i + prefix.len()..].trim().parse::<u64>().unwrap())
        })
    };
    RunOutput {
        start_len: number("start "),
        durable: number("durable "),
    }
}

/// Loads `id` from a fresh store over a copy of the store at `location`.
/// `None` when the session is not stored (yet); else the events and whether
/// the stored state needed a repair (torn tail or open turn).
fn load_copy(
    kind: Kind,
    location: &Path,
    id: &str,
    scratch: &Path,
) -> Result<Option<(Vec<Event>, bool)>, Error> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let copy = kind.location(scratch);
    copy_store(kind, location, &copy);
    if !copy.exists() {
        return Ok(None);
    }
    let store = Store::open(kind.config(&copy, 200))?;
    let needs_repair = match store.backend().read(id) {
        Ok(Some(log)) => log.torn.is_some() || dsh_persist::store::view::has_open_turn(&log.events),
        _ => false,
    };
    let result = match store.load(id) {
        Ok(view) => Ok(Some((view.events, needs_repair))),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    };
    store.close()?;
    result
}

fn kills_per_backend() -> usize {
    std::env::var("DSH_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn seed() -> u64 {
    std::env::var("DSH_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        })
}

struct Tally {
    kills: usize,
    recovered: usize,
    lost: usize,
    /// Loads whose stored state had a torn tail or an open turn.
    repairs: usize,
    /// Kills before the child had resumed a log that needed repair.
    kills_during_repair: usize,
    kills_before_durable: usize,
    max_events: usize,
    /// Acknowledged events compared, summed over all checks.
    checked: usize,
}

/// Checks the log a fresh load returned against the acknowledged events.
/// Returns the number of acknowledged events missing or different.
fn check_log(kind: Kind, ctx: &str, loaded: &[Event], acked: &[String]) -> usize {
    let mut lost = 0;
    for (seq, want) in acked.iter().enumerate() {
        match loaded.get(seq) {
            Some(e) if &text_of(kind, e) == want => {}
            Some(e) => {
                eprintln!(
                    "{ctx}: seq {seq} differs:\n  want {want}\n  got  {}",
                    text_of(kind, e)
                );
                lost += 1;
            }
            None => {
                eprintln!("{ctx}: seq {seq} missing (log has {} events)", loaded.len());
                lost += 1;
            }
        }
    }
    for (i, e) in loaded.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "{ctx}: loaded log is not contiguous");
    }
    assert!(
        !dsh_persist::store::view::has_open_turn(loaded),
        "{ctx}: the loaded log is not balanced"
    );
    lost
}

fn crash_run(kind: Kind) {
    let seed = seed() ^ (kind as u64).wrapping_mul(0x1234_5678_9ABC);
    let kills = kills_per_backend();
    eprintln!(
        "crash {}: seed {seed} (replay: DSH_CRASH_SEED=<base seed> — base {}), {kills} kills",
        kind.name(),
        seed ^ (kind as u64).wrapping_mul(0x1234_5678_9ABC)
    );
    let mut rng = Rng(seed);
    let work = TempDir::new(&format!("crash-{}", kind.name()));
    let location = kind.location(work.path());
    let scratch = work.path().join("verify");
    if kind == Kind::Postgres {
        let schemas = [pg_schema(&location), pg_schema(&kind.location(&scratch))];
        work.on_drop_once("pg-schemas", move || {
            for s in schemas {
                support::pg::drop_schema(&pg_url(), &s);
            }
        });
    }
    let mut reader = Reader::start(kind, &location, work.path());
    let mut tally = Tally {
        kills: 0,
        recovered: 0,
        lost: 0,
        repairs: 0,
        kills_during_repair: 0,
        kills_before_durable: 0,
        max_events: 0,
        checked: 0,
    };
    // Per session: the acknowledged events (JSON text, by seq).
    let mut acked: Vec<String> = Vec::new();
    let mut session = 0;
    let mut id = format!("crash-{}-{session}", kind.name());
    for k in 0..kills {
        if k > 0 && k % KILLS_PER_SESSION == 0 {
            session += 1;
            id = format!("crash-{}-{session}", kind.name());
            acked.clear();
        }
        // What a fresh store sees now (the previous kill's verification).
        let ctx = format!("{} kill {k} (seed {seed}, session {id})", kind.name());
        let (history, repaired) = reader
            .paused(|| load_copy(kind, &location, &id, &scratch))
            .unwrap_or_else(|e| panic!("{ctx}: load after the kill failed: {e}"))
            .unwrap_or_default();
        tally.repairs += repaired as usize;
        if k > 0 {
            tally.checked += acked.len();
            let lost = check_log(kind, &ctx, &history, &acked);
            tally.lost += lost;
            if lost == 0 {
                tally.recovered += 1;
            }
        }
        tally.max_events = tally.max_events.max(history.len());
        // Kill early (open, resume, repair) a third of the time.
        // A PostgreSQL child needs longer to connect (a server process per
        // connection, authentication, TLS) before it opens and resumes.
        let scale = if kind == Kind::Postgres { 4 } else { 1 };
        let delay = scale
            * if rng.below(3) == 0 {
                rng.below(25)
            } else {
                25 + rng.below(250)
            };
        let write_delay = [0, 1, 5, 200][rng.below(4) as usize];
        let pause_us = [0, 200, 1000, 3000][rng.below(4) as usize];
        let out = run_child(
            kind,
            &location,
            &id,
            write_delay,
            pause_us,
            Duration::from_millis(delay),
        );
        tally.kills += 1;
        if std::env::var("DSH_CRASH_VERBOSE").is_ok() {
            eprintln!(
                "{ctx}: stored {} events (repair needed: {repaired}), killed after {delay} ms (write delay {write_delay} ms, pause {pause_us} us): start {:?}, durable {:?}",
                history.len(),
                out.start_len,
                out.durable
            );
        }
        if let Some(len) = out.start_len {
            assert_eq!(
                len as usize,
                history.len(),
                "{ctx}: the child resumed a log of another length than a fresh load returned"
            );
        }
        match out.durable {
            Some(n) => {
                let n = n as usize;
                assert!(n + 1 >= acked.len(), "{ctx}: durable went backwards");
                let mut all: Vec<String> = history.iter().map(|e| text_of(kind, e)).collect();
                all.extend(
                    expected_appends(&history, n + 1 - history.len())
                        .iter()
                        .map(|e| text_of(kind, e)),
                );
                // What was acknowledged before must still be a prefix.
                for (seq, want) in acked.iter().enumerate() {
                    assert_eq!(&all[seq], want, "{ctx}: acknowledged seq {seq} changed");
                }
                acked = all;
            }
            None => tally.kills_before_durable += 1,
        }
        if out.start_len.is_none() && repaired {
            tally.kills_during_repair += 1;
        }
    }
    let ctx = format!("{} final check (seed {seed}, session {id})", kind.name());
    let (last, repaired) = reader
        .paused(|| load_copy(kind, &location, &id, &scratch))
        .unwrap_or_else(|e| panic!("{ctx}: load after the last kill failed: {e}"))
        .unwrap_or_default();
    tally.repairs += repaired as usize;
    tally.checked += acked.len();
    let lost = check_log(kind, &ctx, &last, &acked);
    tally.lost += lost;
    if lost == 0 {
        tally.recovered += 1;
    }
    let ((reads_ok, reads_busy, inspects), bad) = reader.stop();
    assert!(bad.is_empty(), "the reader process failed: {bad:?}");
    println!(
        "crash: reader process alongside: {reads_ok} loads, {reads_busy} refused busy (an open turn of a live child), {inspects} inspects, 0 errors ({})",
        kind.name()
    );
    println!(
        "crash: {} kills, {} recovered, {} lost ({}; {} acknowledged events compared, {} loads repaired a torn tail or open turn, {} kills during open/resume/repair of a torn log, {} runs killed before their first durable flush, largest log {} events)",
        tally.kills,
        tally.recovered,
        tally.lost,
        kind.name(),
        tally.checked,
        tally.repairs,
        tally.kills_during_repair,
        tally.kills_before_durable,
        tally.max_events
    );
    assert_eq!(tally.lost, 0, "acknowledged events were lost (seed {seed})");
    assert_eq!(tally.recovered, tally.kills);
}

#[test]
fn crash_kill_jsonl_zstd() {
    if std::env::var(CHILD_ENV).is_ok() || std::env::var(READER_ENV).is_ok() {
        return;
    }
    crash_run(Kind::Zstd);
}

#[test]
fn crash_kill_jsonl_raw() {
    if std::env::var(CHILD_ENV).is_ok() || std::env::var(READER_ENV).is_ok() {
        return;
    }
    crash_run(Kind::Raw);
}

#[test]
fn crash_kill_sqlite() {
    if std::env::var(CHILD_ENV).is_ok() || std::env::var(READER_ENV).is_ok() {
        return;
    }
    crash_run(Kind::Sqlite);
}

#[test]
fn crash_kill_postgres() {
    if std::env::var(CHILD_ENV).is_ok() || support::pg::url("crash_kill_postgres").is_none() {
        return;
    }
    crash_run(Kind::Postgres);
}

/// The parent's model of the child's appends matches what a live session
/// really writes (otherwise the crash checks would compare against the
/// wrong bytes).
#[test]
fn workload_model_matches_a_live_session() {
    if std::env::var(CHILD_ENV).is_ok() || std::env::var(READER_ENV).is_ok() {
        return;
    }
    let dir = TempDir::new("crash-model");
    for resumed in [false, true] {
        let config = Kind::Raw.config(&dir.path().join(format!("r{resumed}")), 200);
        let next = Arc::new(AtomicI64::new(0));
        let c = next.clone();
        let clock = Arc::new(move || time_of(c.fetch_add(1, Ordering::SeqCst) as u64));
        let store =
            Store::with_backend(open_backend(&config.backend).unwrap(), config, Some(clock));
        let live = store.start(SessionHeader::new("m", T0 as u64)).unwrap();
        let append = AppendOptions {
            surface_op: Some("\"append\"".into()),
            ..Default::default()
        };
        let history = if resumed {
            for s in turn_steps(1).into_iter().take(5) {
                let o = if s.append_op {
                    &append
                } else {
                    &AppendOptions::default()
                };
                live.append(s.ty, &s.data, o).unwrap();
            }
            live.close().unwrap();
            let p = store.prepare("m").unwrap();
            let h = p.events().to_vec();
            assert!(h.iter().any(|e| e.data.as_str().contains("interrupted")));
            next.store(h.len() as i64, Ordering::SeqCst);
            let live2 = store.publish(p).unwrap();
            for t in first_turn(&h)..first_turn(&h) + 3 {
                for s in turn_steps(t) {
                    let o = if s.append_op {
                        &append
                    } else {
                        &AppendOptions::default()
                    };
                    live2.append(s.ty, &s.data, o).unwrap();
                }
            }
            live2.close().unwrap();
            h
        } else {
            for t in 1..=3 {
                for s in turn_steps(t) {
                    let o = if s.append_op {
                        &append
                    } else {
                        &AppendOptions::default()
                    };
                    live.append(s.ty, &s.data, o).unwrap();
                }
            }
            live.close().unwrap();
            Vec::new()
        };
        let loaded = store.load("m").unwrap().events;
        let model = expected_appends(&history, loaded.len() - history.len());
        for (got, want) in loaded[history.len()..].iter().zip(&model) {
            assert_eq!(got.to_json(), want.to_json());
        }
        store.close().unwrap();
    }
}

/// The crash workload written in random batch splits, with resumes between
/// runs (no kills): a fresh load must return every event, never mistaking a
/// batch boundary (e.g. inside a run of packed chunks) for a torn tail.
#[test]
fn random_batch_splits_load_back_whole() {
    if std::env::var(CHILD_ENV).is_ok() || std::env::var(READER_ENV).is_ok() {
        return;
    }
    let seed = seed();
    let mut rng = Rng(seed);
    let mut kinds = vec![Kind::Sqlite, Kind::Zstd, Kind::Raw];
    if support::pg::url("random_batch_splits_load_back_whole (postgres)").is_some() {
        kinds.push(Kind::Postgres);
    }
    for kind in kinds {
        let dir = TempDir::new("crash-splits");
        let location = kind.location(dir.path());
        if kind == Kind::Postgres {
            let schema = pg_schema(&location);
            dir.on_drop_once("pg-schema", move || {
                support::pg::drop_schema(&pg_url(), &schema)
            });
        }
        let id = "splits";
        let mut acked: Vec<String> = Vec::new();
        for run in 0..12 {
            let config = kind.config(&location, 200);
            let store = Store::with_backend(open_backend(&config.backend).unwrap(), config, None);
            let history = match store.load(id) {
                Ok(v) => v.events,
                Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
                Err(e) => panic!("{kind:?} run {run} (seed {seed}): {e}"),
            };
            let lost = check_log(
                kind,
                &format!("{kind:?} run {run} seed {seed}"),
                &history,
                &acked,
            );
            assert_eq!(lost, 0, "{kind:?} run {run} (seed {seed}): events lost");
            let n = 20 + rng.below(120) as usize;
            let new = expected_appends(&history, n);
            let mut i = 0;
            while i < new.len() {
                let k = (1 + rng.below(7) as usize).min(new.len() - i);
                if history.is_empty() && i == 0 {
                    store.create(SessionHeader::new(id, T0 as u64)).unwrap();
                }
                store
                    .append(id, new[i..i + k].to_vec())
                    .unwrap_or_else(|e| panic!("{kind:?} run {run} (seed {seed}): append: {e}"));
                i += k;
            }
            acked = history
                .iter()
                .chain(&new)
                .map(|e| text_of(kind, e))
                .collect();
            store.close().unwrap();
        }
    }
}
