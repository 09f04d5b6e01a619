//! SQLite files that anyone may have touched: invalid UTF-8 in TEXT
//! columns (read as U+FFFD like the original, never a panic), and how the
//! database is opened (lazily, read-only media, a full disk, `file:` paths,
//! symlinked parent directories).

mod support;

use std::path::Path;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::Store;
use support::TempDir;

fn open(path: &Path) -> Store {
    Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(path).unwrap()
    ))
    .unwrap()
}

const TURN_MESSAGE: &str = r#"{"id":"u1","role":"user","content":[{"type":"text","text":"hXllo"}],"source":{"kind":"user"}}"#;

const TURN: &str = r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"user/message","seq":1,"time":1,"surfaceOp":"append","data":{"id":"u1","role":"user","content":[{"type":"text","text":"hXllo"}],"source":{"kind":"user"}}},{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#;

/// A database holding session `s` (cwd `/w`) with one complete turn.
fn stored(path: &Path) {
    let store = open(path);
    let mut h = SessionHeader::new("s", 1);
    h.cwd = Some("/w".into());
    store.create(h).unwrap();
    store.append_json("s", TURN).unwrap();
    store.close().unwrap();
}

/// Sets a TEXT column to `bytes` (not valid UTF-8) with plain SQL.
fn set_text(path: &Path, sql: &str, bytes: &[u8]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(sql, [bytes]).unwrap();
}

#[test]
fn invalid_utf8_in_events_data_reads_as_replacement_characters() {
    let dir = TempDir::new("utf8-data");
    let db = dir.path().join("s.db");
    stored(&db);
    // The message's text "hXllo" with an invalid byte in place of the X.
    let mut data = TURN_MESSAGE.as_bytes().to_vec();
    let at = data.iter().position(|&b| b == b'X').unwrap();
    data[at] = 0xFF;
    let data = &data[..];
    set_text(
        &db,
        "UPDATE events SET data = CAST(?1 AS TEXT) WHERE seq = 1",
        data,
    );
    let store = open(&db);
    for view in [store.inspect("s").unwrap(), store.load("s").unwrap()] {
        assert_eq!(view.events.len(), 3);
        assert!(
            view.events[1].data.as_str().contains("h\u{FFFD}llo"),
            "{}",
            view.events[1].data.as_str()
        );
    }
    // The store is still fine afterwards (no panic, nothing poisoned).
    assert_eq!(store.list().unwrap().len(), 1);
}

#[test]
fn invalid_utf8_in_events_type_is_an_unknown_type() {
    let dir = TempDir::new("utf8-type");
    let db = dir.path().join("s.db");
    stored(&db);
    set_text(
        &db,
        "UPDATE events SET type = CAST(?1 AS TEXT) WHERE seq = 1",
        b"user/mess\xC3ge",
    );
    let store = open(&db);
    let e = store.load("s").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported, "{e}");
    assert!(e.to_string().contains("user/mess\u{FFFD}ge"), "{e}");
    // Listing and a later call still work.
    assert_eq!(store.list().unwrap()[0].id, "s");
}

#[test]
fn invalid_utf8_in_sessions_cwd_lists_and_loads() {
    let dir = TempDir::new("utf8-cwd");
    let db = dir.path().join("s.db");
    stored(&db);
    set_text(
        &db,
        "UPDATE sessions SET cwd = CAST(?1 AS TEXT) WHERE id = 's'",
        b"/\xFF",
    );
    let store = open(&db);
    let listed = store.list().unwrap();
    assert_eq!(listed[0].cwd.as_deref(), Some("/\u{FFFD}"));
    assert_eq!(
        store.list_snapshots().unwrap()[0].0.cwd.as_deref(),
        Some("/\u{FFFD}")
    );
    let view = store.load("s").unwrap();
    assert_eq!(view.header.cwd.as_deref(), Some("/\u{FFFD}"));
    assert_eq!(view.events.len(), 3);
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

const ONE_TURN: &str = r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#;

#[test]
fn the_database_and_its_parent_are_created_at_the_first_write() {
    let dir = TempDir::new("lazy-create");
    let parent = dir.path().join("not-yet").join("deeper");
    let db = parent.join("sessions.db");
    // Opened and closed unused: nothing is created (B 07).
    open(&db).close().unwrap();
    assert!(!dir.path().join("not-yet").exists());
    // Reads of a missing database find nothing and create nothing.
    let store = open(&db);
    assert!(store.list().unwrap().is_empty());
    assert!(store.list_snapshots().unwrap().is_empty());
    assert_eq!(
        store.load("x").unwrap_err().kind(),
        ErrorKind::NotFound,
        "a missing session"
    );
    store.create(SessionHeader::new("s", 1)).unwrap();
    assert!(
        !dir.path().join("not-yet").exists(),
        "create writes nothing"
    );
    // The first write makes the parent (mkdir -p, 0700; the writer lock
    // beside the database makes it first) and the file (B 06).
    store.append_json("s", ONE_TURN).unwrap();
    assert_eq!(mode(&dir.path().join("not-yet")), 0o700);
    assert_eq!(mode(&parent), 0o700);
    assert_eq!(mode(&db), 0o600);
    assert_eq!(store.load("s").unwrap().events.len(), 2);
    store.close().unwrap();
}

#[test]
fn reads_of_an_empty_file_change_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("lazy-empty");
    let db = dir.path().join("s.db");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = open(&db);
    assert!(store.list().unwrap().is_empty());
    assert_eq!(store.load("x").unwrap_err().kind(), ErrorKind::NotFound);
    store.close().unwrap();
    assert_eq!(
        std::fs::metadata(&db).unwrap().len(),
        0,
        "no schema written"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("s.db")]);
}

