//! Opening a SQLite store (SPEC §4.1): pristine initialisation, identity and
//! schema refusals (nothing changed), connection pragmas, journal modes,
//! POSIX ownership/permission checks (`permissionProbes`), symlinks,
//! non-regular files, 0600 creation, in-memory databases, busy timeout.

mod sqlite_common;
mod support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use dsh_persist::ErrorKind;
use dsh_persist::backend::sqlite::{JournalMode, SqliteBackend, SqliteConfig};
use dsh_persist::backend::{Backend, Expect};
use dsh_persist::model::header::SessionHeader;
use sqlite_common::*;
use support::TempDir;

fn config(path: &Path) -> SqliteConfig {
    SqliteConfig::new(path.to_str().unwrap())
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o777
}

fn tiny_batch() -> Vec<dsh_persist::model::event::Event> {
    vec![
        event(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#),
        event(
            r#"{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
        ),
    ]
}

fn pragma(conn: &rusqlite::Connection, name: &str) -> String {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| {
        let v: rusqlite::types::Value = r.get(0)?;
        Ok(match v {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            o => format!("{o:?}"),
        })
    })
    .unwrap()
}

#[test]
fn pristine_file_is_created_0600_and_initialised_at_the_first_write() {
    let tmp = TempDir::new("open-new");
    let path = tmp.path().join("sessions.db");
    let b = SqliteBackend::open(&config(&path)).unwrap();
    // Nothing exists until the first write (B 07); reads create nothing.
    assert!(b.list().unwrap().is_empty());
    assert!(b.read("s").unwrap().is_none());
    assert!(!path.exists(), "a read created the database");
    assert_eq!(b.store_id(), None);
    b.append(&SessionHeader::new("s", 5), &tiny_batch(), Expect::New)
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    let store_id = b.store_id().unwrap();
    assert_eq!(store_id.len(), 36);
    assert_eq!(mode(&tmp.path().join("sessions.db-wal")), 0o600);
    b.close().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(pragma(&conn, "application_id"), "1146308688");
    assert_eq!(pragma(&conn, "user_version"), "17");
    assert_eq!(pragma(&conn, "journal_mode"), "wal");
    assert_eq!(pragma(&conn, "page_size"), "4096");
    assert_eq!(pragma(&conn, "encoding"), "UTF-8");
    let got: String = conn
        .query_row("SELECT store_id FROM persistence_state", [], |r| r.get(0))
        .unwrap();
    assert_eq!(got, store_id);
    drop(conn);
    // Reopening keeps the identity.
    let again = SqliteBackend::open(&config(&path)).unwrap();
    assert_eq!(again.store_id().as_deref(), Some(store_id.as_str()));
    assert_eq!(again.list().unwrap().len(), 1);
    // After a close, calls fail as closed.
    again.close().unwrap();
    assert_eq!(again.list().unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn empty_existing_file_is_initialised() {
    let tmp = TempDir::new("open-empty");
    let path = tmp.path().join("sessions.db");
    fs::write(&path, b"").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let b = SqliteBackend::open(&config(&path)).unwrap();
    assert!(b.list().unwrap().is_empty());
    // A read leaves the empty file empty (D10); the first write initialises it.
    assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    b.append(&SessionHeader::new("s", 5), &tiny_batch(), Expect::New)
        .unwrap();
    assert_eq!(b.list().unwrap().len(), 1);
}

/// Opens `path` expecting a refusal that leaves the file byte-identical.
fn refused(path: &Path) -> dsh_persist::Error {
    let before = fs::read(path).unwrap();
    let e = SqliteBackend::open(&config(path))
        .err()
        .expect("must refuse");
    assert_eq!(
        fs::read(path).unwrap(),
        before,
        "refusal changed the file: {e}"
    );
    e
}

fn raw_db(tmp: &TempDir, sql: &str) -> std::path::PathBuf {
    let path = tmp.path().join("sessions.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    path
}

#[test]
fn foreign_and_unversioned_databases_are_refused() {
    let tmp = TempDir::new("open-foreign");
    let path = raw_db(&tmp, "PRAGMA application_id = 42; CREATE TABLE t (x);");
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        support::redact(&e.to_string(), &path),
        "session database at \"<ROOT>\" belongs to another application (application_id 42, expected 1146308688); refusing to use it"
    );

    let tmp = TempDir::new("open-unversioned");
    let path = raw_db(&tmp, "CREATE TABLE notes (x TEXT);");
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string()
            .contains("is not empty and is not a dsh session database"),
        "{e}"
    );
}

fn set_user_version(path: &Path, v: i64) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(&format!("PRAGMA user_version = {v}"))
        .unwrap();
}

