//! FIFOs and directories put where the store keeps regular files (a writer
//! lock, a session log): refused with a message naming the path, or left
//! out like any foreign file, but never waited on, never removed and never
//! written through. An open of a FIFO blocks until its other end is opened:
//! before this was fixed, a FIFO planted as a writer lock hung `inspect`,
//! `verify` and every writer of the process (the probe blocked while it
//! held the process's lock table).

mod support;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{AppendOptions, Store};
use support::{TempDir, mkfifo};

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// Runs `f` on its own thread; fails the test when it has not returned
/// within 60 s (a call blocked on a FIFO never returns).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return within 60 s: it waits on a FIFO"))
}

/// The three file stores: (name, config JSON, the directory they write).
fn stores(dir: &Path) -> Vec<(&'static str, String, PathBuf)> {
    let jsonl = |compression: &str| {
        let root = dir.join(compression);
        let config = format!(
            r#"{{"backend":"jsonl","root":{},"compression":"{compression}","writeBatchMaxDelayMs":0}}"#,
            serde_json::to_string(&root).unwrap()
        );
        (config, root)
    };
    let (zstd, zstd_root) = jsonl("zstd");
    let (none, none_root) = jsonl("none");
    let db_dir = dir.join("db");
    let sqlite = format!(
        r#"{{"backend":"sqlite","path":{},"writeBatchMaxDelayMs":0}}"#,
        serde_json::to_string(&db_dir.join("sessions.db")).unwrap()
    );
    vec![
        ("jsonl zstd", zstd, zstd_root),
        ("jsonl none", none, none_root),
        ("sqlite", sqlite, db_dir),
    ]
}

const OPEN_TURN: &str = r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}]"#;

/// Every entry under `dir`, files and directories, by path.
fn entries_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Every regular file under `dir` with its bytes (what must not change).
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    entries_under(dir)
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

fn refused_lock(e: dsh_persist::Error, lock: &Path, what: &str) {
    let text = e.to_string();
    assert_eq!(e.kind(), ErrorKind::Io, "{what}: {text}");
    assert!(
        text.contains("is not a regular file") && text.contains(&lock.display().to_string()),
        "{what}: {text}"
    );
}

