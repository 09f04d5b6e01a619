//! Bad input across the public Rust API: huge strings, deep nesting on a
//! small stack, NaN/Infinity tokens, ids and cwds that try to leave the
//! root, ids longer than a file name may be, and a store closed while many
//! threads append.

mod support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::time::Duration;

use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{
    AppendOptions, BackendConfig, Compression, JsonlConfig, LiveSession, SessionView, SqliteConfig,
    Store, StoreConfig,
};
use dsh_persist::{Error, ErrorKind};
use support::{TempDir, conv};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Zstd,
    Raw,
    Sqlite,
}

const KINDS: [Kind; 3] = [Kind::Zstd, Kind::Raw, Kind::Sqlite];

/// A store of `kind` under `dir` (JSONL root `dir/root`, SQLite
/// `dir/root/sessions.db`).
fn open(kind: Kind, dir: &Path) -> Store {
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let backend = match kind {
        Kind::Zstd | Kind::Raw => BackendConfig::Jsonl(JsonlConfig {
            compression: if kind == Kind::Zstd {
                Compression::Zstd
            } else {
                Compression::None
            },
            ..JsonlConfig::new(&root)
        }),
        Kind::Sqlite => BackendConfig::Sqlite(SqliteConfig::new(
            root.join("sessions.db").display().to_string(),
        )),
    };
    let mut c = StoreConfig::with_backend(backend);
    c.write_batch_max_delay_ms = 5;
    Store::open(c).unwrap()
}

fn header(id: &str) -> SessionHeader {
    SessionHeader::new(id, 1_790_000_000_000)
}

/// Runs `f` on a thread with a 256 KiB stack (a stack overflow aborts the
/// whole test binary, so passing means none happened).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("no panic on the small stack")
}

/// Every path under `dir`, recursively.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.clone());
            if p.is_dir() && !p.is_symlink() {
                out.extend(tree(&p));
            }
        }
    }
    out
}

#[test]
fn a_fifty_megabyte_string_appends_and_loads_back() {
    let text: String = "0123456789abcdefghijklmnopqrstuvwxyz\u{e9}\u{1F600}\n"
        .chars()
        .cycle()
        .take(50 * 1024 * 1024 / 40 * 40)
        .collect();
    assert!(text.len() >= 50_000_000);
    for kind in KINDS {
        let (dir, store, live) = turn_started(kind, "bad-huge", "huge");
        let data = conv::user_message("u1", &text);
        live.append("user/message", &data, &conv::append_opts())
            .unwrap();
        let (store, view) = ended_and_reloaded(kind, &dir, store, &live, "huge");
        assert_eq!(view.events.len(), 3, "{kind:?}");
        assert_eq!(
            view.events[1].data.as_str(),
            data,
            "{kind:?}: the huge string differs"
        );
        store.close().unwrap();
    }
}

fn nested(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 6 + 16);
    s.push_str(r#"{"turn":1,"x":"#);
    for _ in 0..depth {
        s.push_str(r#"{"a":["#);
    }
    s.push('1');
    for _ in 0..depth {
        s.push_str("]}");
    }
    s.push('}');
    s
}

#[test]
fn deep_nesting_is_refused_without_overflowing_a_small_stack() {
    for kind in KINDS {
        let (_dir, store, live) = turn_started(kind, "bad-deep", "deep");
        // 2 × 100,000 levels (object + array per level): refused.
        for depth in [100_000usize, 300] {
            let l = live.clone();
            let r = on_small_stack(move || {
                l.append("todo/write", &nested(depth), &AppendOptions::default())
            });
            let e = r.expect_err("nesting beyond the cap is refused");
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind:?}: {e}");
            assert!(e.to_string().contains("deep"), "{kind:?}: says why: {e}");
        }
        // Within the cap (2 × 200 = 400 levels): stored and loaded back on
        // the small stack.
        let l = live.clone();
        let within = nested(200);
        let w = within.clone();
        on_small_stack(move || l.append("todo/write", &w, &AppendOptions::default()))
            .unwrap_or_else(|e| panic!("{kind:?}: 400 levels are allowed: {e}"));
        end_turn_1(&live).unwrap();
        live.close().unwrap();
        let s = store.clone();
        let view = on_small_stack(move || s.load("deep")).unwrap();
        assert_eq!(view.events[1].data.as_str(), within);
        // The whole-event JSON entry point too.
        let s = store.clone();
        let events = format!(
            r#"[{{"type":"todo/write","seq":3,"time":1,"data":{}}}]"#,
            nested(100_000)
        );
        let e = on_small_stack(move || s.append_json("deep", &events)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind:?}: {e}");
        store.close().unwrap();
    }
}

