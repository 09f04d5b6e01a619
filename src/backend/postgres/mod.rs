//! PostgreSQL backend: the rows of SQLite schema 17 in tables on a database
//! server, for deployments where many hosts share one store.
//!
//! The rows are those of the SQLite backend, encoded and decoded by the same
//! code ([`crate::backend::rows`]): packed chunk rows, zstd `data` from
//! 4,096 bytes on, varint `source_event_seqs`; the same torn-tail rules
//! (a row that fails to decode after the last `turn/end` is torn; before it,
//! corruption) and repair. A log converted between SQLite and PostgreSQL
//! reads back byte for byte the same.
//!
//! - One transaction per durable batch, `synchronous_commit = on` (checked
//!   on every connection): an append returns once the server flushed it.
//! - Writers are ordered by a row lock on the session and refused by the
//!   tail check when stale; across hosts, live writers exclude each other
//!   with advisory locks ([`lock`]).
//! - A failed attempt is retried on a fresh connection, never duplicating a
//!   batch ([`writer`]).
//! - Every committed batch, and every delete, notifies the channel `<schema>.batches`
//!   ([`NOTIFY_SUFFIX`]), so a follower can `LISTEN` instead of polling.
//!
//! - With a `cacheDir` ([`cache_dir`]), cold appends continue from an append
//!   checkpoint, as on SQLite: the seal of the session's rows
//!   ([`crate::backend::rows::seal`], the same code) proves the rows are
//!   those the checkpoint was folded from; a scan of them (fetched, not
//!   decoded or judged) replaces the fold.
//!
//! Files: [`config`] (URL, schema, pool, TLS settings), [`tls`], [`pool`]
//! (connections, error mapping), [`deadline`] (a connection attempt
//! bounded as a whole), [`schema`] (tables, identity), [`reader`],
//! [`writer`], [`lock`], [`scan`] (the read-only walk of `verify`),
//! [`cache_dir`].

pub mod cache_dir;
pub mod config;
pub mod deadline;
pub mod lock;
pub mod manage;
pub mod pool;
pub mod reader;
pub mod scan;
pub mod schema;
pub mod tls;
pub mod window;
pub mod writer;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::backend::limits::Limits;
use crate::backend::rows::seal::{RowSeal, SealedLogs};
use crate::backend::rows::{checks, scan as row_scan};
use crate::backend::{
    AppendState, Backend, BackendKind, EventSink, Expect, FoldedLog, Location, RawArtifact,
    Revision, ScannedSuffix, StoredLog, TornTail, WriterHolder, WriterLock,
};
use crate::error::{Error, Result};
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::json::quote;
use crate::model::session_list::SessionList;

pub use config::{PostgresConfig, SslMode};
pub use lock::PgWriterLock;

use pool::{Conn, Pool, pg_error, retryable};

/// The notification channel of a store is `<schema>` followed by this.
pub const NOTIFY_SUFFIX: &str = ".batches";

/// Attempts of one operation (the first and two retries).
const ATTEMPTS: u32 = 3;

/// Why one attempt of an operation failed.
pub enum Fail {
    /// The driver failed (the connection or the server).
    Pg(postgres::Error),
    /// The connection could not be had.
    Connect(Error),
    /// The reply to a `COMMIT` was lost (fault injection).
    Lost(String),
    /// A final answer: a refusal of ours, corruption, a conflict.
    Done(Error),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Fail {
        Fail::Pg(e)
    }
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Done(e)
    }
}

impl Fail {
    fn retryable(&self) -> bool {
        match self {
            Fail::Pg(e) => retryable(e),
            Fail::Connect(e) => e.kind() == crate::error::ErrorKind::Io,
            Fail::Lost(_) => true,
            Fail::Done(_) => false,
        }
    }

    fn into_error(self, label: &str, what: &str) -> Error {
        match self {
            Fail::Pg(e) => pg_error(label, what, &e),
            Fail::Connect(e) | Fail::Done(e) => e,
            Fail::Lost(why) => Error::io_msg(format!("{label}: {what}: {why}")),
        }
    }
}

/// A holder of a writer lock: its server process, client address and
/// application name (the last two `None` when the role may not see them).
type LockHolderRow = (i32, Option<String>, Option<String>);