#[test]
fn a_file_prefixed_path_is_a_plain_file_name() {
    let dir = TempDir::new("file-uri");
    let cwd = std::env::current_dir().unwrap();
    // Relative to the process's directory, as any relative path.
    let name = format!(
        "file:{}.db?mode=memory",
        dir.path().file_name().unwrap().to_str().unwrap()
    );
    let rel = std::path::PathBuf::from(&name);
    let store = Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(&name).unwrap()
    ))
    .unwrap();
    store.create(SessionHeader::new("s", 1)).unwrap();
    store.append_json("s", ONE_TURN).unwrap();
    store.close().unwrap();
    // The file of that literal name holds the session (not a URI).
    let file = cwd.join(&rel);
    assert!(file.is_file(), "{}", file.display());
    assert_eq!(mode(&file), 0o600);
    let again = Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(&name).unwrap()
    ))
    .unwrap();
    assert_eq!(again.load("s").unwrap().events.len(), 2);
    again.close().unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(cwd.join(format!("{name}{suffix}")));
    }
    // The writer-lock and cache directories beside it (the cache holds
    // the append checkpoint the close wrote).
    for dir in ["locks", "cache"] {
        let _ = std::fs::remove_dir_all(cwd.join(format!("{name}.dsh-persist-{dir}")));
    }
}

#[test]
fn a_parent_reached_through_a_symlink_works() {
    let dir = TempDir::new("symlinked-parent");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let link = dir.path().join("home-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let db = link.join("sessions.db");
    let store = open(&db);
    store.create(SessionHeader::new("s", 1)).unwrap();
    store.append_json("s", ONE_TURN).unwrap();
    store.close().unwrap();
    assert!(real.join("sessions.db").is_file());
    assert_eq!(open(&db).load("s").unwrap().events.len(), 2);
    // The database file itself must not be a link.
    std::os::unix::fs::symlink(real.join("sessions.db"), real.join("alias.db")).unwrap();
    let e = Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(&real.join("alias.db")).unwrap()
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("symbolic link"), "{e}");
}

/// A mount made for a test and removed when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn run(cmd: &[&str]) -> bool {
    std::process::Command::new(cmd[0])
        .args(&cmd[1..])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Reads on a read-only mount and on a full disk (D10). Needs root (mount);
/// without it the test says so and checks nothing.
#[test]
fn reads_work_on_a_read_only_mount_and_a_full_disk() {
    let dir = TempDir::new("ro-full");
    let src = dir.path().join("src");
    let ro = dir.path().join("ro");
    let full = dir.path().join("full");
    for d in [&src, &ro, &full] {
        std::fs::create_dir(d).unwrap();
    }
    stored(&src.join("s.db"));
    // A database whose commits are all still in its `-wal` (copied, without
    // its `-shm`, while its writer has it open): a read must see them
    // through the WAL or refuse, never read the main file alone (as an
    // `immutable` open does).
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let writer = open(&live.join("w.db"));
    let mut h = SessionHeader::new("w", 1);
    h.cwd = Some("/w".into());
    writer.create(h).unwrap();
    writer.append_json("w", TURN).unwrap();
    std::fs::copy(live.join("w.db"), src.join("w.db")).unwrap();
    std::fs::copy(live.join("w.db-wal"), src.join("w.db-wal")).unwrap();
    // The same copy with its `-shm`: SQLite can read the WAL through it
    // read-only, so that one must be read in full.
    for suffix in ["", "-wal", "-shm"] {
        std::fs::copy(
            live.join(format!("w.db{suffix}")),
            src.join(format!("v.db{suffix}")),
        )
        .unwrap();
    }
    writer.close().unwrap();
    if !run(&[
        "mount",
        "--bind",
        src.to_str().unwrap(),
        ro.to_str().unwrap(),
    ]) {
        eprintln!("SKIPPED: cannot mount here (needs root); D10 is not checked");
        return;
    }
    let _ro = Mount(ro.clone());
    assert!(run(&[
        "mount",
        "-o",
        "remount,ro,bind",
        ro.to_str().unwrap()
    ]));
    let store = open(&ro.join("s.db"));
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.inspect("s").unwrap().events.len(), 3);
    assert_eq!(store.read_from("s", 1).unwrap().events.len(), 2);
    let e = store.append_json("s", "[]");
    assert!(e.is_ok() || e.unwrap_err().kind() == ErrorKind::Io);
    store.close().unwrap();
    // There SQLite cannot read the `-wal` without a `-shm`: refused, not
    // read without its commits.
    let e = Store::open_json(&format!(
        r#"{{"backend":"sqlite","path":{}}}"#,
        serde_json::to_string(&ro.join("w.db")).unwrap()
    ))
    .err()
    .expect("the store was opened");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("w.db-wal\" holds commits"), "{e}");
    let store = open(&ro.join("v.db"));
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.inspect("w").unwrap().events.len(), 3);
    store.close().unwrap();

    assert!(run(&[
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=1m",
        "tmpfs",
        full.to_str().unwrap()
    ]));
    let _full = Mount(full.clone());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::copy(src.join("s.db"), full.join("s.db")).unwrap();
    std::fs::copy(src.join("w.db"), full.join("w.db")).unwrap();
    std::fs::copy(src.join("w.db-wal"), full.join("w.db-wal")).unwrap();
    // Fill the disk.
    let mut filler = std::fs::File::create(full.join("fill")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    drop(filler);
    let before = files_in(&full);
    let store = open(&full.join("s.db"));
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.inspect("s").unwrap().events.len(), 3);
    store.close().unwrap();
    assert_eq!(files_in(&full), before, "a read left files behind");
    let store = open(&full.join("w.db"));
    assert_eq!(store.list().unwrap().len(), 1);
    assert_eq!(store.inspect("w").unwrap().events.len(), 3);
    store.close().unwrap();
}
