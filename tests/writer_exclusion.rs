//! Writer exclusion and readers under a writer, with real processes
//! (issue 13, reliability D1, D2, D8, D15): every backend, the test binary
//! re-executed as child processes (`DSH_EXCL_CHILD=<mode>|…`).
//!
//! - two processes appending to one session (live sessions and cold
//!   appends, alternating);
//! - two store handles in one process doing the same from two threads;
//! - a live writer whose turns are durable half-way, while this process
//!   loops `load`/`inspect`/`read_from` and the CLI's `load` and `verify`;
//! - the create race: two processes create one new id under two cwds at
//!   the same instant;
//! - a writer held open in another process: every refusal names it (its
//!   pid, or its PostgreSQL connection).
//!
//! PostgreSQL runs too when `DSH_TEST_POSTGRES_URL` names a server (a
//! schema per store location, dropped with the test directory): there the
//! writer locks are the server's advisory locks.
//!
//! Checks: 0 corruptions (every load succeeds or is refused as `busy`), 0
//! lost acknowledged events (each exactly once, in a contiguous balanced
//! log), no repair ever made under a writer, and every refusal a clear
//! `busy` or `conflict` (a cold append that lost the race to the other
//! writer is told the stored next seq, in the original's words). `DSH_EXCLUSION_ITERS` sets the
//! iterations per backend (default 40; the figures in docs/reliability.md
//! use 300).

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, PostgresConfig, SqliteConfig, Store,
    StoreConfig,
};
use dsh_persist::{Error, ErrorKind};
use support::TempDir;

const CHILD_ENV: &str = "DSH_EXCL_CHILD";
const CLI: &str = env!("CARGO_BIN_EXE_dsh-persist");

fn iterations() -> usize {
    std::env::var("DSH_EXCLUSION_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

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
    format!("x{h:016x}")
}

fn pg_url() -> String {
    std::env::var(support::pg::URL_ENV).unwrap()
}

impl Kind {
    /// Every backend: PostgreSQL when the test server is set (see
    /// `support::pg::url`, which fails a CI run without it).
    fn all(test: &str) -> Vec<Kind> {
        let mut kinds = vec![Kind::Zstd, Kind::Raw, Kind::Sqlite];
        if support::pg::url(test).is_some() {
            kinds.push(Kind::Postgres);
        }
        kinds
    }

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

    /// The store location in `dir` (PostgreSQL: its schema is dropped with
    /// `dir`).
    fn location(self, dir: &TempDir) -> PathBuf {
        match self {
            Kind::Sqlite => dir.path().join("sessions.db"),
            Kind::Postgres => {
                let location = dir.path().join("pg.schema");
                let schema = pg_schema(&location);
                dir.on_drop_once("pg-schema", move || {
                    support::pg::drop_schema(&pg_url(), &schema)
                });
                location
            }
            _ => dir.path().join("root"),
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
            Kind::Postgres => BackendConfig::Postgres(
                PostgresConfig::new(pg_url()).with_schema(pg_schema(location)),
            ),
        };
        let mut c = StoreConfig::with_backend(backend);
        c.write_batch_max_delay_ms = 1;
        c
    }

    /// The CLI's store selection for `location`.
    fn cli_args(self, location: &Path) -> Vec<String> {
        let path = location.display().to_string();
        match self {
            Kind::Zstd => vec!["--jsonl".into(), path],
            Kind::Raw => vec!["--jsonl-raw".into(), path],
            Kind::Sqlite => vec!["--sqlite".into(), path],
            Kind::Postgres => vec![
                "--postgres".into(),
                pg_url(),
                "--postgres-schema".into(),
                pg_schema(location),
            ],
        }
    }

    /// How the holder of a writer lock in this process is named in a
    /// `busy` refusal: by pid (file locks) or by the server process of
    /// the holding connection (PostgreSQL).
    fn this_process_holder(self) -> &'static str {
        match self {
            Kind::Postgres => "another store handle in this process (server process ",
            _ => "another store handle in this process (pid ",
        }
    }

    fn open(self, location: &Path) -> Store {
        Store::open(self.config(location)).unwrap_or_else(|e| panic!("open {location:?}: {e}"))
    }
}

