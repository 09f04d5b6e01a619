//! Schema 17: connection pragmas, database identity, pristine-file
//! initialisation and schema comparison (SPEC §4.1).

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::error::{Error, Result};

use super::sql_error;

/// `PRAGMA application_id` of a session database: 0x44534850, "DSHP".
pub const APPLICATION_ID: i64 = 1_146_308_688;

/// `PRAGMA user_version` of this schema.
pub const SCHEMA_VERSION: i64 = 17;

/// The schema, byte for byte as the original's `resources/sql/schema.sql`
/// creates it (the text SQLite keeps in `sqlite_master`).
pub const SCHEMA_SQL: &str = "CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT;

CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset     TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT;

CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              ANY NOT NULL,
  source_event_seqs ANY,
  surface_op        TEXT,
  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  PRIMARY KEY (session_id, seq)
) STRICT;
";

/// The schema objects `sqlite_master` must hold: (type, name, table, SQL),
/// sorted. Automatic indexes have no SQL. Made once per process.
fn expected_objects() -> &'static Objects {
    static EXPECTED: once_cell::sync::Lazy<Objects> =
        once_cell::sync::Lazy::new(make_expected_objects);
    &EXPECTED
}

fn make_expected_objects() -> Objects {
    let mut out = Vec::new();
    for stmt in SCHEMA_SQL.split(';') {
        let stmt = stmt.trim();
        if stmt.is_empty() {
            continue;
        }
        let name = stmt
            .strip_prefix("CREATE TABLE ")
            .and_then(|r| r.split_whitespace().next())
            .expect("schema statement is a CREATE TABLE")
            .to_string();
        out.push((
            "table".to_string(),
            name.clone(),
            name.clone(),
            Some(normalize_sql(stmt)),
        ));
    }
    for table in ["sessions", "events"] {
        out.push((
            "index".to_string(),
            format!("sqlite_autoindex_{table}_1"),
            table.to_string(),
            None,
        ));
    }
    out.sort();
    out
}

/// Whitespace normalisation for schema comparison: runs of whitespace become
/// one space, and whitespace next to `(`, `)` and `,` is dropped.
pub fn normalize_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut pending_space = false;
    for c in sql.trim().chars() {
        if c.is_whitespace() {
            pending_space = true;
            continue;
        }
        if pending_space && !matches!(c, '(' | ')' | ',') && !out.ends_with(['(', ',']) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
}

/// Which journal mode a connection runs in (`journalMode` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JournalMode {
    /// Write-ahead log (the default).
    #[default]
    Wal,
    Delete,
    Truncate,
    Persist,
}

impl JournalMode {
    /// The pragma value (`wal`, `delete`, `truncate`, `persist`).
    pub fn as_str(self) -> &'static str {
        match self {
            JournalMode::Wal => "wal",
            JournalMode::Delete => "delete",
            JournalMode::Truncate => "truncate",
            JournalMode::Persist => "persist",
        }
    }

    /// Parses a configured mode (case-insensitive).
    pub fn parse(text: &str) -> Result<JournalMode> {
        match text.to_ascii_lowercase().as_str() {
            "wal" => Ok(JournalMode::Wal),
            "delete" => Ok(JournalMode::Delete),
            "truncate" => Ok(JournalMode::Truncate),
            "persist" => Ok(JournalMode::Persist),
            _ => Err(Error::invalid(format!(
                "journalMode must be one of wal, delete, truncate, persist (got {})",
                crate::model::json::quote(text)
            ))),
        }
    }
}

/// A pragma's answer as text (integers in decimal).
fn pragma_text(v: rusqlite::types::Value) -> String {
    match v {
        rusqlite::types::Value::Integer(i) => i.to_string(),
        rusqlite::types::Value::Text(t) => t,
        other => format!("{other:?}"),
    }
}

/// Reads a pragma back. `None` when SQLite returns no row (e.g.
/// `mmap_size` of an in-memory database, where memory mapping never applies).
fn pragma_value(conn: &Connection, label: &str, name: &str) -> Result<Option<String>> {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0).map(pragma_text))
        .optional()
        .map_err(|e| sql_error(label, &format!("cannot read PRAGMA {name}"), e))
}

