//! Cold writes and readers around writers (issue 13): appending to a torn
//! cold log adopts it (DIFFERENCES B 05), JSONL revision tokens are stable
//! across store instances and processes (B 08), a publish's orphaned temp
//! files are removed under the writer lock (D14), a failed close keeps its
//! events (D16), and readers of a session another writer holds see its
//! complete writes only (D2).

mod support;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_persist::backend::{
    Backend, BackendKind, Expect, Location, RawArtifact, Revision, ScannedSuffix, StoredLog,
    WriterHolder, WriterLock,
};
use dsh_persist::model::event::Event;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, SqliteConfig, Store, StoreConfig,
    open_backend,
};
use dsh_persist::{Error, ErrorKind, Result};
use support::TempDir;

const CLI: &str = env!("CARGO_BIN_EXE_dsh-persist");

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
            Kind::Sqlite => dir.join("s.db"),
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
        c.write_batch_max_delay_ms = 3_600_000;
        c
    }

    fn open(self, location: &Path) -> Store {
        Store::open(self.config(location)).unwrap()
    }

    fn cli_flag(self) -> &'static str {
        match self {
            Kind::Zstd => "--jsonl",
            Kind::Raw => "--jsonl-raw",
            Kind::Sqlite => "--sqlite",
        }
    }
}

fn header(id: &str) -> SessionHeader {
    let mut h = SessionHeader::new(id, 7);
    h.cwd = Some("/w".into());
    h
}

fn log_path(store: &Store, id: &str) -> PathBuf {
    match store.locate(&header(id)).unwrap() {
        Some(Location::Jsonl { path }) => PathBuf::from(path),
        None => panic!("no file"),
    }
}

fn append_bytes(path: &Path, bytes: &[u8]) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(bytes).unwrap();
}

/// `turn/start` of turn `t` at `seq`, then (when `end`) its `turn/end`.
fn turn_json(seq: u64, t: u64, end: bool) -> String {
    let mut items = vec![format!(
        r#"{{"type":"turn/start","seq":{seq},"time":9,"data":{{"turn":{t}}}}}"#
    )];
    if end {
        items.push(format!(
            r#"{{"type":"turn/end","seq":{},"time":10,"data":{{"turn":{t},"reason":{{"kind":"completed"}}}}}}"#,
            seq + 1
        ));
    }
    format!("[{}]", items.join(","))
}

fn types(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{}:{}", e.seq, e.type_str()))
        .collect()
}

/// Leaves a torn last write in the log of `id`, as a crash mid-append would.
fn tear(kind: Kind, location: &Path, store: &Store, id: &str) {
    match kind {
        Kind::Raw => append_bytes(&log_path(store, id), b"\n{\"partial crash"),
        Kind::Zstd => {
            let frame = zstd::stream::encode_all(&b"{\"type\":\"turn/start\",\"seq\":99}\n"[..], 3)
                .unwrap();
            append_bytes(&log_path(store, id), &frame[..frame.len() / 2]);
        }
        Kind::Sqlite => {
            let c = rusqlite::Connection::open(location).unwrap();
            c.execute(
                "INSERT INTO events (session_id, seq, type, time, data) VALUES (?1, 50, 'turn/start', 1, '{bad')",
                [id],
            )
            .unwrap();
        }
    }
}

#[test]
fn a_cold_append_to_a_torn_log_adopts_it() {
    for kind in Kind::ALL {
        for open_turn in [false, true] {
            let dir = TempDir::new("adopt");
            let location = kind.location(dir.path());
            let id = "disk-append";
            let store = kind.open(&location);
            store.create(header(id)).unwrap();
            store.append_json(id, &turn_json(0, 1, !open_turn)).unwrap();
            tear(kind, &location, &store, id);
            store.close().unwrap();
            // A fresh store, no load first (the original's "append() to a
            // disk-only session adopts it and repairs a crash tail").
            let store = kind.open(&location);
            let next = if open_turn { 1 } else { 2 };
            let batch = if open_turn {
                r#"[{"type":"turn/end","seq":1,"time":10,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#
                    .to_string()
            } else {
                turn_json(next, 2, true)
            };
            store
                .append_json(id, &batch)
                .unwrap_or_else(|e| panic!("{kind:?} open turn {open_turn}: {e}"));
            let want = if open_turn {
                vec!["0:turn/start", "1:turn/end"]
            } else {
                vec!["0:turn/start", "1:turn/end", "2:turn/start", "3:turn/end"]
            };
            let got = store.load(id).unwrap().events;
            assert_eq!(types(&got), want, "{kind:?}: torn fragment cut, no closers");
            if kind != Kind::Sqlite {
                let raw = store.read_raw(id).unwrap().unwrap().content;
                assert!(!raw.contains("partial"), "{kind:?}: {raw}");
            }
            store.close().unwrap();
        }
    }
}