fn user_msg(tag: &str) -> String {
    format!(
        r#"{{"id":"{tag}","role":"user","content":[{{"type":"text","text":"{tag}"}}],"source":{{"kind":"user"}}}}"#
    )
}

/// A complete turn as whole events (for `Store::append_json`).
fn turn_json(first_seq: u64, turn: u64, tag: &str) -> String {
    format!(
        r#"[{{"type":"turn/start","seq":{},"time":5,"data":{{"turn":{turn}}}}},{{"type":"user/message","seq":{},"time":5,"data":{},"surfaceOp":"append"}},{{"type":"turn/end","seq":{},"time":5,"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}]"#,
        first_seq,
        first_seq + 1,
        user_msg(tag),
        first_seq + 2
    )
}

fn turns_of(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| e.event_type() == "turn/start")
        .count() as u64
}

/// The tags of the user messages of a log.
fn tags_of(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.event_type() == "user/message")
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(e.data.as_str()).unwrap();
            v["id"].as_str().unwrap_or("?").to_string()
        })
        .collect()
}

/// A loaded log must be contiguous and balanced, with no synthetic closer:
/// nothing here crashes, so a closer would be a repair made under a writer.
fn check_log(ctx: &str, events: &[Event]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "{ctx}: the log is not contiguous");
        assert!(
            !e.data.as_str().contains("\"interrupted\""),
            "{ctx}: a turn was closed synthetically at seq {}: a repair under a writer",
            e.seq
        );
    }
    assert!(
        !dsh_persist::store::view::has_open_turn(events),
        "{ctx}: the loaded log is not balanced"
    );
}

/// The test binary as a child running `spec`, its stdin and stdout piped
/// (a `hold` child waits for its stdin to close).
fn spawn_child(spec: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, spec)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The child's output lines, once it exited successfully.
fn finish(child: Child, ctx: &str) -> Vec<String> {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{ctx}: child failed:\n{text}");
    text.lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Lines the child printed with `prefix` (libtest may print its own text
/// before the first one on the same line).
fn lines_with(lines: &[String], prefix: &str) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.find(prefix).map(|i| l[i + prefix.len()..].to_string()))
        .collect()
}

/// Reads a child's output up to the first line containing `word`; false
/// when it ended first.
fn read_until(lines: &mut impl Iterator<Item = std::io::Result<String>>, word: &str) -> bool {
    lines.map_while(|l| l.ok()).any(|l| l.contains(word))
}

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

// ---------------------------------------------------------------------------
// Children.

#[test]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.split('|').collect();
    let kind = Kind::parse(parts[1]);
    let location = PathBuf::from(parts[2]);
    let id = parts[3];
    match parts[0] {
        "append" => child_append(kind, &location, id, parts[4], parts[5].parse().unwrap()),
        "writer" => child_writer(kind, &location, id, parts[4].parse().unwrap()),
        "create" => child_create(kind, &location, id, parts[4], Path::new(parts[5])),
        "hold" => child_hold(kind, &location, id),
        other => panic!("unknown child mode {other}"),
    }
}

/// How a refusal is reported: `refused <kind> <message>`.
fn refusal(e: &Error) -> String {
    format!("refused {} {}", e.kind().as_str(), e)
}