#[test]
fn files_that_are_not_databases_are_refused() {
    let tmp = TempDir::new("open-notdb");
    let path = tmp.path().join("sessions.db");
    fs::write(
        &path,
        "this is not a database, just some text that is long enough to fill a header page "
            .repeat(20),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        support::redact(&e.to_string(), &path)
            .starts_with("session database at \"<ROOT>\" is not a SQLite database ("),
        "{e}"
    );
}

#[test]
fn other_schema_versions_are_refused() {
    let (_tmp, path, b) = fresh_db("open-versions");
    b.close().unwrap();
    set_user_version(&path, 16);
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
    assert_eq!(
        support::redact(&e.to_string(), &path),
        "session database at \"<ROOT>\" has schema version 16, incompatible with this build (17)"
    );
    set_user_version(&path, 18);
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::FormatUnsupported);
    assert_eq!(
        support::redact(&e.to_string(), &path),
        "session database at \"<ROOT>\" has schema version 18, incompatible with this build (17): it was written by a newer build \u{2014} upgrade to open it"
    );
}

#[test]
fn altered_schemas_are_refused() {
    // What each change adds to the schema and what it takes from it, as
    // the refusal names them.
    for (tag, sql, unexpected, missing) in [
        (
            "index",
            "CREATE INDEX extra ON events(type);",
            "index extra",
            "",
        ),
        (
            "column",
            "ALTER TABLE sessions ADD COLUMN note TEXT;",
            "table sessions",
            "table sessions",
        ),
        (
            "table",
            "CREATE TABLE more (x INTEGER) STRICT;",
            "table more",
            "",
        ),
        (
            "drop",
            "DROP TABLE events;",
            "",
            "index sqlite_autoindex_events_1, table events",
        ),
    ] {
        let (_tmp, path, b) = fresh_db(&format!("open-altered-{tag}"));
        b.close().unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(sql).unwrap();
        drop(conn);
        let e = refused(&path);
        assert_eq!(e.kind(), ErrorKind::Corruption, "{tag}");
        let m = e.to_string();
        let named = format!(
            "has an altered schema (unexpected or changed: [{unexpected}]; missing or changed: [{missing}]; found: ["
        );
        assert!(m.contains(&named), "{tag}: {m}");
    }
}

#[test]
fn missing_store_id_is_corruption() {
    let (_tmp, path, b) = fresh_db("open-nostore");
    b.close().unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DELETE FROM persistence_state").unwrap();
    drop(conn);
    let e = refused(&path);
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(e.to_string().contains("store id missing"), "{e}");
}

#[test]
fn journal_modes_take_effect() {
    for (m, header_version) in [
        (JournalMode::Wal, 2u8),
        (JournalMode::Delete, 1),
        (JournalMode::Truncate, 1),
        (JournalMode::Persist, 1),
    ] {
        let tmp = TempDir::new("open-journal");
        let path = tmp.path().join("sessions.db");
        let mut c = config(&path);
        c.journal_mode = m;
        let b = SqliteBackend::open(&c).unwrap();
        b.append(&SessionHeader::new("s", 1), &tiny_batch(), Expect::New)
            .unwrap();
        b.close().unwrap();
        // File header bytes 18/19: 2 = WAL, 1 = rollback journal.
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes[18], header_version, "{m:?}");
        let persist_journal = tmp.path().join("sessions.db-journal");
        assert_eq!(
            persist_journal.exists(),
            matches!(m, JournalMode::Truncate | JournalMode::Persist),
            "{m:?}"
        );
    }
    assert_eq!(
        JournalMode::parse("TRUNCATE").unwrap(),
        JournalMode::Truncate
    );
}