fn set_and_verify(
    conn: &Connection,
    label: &str,
    name: &str,
    value: &str,
    want: &str,
) -> Result<()> {
    conn.execute_batch(&format!("PRAGMA {name} = {value}"))
        .map_err(|e| sql_error(label, &format!("cannot set PRAGMA {name}"), e))?;
    let got = pragma_value(conn, label, name)?;
    if !got.as_deref().is_some_and(|v| v.eq_ignore_ascii_case(want)) {
        return Err(Error::io_msg(format!(
            "{label}: PRAGMA {name} = {value} did not take effect (reads back {})",
            got.as_deref().unwrap_or("nothing")
        )));
    }
    Ok(())
}

/// Connection-level pragmas that do not touch the file: busy timeout,
/// `trusted_schema = OFF`, `mmap_size = 0`, `foreign_keys = ON`, each read
/// back. Four calls and two statements at every open: `PRAGMA busy_timeout
/// = N` and `PRAGMA mmap_size = 0` answer with the value in effect, and the
/// two flags are set through `sqlite3_db_config`, which answers with the
/// flag in effect (the same flags as their pragmas; a statement per pragma
/// and another per read-back was a tenth of a reading open).
pub fn apply_connection_pragmas(
    conn: &Connection,
    label: &str,
    busy_timeout_ms: u32,
) -> Result<()> {
    let got = set_returning(conn, "busy_timeout", &busy_timeout_ms.to_string())
        .map_err(|e| sql_error(label, "cannot set the busy timeout", e))?;
    if got.as_deref() != Some(busy_timeout_ms.to_string().as_str()) {
        return Err(Error::io_msg(format!(
            "{label}: busy timeout {busy_timeout_ms} ms did not take effect (reads back {})",
            got.as_deref().unwrap_or("nothing")
        )));
    }
    set_flag(
        conn,
        label,
        "trusted_schema",
        DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA,
        false,
    )?;
    let got = set_returning(conn, "mmap_size", "0")
        .map_err(|e| sql_error(label, "cannot set PRAGMA mmap_size", e))?;
    // No row at all (an in-memory database, where memory mapping never
    // applies) is what mmap_size = 0 asks for.
    if got.as_deref().is_some_and(|v| v != "0") {
        return Err(Error::io_msg(format!(
            "{label}: PRAGMA mmap_size = 0 did not take effect (reads back {})",
            got.as_deref().unwrap_or("nothing")
        )));
    }
    set_flag(
        conn,
        label,
        "foreign_keys",
        DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY,
        true,
    )
}

/// `PRAGMA name = value`, returning the value it answers with (`None`
/// when it answers with no row).
fn set_returning(conn: &Connection, name: &str, value: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(&format!("PRAGMA {name} = {value}"), [], |r| {
        r.get(0).map(pragma_text)
    })
    .optional()
}

/// The connection flag of `PRAGMA pragma = ON|OFF`, set through
/// `sqlite3_db_config` and checked against the flag it reports.
fn set_flag(conn: &Connection, label: &str, pragma: &str, flag: DbConfig, on: bool) -> Result<()> {
    let value = if on { "ON" } else { "OFF" };
    let got = conn
        .set_db_config(flag, on)
        .map_err(|e| sql_error(label, &format!("cannot set PRAGMA {pragma}"), e))?;
    if got != on {
        return Err(Error::io_msg(format!(
            "{label}: PRAGMA {pragma} = {value} did not take effect (reads back {})",
            u8::from(got)
        )));
    }
    Ok(())
}

/// The journal mode (in-memory databases report `memory`) and
/// `synchronous = FULL`. Applied after the identity check, because switching
/// to WAL writes the file header.
pub fn apply_journal_pragmas(
    conn: &Connection,
    label: &str,
    mode: JournalMode,
    in_memory: bool,
) -> Result<()> {
    let got = set_journal_mode(conn, mode)
        .map_err(|e| sql_error(label, "cannot set PRAGMA journal_mode", e))?;
    let want = if in_memory { "memory" } else { mode.as_str() };
    if !got.eq_ignore_ascii_case(want) {
        return Err(Error::io_msg(format!(
            "{label}: PRAGMA journal_mode = {} did not take effect (reads back {got})",
            mode.as_str()
        )));
    }
    // FULL is the bundled SQLite's default too; set (and read back) all
    // the same, so a build with another default (`SQLITE_DEFAULT_WAL_
    // SYNCHRONOUS=1`, as some distributions ship) cannot weaken a commit.
    set_and_verify(conn, label, "synchronous", "FULL", "2")
}