#[test]
fn a_stored_line_nested_too_deep_is_corruption_not_a_crash() {
    let dir = TempDir::new("bad-deep-stored");
    let store = open(Kind::Raw, dir.path());
    let live = store.start(header("deep")).unwrap();
    support::append_whole_turn(&live);
    live.close().unwrap();
    let path = match store.locate(&header("deep")).unwrap() {
        Some(dsh_persist::backend::Location::Jsonl { path }) => path,
        other => panic!("{other:?}"),
    };
    store.close().unwrap();
    // A committed line (a turn/end follows) that nests 200,000 levels.
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "{{\"type\":\"todo/write\",\"seq\":2,\"time\":1,\"data\":{}}}\n",
        nested(100_000)
    ));
    text.push_str("{\"type\":\"turn/start\",\"seq\":3,\"time\":1,\"data\":{\"turn\":2}}\n");
    text.push_str("{\"type\":\"turn/end\",\"seq\":4,\"time\":1,\"data\":{\"turn\":2,\"reason\":{\"kind\":\"completed\"}}}\n");
    std::fs::write(&path, text).unwrap();
    let store = open(Kind::Raw, dir.path());
    let s = store.clone();
    let e = on_small_stack(move || s.load("deep")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    // Lines are counted as the original counts them (after the header).
    assert!(
        e.to_string()
            .contains("unparsable committed event at line 3"),
        "names the line: {e}"
    );
}