#[test]
fn memory_databases_are_private_and_report_memory_tokens() {
    let a = SqliteBackend::open(&SqliteConfig::memory()).unwrap();
    let b = SqliteBackend::open(&SqliteConfig::memory()).unwrap();
    let rev = a
        .append(&SessionHeader::new("s", 1), &tiny_batch(), Expect::New)
        .unwrap();
    assert!(
        rev.0.starts_with(&format!(
            "memory:store:{}:incarnation:",
            a.store_id().unwrap()
        )),
        "{rev}"
    );
    assert!(rev.0.ends_with(":revision:1"), "{rev}");
    assert!(b.list().unwrap().is_empty());
    assert_ne!(a.store_id(), b.store_id());
    assert!(a.locate(&SessionHeader::new("s", 1)).unwrap().is_none());
    assert_eq!(a.read_raw("s").unwrap_err().kind(), ErrorKind::Unsupported);
}

#[test]
fn revision_token_names_the_file() {
    let (_tmp, path, b) = fresh_db("open-token");
    let rev = b
        .append(&SessionHeader::new("s", 1), &tiny_batch(), Expect::New)
        .unwrap();
    let meta = fs::metadata(&path).unwrap();
    let prefix = format!("file:{}:{}:", meta.dev(), meta.ino());
    assert!(rev.0.starts_with(&prefix), "{rev} vs {prefix}");
    assert!(
        rev.0
            .contains(&format!(":store:{}:incarnation:", b.store_id().unwrap())),
        "{rev}"
    );
    // Stable while nothing changes, equal across backends on one file.
    let other = open(&path);
    assert_eq!(other.revision("s").unwrap(), Some(rev.clone()));
    assert_eq!(b.revision("s").unwrap(), Some(rev));
}

#[test]
fn permission_probes_match_the_original() {
    let expected = support::expected("sqlite-corpus");
    let probes = expected["permissionProbes"].as_object().unwrap();
    assert_eq!(probes.len(), 7);
    for (name, want) in probes {
        // "file 0600 dir 0700 (as written)"
        let mut words = name.split_whitespace();
        let (_, fmode, _, dmode) = (
            words.next(),
            u32::from_str_radix(words.next().unwrap(), 8).unwrap(),
            words.next(),
            u32::from_str_radix(words.next().unwrap(), 8).unwrap(),
        );
        let tmp = TempDir::new("probe");
        let dir = tmp.path().join("d");
        support::copy_tree(&support::fixtures_dir().join("sqlite/corpus"), &dir);
        let db = dir.join("sessions.db");
        fs::set_permissions(&db, fs::Permissions::from_mode(fmode)).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(dmode)).unwrap();
        let got = SqliteBackend::open(&config(&db)).and_then(|b| b.list());
        match (want.get("ok"), got) {
            (Some(ok), Ok(list)) => {
                assert_eq!(list.len() as u64, ok["listed"].as_u64().unwrap(), "{name}")
            }
            (None, Err(e)) => {
                let msg = e
                    .to_string()
                    .replace(&tmp.path().display().to_string(), "<TMP>");
                assert_eq!(msg, want["error"]["message"].as_str().unwrap(), "{name}");
                assert_eq!(e.kind(), ErrorKind::InvalidArgument);
            }
            (w, g) => panic!("{name}: expected {w:?}, got {:?}", g.map(|l| l.len())),
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    }
}

#[test]
fn foreign_owners_are_refused() {
    let tmp = TempDir::new("probe-owner");
    let dir = tmp.path().join("d");
    support::copy_tree(&support::fixtures_dir().join("sqlite/corpus"), &dir);
    let db = dir.join("sessions.db");
    // Only root can hand a file to another user; elsewhere this rule is
    // covered by the mode probes alone.
    if std::os::unix::fs::chown(&db, Some(65534), None).is_err() {
        return;
    }
    let e = SqliteBackend::open(&config(&db)).err().unwrap();
    assert!(
        e.to_string()
            .contains("must be owned by the current user and accessible only"),
        "{e}"
    );
    std::os::unix::fs::chown(&db, Some(fs::metadata(tmp.path()).unwrap().uid()), None).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
    let e = SqliteBackend::open(&config(&db)).err().unwrap();
    assert!(e.to_string().contains("parent"), "{e}");
}