/// Appends `iters` turns tagged `<name>-<i>` to `id`, alternating a live
/// session (resume, append, close) and a cold `Store::append`, retrying
/// every refusal; prints `ack <tag>` after each durable turn.
fn child_append(kind: Kind, location: &Path, id: &str, name: &str, iters: usize) {
    let store = kind.open(location);
    for i in 0..iters {
        let tag = format!("{name}-{i}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "{tag}: never got through");
            let r = if i % 2 == 0 {
                append_live(&store, id, &tag)
            } else {
                append_cold(&store, id, &tag)
            };
            match r {
                Ok(()) => {
                    say(&format!("ack {tag}"));
                    break;
                }
                Err(e) => {
                    say(&refusal(&e));
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }
    store.close().unwrap();
}

fn append_live(store: &Store, id: &str, tag: &str) -> Result<(), Error> {
    let live = store.resume(id)?;
    let t = turns_of(&live.snapshot()) + 1;
    let op = AppendOptions {
        surface_op: Some("\"append\"".into()),
        ..Default::default()
    };
    live.append(
        "turn/start",
        &format!(r#"{{"turn":{t}}}"#),
        &Default::default(),
    )?;
    live.append("user/message", &user_msg(tag), &op)?;
    live.append(
        "turn/end",
        &format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#),
        &Default::default(),
    )?;
    live.close()
}

fn append_cold(store: &Store, id: &str, tag: &str) -> Result<(), Error> {
    let view = store.read_from(id, 0)?;
    let next = view.events.len() as u64;
    store.append_json(id, &turn_json(next, turns_of(&view.events) + 1, tag))
}

/// A live session whose turns are durable half-way (after the user
/// message) before they end: `ack <tag>` after each flush of a turn start.
fn child_writer(kind: Kind, location: &Path, id: &str, turns: u64) {
    let store = kind.open(location);
    let live = store.start(SessionHeader::new(id, 7)).unwrap();
    let op = AppendOptions {
        surface_op: Some("\"append\"".into()),
        ..Default::default()
    };
    for t in 1..=turns {
        let tag = format!("m{t}");
        live.append(
            "turn/start",
            &format!(r#"{{"turn":{t}}}"#),
            &Default::default(),
        )
        .unwrap();
        live.append("user/message", &user_msg(&tag), &op).unwrap();
        live.flush().unwrap();
        say(&format!("ack {tag}"));
        live.append(
            "turn/end",
            &format!(r#"{{"turn":{t},"reason":{{"kind":"completed"}}}}"#),
            &Default::default(),
        )
        .unwrap();
        live.flush().unwrap();
    }
    live.close().unwrap();
    store.close().unwrap();
    say("done");
}

/// Resumes `id` as a live session, leaves a turn open and durable, says
/// `holding`, and keeps the session until its stdin closes; then ends the
/// turn and closes.
fn child_hold(kind: Kind, location: &Path, id: &str) {
    let store = kind.open(location);
    let live = store.resume(id).unwrap();
    live.append("turn/start", r#"{"turn":2}"#, &Default::default())
        .unwrap();
    live.flush().unwrap();
    say("holding");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut rest).unwrap();
    live.append(
        "turn/end",
        r#"{"turn":2,"reason":{"kind":"completed"}}"#,
        &Default::default(),
    )
    .unwrap();
    live.close().unwrap();
    store.close().unwrap();
    say("released");
}

/// Creates `id` under cwd `/<name>` and appends one turn as soon as `go`
/// exists: `won`, or `lost <kind> <message>`.
fn child_create(kind: Kind, location: &Path, id: &str, name: &str, go: &Path) {
    let store = kind.open(location);
    say("ready");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !go.exists() {
        assert!(Instant::now() < deadline, "never told to go");
        std::hint::spin_loop();
    }
    let mut header = SessionHeader::new(id, 7);
    header.cwd = Some(format!("/{name}"));
    let r = store
        .create(header)
        .and_then(|()| store.append_json(id, &turn_json(0, 1, name)));
    match r {
        Ok(()) => say("won"),
        Err(e) => say(&format!("lost {} {e}", e.kind().as_str())),
    }
    store.close().unwrap();
}

// ---------------------------------------------------------------------------
// Refusals.

/// Counts refusals by kind; panics on one that is not a clear busy or
/// conflict (or the stale-seq refusal of a cold append that lost the race).
#[derive(Default)]
struct Refusals(BTreeMap<String, usize>);

impl Refusals {
    fn note(&mut self, ctx: &str, kind: &str, message: &str) {
        let clear = match kind {
            "busy" => message.contains("is being written by") || message.contains("open turn"),
            "conflict" => message.contains("already exists") || message.contains("another writer"),
            // The original's text: `append seq mismatch for "<id>": expected
            // <stored next seq> at index 0, got <the batch's first seq>`.
            "invalid_argument" => {
                message.contains("append seq mismatch for ")
                    && message.contains(" at index 0, got ")
            }
            _ => false,
        };
        assert!(clear, "{ctx}: unexpected refusal [{kind}] {message}");
        *self.0.entry(kind.to_string()).or_default() += 1;
    }

    fn note_line(&mut self, ctx: &str, line: &str) {
        let (kind, message) = line.split_once(' ').unwrap_or((line, ""));
        self.note(ctx, kind, message);
    }
}

// ---------------------------------------------------------------------------
// Parents.

fn parent() -> bool {
    std::env::var(CHILD_ENV).is_err()
}

#[test]
fn two_processes_append_to_one_session() {
    if !parent() {
        return;
    }
    let iters = iterations();
    for kind in Kind::all("two_processes_append_to_one_session") {
        let dir = TempDir::new(&format!("excl-2p-{}", kind.name()));
        let location = kind.location(&dir);
        let id = "shared";
        {
            let store = kind.open(&location);
            store.create(SessionHeader::new(id, 7)).unwrap();
            store.append_json(id, &turn_json(0, 1, "seed")).unwrap();
            store.close().unwrap();
        }
        let children: Vec<Child> = ["A", "B"]
            .iter()
            .map(|name| {
                spawn_child(&format!(
                    "append|{}|{}|{id}|{name}|{iters}",
                    kind.name(),
                    location.display()
                ))
            })
            .collect();
        let ctx = format!("{} two processes", kind.name());
        let mut acked = vec!["seed".to_string()];
        let mut refusals = Refusals::default();
        for c in children {
            let lines = finish(c, &ctx);
            acked.extend(lines_with(&lines, "ack "));
            for r in lines_with(&lines, "refused ") {
                refusals.note_line(&ctx, &r);
            }
        }
        let store = kind.open(&location);
        let log = store
            .load(id)
            .unwrap_or_else(|e| panic!("{ctx}: load: {e}"));
        check_log(&ctx, &log.events);
        let mut got = tags_of(&log.events);
        got.sort();
        acked.sort();
        assert_eq!(
            got, acked,
            "{ctx}: every acknowledged turn exactly once, nothing else"
        );
        store.close().unwrap();
        println!(
            "exclusion {}: 2 processes, {} acknowledged turns, 0 lost, 0 corrupt; refusals {:?}",
            kind.name(),
            acked.len() - 1,
            refusals.0
        );
    }
}

/// A writer in another process is named in every refusal: by its pid for
/// the file backends (what `F_GETLK` reports of its lock), as another
/// connection on PostgreSQL. Readers meanwhile see its open turn without
/// closing it, and once it is gone the session is writable again.
#[test]
fn a_writer_in_another_process_is_named_by_its_pid() {
    if !parent() {
        return;
    }
    for kind in Kind::all("a_writer_in_another_process_is_named_by_its_pid") {
        let dir = TempDir::new(&format!("excl-pid-{}", kind.name()));
        let location = kind.location(&dir);
        let id = "held";
        let ctx = format!("{} held by a child", kind.name());
        let store = kind.open(&location);
        store.create(SessionHeader::new(id, 7)).unwrap();
        store.append_json(id, &turn_json(0, 1, "seed")).unwrap();
        let mut child = spawn_child(&format!("hold|{}|{}|{id}", kind.name(), location.display()));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert!(
            read_until(&mut lines, "holding"),
            "{ctx}: the child never held the session"
        );
        let holder = match kind {
            Kind::Postgres => "is being written by another connection (".to_string(),
            _ => format!("is being written by process {};", child.id()),
        };
        let refusals = [
            ("resume", store.resume(id).err().expect("a second writer")),
            (
                "append",
                store.append_json(id, &turn_json(3, 3, "x")).unwrap_err(),
            ),
            ("load", store.load(id).unwrap_err()),
        ];
        for (what, e) in refusals {
            assert_eq!(e.kind(), ErrorKind::Busy, "{ctx}: {what}: {e}");
            assert!(e.to_string().contains(&holder), "{ctx}: {what}: {e}");
        }
        let (code, _, err) = cli(kind, &location, &["load", id]);
        assert_eq!(code, 1, "{ctx}: cli load: {err}");
        assert!(err.contains(&holder), "{ctx}: cli load: {err}");
        // The seed turn, the child's `session/end-seed` and its open turn,
        // no closer: the turn is the writer's.
        let seen = store.inspect(id).unwrap();
        assert_eq!(seen.events.len(), 5, "{ctx}: the open turn, no closers");
        assert_eq!(store.read_from(id, 0).unwrap().events.len(), 5, "{ctx}");
        drop(child.stdin.take());
        assert!(
            read_until(&mut lines, "released"),
            "{ctx}: the child never released the session"
        );
        // The rest of its output (libtest's), so it never writes to a
        // closed pipe.
        lines.for_each(drop);
        assert!(child.wait().unwrap().success(), "{ctx}: child failed");
        assert_eq!(store.load(id).unwrap().events.len(), 6, "{ctx}");
        store.append_json(id, &turn_json(6, 3, "after")).unwrap();
        store.close().unwrap();
    }
}

#[test]
fn two_handles_in_one_process_exclude_each_other() {
    if !parent() {
        return;
    }
    let iters = iterations();
    for kind in Kind::all("two_handles_in_one_process_exclude_each_other") {
        let dir = TempDir::new(&format!("excl-2h-{}", kind.name()));
        let location = kind.location(&dir);
        let id = "shared";
        let a = kind.open(&location);
        let b = kind.open(&location);
        a.create(SessionHeader::new(id, 7)).unwrap();
        a.append_json(id, &turn_json(0, 1, "seed")).unwrap();

        // While A's live session holds the id, B cannot write it in any way.
        let live = a.resume(id).unwrap();
        live.append("turn/start", r#"{"turn":2}"#, &Default::default())
            .unwrap();
        live.flush().unwrap();
        let e = b.resume(id).err().expect("a second writer");
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        assert!(e.to_string().contains(kind.this_process_holder()), "{e}");
        let e = b.append_json(id, &turn_json(5, 3, "x")).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        let e = b.start(SessionHeader::new(id, 7)).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
        // B reads without repairing: the open turn is A's.
        let e = b.load(id).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
        let seen = b.inspect(id).unwrap();
        assert_eq!(seen.events.len(), live.len() as usize, "no closers");
        assert_eq!(b.read_from(id, 0).unwrap().events.len(), seen.events.len());
        live.append(
            "turn/end",
            r#"{"turn":2,"reason":{"kind":"completed"}}"#,
            &Default::default(),
        )
        .unwrap();
        live.close().unwrap();
        assert_eq!(b.load(id).unwrap().events.len(), 6);

        // Then both handles write from two threads.
        let ctx = format!("{} two handles", kind.name());
        let acked: Vec<Vec<String>> = std::thread::scope(|s| {
            let ha = s.spawn(|| handle_loop(&a, id, "A", iters));
            let hb = s.spawn(|| handle_loop(&b, id, "B", iters));
            vec![ha.join().unwrap(), hb.join().unwrap()]
        });
        let mut refusals = Refusals::default();
        let mut want = vec!["seed".to_string()];
        for lines in acked {
            for l in lines {
                match l.strip_prefix("ack ") {
                    Some(tag) => want.push(tag.to_string()),
                    None => refusals.note_line(&ctx, l.strip_prefix("refused ").unwrap()),
                }
            }
        }
        let c = kind.open(&location);
        let log = c.load(id).unwrap();
        check_log(&ctx, &log.events);
        let mut got = tags_of(&log.events);
        got.sort();
        want.sort();
        assert_eq!(got, want, "{ctx}: every acknowledged turn exactly once");
        println!(
            "exclusion {}: 2 handles, {} acknowledged turns, 0 lost, 0 corrupt; refusals {:?}",
            kind.name(),
            want.len() - 1,
            refusals.0
        );
        for s in [a, b, c] {
            s.close().unwrap();
        }
    }
}

fn handle_loop(store: &Store, id: &str, name: &str, iters: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..iters {
        let tag = format!("{name}-{i}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "{tag}: never got through");
            let r = if i % 2 == 0 {
                append_live(store, id, &tag)
            } else {
                append_cold(store, id, &tag)
            };
            match r {
                Ok(()) => {
                    out.push(format!("ack {tag}"));
                    break;
                }
                Err(e) => {
                    out.push(refusal(&e));
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }
    }
    out
}

/// Runs the CLI; returns (exit code, stdout, stderr).
fn cli(kind: Kind, location: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(CLI)
        .args(kind.cli_args(location))
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_live_writer_and_looping_readers() {
    if !parent() {
        return;
    }
    let turns = iterations() as u64 * 2;
    for kind in Kind::all("a_live_writer_and_looping_readers") {
        let dir = TempDir::new(&format!("excl-rd-{}", kind.name()));
        let location = kind.location(&dir);
        let id = "live";
        let ctx = format!("{} live writer + readers", kind.name());
        // The store exists before the processes race to open it (two first
        // opens of a brand-new SQLite file may not both initialise it).
        kind.open(&location).close().unwrap();
        let mut writer = spawn_child(&format!(
            "writer|{}|{}|{id}|{turns}",
            kind.name(),
            location.display()
        ));
        let stdout = writer.stdout.take().unwrap();
        let acks = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(|l| l.ok())
                .collect::<Vec<String>>()
        });
        let mut figures: BTreeMap<&str, usize> = BTreeMap::new();
        let mut refusals = Refusals::default();
        let mut round = 0usize;
        while writer.try_wait().unwrap().is_none() {
            round += 1;
            // A fresh store each round: cold reads, no cache.
            let store = match Store::open(kind.config(&location)) {
                Ok(s) => s,
                Err(e) => panic!("{ctx}: open: {e}"),
            };
            match store.load(id) {
                Ok(v) => {
                    check_log(&ctx, &v.events);
                    *figures.entry("load ok").or_default() += 1;
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => {
                    refusals.note(&ctx, e.kind().as_str(), &e.to_string());
                    *figures.entry("load busy").or_default() += 1;
                }
            }
            match store.inspect(id) {
                Ok(v) => {
                    for (i, e) in v.events.iter().enumerate() {
                        assert_eq!(e.seq, i as u64, "{ctx}: inspect not contiguous");
                    }
                    *figures.entry("inspect ok").or_default() += 1;
                }
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => panic!("{ctx}: inspect under a live writer failed: {e}"),
            }
            match store.read_from(id, 0) {
                Ok(_) | Err(Error::NotFound { .. }) => {}
                Err(e) => panic!("{ctx}: read_from under a live writer failed: {e}"),
            }
            store.close().unwrap();
            if round % 4 == 0 {
                let (code, _, err) = cli(kind, &location, &["load", id]);
                match code {
                    0 => *figures.entry("cli load ok").or_default() += 1,
                    3 => {}
                    _ => {
                        let v: serde_json::Value = serde_json::from_str(err.trim())
                            .unwrap_or_else(|_| panic!("{ctx}: cli load: {err}"));
                        refusals.note(
                            &ctx,
                            v["error"]["kind"].as_str().unwrap(),
                            v["error"]["message"].as_str().unwrap(),
                        );
                        *figures.entry("cli load busy").or_default() += 1;
                    }
                }
                let (code, out, err) = cli(kind, &location, &["verify"]);
                assert!(
                    code == 0 || (code == 3 && out.is_empty()),
                    "{ctx}: verify under a live writer: exit {code}\n{out}{err}"
                );
                *figures.entry("cli verify ok").or_default() += 1;
            }
        }
        let lines = acks.join().unwrap();
        assert!(writer.wait().unwrap().success(), "{ctx}: writer failed");
        assert!(lines_with(&lines, "done").len() == 1, "{ctx}: {lines:?}");
        let acked = lines_with(&lines, "ack ");
        assert_eq!(acked.len() as u64, turns);
        let store = kind.open(&location);
        let log = store.load(id).unwrap();
        check_log(&ctx, &log.events);
        assert_eq!(tags_of(&log.events), acked, "{ctx}: acknowledged turns");
        store.close().unwrap();
        println!(
            "exclusion {}: live writer, {turns} turns durable half-way, {round} reader rounds {figures:?}, 0 lost, 0 corrupt, 0 repairs under the writer",
            kind.name()
        );
    }
}

#[test]
fn the_create_race_across_cwds_has_one_winner() {
    if !parent() {
        return;
    }
    let iters = iterations();
    for kind in Kind::all("the_create_race_across_cwds_has_one_winner") {
        let dir = TempDir::new(&format!("excl-cr-{}", kind.name()));
        let location = kind.location(&dir);
        // The store exists before the children race (two first opens of a
        // brand-new SQLite file may not both initialise it; the race here
        // is for the session id).
        kind.open(&location).close().unwrap();
        let mut losers: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..iters {
            let id = format!("race-{i}");
            let go = dir.path().join(format!("go-{i}"));
            let kids: Vec<Child> = ["A", "B"]
                .iter()
                .map(|cwd| {
                    spawn_child(&format!(
                        "create|{}|{}|{id}|{cwd}|{}",
                        kind.name(),
                        location.display(),
                        go.display()
                    ))
                })
                .collect();
            // Both ready, then go at once.
            let outs = support::race::release_together(kids, &go);
            let ctx = format!("{} create race {i}", kind.name());
            let won: Vec<&str> = ["A", "B"]
                .into_iter()
                .zip(&outs)
                .filter(|(_, o)| o.lines().any(|l| l.trim_end().ends_with("won")))
                .map(|(n, _)| n)
                .collect();
            assert_eq!(won.len(), 1, "{ctx}: exactly one winner: {outs:?}");
            for o in &outs {
                let lines: Vec<String> = o.lines().map(str::to_string).collect();
                if let Some(l) = lines_with(&lines, "lost ").first() {
                    let (k, m) = l.split_once(' ').unwrap();
                    assert_eq!(k, "conflict", "{ctx}: the loser gets a conflict: {m}");
                    assert!(m.contains("already exists"), "{ctx}: {m}");
                    *losers
                        .entry(m.split(':').next().unwrap().to_string())
                        .or_default() += 1;
                }
            }
            let store = kind.open(&location);
            let log = store.load(&id).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            assert_eq!(tags_of(&log.events), won, "{ctx}: the winner's log");
            store.close().unwrap();
        }
        let store = kind.open(&location);
        assert_eq!(store.list().unwrap().len(), iters);
        store.close().unwrap();
        let (code, out, err) = cli(kind, &location, &["verify"]);
        assert_eq!(code, 0, "{out}{err}");
        println!(
            "exclusion {}: create race x{iters}: {iters} single winners, {iters} conflicts, whole store lists and verifies",
            kind.name()
        );
    }
}

/// The slow loser of the create race: both handles `create` the id (each
/// finds it free), one materializes it and releases its lock, then the
/// other's first append takes the lock and finds the id stored. It gets
/// the same refusal as a creation of a stored id, on every backend (JSONL:
/// though the two cwds name two project directories).
#[test]
fn a_creator_that_comes_second_is_told_the_id_exists() {
    if !parent() {
        return;
    }
    for kind in Kind::all("a_creator_that_comes_second_is_told_the_id_exists") {
        let dir = TempDir::new(&format!("excl-late-{}", kind.name()));
        let location = kind.location(&dir);
        let (a, b) = (kind.open(&location), kind.open(&location));
        let mut ha = SessionHeader::new("late", 7);
        ha.cwd = Some("/A".into());
        let mut hb = SessionHeader::new("late", 7);
        hb.cwd = Some("/B".into());
        a.create(ha).unwrap();
        b.create(hb).unwrap();
        b.append_json("late", &turn_json(0, 1, "B")).unwrap();
        let e = a
            .append_json("late", &turn_json(0, 1, "A"))
            .expect_err("the second creator");
        assert_eq!(e.kind(), ErrorKind::Conflict, "{}: {e}", kind.name());
        assert_eq!(
            e.code(),
            Some("SESSION_ALREADY_EXISTS"),
            "{}: {e}",
            kind.name()
        );
        assert_eq!(
            e.to_string(),
            "session \"late\" already exists in this backend",
            "{}",
            kind.name()
        );
        let log = a.load("late").unwrap();
        assert_eq!(
            tags_of(&log.events),
            ["B"],
            "{}: the winner's log",
            kind.name()
        );
        a.close().unwrap();
        b.close().unwrap();
    }
}
