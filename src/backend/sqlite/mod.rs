//! SQLite backend, schema 17 (SPEC §4).
//!
//! One database file holds every session: a `sessions` row per materialized
//! session and its `events` rows (scalar events and packed chunk rows). The
//! backend keeps one connection behind a mutex; SQLite's own locking (WAL,
//! `BEGIN IMMEDIATE`, busy timeout) keeps several processes or backends on
//! one file consistent, and a stale writer is refused by the tail check.
//! Session writer locks are files in a directory beside the database,
//! `<database>.dsh-persist-locks/` (see [`crate::backend::writer_lock`]);
//! the original never looks there. A private in-memory database locks in
//! this process only.
//!
//! Files: [`schema`] (pragmas, identity, init), [`access`] (POSIX checks),
//! [`rows`] (the shared row encoding of [`crate::backend::rows`] in SQLite's
//! values), [`reader`], [`writer`], [`scan`] (the read-only walk of
//! `verify`, file probing).

pub mod access;
pub mod connection;
pub mod manage;
pub mod reader;
pub mod rows;
pub mod scan;
pub mod schema;
pub mod window;
pub mod writer;

/// The `source_event_seqs` codec, shared with the other row store.
pub use crate::backend::rows::varint;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
#[cfg(test)]
use rusqlite::Connection;

use crate::backend::limits::Limits;
use crate::backend::rows::seal::{RowSeal, SealedLogs};
use crate::backend::writer_lock::{LOCK_DIR_NAME, LockSpace};
use crate::backend::{
    AppendState, Backend, BackendKind, EventSink, Expect, FoldedLog, Location, RawArtifact,
    Revision, ScannedSuffix, StoredLog, TornTail, WriterHolder, WriterLock,
};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::quote;
use crate::model::session_list::SessionList;

pub use schema::JournalMode;

/// The path that opens a private in-memory database.
pub const MEMORY_PATH: &str = ":memory:";

/// How to open a SQLite store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteConfig {
    /// The database file, or `":memory:"` for a private in-memory database.
    pub path: String,
    /// `journalMode` (default WAL).
    pub journal_mode: JournalMode,
    /// `busyTimeoutMs` (default 5,000).
    pub busy_timeout_ms: u32,
    /// Read and write bounds (`maxRecordBytes`, `maxLogBytes`).
    pub limits: Limits,
}

impl SqliteConfig {
    /// Defaults for `path`: WAL, 5,000 ms busy timeout.
    pub fn new(path: impl Into<String>) -> SqliteConfig {
        SqliteConfig {
            path: path.into(),
            journal_mode: JournalMode::Wal,
            busy_timeout_ms: 5000,
            limits: Limits::default(),
        }
    }

    /// A private in-memory database (tests).
    pub fn memory() -> SqliteConfig {
        SqliteConfig::new(MEMORY_PATH)
    }
}

/// The SQLite backend (see the module docs).
pub struct SqliteBackend {
    /// The database, opened at the first use (created at the first write).
    db: connection::Database,
    /// `session database at "<path>"`, the subject of open-time messages.
    label: String,
    /// Session writer locks: `<database>.dsh-persist-locks/`, or this
    /// process only in memory.
    locks: LockSpace,
    limits: Limits,
    /// The decoded size of a session's log at (incarnation, revision), from
    /// its last full read or this backend's appends (for `maxLogBytes`).
    log_bytes: crate::backend::rows::checks::KnownLogBytes,
    /// The exact append state (next seq, size count, seal of the rows) of
    /// the sessions this backend folded or wrote, for the store's append
    /// checkpoints ([`crate::backend::rows::seal`]).
    sealed: SealedLogs,
}

/// Maps a SQLite error: lock timeouts become [`Error::Busy`], a file that is
/// not a database an invalid argument, the rest I/O errors naming the
/// database and the operation.
pub(crate) fn sql_error(label: &str, context: &str, e: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        if matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ) {
            return Error::Busy(format!("{label}: {context}: {e}"));
        }
        if f.code == rusqlite::ErrorCode::NotADatabase {
            return Error::invalid(format!(
                "{label} is not a SQLite database ({context}: {e}); refusing to use it"
            ));
        }
    }
    Error::io_msg(format!("{label}: {context}: {e}"))
}