/// The PostgreSQL backend (see the module docs).
pub struct PostgresBackend {
    pool: Pool,
    schema: String,
    channel: String,
    store_id: String,
    revision_prefix: String,
    /// Pids of the connections holding this backend's writer locks.
    own_locks: Arc<Mutex<HashSet<i32>>>,
    /// `maxRecordBytes` / `maxLogBytes`: every read decodes under them, every
    /// appended event is checked against the record bound.
    limits: Limits,
    /// `PostgreSQL server at …`, the subject of limit errors.
    label: String,
    /// Per session: the incarnation and revision a read or append of this
    /// backend last saw, and the log's size count then. A store-level
    /// append checks `maxLogBytes` against it, as the SQLite backend does
    /// (`Limits::check_log_append`); an unknown size is not checked.
    log_bytes: crate::backend::rows::checks::KnownLogBytes,
    /// This store's directory under the configured `cacheDir` (`None`:
    /// nothing is cached, and no seals are kept).
    cache_dir: Option<PathBuf>,
    /// The sessions whose rows this backend sealed (a folding read, its
    /// appends, an adopted checkpoint): what an append checkpoint records.
    sealed: SealedLogs,
}

impl PostgresBackend {
    /// Connects, checks the server and the schema (creating the tables in a
    /// schema that holds none) and keeps the connection for the pool. A
    /// server that cannot be reached is an `io` error naming it.
    pub fn open(config: &PostgresConfig) -> Result<PostgresBackend> {
        let resolved = config.resolve()?;
        let tls = tls::connector(&resolved)?;
        let ident = schema::quote_ident(&config.schema);
        let label = resolved.label.clone();
        let pool = Pool::new(resolved, tls, ident, config.pool_size);
        let store_id = {
            let mut conn = pool.get()?;
            schema::ensure_schema(&mut conn.client, &label, &config.schema)?
        };
        let cache_dir = config
            .cache_dir
            .as_deref()
            .map(|d| cache_dir::store_cache_dir(d, &store_id))
            .transpose()?;
        Ok(PostgresBackend {
            cache_dir,
            sealed: SealedLogs::default(),
            limits: config.limits,
            label: label.clone(),
            pool,
            channel: format!("{}{NOTIFY_SUFFIX}", config.schema),
            revision_prefix: format!("postgres:schema:{}", config.schema),
            schema: config.schema.clone(),
            store_id,
            own_locks: Arc::default(),
            log_bytes: Mutex::default(),
        })
    }