#[test]
fn symlinks_and_non_regular_files_are_refused() {
    let (tmp, path, b) = fresh_db("open-symlink");
    b.close().unwrap();
    let link = tmp.path().join("link.db");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    let e = SqliteBackend::open(&config(&link)).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("is a symbolic link"), "{e}");

    let dir = tmp.path().join("dir.db");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let e = SqliteBackend::open(&config(&dir)).err().unwrap();
    assert!(e.to_string().contains("is not a regular file"), "{e}");

    // A parent that is not a directory is refused.
    let e = SqliteBackend::open(&config(&path.join("x.db")))
        .err()
        .unwrap();
    assert!(e.to_string().contains("is not a directory"), "{e}");
}

/// A database whose name cannot even be looked up (here: longer than a
/// file name may be) is an error naming it, not a store with no sessions:
/// only "no such file" means there is nothing yet.
#[test]
fn a_name_that_cannot_be_looked_up_is_an_error_not_an_empty_store() {
    let tmp = TempDir::new("open-lookup");
    let path = tmp.path().join(format!("{}.db", "s".repeat(300)));
    let e = SqliteBackend::open(&config(&path))
        .err()
        .expect("a name lstat refuses was opened as an empty store");
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(
        e.to_string().contains("cannot inspect session database"),
        "{e}"
    );
    assert!(e.to_string().contains("File name too long"), "{e}");
    // The same for its directory: one that cannot be looked up (a name too
    // long, a loop of links; for an ordinary user also one they may not
    // search) is not a directory still to make.
    let long = tmp.path().join("d".repeat(300)).join("s.db");
    let looped = tmp.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    for (path, why) in [
        (long, "File name too long"),
        (looped.join("s.db"), "symbolic links"),
    ] {
        let e = SqliteBackend::open(&config(&path))
            .err()
            .expect("a parent lstat refuses was taken for a missing one");
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(
            e.to_string()
                .contains("cannot inspect session database parent"),
            "{e}"
        );
        assert!(e.to_string().contains(why), "{e}");
    }
}

/// A name that fits the file system but leaves no room for SQLite's
/// `-journal` (or `-wal`) beside it: refused at the first write, before
/// anything (the directory, the file) is made.
#[test]
fn a_name_with_no_room_for_the_journal_is_refused_before_anything_is_made() {
    let tmp = TempDir::new("open-room");
    let dir = tmp.path().join("new");
    let name = format!("{}.db", "s".repeat(247));
    let b = SqliteBackend::open(&config(&dir.join(&name))).unwrap();
    let e = b
        .append(&SessionHeader::new("s", 5), &tiny_batch(), Expect::New)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("is 250 bytes long"), "{e}");
    assert!(e.to_string().contains("at most 247 bytes"), "{e}");
    assert!(!dir.exists(), "the directory was made");
    // At the limit it works, its WAL beside it.
    let name = format!("{}.db", "s".repeat(244));
    let b = SqliteBackend::open(&config(&dir.join(&name))).unwrap();
    b.append(&SessionHeader::new("s", 5), &tiny_batch(), Expect::New)
        .unwrap();
    assert_eq!(b.list().unwrap().len(), 1);
    b.close().unwrap();
}

#[test]
fn busy_database_times_out_as_busy() {
    let (_tmp, path, _b) = fresh_db("open-busy");
    let mut c = config(&path);
    c.busy_timeout_ms = 50;
    let b = SqliteBackend::open(&c).unwrap();
    let mut holder = rusqlite::Connection::open(&path).unwrap();
    let tx = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let e = b
        .append(&SessionHeader::new("s", 1), &tiny_batch(), Expect::New)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    tx.rollback().unwrap();
    b.append(&SessionHeader::new("s", 1), &tiny_batch(), Expect::New)
        .unwrap();
}