/// `PRAGMA journal_mode = …`, retried while another connection's lock is in
/// the way, for as long as the connection's busy timeout: SQLite answers a
/// change out of WAL that would have to wait for the database's exclusive
/// lock with `SQLITE_BUSY` at once, without calling the busy handler (a
/// change into WAL waits through the handler itself; two processes making
/// a new database at the same instant both get here).
fn set_journal_mode(conn: &Connection, mode: JournalMode) -> rusqlite::Result<String> {
    let sql = format!("PRAGMA journal_mode = {}", mode.as_str());
    let timeout_ms: u64 = conn.query_row("PRAGMA busy_timeout", [], |r| r.get(0))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
    loop {
        match conn.query_row(&sql, [], |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(f, _))
                if matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

type Objects = Vec<(String, String, String, Option<String>)>;

struct Identity {
    application_id: i64,
    user_version: i64,
    objects: Objects,
}

fn read_identity(conn: &Connection, label: &str) -> Result<Identity> {
    let int = |name: &str| -> Result<i64> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .map_err(|e| sql_error(label, &format!("cannot read PRAGMA {name}"), e))
    };
    let application_id = int("application_id")?;
    let user_version = int("user_version")?;
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master")
        .map_err(|e| sql_error(label, "cannot read the schema", e))?;
    let objects = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<Objects>>())
        .map_err(|e| sql_error(label, "cannot read the schema", e))?;
    Ok(Identity {
        application_id,
        user_version,
        objects,
    })
}

fn is_pristine(id: &Identity) -> bool {
    id.application_id == 0 && id.user_version == 0 && id.objects.is_empty()
}

/// Checks identity and schema of a database opened for reading, changing
/// nothing: `None` while it is pristine (empty: a writer initialises it).
/// The header pragmas and the schema are read in one read transaction: read
/// one by one, a concurrent first initialisation could be seen half-done
/// (no application id yet, but tables) and refused as a foreign database.
pub fn read_store_id(conn: &mut Connection, label: &str) -> Result<Option<String>> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Deferred)
        .map_err(|e| sql_error(label, "cannot start a read transaction", e))?;
    let id = read_identity(&tx, label)?;
    if is_pristine(&id) {
        return Ok(None);
    }
    verify_identity(&id, label)?;
    stored_store_id(&tx, label).map(Some)
}

fn stored_store_id(conn: &Connection, label: &str) -> Result<String> {
    let store_id: Option<String> = conn
        .query_row(
            "SELECT store_id FROM persistence_state WHERE singleton = 1",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| sql_error(label, "cannot read the store id", e))?;
    store_id.ok_or_else(|| {
        Error::corruption(format!(
            "{label} has no persistence_state row (store id missing)"
        ))
    })
}

/// Checks identity and schema of an opened database, initialising a pristine
/// one in a single transaction. Returns the `store_id`. Refusals change
/// nothing.
///
/// Race-free between processes: everything is read and decided inside
/// `BEGIN IMMEDIATE` (the database's write lock, waited for with the busy
/// timeout), so of two first writers exactly one initialises and the other
/// then finds the initialised database, never a half-made one.
pub fn ensure_identity(conn: &mut Connection, label: &str) -> Result<String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sql_error(label, "cannot start the initialisation transaction", e))?;
    let id = read_identity(&tx, label)?;
    if is_pristine(&id) {
        let store_id = crate::uuid::uuid_v4();
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(|e| sql_error(label, "cannot write the database identity", e))?;
        tx.execute_batch(SCHEMA_SQL)
            .map_err(|e| sql_error(label, "cannot create the schema", e))?;
        tx.execute(
            "INSERT INTO persistence_state (singleton, store_id) VALUES (1, ?1)",
            [&store_id],
        )
        .map_err(|e| sql_error(label, "cannot write the store id", e))?;
        tx.commit()
            .map_err(|e| sql_error(label, "cannot commit the initialisation", e))?;
        return Ok(store_id);
    }
    verify_identity(&id, label)?;
    stored_store_id(&tx, label)
}