    /// Whether the schema of `config` holds a session store (its
    /// `persistence_state` table), without creating anything: for reading
    /// commands that must not make an empty store. Returns the server's
    /// label too.
    pub fn store_exists(config: &PostgresConfig) -> Result<(bool, String)> {
        let resolved = config.resolve()?;
        let tls = tls::connector(&resolved)?;
        let mut conn = pool::connect(&resolved, &tls, &schema::quote_ident(&config.schema))?;
        let exists: bool = conn
            .client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n                  ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'persistence_state')",
                &[&config.schema],
            )
            .map_err(|e| pg_error(&resolved.label, "cannot look for the session store", &e))?
            .get(0);
        let _ = conn.client.close();
        Ok((exists, resolved.label))
    }

    /// `PostgreSQL server at host:port (database "d", schema "s")`.
    pub fn label(&self) -> &str {
        self.pool.label()
    }

    /// The schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The `store_id` of the schema (`persistence_state`).
    pub fn store_id(&self) -> &str {
        &self.store_id
    }

    /// The channel every committed batch notifies (`<schema>.batches`;
    /// `LISTEN "<schema>.batches"`). The payload is JSON:
    /// `{"id","kind":"append"|"repair","from","next","revision"}`, `from` the
    /// first seq written (or cut), `next` the seq after the log's last
    /// event; `id` is null for ids over 7,000 bytes.
    pub fn notify_channel(&self) -> &str {
        &self.channel
    }

    /// A new connection of this store outside its pool, set up like the
    /// pool's (tests, listeners).
    pub fn connect_dedicated(&self) -> Result<postgres::Client> {
        self.pool.connect_dedicated().map(|c| c.client)
    }

    fn token(&self, incarnation: &str, revision: i64) -> Revision {
        Revision(format!(
            "{}:store:{}:incarnation:{incarnation}:revision:{revision}",
            self.revision_prefix, self.store_id
        ))
    }

    /// The revision of a log read with session row `session`; a clean
    /// read's size count (`torn` is none) is noted for the next append's
    /// `maxLogBytes`.
    fn after_read(
        &self,
        id: &str,
        session: &crate::backend::sqlite::reader::SessionRow,
        torn: Option<i64>,
        log_bytes: u64,
    ) -> Revision {
        let (inc, rev) = (&session.incarnation, session.revision);
        if torn.is_none() {
            checks::note_log_bytes(&self.log_bytes, id, inc, rev, log_bytes);
        }
        self.token(inc, rev)
    }

    /// Runs `op` on a pooled connection, again on a fresh one when an
    /// attempt fails in a way that may pass (the connection broke, the
    /// server restarted, a serialization victim), up to [`ATTEMPTS`] times.
    /// `op` learns whether it is a retry.
    fn run<T>(
        &self,
        what: &dyn Fn() -> String,
        mut op: impl FnMut(&mut Conn, bool) -> std::result::Result<T, Fail>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            let outcome = match self.pool.get() {
                Ok(mut conn) => {
                    let r = op(&mut conn, attempt > 0);
                    match &r {
                        Err(Fail::Pg(e)) if e.as_db_error().is_none() => conn.discard(),
                        Err(Fail::Lost(_)) => conn.discard(),
                        _ => {}
                    }
                    r
                }
                Err(e) if e.kind() == crate::error::ErrorKind::Closed => return Err(e),
                Err(e) => Err(Fail::Connect(e)),
            };
            match outcome {
                Ok(v) => return Ok(v),
                Err(f) if f.retryable() && attempt + 1 < ATTEMPTS => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(50 << attempt));
                }
                Err(f) => return Err(f.into_error(self.label(), &what())),
            }
        }
    }

    /// Takes the exclusive writer lock of `id` if no other connection holds
    /// it: `Ok(None)` when one does. The guard keeps a connection of its own
    /// (not the pool's) for as long as it lives.
    pub fn try_lock_writer(&self, id: &str) -> Result<Option<PgWriterLock>> {
        let conn = self.pool.connect_dedicated()?;
        PgWriterLock::try_take(conn, &self.schema, id, self.label(), self.own_locks.clone())
    }

    /// The server processes holding the writer lock of `id` (none, or
    /// one), with what the server shows of their clients (address,
    /// application name).
    fn lock_holders(&self, id: &str) -> Result<Vec<LockHolderRow>> {
        let (hi, lo) = lock::key_halves(lock::lock_key(&self.schema, id));
        self.run(
            &|| format!("cannot ask who writes session {}", quote(id)),
            |conn, _| {
                let stmt = conn.prep(
                    "SELECT l.pid, host(a.client_addr), a.application_name \
                     FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid \
                     WHERE l.locktype = 'advisory' \
                     AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) \
                     AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1 AND l.granted",
                )?;
                let rows = conn.client.query(&stmt, &[&hi, &lo])?;
                let mut out = Vec::with_capacity(rows.len());
                for r in &rows {
                    out.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
                }
                Ok(out)
            },
        )
    }

    /// Whether any writer (of this process or another host) holds the lock
    /// of `id`. Takes nothing: for readers.
    pub fn writer_held(&self, id: &str) -> Result<bool> {
        Ok(!self.lock_holders(id)?.is_empty())
    }

    /// Whether a writer other than this backend's own locks holds `id`.
    pub fn writer_held_elsewhere(&self, id: &str) -> Result<bool> {
        let holders = self.lock_holders(id)?;
        let own = self.own_locks.lock();
        Ok(holders.iter().any(|(pid, ..)| !own.contains(pid)))
    }
}

impl Backend for PostgresBackend {
    /// Each read takes a connection of the pool for its length (none
    /// holds one while it asks for another), so two run side by side when
    /// the pool has two.
    fn concurrent_reads(&self) -> bool {
        self.pool.max() >= 2
    }