impl SqliteBackend {
    /// Opens the store of `config`: checks what exists (the parent
    /// directory and the file, SPEC §4.1) and opens nothing yet. The file is
    /// created and initialised at the first write; reads of a missing or
    /// pristine file find no sessions and create nothing (see
    /// [`connection`]). A database with another identity or schema is
    /// refused without any change when first used.
    pub fn open(config: &SqliteConfig) -> Result<SqliteBackend> {
        let label = format!("session database at {}", quote(&config.path));
        let db = connection::Database::open(
            &config.path,
            config.journal_mode,
            config.busy_timeout_ms,
            label.clone(),
        )?;
        let locks = match db.path() {
            None => LockSpace::process(),
            Some(p) => {
                let mut dir = lock_base(p, &label)?.into_os_string();
                dir.push(LOCK_DIR_NAME);
                LockSpace::files(PathBuf::from(dir))
            }
        };
        Ok(SqliteBackend {
            db,
            locks,
            label,
            limits: config.limits,
            log_bytes: Mutex::default(),
            sealed: SealedLogs::default(),
        })
    }

    /// The `store_id` of the database (`persistence_state`), once it is
    /// open and initialised.
    pub fn store_id(&self) -> Option<String> {
        self.db.ident().map(|i| i.store_id)
    }

    /// Creates and initialises the database now, as the first write would
    /// (tests and tools that need the file to exist).
    pub fn initialise(&self) -> Result<()> {
        self.db.write(|_, _| Ok(()))
    }

    /// The database file as configured (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }

    /// Runs `f` on the connection for a write (tests).
    #[cfg(test)]
    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> Result<T>) -> Result<T> {
        self.db.write(|c, _| f(c))
    }
}

/// The database path the lock directory is named after: absolute, with its
/// longest existing ancestor resolved (`realpath`), so every handle on one
/// file (through a symlinked directory, a relative path, or before and
/// after the first write creates the parent) finds the same locks.
fn lock_base(path: &Path, label: &str) -> Result<PathBuf> {
    let abs = std::path::absolute(path)
        .map_err(|e| Error::io(format!("cannot resolve the path of {label}"), e))?;
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(cur) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return Ok(out);
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cur = parent;
            }
            _ => return Ok(abs),
        }
    }
}

/// The revision token of a session state.
impl SqliteBackend {
    /// The connection a log read fetches its rows on (the read connection,
    /// or the writer's), noting the database it is in `ident`.
    fn fetching<'a>(
        &'a self,
        ident: &'a mut Option<connection::Ident>,
    ) -> impl FnOnce(&mut reader::FetchRows<'_>) -> Result<Option<reader::SessionRow>> + 'a {
        move |f| {
            self.db
                .read(|c, i| {
                    *ident = Some(i.clone());
                    f(c)
                })
                .map(Option::flatten)
        }
    }

    /// The revision of a log read on the database `ident`; a clean read's
    /// size count is noted for the next append's `maxLogBytes`.
    fn after_read(
        &self,
        id: &str,
        ident: Option<connection::Ident>,
        read: &reader::LogRead,
    ) -> Result<Revision> {
        let ident =
            ident.ok_or_else(|| Error::invariant("a read found rows without a database"))?;
        let (inc, rev) = (&read.session.incarnation, read.session.revision);
        if read.torn_from.is_none() {
            crate::backend::rows::checks::note_log_bytes(
                &self.log_bytes,
                id,
                inc,
                rev,
                read.log_bytes,
            );
        }
        Ok(token(&ident, inc, rev))
    }
}

fn token(ident: &connection::Ident, incarnation: &str, revision: i64) -> Revision {
    Revision(format!(
        "{}:store:{}:incarnation:{incarnation}:revision:{revision}",
        ident.revision_prefix, ident.store_id
    ))
}
/// `file:<dev>:<ino>:<birthtime-ns>` of the database file. Where the file
/// system does not report a birth time, 0 is used (not ctime: it changes
/// with every write, and the token must stay stable while nothing changed).
fn file_identity(path: &Path) -> Result<String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| {
        Error::io(
            format!(
                "cannot inspect session database {}",
                quote(&path.display().to_string())
            ),
            e,
        )
    })?;
    let birth_ns = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok(format!("file:{}:{}:{birth_ns}", meta.dev(), meta.ino()))
}