fn verify_identity(id: &Identity, label: &str) -> Result<()> {
    if id.application_id != APPLICATION_ID {
        if id.application_id == 0 {
            return Err(Error::invalid(format!(
                "{label} is not empty and is not a dsh session database (application_id 0, user_version {}); refusing to use it",
                id.user_version
            )));
        }
        return Err(Error::invalid(format!(
            "{label} belongs to another application (application_id {}, expected {APPLICATION_ID}); refusing to use it",
            id.application_id
        )));
    }
    if id.user_version != SCHEMA_VERSION {
        let mut m = format!(
            "{label} has schema version {}, incompatible with this build ({SCHEMA_VERSION})",
            id.user_version
        );
        if id.user_version > SCHEMA_VERSION {
            m.push_str(": it was written by a newer build \u{2014} upgrade to open it");
        }
        return Err(Error::FormatUnsupported(m));
    }
    let mut found: Objects = id
        .objects
        .iter()
        .map(|(t, n, tb, sql)| {
            (
                t.clone(),
                n.clone(),
                tb.clone(),
                sql.as_deref().map(normalize_sql),
            )
        })
        .collect();
    found.sort();
    let expected = expected_objects();
    if found != *expected {
        let describe = |o: &Objects| {
            o.iter()
                .map(|(t, n, _, _)| format!("{t} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let changed: Vec<String> = found
            .iter()
            .filter(|o| !expected.contains(o))
            .map(|(t, n, _, _)| format!("{t} {n}"))
            .collect();
        let missing: Vec<String> = expected
            .iter()
            .filter(|o| !found.contains(o))
            .map(|(t, n, _, _)| format!("{t} {n}"))
            .collect();
        return Err(Error::corruption(format!(
            "{label} has an altered schema (unexpected or changed: [{}]; missing or changed: [{}]; found: [{}]); refusing to use it",
            changed.join(", "),
            missing.join(", "),
            describe(&found)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::test_dir::TempDir;

    #[test]
    fn normalisation_ignores_layout_only() {
        assert_eq!(
            normalize_sql("CREATE TABLE t (\n  a  INTEGER ,\n b TEXT\n) STRICT"),
            "CREATE TABLE t(a INTEGER,b TEXT) STRICT"
        );
        assert_ne!(
            normalize_sql("CREATE TABLE t (a INTEGER)"),
            normalize_sql("CREATE TABLE t (a TEXT)")
        );
    }

    /// A WAL database with one row, and a connection holding it in a read
    /// transaction: a change out of WAL needs the database to itself.
    fn read_locked_database(name: &str) -> (TempDir, Connection) {
        let dir = TempDir::new(name);
        let db = dir.join("j.db");
        let reader = Connection::open(&db).unwrap();
        reader
            .execute_batch(
                "PRAGMA journal_mode = wal; CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1); BEGIN;",
            )
            .unwrap();
        let n: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        (dir, reader)
    }

    #[test]
    fn a_journal_mode_change_is_retried_while_another_connection_holds_a_lock() {
        let (dir, reader) = read_locked_database("journal-wait");
        let writer = Connection::open(dir.join("j.db")).unwrap();
        writer.busy_timeout(Duration::from_secs(30)).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            reader.execute_batch("COMMIT").unwrap();
        });
        // SQLite answers SQLITE_BUSY at once; the change is retried until
        // the reader lets go.
        assert_eq!(
            set_journal_mode(&writer, JournalMode::Delete).unwrap(),
            "delete"
        );
        release.join().unwrap();
        drop(writer);
    }

    #[test]
    fn a_journal_mode_change_gives_up_at_the_busy_timeout() {
        let (dir, reader) = read_locked_database("journal-give-up");
        let writer = Connection::open(dir.join("j.db")).unwrap();
        writer.busy_timeout(Duration::from_millis(100)).unwrap();
        match set_journal_mode(&writer, JournalMode::Delete) {
            Err(rusqlite::Error::SqliteFailure(f, _)) => assert!(
                matches!(
                    f.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ),
                "{f:?}"
            ),
            other => panic!("expected SQLITE_BUSY, got {other:?}"),
        }
        drop((writer, reader));
    }

    #[test]
    fn journal_mode_parses() {
        for mode in [
            JournalMode::Wal,
            JournalMode::Delete,
            JournalMode::Truncate,
            JournalMode::Persist,
        ] {
            let name = mode.as_str();
            assert_eq!(JournalMode::parse(name).unwrap(), mode);
            assert_eq!(JournalMode::parse(&name.to_uppercase()).unwrap(), mode);
        }
        let e = JournalMode::parse("off").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"journalMode must be one of wal, delete, truncate, persist (got "off")"#
        );
    }
}