/// `dsh-persist snapshots --json` → the revision of the first session.
fn cli_revision(kind: Kind, location: &Path) -> String {
    let out = Command::new(CLI)
        .arg(kind.cli_flag())
        .arg(location)
        .args(["--json", "snapshots"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0]["revision"].as_str().unwrap().to_string()
}

#[test]
fn revision_tokens_are_stable_across_instances_and_processes() {
    for kind in Kind::ALL {
        let dir = TempDir::new("revisions");
        let location = kind.location(dir.path());
        let id = "rev";
        let a = kind.open(&location);
        a.create(header(id)).unwrap();
        a.append_json(id, &turn_json(0, 1, true)).unwrap();
        let r1 = a.list_snapshots().unwrap()[0].1.clone();
        let b = kind.open(&location);
        assert_eq!(
            b.list_snapshots().unwrap()[0].1,
            r1,
            "{kind:?}: another instance"
        );
        let cli1 = cli_revision(kind, &location);
        let cli2 = cli_revision(kind, &location);
        assert_eq!(cli1, cli2, "{kind:?}: two CLI runs");
        assert_eq!(cli1, r1.0, "{kind:?}: the CLI and the library");
        // Changes after an append, and after a repair.
        b.append_json(id, &turn_json(2, 2, false)).unwrap();
        let r2 = a.list_snapshots().unwrap()[0].1.clone();
        assert_ne!(r2, r1, "{kind:?}: after an append");
        assert_eq!(cli_revision(kind, &location), r2.0);
        b.load(id).unwrap(); // closes the open turn
        let r3 = a.list_snapshots().unwrap()[0].1.clone();
        assert_ne!(r3, r2, "{kind:?}: after a repair");
        assert_eq!(b.list_snapshots().unwrap()[0].1, r3);
        a.close().unwrap();
        b.close().unwrap();
    }
}

#[test]
fn orphaned_publish_temp_files_are_removed_under_the_writer_lock() {
    let dir = TempDir::new("temps");
    let location = Kind::Zstd.location(dir.path());
    let store = Kind::Zstd.open(&location);
    store.create(header("s")).unwrap();
    store.append_json("s", &turn_json(0, 1, true)).unwrap();
    store.create(header("t")).unwrap();
    store.append_json("t", &turn_json(0, 1, true)).unwrap();
    let sdir = log_path(&store, "s").parent().unwrap().to_path_buf();
    let tdir = log_path(&store, "t").parent().unwrap().to_path_buf();
    // Another handle holds the lock while these files appear (as if it
    // were publishing them): others' reads and refused writes remove
    // nothing.
    let holder = Kind::Zstd.open(&location);
    let live = holder.resume("s").unwrap();
    // What kills during a publish leave: temps next to the log, and in the
    // session dir a losing creator under another cwd made.
    let other = location.join("--elsewhere--").join("s");
    std::fs::create_dir_all(&other).unwrap();
    let orphans = [
        sdir.join("session.jsonl.zstd.0123456789ab.tmp"),
        other.join("session.jsonl.zstd.ba9876543210.tmp"),
    ];
    let kept = [
        tdir.join("session.jsonl.zstd.aaaaaaaaaaaa.tmp"), // another id's
        sdir.join("notes.tmp"),                           // not a temp name
    ];
    for f in orphans.iter().chain(&kept) {
        std::fs::write(f, b"half a publish").unwrap();
    }
    let e = store.append_json("s", &turn_json(3, 2, true)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    store.inspect("s").unwrap();
    assert!(
        orphans.iter().all(|f| f.exists()),
        "nothing removed by a non-holder"
    );
    live.close().unwrap();
    // Now they are orphans (their writer is gone): the next writer of `s`
    // removes them.
    store.append_json("s", &turn_json(3, 2, true)).unwrap();
    for f in &orphans {
        assert!(!f.exists(), "{f:?} was not removed");
    }
    for f in &kept {
        assert!(f.exists(), "{f:?} must stay");
    }
    assert_eq!(store.list().unwrap().len(), 2);
    holder.close().unwrap();
    store.close().unwrap();
}

/// Delegates to a real backend; appends fail while `fail` is set.
struct Failing {
    inner: Arc<dyn Backend>,
    fail: AtomicBool,
}

impl Backend for Failing {
    fn kind(&self) -> BackendKind {
        self.inner.kind()
    }
    fn locate(&self, h: &SessionHeader) -> Result<Option<Location>> {
        self.inner.locate(h)
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
    fn append(&self, h: &SessionHeader, e: &[Event], x: Expect<'_>) -> Result<Revision> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(Error::io_msg("no space left on device (test)"));
        }
        self.inner.append(h, e, x)
    }
    fn read(&self, id: &str) -> Result<Option<StoredLog>> {
        self.inner.read(id)
    }
    fn read_from(&self, id: &str, k: u64) -> Result<Option<ScannedSuffix>> {
        self.inner.read_from(id, k)
    }
    fn commit_repair(&self, id: &str, log: &StoredLog, c: &[Event]) -> Result<Revision> {
        self.inner.commit_repair(id, log, c)
    }
    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>> {
        self.inner.read_raw(id)
    }
    fn lock_writer(&self, id: &str) -> Result<WriterLock> {
        self.inner.lock_writer(id)
    }
    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        self.inner.writer_holder(id)
    }
    fn close(&self) -> Result<()> {
        self.inner.close()
    }
}

#[test]
fn a_failed_close_keeps_the_events_and_can_be_retried() {
    for kind in Kind::ALL {
        let dir = TempDir::new("close-retry");
        let location = kind.location(dir.path());
        let config = kind.config(&location);
        let failing = Arc::new(Failing {
            inner: open_backend(&config.backend).unwrap(),
            fail: AtomicBool::new(false),
        });
        let store = Store::with_backend(failing.clone(), config, None);
        let other = kind.open(&location);
        let live = store.start(header("c")).unwrap();
        let none = AppendOptions::default();
        live.append("turn/start", r#"{"turn":1}"#, &none).unwrap();
        failing.fail.store(true, Ordering::SeqCst);
        let e = live.close().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{kind:?}: {e}");
        // Nothing released: the event is pending, the id still held.
        assert_eq!(live.pending_len(), 1);
        assert!(store.is_live("c"));
        let e = live.append(
            "turn/end",
            r#"{"turn":1,"reason":{"kind":"completed"}}"#,
            &none,
        );
        assert_eq!(e.unwrap_err().kind(), ErrorKind::Closed);
        assert_eq!(
            other.start(header("c")).err().unwrap().kind(),
            ErrorKind::Conflict
        );
        assert_eq!(
            live.close().unwrap_err().kind(),
            ErrorKind::Io,
            "still failing"
        );
        // The store's close fails the same way, and keeps storage open for
        // the session's retry.
        assert_eq!(store.close().unwrap_err().kind(), ErrorKind::Io);
        failing.fail.store(false, Ordering::SeqCst);
        live.close().unwrap();
        assert!(!store.is_live("c"));
        let got = other.inspect("c").unwrap().events;
        assert_eq!(got[0].type_str(), "turn/start", "{kind:?}: the kept event");
        // A session given up after a failed close drops its events.
        let live2 = other.start(header("d")).unwrap();
        live2.append("turn/start", r#"{"turn":1}"#, &none).unwrap();
        assert_eq!(live2.abandon(), 1);
        assert!(other.start(header("d")).is_ok(), "{kind:?}: released");
        other.close().unwrap();
    }
}

#[test]
fn readers_of_a_held_session_see_its_complete_writes_only() {
    for kind in [Kind::Raw, Kind::Zstd] {
        let dir = TempDir::new("held-readers");
        let location = kind.location(dir.path());
        let writer = kind.open(&location);
        let reader = kind.open(&location);
        let live = writer.start(header("h")).unwrap();
        let none = AppendOptions::default();
        live.append("turn/start", r#"{"turn":1}"#, &none).unwrap();
        live.append(
            "turn/end",
            r#"{"turn":1,"reason":{"kind":"completed"}}"#,
            &none,
        )
        .unwrap();
        live.append("turn/start", r#"{"turn":2}"#, &none).unwrap();
        live.flush().unwrap();
        let path = log_path(&writer, "h");
        // A write in progress: a partial line, or a frame cut half-way
        // whose first complete line is decodable.
        let partial: Vec<u8> = match kind {
            Kind::Raw => br#"{"type":"step/start","seq":3,"#.to_vec(),
            _ => {
                let text = format!(
                    "{}\n{}\n",
                    r#"{"type":"turn/end","seq":3,"time":1,"data":{"turn":2,"reason":{"kind":"completed"}}}"#,
                    "x".repeat(200_000)
                );
                let f = zstd::stream::encode_all(text.as_bytes(), 3).unwrap();
                f[..f.len() - 40].to_vec()
            }
        };
        append_bytes(&path, &partial);
        let before = std::fs::read(&path).unwrap();
        let seen = reader.inspect("h").unwrap().events;
        assert_eq!(
            types(&seen),
            ["0:turn/start", "1:turn/end", "2:turn/start"],
            "{kind:?}"
        );
        let from = reader.read_from("h", 0).unwrap().events;
        assert_eq!(from.len(), 3, "{kind:?}: nothing from the incomplete write");
        let e = reader.load("h").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Busy, "{kind:?}: {e}");
        assert!(e.to_string().contains("open turn"), "{e}");
        if kind == Kind::Raw {
            let raw = reader.read_raw("h").unwrap().unwrap().content;
            assert!(raw.ends_with("{\"turn\":2}}\n"), "{raw}");
        }
        let out = Command::new(CLI)
            .arg(kind.cli_flag())
            .arg(&location)
            .args(["--json", "verify"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kind:?}: verify under a writer: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{kind:?}: readers wrote"
        );
        // The write completes (here: the test takes the bytes back and the
        // live session writes on); then the log is the writer's.
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len((before.len() - partial.len()) as u64)
            .unwrap();
        live.append(
            "turn/end",
            r#"{"turn":2,"reason":{"kind":"completed"}}"#,
            &none,
        )
        .unwrap();
        live.flush().unwrap();
        assert_eq!(reader.load("h").unwrap().events.len(), 4);
        live.close().unwrap();
        writer.close().unwrap();
        reader.close().unwrap();
    }
}