#[test]
fn nan_and_infinity_tokens_are_refused() {
    let (_dir, store, live) = turn_started(Kind::Zstd, "bad-nan", "nan");
    for bad in [
        r#"{"turn":1,"v":NaN}"#,
        r#"{"turn":1,"v":Infinity}"#,
        r#"{"turn":1,"v":-Infinity}"#,
        r#"{"turn":1,"v":nan}"#,
        r#"{"turn":1,"v":inf}"#,
        r#"{"turn":1,"v":1e}"#,
        r#"{"turn":1,"v":01}"#,
        r#"{"turn":1,"v":"\ud800"}"#,
    ] {
        match live.append("todo/write", bad, &AppendOptions::default()) {
            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}"),
            // A lone surrogate is legal JSON text; it must round-trip.
            Ok(seq) => {
                assert!(bad.contains("ud800"), "{bad} was accepted");
                assert_eq!(live.events(seq)[0].data.as_str(), bad);
            }
        }
    }
    // Number overflow: 1e400 is not representable losslessly.
    let r = live.append(
        "todo/write",
        r#"{"turn":1,"v":1e400}"#,
        &AppendOptions::default(),
    );
    if let Err(e) = &r {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    // Append options and whole events take the same path.
    assert_eq!(
        AppendOptions::parse(r#"{"sourceEventSeqs":[NaN]}"#)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    let e = store
        .append_json(
            "other",
            r#"[{"type":"turn/start","seq":0,"time":Infinity,"data":{"turn":1}}]"#,
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    live.close().unwrap();
    store.close().unwrap();
}

/// Duplicate keys are refused at append (a round trip would drop one), and
/// keys are compared as the JavaScript strings they stand for: two
/// different lone surrogates are two keys, kept as written through a
/// reload; one string spelled with and without an escape is one key.
#[test]
fn data_keys_are_compared_as_javascript_strings() {
    for kind in KINDS {
        let (dir, store, live) = turn_started(kind, "bad-keys", "keys");
        let two_keys = r#"{"turn":1,"\ud800":1,"\udc00":2,"x":{"\udbff":3,"\udfff":4}}"#;
        live.append("todo/write", two_keys, &AppendOptions::default())
            .unwrap();
        for (dup, key) in [
            (r#"{"turn":1,"a":1,"\u0061":2}"#, r#""a""#),
            (r#"{"turn":1,"x":{"\ud800":1,"\uD800":2}}"#, r#""\ud800""#),
        ] {
            let e = live
                .append("todo/write", dup, &AppendOptions::default())
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{kind:?} {dup}: {e}");
            assert!(
                e.to_string()
                    .contains(&format!("object key {key} appears more than once")),
                "{kind:?} {dup}: {e}"
            );
        }
        let (store, view) = ended_and_reloaded(kind, &dir, store, &live, "keys");
        assert_eq!(view.events.len(), 3, "{kind:?}: a refused append wrote");
        assert_eq!(view.events[1].data.as_str(), two_keys, "{kind:?}");
        store.close().unwrap();
    }
}

/// A store of `kind` in a new temp dir named for `tag`, and a live session
/// `id` in it whose turn 1 has started.
fn turn_started(kind: Kind, tag: &str, id: &str) -> (TempDir, Store, LiveSession) {
    let dir = TempDir::new(tag);
    let store = open(kind, dir.path());
    let live = store.start(header(id)).unwrap();
    live.append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())
        .unwrap();
    (dir, store, live)
}

/// Ends turn 1 of `live`, closes it and `store`, and loads session `id`
/// from a store opened afresh on `dir` (returned with the view).
fn ended_and_reloaded(
    kind: Kind,
    dir: &TempDir,
    store: Store,
    live: &LiveSession,
    id: &str,
) -> (Store, SessionView) {
    end_turn_1(live).unwrap();
    live.close().unwrap();
    store.close().unwrap();
    let store = open(kind, dir.path());
    let view = store.load(id).unwrap();
    (store, view)
}

/// Appends one balanced turn to a new session `id`.
fn write_session(store: &Store, h: SessionHeader) -> Result<(), Error> {
    let live = store.start(h)?;
    live.append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())?;
    end_turn_1(&live)?;
    live.close()
}

/// Ends turn 1 of `live` (completed).
fn end_turn_1(live: &LiveSession) -> Result<u64, Error> {
    live.append(
        "turn/end",
        r#"{"turn":1,"reason":{"kind":"completed"}}"#,
        &AppendOptions::default(),
    )
}

#[test]
fn ids_and_cwds_never_leave_the_root() {
    let long_255 = "x".repeat(255);
    let long_300 = "y".repeat(300);
    let long_slashes = "/".repeat(100); // escapes to 500 bytes
    let ids: Vec<String> = vec![
        "../x".into(),
        "/etc/passwd".into(),
        "a/../../b".into(),
        "..".into(),
        ".".into(),
        "a\0b".into(),
        "~002E~002E".into(),
        "\\..\\..\\win".into(),
        "con".into(),
        "\u{1F600}/../\u{e9}".into(),
        long_255.clone(),
        long_300.clone(),
        long_slashes.clone(),
    ];
    for kind in KINDS {
        let dir = TempDir::new("bad-ids");
        let store = open(kind, dir.path());
        for id in &ids {
            for cwd in [None, Some("../../.."), Some("/../../etc"), Some("..")] {
                let mut h = header(id);
                h.cwd = cwd.map(str::to_string);
                let id_cwd = format!("{id:?} cwd {cwd:?}");
                // One session per id: cwd variants after the first conflict
                // (the id is taken) or, for JSONL, land in another project
                // directory.
                let r = write_session(&store, h.clone());
                let too_long = kind != Kind::Sqlite && (id == &long_300 || id == &long_slashes);
                match r {
                    Ok(()) => {
                        assert!(
                            !too_long,
                            "{kind:?} {id_cwd}: a name over 255 bytes was written"
                        );
                        let view = store.load(id).unwrap();
                        assert_eq!(view.header.id, *id);
                        assert_eq!(view.events.len(), 2);
                    }
                    Err(e) if too_long => {
                        let m = e.to_string();
                        assert!(
                            matches!(e.kind(), ErrorKind::InvalidArgument | ErrorKind::Io),
                            "{kind:?} {id_cwd}: {e}"
                        );
                        assert!(
                            m.contains("too long") || m.contains("255"),
                            "{kind:?} {id_cwd}: the error says the name is too long: {m}"
                        );
                    }
                    Err(e) if e.kind() == ErrorKind::Conflict => {}
                    Err(e) => panic!("{kind:?} {id_cwd}: {e}"),
                }
            }
        }
        store.close().unwrap();
        // Nothing outside the root: the temp dir holds only `root` (and,
        // for SQLite, the writer lock directory beside the database).
        let mut outside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        outside.retain(|n| n != "root.dsh-persist-locks" || kind != Kind::Sqlite);
        assert_eq!(outside, vec![std::ffi::OsString::from("root")], "{kind:?}");
        if kind != Kind::Sqlite {
            // Every file lies in a `--<project>--/<escaped id>/` directory.
            for p in tree(&dir.path().join("root")) {
                let rel = p.strip_prefix(dir.path().join("root")).unwrap();
                let parts: Vec<_> = rel.components().collect();
                assert!(parts.len() <= 3, "{kind:?}: {}", rel.display());
                let first = parts[0].as_os_str().to_string_lossy();
                if first == ".dsh-persist-locks" {
                    // The writer lock directory: empty once no writer holds a lock.
                    assert_eq!(
                        parts.len(),
                        1,
                        "{kind:?}: a lock left behind: {}",
                        rel.display()
                    );
                    continue;
                }
                if first == ".dsh-persist-cache" {
                    // The store's cache: append checkpoints named by a
                    // hash of the id (`append/<16 hex>.ckpt`), never by it.
                    let name = rel.file_name().unwrap().to_string_lossy().into_owned();
                    assert!(
                        parts.len() < 3
                            || (parts[1].as_os_str() == "append"
                                && name.len() == 21
                                && name.ends_with(".ckpt")),
                        "{kind:?}: unexpected cache entry {}",
                        rel.display()
                    );
                    continue;
                }
                assert!(
                    first.starts_with("--") && first.ends_with("--") || first == "_no-cwd",
                    "{kind:?}: unexpected entry {}",
                    rel.display()
                );
                for part in &parts[1..] {
                    let s = part.as_os_str().to_string_lossy();
                    assert!(s != ".." && s != "." && !s.contains('/'), "{kind:?}: {s}");
                }
            }
        }
        // A fresh store lists exactly the sessions written, by their ids.
        let store = open(kind, dir.path());
        let listed: std::collections::BTreeSet<String> =
            store.list().unwrap().into_iter().map(|h| h.id).collect();
        for id in &ids {
            let too_long = kind != Kind::Sqlite && (id == &long_300 || id == &long_slashes);
            assert_eq!(listed.contains(id), !too_long, "{kind:?} {id:?}");
        }
        store.close().unwrap();
    }
    assert!(!Path::new("/etc/passwd~").exists());
}

#[test]
fn closing_the_store_while_threads_append_loses_nothing_acknowledged() {
    for kind in KINDS {
        for round in 0..3 {
            let dir = TempDir::new("bad-close");
            let store = open(kind, dir.path());
            let threads = 8;
            let start = Arc::new(Barrier::new(threads + 1));
            let stop = Arc::new(AtomicBool::new(false));
            let acked: Arc<Vec<AtomicU64>> =
                Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
            let (done_tx, done_rx) = mpsc::channel();
            let mut handles = Vec::new();
            for t in 0..threads {
                let (store, start, stop, acked, done) = (
                    store.clone(),
                    start.clone(),
                    stop.clone(),
                    acked.clone(),
                    done_tx.clone(),
                );
                handles.push(std::thread::spawn(move || {
                    let id = format!("t{t}");
                    start.wait();
                    let live = match store.start(header(&id)) {
                        Ok(l) => l,
                        Err(e) => {
                            assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                            done.send(()).unwrap();
                            return;
                        }
                    };
                    let mut turn = 1u64;
                    'outer: while !stop.load(Ordering::Relaxed) {
                        for (ty, data) in [
                            ("turn/start", format!(r#"{{"turn":{turn}}}"#)),
                            (
                                "turn/end",
                                format!(r#"{{"turn":{turn},"reason":{{"kind":"completed"}}}}"#),
                            ),
                        ] {
                            match live.append(ty, &data, &AppendOptions::default()) {
                                Ok(seq) => acked[t].store(seq + 1, Ordering::SeqCst),
                                Err(e) => {
                                    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                                    break 'outer;
                                }
                            }
                        }
                        turn += 1;
                    }
                    // After the store closed, every call says so.
                    let e = live
                        .append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())
                        .unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                    done.send(()).unwrap();
                }));
            }
            drop(done_tx);
            start.wait();
            std::thread::sleep(Duration::from_millis(5 + 10 * round));
            store.close().unwrap();
            stop.store(true, Ordering::Relaxed);
            for _ in 0..threads {
                done_rx
                    .recv_timeout(Duration::from_secs(30))
                    .expect("no deadlock: every appender finishes");
            }
            for h in handles {
                h.join().expect("no panic in an appender");
            }
            assert_eq!(store.list().unwrap_err().kind(), ErrorKind::Closed);
            // Everything acknowledged before the close is durable.
            let fresh = open(kind, dir.path());
            let mut total = 0;
            for t in 0..threads {
                let n = acked[t].load(Ordering::SeqCst);
                total += n;
                match fresh.inspect(&format!("t{t}")) {
                    Ok(v) => assert!(
                        v.events.len() as u64 >= n,
                        "{kind:?} t{t}: {} stored < {n} acknowledged",
                        v.events.len()
                    ),
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
                        assert_eq!(n, 0, "{kind:?} t{t}: acknowledged events missing");
                    }
                }
            }
            assert!(total > 0 || round == 0, "{kind:?}: the appenders ran");
            fresh.close().unwrap();
        }
    }
}