impl Backend for SqliteBackend {
    /// A WAL database file: a read that finds the connection busy runs on
    /// a side connection (see `connection`).
    fn concurrent_reads(&self) -> bool {
        self.db.side_reads()
    }

    fn read_window(
        &self,
        id: &str,
        spec: &crate::backend::catalog::WindowSpec<'_>,
    ) -> Result<Option<crate::backend::catalog::Window>> {
        let quick = self
            .db
            .read(|c, ident| {
                window::read_window(c, &self.label, id, spec, &self.limits, &|inc, rev| {
                    token(ident, inc, rev)
                })
            })?
            .flatten();
        match quick {
            None => Ok(None),
            Some(window::RowWindow::Window(w)) => Ok(Some(*w)),
            Some(window::RowWindow::FullRead { bytes }) => Ok(self
                .read(id)?
                .map(|log| crate::backend::catalog::window_of_log(log, spec, Some(bytes)))),
        }
    }

    fn log_bytes_at(&self, header: &SessionHeader, revision: &Revision) -> Option<u64> {
        let ident = self.db.ident()?;
        crate::backend::rows::checks::known_log_bytes(
            &self.log_bytes,
            &header.id,
            revision,
            |i, r| token(&ident, i, r),
        )
    }

    fn append_state(&self, header: &SessionHeader, revision: &Revision) -> Option<AppendState> {
        self.sealed.at(&header.id, revision)
    }

    /// Scans the rows of the session (fetched, not decoded) and takes the
    /// checkpoint's state only when the session row is at `revision` with
    /// the same header (as its JSONL line: the checkpoint keeps it in that
    /// form), a header a read accepts, and the rows have the checkpoint's
    /// seal. The header returned is the session row's.
    fn adopt_append_state(
        &self,
        header: &SessionHeader,
        revision: &Revision,
        state: &AppendState,
    ) -> Result<Option<SessionHeader>> {
        let Some(want) = &state.seal else {
            return Ok(None);
        };
        let id = header.id.as_str();
        let mut scan = want.empty_like();
        let found = self
            .db
            .read(|c, ident| {
                let row = reader::seal_rows(c, &self.label, id, &mut scan)?;
                Ok(row.map(|r| (token(ident, &r.incarnation, r.revision), r)))
            })?
            .flatten();
        Ok(found.and_then(|(at, row)| {
            self.sealed.adopt(
                &self.log_bytes,
                (header, revision, state),
                (&at, row, &scan),
            )
        }))
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        let base = lock_base(self.db.path()?, &self.label).ok()?;
        let mut dir = base.into_os_string();
        dir.push(crate::backend::catalog::CACHE_DIR_NAME);
        Some(PathBuf::from(dir))
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Sqlite
    }

    fn locate(&self, _header: &SessionHeader) -> Result<Option<Location>> {
        Ok(None)
    }