#[test]
fn a_fifo_or_directory_as_a_writer_lock_is_refused_not_waited_on() {
    let dir = TempDir::new("special-lock");
    for (name, config, files) in stores(dir.path()) {
        // A session whose turn is still open, as a crashed writer leaves
        // it: reading it asks who holds its writer lock.
        let store = Store::open_json(&config).unwrap();
        store.create(SessionHeader::new("s", 1)).unwrap();
        store.append_json("s", OPEN_TURN).unwrap();
        // Where the lock files live: held by a live session of another id.
        let other = store.start(SessionHeader::new("t", 1)).unwrap();
        let held = snapshot(&files)
            .into_iter()
            .map(|(p, _)| p)
            .find(|p| p.ends_with("t@lock"))
            .unwrap_or_else(|| panic!("{name}: no lock file while t is live"));
        other.close().unwrap();
        drop(store);
        let lock = held.with_file_name("s@lock");
        for planted in ["fifo", "directory"] {
            match planted {
                "fifo" => mkfifo(&lock),
                _ => std::fs::create_dir(&lock).unwrap(),
            }
            let before = snapshot(&files);
            let what = format!("{name}, a {planted}");
            let config2 = config.clone();
            let (inspect, load, resume, list) = within(&what, move || {
                let store = Store::open_json(&config2).unwrap();
                let inspect = store.inspect("s").map(|v| v.events.len());
                let load = store.load("s").map(|v| v.events.len());
                let resume = store.resume("s").map(|_| ());
                let list = store.list().map(|l| l.iter().any(|h| h.id == "s"));
                (inspect, load, resume, list)
            });
            refused_lock(inspect.unwrap_err(), &lock, &format!("{what}: inspect"));
            refused_lock(load.unwrap_err(), &lock, &format!("{what}: load"));
            refused_lock(resume.unwrap_err(), &lock, &format!("{what}: resume"));
            assert!(list.unwrap(), "{what}: list does not ask for locks");
            assert_eq!(snapshot(&files), before, "{what}: nothing written");
            assert!(
                is_fifo(&lock) || lock.is_dir(),
                "{what}: the planted file stays"
            );
            match planted {
                "fifo" => std::fs::remove_file(&lock).unwrap(),
                _ => std::fs::remove_dir(&lock).unwrap(),
            }
        }
        // Removed, as the message says: the session reads and resumes.
        let store = Store::open_json(&config).unwrap();
        assert_eq!(store.inspect("s").unwrap().events.len(), 2, "{name}");
        let live = store.resume("s").unwrap();
        live.append("turn/start", r#"{"turn":2}"#, &AppendOptions::default())
            .unwrap();
        live.close().unwrap();
    }
}

#[test]
fn a_fifo_in_place_of_a_log_is_not_a_session_and_is_left_alone() {
    let dir = TempDir::new("special-log");
    for (name, config, root) in stores(dir.path()).into_iter().take(2) {
        let store = Store::open_json(&config).unwrap();
        for id in ["a", "b"] {
            store.create(SessionHeader::new(id, 1)).unwrap();
            store.append_json(id, OPEN_TURN).unwrap();
        }
        drop(store);
        let log = snapshot(&root)
            .into_iter()
            .map(|(p, _)| p)
            .find(|p| p.parent().is_some_and(|d| d.ends_with("b")))
            .unwrap_or_else(|| panic!("{name}: no log of b"));
        std::fs::remove_file(&log).unwrap();
        mkfifo(&log);
        let before = snapshot(&root);
        let config2 = config.clone();
        let (list, inspect, append) = within(name, move || {
            let store = Store::open_json(&config2).unwrap();
            let list: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
            let inspect = store.inspect("b").map(|v| v.events.len());
            let append = store.append_json(
                "b",
                r#"[{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#,
            );
            (list, inspect, append)
        });
        assert_eq!(list, ["a"], "{name}: a FIFO is not a session");
        assert_eq!(inspect.unwrap_err().kind(), ErrorKind::NotFound, "{name}");
        assert_eq!(append.unwrap_err().kind(), ErrorKind::NotFound, "{name}");
        assert_eq!(snapshot(&root), before, "{name}: nothing written");
        assert!(is_fifo(&log), "{name}: the FIFO stays");
    }
}

/// The cache directory of a store writing into `files` (SPEC: the JSONL
/// root's `.dsh-persist-cache`, the SQLite database's
/// `sessions.db.dsh-persist-cache`).
fn cache_dir(name: &str, files: &Path) -> PathBuf {
    match name {
        "sqlite" => files.join("sessions.db.dsh-persist-cache"),
        _ => files.join(".dsh-persist-cache"),
    }
}

/// Starts `id`, appends a whole turn and closes it: the close writes the
/// session's append checkpoint into the cache directory.
fn write_a_turn(config: &str, id: &str) {
    let store = Store::open_json(config).unwrap();
    let live = store.start(SessionHeader::new(id, 1)).unwrap();
    support::append_whole_turn(&live);
    live.close().unwrap();
    store.close().unwrap();
}

#[test]
fn links_and_fifos_in_the_cache_directory_are_never_followed_or_waited_on() {
    let dir = TempDir::new("special-cache");
    let outside = dir.path().join("OUTSIDE");
    std::fs::create_dir(&outside).unwrap();
    for (name, config, files) in stores(&dir.path().join("stores")) {
        // The files exist first (the cache directory lies beside them).
        write_a_turn(&config, "first");
        let cache = cache_dir(name, &files);
        let checkpoint = entries_under(&cache)
            .into_iter()
            .find(|p| p.extension().is_some_and(|e| e == "ckpt"))
            .unwrap_or_else(|| panic!("{name}: no append checkpoint in {}", cache.display()));
        // The cache directory itself, then its kind directory, a link to a
        // directory outside: no checkpoint is written there.
        let kind_dir = checkpoint.parent().unwrap().to_path_buf();
        std::fs::remove_dir_all(&cache).unwrap();
        std::os::unix::fs::symlink(&outside, &cache).unwrap();
        write_a_turn(&config, "second");
        assert_eq!(entries_under(&outside), [] as [PathBuf; 0], "{name}");
        std::fs::remove_file(&cache).unwrap();
        std::fs::create_dir(&cache).unwrap();
        std::os::unix::fs::symlink(&outside, &kind_dir).unwrap();
        write_a_turn(&config, "third");
        assert_eq!(entries_under(&outside), [] as [PathBuf; 0], "{name}");
        std::fs::remove_file(&kind_dir).unwrap();
        // A FIFO in place of a checkpoint: a cold append neither waits on
        // it nor reads it; it reads the log, and the store's close puts a
        // real checkpoint in its place.
        write_a_turn(&config, "fourth");
        let checkpoints: Vec<PathBuf> = entries_under(&cache)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
            .collect();
        assert_eq!(checkpoints.len(), 1, "{name}: {checkpoints:?}");
        std::fs::remove_file(&checkpoints[0]).unwrap();
        mkfifo(&checkpoints[0]);
        let config2 = config.clone();
        within(name, move || {
            let store = Store::open_json(&config2).unwrap();
            store
                .append_json(
                    "fourth",
                    r#"[{"type":"turn/start","seq":2,"time":1,"data":{"turn":2}}]"#,
                )
                .unwrap();
            store.close().unwrap();
        });
        let store = Store::open_json(&config).unwrap();
        assert_eq!(store.inspect("fourth").unwrap().events.len(), 4, "{name}");
        for id in ["first", "second", "third"] {
            assert_eq!(store.inspect(id).unwrap().events.len(), 2, "{name}: {id}");
        }
    }
}

#[test]
fn a_fifo_or_link_beside_a_sqlite_database_is_refused_not_waited_on() {
    let dir = TempDir::new("special-sqlite");
    let (_, config, files) = stores(dir.path()).pop().unwrap();
    write_a_turn(&config, "s");
    let db = files.join("sessions.db");
    for suffix in ["-journal", "-wal", "-shm"] {
        let companion = files.join(format!("sessions.db{suffix}"));
        for planted in ["fifo", "link", "directory"] {
            match planted {
                "fifo" => mkfifo(&companion),
                "link" => {
                    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &companion).unwrap()
                }
                _ => std::fs::create_dir(&companion).unwrap(),
            }
            let before = snapshot(&files);
            let what = format!("a {planted} as sessions.db{suffix}");
            let (config2, db2) = (config.clone(), db.clone());
            let (open, write) = within(&what, move || {
                // The open reads the database's identity; a write (on a
                // store opened while the file was away) opens it to write.
                let open = Store::open_json(&config2).map(|_| ());
                let away = db2.with_extension("away");
                std::fs::rename(&db2, &away).unwrap();
                let store = Store::open_json(&config2).unwrap();
                std::fs::rename(&away, &db2).unwrap();
                let write = store.create(SessionHeader::new("t", 1));
                (open, write)
            });
            for (step, result) in [("open", open), ("write", write)] {
                let e = result.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{what}, {step}: {e}");
                let text = e.to_string();
                assert!(
                    text.contains("is not a regular file")
                        && text.contains(&companion.display().to_string()),
                    "{what}, {step}: {text}"
                );
            }
            assert_eq!(snapshot(&files), before, "{what}: nothing written");
            match planted {
                "directory" => std::fs::remove_dir(&companion).unwrap(),
                _ => std::fs::remove_file(&companion).unwrap(),
            }
        }
    }
    let store = Store::open_json(&config).unwrap();
    assert_eq!(store.inspect("s").unwrap().events.len(), 2);
    assert!(db.is_file());
}