    fn read_window(
        &self,
        id: &str,
        spec: &crate::backend::catalog::WindowSpec<'_>,
    ) -> Result<Option<crate::backend::catalog::Window>> {
        let fetched = self.run(
            &|| format!("cannot read the window of session {}", quote(id)),
            |c, _| window::fetch(c, id, spec, self.limits.max_log_bytes),
        )?;
        let Some(mut fetched) = fetched else {
            return Ok(None);
        };
        let header = fetched.session.header.clone();
        let rev = self.token(&fetched.session.incarnation, fetched.session.revision);
        match crate::backend::rows::window::assemble(header, rev, spec, &self.limits, &mut fetched)?
        {
            Some(w) => Ok(Some(w)),
            // A row that does not decode, or a torn tail: the full read's
            // rules decide; the size is the rows' as stored, as above.
            None => {
                let bytes = crate::backend::rows::window::WindowRows::stored_bytes(&mut fetched)?;
                Ok(self
                    .read(id)?
                    .map(|log| crate::backend::catalog::window_of_log(log, spec, Some(bytes))))
            }
        }
    }

    /// `LISTEN` on [`Self::notify_channel`] (polling when no dedicated
    /// connection can be had).
    fn change_waiter(&self, _id: &str) -> Result<Box<dyn crate::backend::catalog::ChangeWaiter>> {
        let client = self.connect_dedicated().ok().and_then(|mut c| {
            c.batch_execute(&format!("LISTEN {}", schema::quote_ident(&self.channel)))
                .ok()
                .map(|()| c)
        });
        Ok(Box::new(window::NotifyWaiter { client }))
    }

    fn cache_dir(&self) -> Option<PathBuf> {
        self.cache_dir.clone()
    }

    fn log_bytes_at(&self, header: &SessionHeader, revision: &Revision) -> Option<u64> {
        checks::known_log_bytes(&self.log_bytes, &header.id, revision, |i, r| {
            self.token(i, r)
        })
    }

    fn append_state(&self, header: &SessionHeader, revision: &Revision) -> Option<AppendState> {
        self.sealed.at(&header.id, revision)
    }