    fn list(&self) -> Result<SessionList> {
        Ok(self
            .db
            .read(|c, _| reader::list_headers(c, &self.label))?
            .unwrap_or_default())
    }

    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        Ok(self
            .db
            .read(|c, ident| {
                let rows = reader::list_sessions(c, &self.label)?;
                Ok(rows
                    .into_iter()
                    .map(|r| {
                        let rev = token(ident, &r.incarnation, r.revision);
                        (r.header, rev)
                    })
                    .collect())
            })?
            .unwrap_or_default())
    }

    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        Ok(self
            .db
            .read(|c, ident| {
                let row = reader::session_row(c, &self.label, id)?;
                Ok(row.map(|r| token(ident, &r.incarnation, r.revision)))
            })?
            .flatten())
    }

    fn append(
        &self,
        header: &SessionHeader,
        events: &[Event],
        expect: Expect<'_>,
    ) -> Result<Revision> {
        let id = header.id.as_str();
        let checked = crate::backend::rows::checks::check_append_bounds(
            &self.limits,
            &self.log_bytes,
            header,
            events,
            expect,
        )?;
        let (inc, rev, revision, before, written) = self.db.write(|c, ident| {
            let ((inc, rev), written) =
                writer::append(c, &self.label, header, events, expect, &self.limits)?;
            let revision = token(ident, &inc, rev);
            let before = written.before.as_ref().map(|(i, r)| token(ident, i, *r));
            Ok((inc, rev, revision, before, written))
        })?;
        // Outside the connection lock (the session's appends are
        // serialized by its writer).
        self.sealed
            .after_append(id, before.as_ref(), &written.inserted, &revision);
        crate::backend::rows::checks::note_append(
            &self.log_bytes,
            id,
            expect,
            checked,
            (&inc, rev),
            written.inserted.charge,
        );
        Ok(revision)
    }

    fn read(&self, id: &str) -> Result<Option<StoredLog>> {
        // Rows are fetched under the connection lock and decoded, on two
        // threads, outside it.
        let mut ident = None;
        // The rows are sealed as they are decoded (on both threads), so
        // that an append after this read leaves a checkpoint at close
        // (`sealed`); a database in memory keeps none.
        let mut seal = self.db.path().is_some().then(RowSeal::new);
        let read = reader::read_log(
            self.fetching(&mut ident),
            &self.label,
            id,
            &self.limits,
            seal.as_mut(),
        )?;
        let Some(read) = read else {
            return Ok(None);
        };
        let revision = self.after_read(id, ident, &read)?;
        if read.torn_from.is_none() {
            let state = AppendState {
                next_seq: read.events.len() as u64,
                log_bytes: read.log_bytes,
                seal,
            };
            self.sealed.note(id, &revision, state);
        }
        Ok(Some(StoredLog {
            revision,
            header: read.session.header,
            events: read.events,
            torn: read.torn_from.map(|from_seq| TornTail::Sqlite { from_seq }),
            raw_log: None,
            recovered_events: 0,
            log_bytes: read.log_bytes,
        }))
    }

    fn read_folding(&self, id: &str, sink: &mut dyn EventSink) -> Result<Option<FoldedLog>> {
        let mut ident = None;
        let fetch = self.fetching(&mut ident);
        let mut seal = RowSeal::new();
        let Some((read, handed)) =
            reader::fold_log(fetch, &self.label, id, &self.limits, sink, &mut seal)?
        else {
            return Ok(None);
        };
        let revision = self.after_read(id, ident, &read)?;
        if read.torn_from.is_none() {
            let state = AppendState {
                next_seq: handed,
                log_bytes: read.log_bytes,
                seal: Some(seal),
            };
            self.sealed.note(id, &revision, state);
        }
        Ok(Some(FoldedLog {
            revision,
            header: read.session.header,
            event_count: handed,
            torn: read.torn_from.is_some(),
            raw_log: None,
            log_bytes: read.log_bytes,
        }))
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>> {
        let Some(fetched) = self
            .db
            .read(|c, _| reader::fetch_suffix(c, &self.label, id, from_seq, &self.limits))?
            .flatten()
        else {
            return Ok(None);
        };
        let read = fetched.scan_suffix(from_seq, &self.limits, &self.label)?;
        Ok(Some(ScannedSuffix {
            header: read.session.header,
            events: read.events,
            raw_log: None,
            recovered_events: 0,
        }))
    }

    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision> {
        self.log_bytes.lock().remove(id);
        self.sealed.forget(id);
        self.db.write(|c, ident| {
            let (inc, rev) =
                writer::commit_repair(c, &self.label, id, log, closers, &|inc, rev| {
                    token(ident, inc, rev)
                })?;
            Ok(token(ident, &inc, rev))
        })
    }

    fn as_read_back(&self, events: &mut [Event]) {
        crate::backend::rows::as_read_back(events);
    }

    fn lock_writer(&self, id: &str) -> Result<WriterLock> {
        self.locks.lock(id)
    }

    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        self.locks.holder(id)
    }

    fn delete(&self, id: &str, _writer: &WriterLock) -> Result<bool> {
        if self.revision(id)?.is_none() {
            // Nothing to delete: no write (which would create the file).
            return Ok(false);
        }
        self.log_bytes.lock().remove(id);
        self.sealed.forget(id);
        self.db
            .write(|c, _| manage::delete_session(c, &self.label, id))
    }

    /// The last event row's `time` (one primary-key seek).
    fn updated_at(&self, id: &str) -> Result<Option<(i64, crate::backend::manage::UpdatedSource)>> {
        let found = self.db.read(|c, _| {
            let Some(row) = reader::session_row(c, &self.label, id)? else {
                return Ok(None);
            };
            let t = manage::last_event_time(c, &self.label, id)?;
            Ok(Some(t.unwrap_or(row.header.created_at as i64)))
        })?;
        Ok(found
            .flatten()
            .map(|t| (t, crate::backend::manage::UpdatedSource::LastEventTime)))
    }

    fn read_intact_prefix(&self, id: &str) -> Result<Option<crate::backend::manage::IntactPrefix>> {
        let Some(fetched) = self
            .db
            .read(|c, _| reader::fetch_all(c, &self.label, id, &self.limits))?
            .flatten()
        else {
            return Ok(None);
        };
        let (events, stopped) =
            crate::backend::rows::intact_prefix::intact_prefix(&fetched.rows, &self.limits);
        Ok(Some(crate::backend::manage::IntactPrefix {
            header: fetched.session.header,
            events,
            stopped,
        }))
    }

    fn read_raw(&self, _id: &str) -> Result<Option<RawArtifact>> {
        Err(Error::Unsupported(
            "read_raw is not supported by the SQLite backend (it keeps no per-session artifact)"
                .to_string(),
        ))
    }

    fn close(&self) -> Result<()> {
        self.db.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::json::JsonText;
    use rusqlite::params;

    /// An in-memory store holding `ids`, each with one event and cwd `/w`.
    pub(super) fn backend_with(ids: &[&str]) -> SqliteBackend {
        let be = SqliteBackend::open(&SqliteConfig::memory()).unwrap();
        for id in ids {
            let mut h = SessionHeader::new(*id, 5);
            h.cwd = Some("/w".into());
            let e = Event::new(
                crate::model::event::EventType::known("turn/start"),
                0,
                1,
                JsonText::from_trusted("{\"turn\":1}"),
            );
            be.append(&h, &[e], Expect::New).unwrap();
        }
        be
    }

    #[test]
    fn list_reads_headers_in_insertion_order() {
        let be = backend_with(&["b", "a", "c"]);
        be.with_conn(|c| {
            c.execute_batch(
                "UPDATE sessions SET parent_session = 'a', seed_length = 2, origin = 'subagent', delegation_depth = 1, agent_preset = 'p' WHERE id = 'c'",
            )
            .unwrap();
            Ok(())
        })
        .unwrap();
        let listed = Vec::from(be.list().unwrap());
        let snapshots: Vec<SessionHeader> = be
            .list_snapshots()
            .unwrap()
            .into_iter()
            .map(|(h, _)| h)
            .collect();
        assert_eq!(listed, snapshots);
        let ids: Vec<&str> = listed.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert_eq!(listed[0].cwd.as_deref(), Some("/w"));
        assert_eq!(listed[0].created_at, 5);
        let c = &listed[2];
        assert_eq!(c.parent_session.as_deref(), Some("a"));
        assert_eq!((c.seed_length, c.delegation_depth), (Some(2), Some(1)));
        assert_eq!(c.origin.as_deref(), Some("subagent"));
        assert_eq!(c.agent_preset.as_deref(), Some("p"));
    }

    /// A database file in `dir` in each journal mode, named after it.
    fn file_configs(dir: &crate::test_dir::TempDir) -> Vec<(JournalMode, SqliteConfig)> {
        [
            JournalMode::Wal,
            JournalMode::Delete,
            JournalMode::Truncate,
            JournalMode::Persist,
        ]
        .into_iter()
        .map(|mode| {
            let db = dir.join(format!("{}.db", mode.as_str()));
            let mut config = SqliteConfig::new(db.to_str().unwrap());
            config.journal_mode = mode;
            (mode, config)
        })
        .collect()
    }

    /// Reads run beside a busy connection only on a WAL database file: an
    /// in-memory database has one connection, and in a rollback journal
    /// mode a reader would wait for the writer anyway.
    #[test]
    fn concurrent_reads_only_on_a_wal_file() {
        assert!(!backend_with(&[]).concurrent_reads());
        let dir = crate::test_dir::TempDir::new("sqlite-concurrent-reads");
        for (mode, config) in file_configs(&dir) {
            let be = SqliteBackend::open(&config).unwrap();
            be.initialise().unwrap();
            assert_eq!(be.concurrent_reads(), mode == JournalMode::Wal, "{mode:?}");
        }
    }

    /// Every connection runs with the pragmas the open sets: the configured
    /// busy timeout, no trusted schema, no memory mapping, foreign keys,
    /// the journal mode asked for, `synchronous = FULL`.
    #[test]
    fn connections_run_with_the_pragmas_the_open_sets() {
        let pragmas = |c: &Connection| -> Vec<String> {
            [
                "busy_timeout",
                "trusted_schema",
                "mmap_size",
                "foreign_keys",
                "journal_mode",
                "synchronous",
            ]
            .iter()
            .map(|p| {
                c.query_row(&format!("PRAGMA {p}"), [], |r| {
                    r.get::<_, rusqlite::types::Value>(0)
                })
                .map_or_else(|e| format!("{p}: {e}"), |v| format!("{p}={v:?}"))
            })
            .collect()
        };
        let expected = |mode: &str| {
            [
                "busy_timeout=Integer(1234)".to_string(),
                "trusted_schema=Integer(0)".into(),
                "mmap_size=Integer(0)".into(),
                "foreign_keys=Integer(1)".into(),
                format!("journal_mode=Text(\"{mode}\")"),
                "synchronous=Integer(2)".into(),
            ]
        };
        let dir = crate::test_dir::TempDir::new("sqlite-pragmas");
        for (mode, mut config) in file_configs(&dir) {
            config.busy_timeout_ms = 1234;
            let be = SqliteBackend::open(&config).unwrap();
            be.initialise().unwrap();
            let written = be.with_conn(|c| Ok(pragmas(c))).unwrap();
            assert_eq!(written, expected(mode.as_str()), "{mode:?}");
            // A new handle's first connection is a reading one: the same
            // connection pragmas, and no journal mode set (it writes
            // nothing; only WAL is kept in the file).
            let be = SqliteBackend::open(&config).unwrap();
            let read = be.db.read(|c, _| Ok(pragmas(c))).unwrap().unwrap();
            assert_eq!(read[..4], written[..4], "{mode:?}");
            let journal = if mode == JournalMode::Wal {
                "wal"
            } else {
                "delete"
            };
            assert_eq!(read[4], format!("journal_mode=Text(\"{journal}\")"));
        }
        let mut config = SqliteConfig::memory();
        config.busy_timeout_ms = 1234;
        let be = SqliteBackend::open(&config).unwrap();
        let mut memory = be.with_conn(|c| Ok(pragmas(c))).unwrap();
        // No memory mapping of an in-memory database: no row at all.
        assert!(
            memory.remove(2).contains("Query returned no rows"),
            "{memory:?}"
        );
        let mut want = expected("memory").to_vec();
        want.remove(2);
        assert_eq!(memory, want);
    }

    /// The delete of a session with no row says so (the backend checks
    /// first; another process can delete it in between).
    #[test]
    fn deleting_a_missing_session_row_reports_none_deleted() {
        let be = backend_with(&["a"]);
        let deleted = |id: &str| {
            be.with_conn(|c| manage::delete_session(c, &be.label, id))
                .unwrap()
        };
        assert!(!deleted("b"));
        assert!(deleted("a"));
        assert!(!deleted("a"));
        assert!(be.list().unwrap().is_empty());
    }

    fn show(r: Result<Option<reader::LogRead>>) -> String {
        match r {
            Ok(Some(read)) => format!("{:?} {:?}", read.events, read.torn_from),
            Ok(None) => "none".into(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn pipelined_read_matches_fetch_then_scan() {
        let be = SqliteBackend::open(&SqliteConfig::memory()).unwrap();
        let h = SessionHeader::new("s", 5);
        let events: Vec<Event> = (0..702u64)
            .map(|seq| {
                let (ty, data) = match seq % 7 {
                    0 => ("turn/start", format!("{{\"turn\":{}}}", seq / 7 + 1)),
                    6 => ("turn/end", format!("{{\"turn\":{}}}", seq / 7 + 1)),
                    _ => ("user/message", format!("{{\"text\":\"m{seq}\"}}")),
                };
                Event::new(
                    crate::model::event::EventType::known(ty),
                    seq,
                    seq as i64,
                    JsonText::from_trusted(data),
                )
            })
            .collect();
        be.append(&h, &events, Expect::New).unwrap();
        let both = |be: &SqliteBackend, what: &str| {
            // Sealed on two threads: the seal of the rows fed in order.
            let mut seal = RowSeal::new();
            let read = reader::read_log(
                |f| be.with_conn(f),
                &be.label,
                "s",
                &Limits::default(),
                Some(&mut seal),
            );
            // A read that fails leaves the seal as it was.
            let sealed = matches!(read, Ok(Some(_)));
            let piped = show(read);
            let fetched = be.with_conn(|c| reader::fetch_log(c, &be.label, "s"));
            let mut in_order = seal.empty_like();
            if let (true, Ok(Some(f))) = (sealed, &fetched) {
                f.rows.iter().for_each(|r| in_order.feed(r));
                assert!(in_order.rows() > 0);
            }
            assert_eq!(seal, in_order, "{what}: the seal");
            assert!(
                !sealed || seal.rows() as usize > crate::backend::rows::scan::PIPELINE_CHUNK_ROWS,
                "{what}: two threads"
            );
            let plain = show(fetched.and_then(|f| f.map(|f| f.scan_log()).transpose()));
            assert_eq!(piped, plain, "{what}");
            piped
        };
        let clean = both(&be, "clean");
        assert!(clean.contains("m701") && clean.ends_with("None"));
        assert_eq!(
            show(reader::read_log(
                |f| be.with_conn(f),
                &be.label,
                "nope",
                &Limits::default(),
                None,
            )),
            "none"
        );
        let set = |seq: u64, data: &str| {
            be.with_conn(|c| {
                c.execute(
                    "UPDATE events SET data = ?2 WHERE session_id = 's' AND seq = ?1",
                    params![seq as i64, data],
                )
                .unwrap();
                Ok(())
            })
            .unwrap();
        };
        for seq in [0, 5, 127, 128, 129, 400, 695, 699, 700, 701] {
            set(seq, "{bad");
            let got = both(&be, &format!("bad row {seq}"));
            // The last turn/end is at 699: a bad row from there on is torn.
            let want = if seq >= 699 {
                format!(" Some({seq})")
            } else {
                format!("invalid committed physical row at seq {seq}")
            };
            assert!(
                got.ends_with(&want),
                "bad row {seq}: {}",
                &got[got.len().saturating_sub(80)..]
            );
            set(seq, events[seq as usize].data.as_str());
        }
        assert!(both(&be, "restored").ends_with("None"));
    }

    #[test]
    fn list_reads_plain_rows_before_and_after_other_rows() {
        let be = backend_with(&["p1", "o1", "p2", "v1", "p3", "n1"]);
        be.with_conn(|c| {
            c.execute_batch(
                "UPDATE sessions SET origin = 'subagent' WHERE id = 'o1';
                 UPDATE sessions SET version = 3 WHERE id = 'v1';
                 UPDATE sessions SET cwd = NULL WHERE id IN ('p2', 'n1');
                 UPDATE sessions SET agent_preset = 'a' WHERE id = 'n1'",
            )
            .unwrap();
            Ok(())
        })
        .unwrap();
        let listed = Vec::from(be.list().unwrap());
        let snapshots: Vec<SessionHeader> = be
            .list_snapshots()
            .unwrap()
            .into_iter()
            .map(|(h, _)| h)
            .collect();
        assert_eq!(listed, snapshots);
        let ids: Vec<&str> = listed.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["p1", "o1", "p2", "v1", "p3", "n1"]);
        assert_eq!(listed[1].origin.as_deref(), Some("subagent"));
        assert_eq!(listed[2].cwd, None);
        assert_eq!(listed[3].version, 3);
        assert_eq!(listed[4].cwd.as_deref(), Some("/w"));
        assert_eq!(listed[5].agent_preset.as_deref(), Some("a"));
        assert_eq!(listed[5].cwd, None);
        // Only plain rows: the first query alone.
        let be = backend_with(&["a", "b"]);
        let listed = Vec::from(be.list().unwrap());
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].id, "b");
        assert_eq!(listed[1].version, 0);
        assert_eq!(listed[1].cwd.as_deref(), Some("/w"));
    }

    #[test]
    fn list_refuses_an_out_of_range_created_at_of_a_plain_row_first() {
        let be = backend_with(&["x", "y", "z"]);
        be.with_conn(|c| {
            c.execute_batch(
                "UPDATE sessions SET created_at = -5 WHERE id = 'x'; UPDATE sessions SET seed_length = -1 WHERE id = 'y'",
            )
            .unwrap();
            Ok(())
        })
        .unwrap();
        let want = "session \"x\" row has created_at -5, not a non-negative safe integer";
        assert_eq!(be.list().unwrap_err().to_string(), want);
        assert_eq!(be.list_snapshots().unwrap_err().to_string(), want);
        let be = backend_with(&["x", "y"]);
        be.with_conn(|c| {
            c.execute_batch("UPDATE sessions SET created_at = 9007199254740992 WHERE id = 'y'")
                .unwrap();
            Ok(())
        })
        .unwrap();
        let want =
            "session \"y\" row has created_at 9007199254740992, not a non-negative safe integer";
        assert_eq!(be.list().unwrap_err().to_string(), want);
    }

    #[test]
    fn list_refuses_the_first_row_with_an_out_of_range_integer() {
        let be = backend_with(&["x", "y", "z"]);
        be.with_conn(|c| {
            c.execute_batch(
                "UPDATE sessions SET seed_length = -1 WHERE id = 'y'; UPDATE sessions SET created_at = -2 WHERE id = 'z'",
            )
            .unwrap();
            Ok(())
        })
        .unwrap();
        let want = "session \"y\" row has seed_length -1, not a non-negative safe integer";
        assert_eq!(be.list().unwrap_err().to_string(), want);
        assert_eq!(be.list_snapshots().unwrap_err().to_string(), want);
    }

    #[test]
    fn list_refuses_a_bad_revision_or_incarnation_behind_plain_rows() {
        // Plain in every other column: the revision and incarnation checks
        // of the plain query send these rows to the full one.
        for (set, want) in [
            (
                "revision = -1",
                "session \"y\" row has revision -1, not a non-negative safe integer",
            ),
            (
                "revision = 9007199254740992",
                "session \"y\" row has revision 9007199254740992, not a non-negative safe integer",
            ),
            (
                "incarnation = 'not-a-uuid'",
                "session \"y\" row has incarnation \"not-a-uuid\", not a UUID",
            ),
            (
                "incarnation = '0123456789ab-cdef-0123-4567-89abcdef0123'",
                "session \"y\" row has incarnation \"0123456789ab-cdef-0123-4567-89abcdef0123\", not a UUID",
            ),
        ] {
            let be = backend_with(&["x", "y", "z"]);
            be.with_conn(|c| {
                c.execute_batch(&format!("UPDATE sessions SET {set} WHERE id = 'y'"))
                    .unwrap();
                Ok(())
            })
            .unwrap();
            assert_eq!(be.list().unwrap_err().to_string(), want, "{set}");
            assert_eq!(be.list_snapshots().unwrap_err().to_string(), want, "{set}");
        }
        // An upper-case UUID is a UUID (as `crate::uuid::is_uuid` has it).
        let be = backend_with(&["x", "y"]);
        be.with_conn(|c| {
            c.execute_batch(
                "UPDATE sessions SET incarnation = upper(incarnation), revision = 9007199254740991 WHERE id = 'y'",
            )
            .unwrap();
            Ok(())
        })
        .unwrap();
        let listed = Vec::from(be.list().unwrap());
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[1].id, "y");
    }
}