    /// As on SQLite: takes the checkpoint's state only when the session
    /// row is at `revision` with the same header (a header a read
    /// accepts), and a scan of the rows (fetched in one snapshot with the
    /// session row, not decoded or judged) finds the checkpoint's seal.
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
        let row = self.run(
            &|| format!("cannot read the events of session {}", quote(id)),
            |c, _| {
                scan = want.empty_like();
                reader::read_log(c, id, &mut |row| scan.feed(&row))
            },
        )?;
        Ok(row.and_then(|row| {
            let at = self.token(&row.incarnation, row.revision);
            self.sealed.adopt(
                &self.log_bytes,
                (header, revision, state),
                (&at, row, &scan),
            )
        }))
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Postgres
    }

    /// The session-level advisory lock of `id` ([`Self::try_lock_writer`])
    /// as the store's guard; `busy` naming the holder when another
    /// connection (another host, process or store handle) has it.
    fn as_read_back(&self, events: &mut [Event]) {
        crate::backend::rows::as_read_back(events);
    }

    fn lock_writer(&self, id: &str) -> Result<WriterLock> {
        if let Some(lock) = self.try_lock_writer(id)? {
            // The guard's connection is `Send`; the mutex makes it `Sync`.
            // A live session checks it before each batch: a server restart
            // (or `pg_terminate_backend`) ends the lock with its connection.
            let lock = Arc::new(Mutex::new(lock));
            let check = lock.clone();
            return Ok(WriterLock::verified(id, lock, move || check.lock().check()));
        }
        let holder = self
            .writer_holder(id)
            .ok()
            .flatten()
            .unwrap_or(WriterHolder {
                pid: None,
                this_process: false,
                remote: None,
            });
        Err(match crate::backend::writer_lock::busy(id, &holder) {
            Error::Busy(why) => Error::Busy(format!("{}: {why}", self.label())),
            other => other,
        })
    }

    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>> {
        let Some((pid, addr, app)) = self.lock_holders(id)?.into_iter().next() else {
            return Ok(None);
        };
        let mut remote = format!("server process {pid}");
        match addr {
            Some(a) => remote.push_str(&format!(" for a client at {a}")),
            None => {
                remote.push_str(" for a client on a local socket (or one this role may not see)")
            }
        }
        if let Some(app) = app.filter(|a| !a.is_empty()) {
            remote.push_str(&format!(", application {}", quote(&app)));
        }
        Ok(Some(WriterHolder {
            pid: None,
            this_process: lock::held_in_this_process(self.label(), pid),
            remote: Some(remote),
        }))
    }

    fn locate(&self, _header: &SessionHeader) -> Result<Option<Location>> {
        Ok(None)
    }

    fn list(&self) -> Result<SessionList> {
        let rows = self.run(&|| "cannot list sessions".into(), |c, _| reader::list(c))?;
        Ok(rows.into_iter().map(|r| r.header).collect())
    }

    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>> {
        let rows = self.run(&|| "cannot list sessions".into(), |c, _| reader::list(c))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let rev = self.token(&r.incarnation, r.revision);
                (r.header, rev)
            })
            .collect())
    }

    fn revision(&self, id: &str) -> Result<Option<Revision>> {
        let row = self.run(&|| format!("cannot read session {}", quote(id)), |c, _| {
            let stmt = c.prep(reader::SESSION_SQL)?;
            reader::session(&mut c.client, &stmt, id)
        })?;
        Ok(row.map(|r| self.token(&r.incarnation, r.revision)))
    }

    fn append(
        &self,
        header: &SessionHeader,
        events: &[Event],
        expect: Expect<'_>,
    ) -> Result<Revision> {
        let id = header.id.as_str();
        if events.is_empty() {
            // Nothing to write; a session is materialized only by events.
            return match self.revision(id)? {
                Some(rev) => Ok(rev),
                None => Err(Error::invalid(format!(
                    "the first append to session {} must carry at least one event",
                    quote(id)
                ))),
            };
        }
        checks::check_contiguous(id, events)?;
        writer::check_header(header)?;
        let checked = crate::backend::rows::checks::check_append_bounds(
            &self.limits,
            &self.log_bytes,
            header,
            events,
            expect,
        )?;
        let batch = writer::Batch::encode(id, events)?;
        let first = events[0].seq;
        let next = first + events.len() as u64;
        let notify = writer::Notify {
            channel: &self.channel,
            kind: "append",
        };
        let sealing = self.cache_dir.is_some();
        let ((inc, rev), written) = self.run(
            &|| format!("cannot append to session {}", quote(id)),
            |c, retry| {
                writer::append(
                    c,
                    header,
                    events,
                    &batch,
                    next,
                    expect,
                    &notify,
                    retry,
                    &self.limits,
                    sealing,
                )
            },
        )?;
        let revision = self.token(&inc, rev);
        if sealing {
            let before = written.before.as_ref().map(|(i, r)| self.token(i, *r));
            self.sealed
                .after_append(id, before.as_ref(), &written.inserted, &revision);
        }
        checks::note_append(
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
        // With a cache directory, the rows are sealed as they are decoded
        // (for the checkpoint an append after this read leaves). A fetch
        // run again (a lost connection) restarts the seal.
        let mut seal = None;
        let read = self.run(
            &|| format!("cannot read the events of session {}", quote(id)),
            |c, _| {
                let ctx = row_scan::ReadCtx::new(&self.limits, &self.label, id);
                seal = self.cache_dir.is_some().then(RowSeal::new);
                row_scan::read_pipelined(&ctx, seal.as_mut(), |sink| reader::read_log(c, id, sink))
            },
        )?;
        Ok(read.map(|(session, events, torn, log_bytes)| {
            let revision = self.after_read(id, &session, torn, log_bytes);
            if torn.is_none() {
                let state = AppendState {
                    next_seq: events.len() as u64,
                    log_bytes,
                    seal,
                };
                self.sealed.note(id, &revision, state);
            }
            StoredLog {
                revision,
                header: session.header,
                events,
                // A torn row with a negative seq sorts first: everything is torn.
                torn: torn.map(|s| TornTail::Sqlite {
                    from_seq: s.max(0) as u64,
                }),
                raw_log: None,
                recovered_events: 0,
                log_bytes,
            }
        }))
    }

    fn read_folding(&self, id: &str, sink: &mut dyn EventSink) -> Result<Option<FoldedLog>> {
        // With a cache directory, the rows fetched are sealed too (for the
        // append checkpoint). A fetch run again (a lost connection)
        // restarts the sink, and the seal.
        let sealing = self.cache_dir.is_some();
        let mut seal = RowSeal::new();
        let read = self.run(
            &|| format!("cannot read the events of session {}", quote(id)),
            |c, _| {
                let ctx = row_scan::ReadCtx::new(&self.limits, &self.label, id);
                seal = seal.empty_like();
                row_scan::fold_rows(&ctx, &mut *sink, |rows| {
                    reader::read_log(c, id, &mut |row| {
                        if sealing {
                            seal.feed(&row);
                        }
                        rows(row)
                    })
                })
            },
        )?;
        Ok(read.map(|(session, handed, torn, log_bytes)| {
            let revision = self.after_read(id, &session, torn, log_bytes);
            if sealing && torn.is_none() {
                let state = AppendState {
                    next_seq: handed,
                    log_bytes,
                    seal: Some(seal),
                };
                self.sealed.note(id, &revision, state);
            }
            FoldedLog {
                revision,
                header: session.header,
                event_count: handed,
                torn: torn.is_some(),
                raw_log: None,
                log_bytes,
            }
        }))
    }

    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>> {
        let fetched = self.run(
            &|| format!("cannot read the events of session {}", quote(id)),
            |c, _| reader::fetch_suffix(c, id, from_seq),
        )?;
        let Some((session, rows)) = fetched else {
            return Ok(None);
        };
        Ok(Some(ScannedSuffix {
            header: session.header,
            events: row_scan::scan_suffix(
                rows,
                from_seq,
                &row_scan::ReadCtx::new(&self.limits, &self.label, id),
            )?,
            raw_log: None,
            recovered_events: 0,
        }))
    }

    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision> {
        let from_seq = checks::repair_plan(id, log, closers)?;
        self.log_bytes.lock().remove(id);
        self.sealed.forget(id);
        let batch = writer::Batch::encode(id, closers)?;
        let next = log.events.len() as u64 + closers.len() as u64;
        let notify = writer::Notify {
            channel: &self.channel,
            kind: "repair",
        };
        let token = |inc: &str, rev: i64| self.token(inc, rev);
        let (inc, rev) = self.run(
            &|| format!("cannot repair session {}", quote(id)),
            |c, retry| {
                writer::commit_repair(
                    c,
                    id,
                    from_seq,
                    &batch,
                    next,
                    &log.revision,
                    &token,
                    &notify,
                    retry,
                )
            },
        )?;
        Ok(self.token(&inc, rev))
    }

    fn delete(&self, id: &str, _writer: &WriterLock) -> Result<bool> {
        self.log_bytes.lock().remove(id);
        self.sealed.forget(id);
        self.run(
            &|| format!("cannot delete session {}", quote(id)),
            // A retry after a lost reply finds nothing left: the first
            // attempt deleted it (the caller checked it was stored, and
            // holds the writer lock).
            |c, retry| manage::delete_session(c, id, &self.channel).map(|n| n || retry),
        )
    }

    /// The last event row's `time` (one primary-key seek).
    fn updated_at(&self, id: &str) -> Result<Option<(i64, crate::backend::manage::UpdatedSource)>> {
        let found = self.run(&|| format!("cannot read session {}", quote(id)), |c, _| {
            let stmt = c.prep(reader::SESSION_SQL)?;
            let Some(row) = reader::session(&mut c.client, &stmt, id)? else {
                return Ok(None);
            };
            let t = manage::last_event_time(c, id)?;
            Ok(Some(t.unwrap_or(row.header.created_at as i64)))
        })?;
        Ok(found.map(|t| (t, crate::backend::manage::UpdatedSource::LastEventTime)))
    }

    fn read_intact_prefix(&self, id: &str) -> Result<Option<crate::backend::manage::IntactPrefix>> {
        let fetched = self.run(
            &|| format!("cannot read the events of session {}", quote(id)),
            |c, _| {
                let mut rows = Vec::new();
                let session = reader::read_log(c, id, &mut |r| rows.push(r))?;
                Ok(session.map(|s| (s, rows)))
            },
        )?;
        let Some((session, rows)) = fetched else {
            return Ok(None);
        };
        let (events, stopped) =
            crate::backend::rows::intact_prefix::intact_prefix(&rows, &self.limits);
        Ok(Some(crate::backend::manage::IntactPrefix {
            header: session.header,
            events,
            stopped,
        }))
    }

    fn read_raw(&self, _id: &str) -> Result<Option<RawArtifact>> {
        Err(Error::Unsupported(
            "read_raw is not supported by the PostgreSQL backend (it keeps no per-session artifact)"
                .to_string(),
        ))
    }

    fn close(&self) -> Result<()> {
        self.pool.close();
        Ok(())
    }
}
