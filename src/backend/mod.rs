//! Storage backends: the contract between the store coordinator and one kind
//! of storage (SPEC §3 JSONL, §4 SQLite).
//!
//! A backend stores headers and events and finds torn tails; it does not
//! interpret the log beyond that. The store applies the model rules
//! (legacy conversion, unknown-type refusal, message shapes, surface rules,
//! closers) on top of what a backend returns.

pub mod catalog;
pub mod dirs;
pub mod jsonl;
pub mod limits;
pub mod manage;
pub mod parallel;
pub mod postgres;
pub mod rows;
pub mod scan;
pub mod sqlite;
#[cfg(test)]
pub(crate) mod test_fifo;
pub mod writer_lock;

use crate::error::Result;
use crate::model::event::Event;
use crate::model::header::SessionHeader;
use crate::model::session_list::SessionList;

/// An opaque token naming one stored state of one session in one store
/// (SPEC §3.6, §4.3). Compare only for equality.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Revision(pub String);

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a session's artifact lives, for backends that keep one per session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `{kind:"jsonl", path}`: absolute path, may not exist yet.
    Jsonl { path: String },
}

/// The decoded artifact of a JSONL session (`read_raw`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawArtifact {
    pub header: SessionHeader,
    /// Always `session.jsonl` (the name without a compression suffix).
    pub filename: String,
    /// The decoded text exactly as written, header line included (zstd: the
    /// complete frames only; none: the whole file, torn bytes included).
    pub content: String,
}

/// What a full read found at the end of the log that a load must repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TornTail {
    /// JSONL: truncate the file to `truncate_to` bytes, then re-append
    /// `recovered` (complete record lines decoded from a torn zstd frame,
    /// without their `\n`) together with the closers as one batch.
    Jsonl {
        truncate_to: u64,
        recovered: Vec<String>,
    },
    /// The row stores, SQLite and PostgreSQL (the same rows): delete the
    /// rows with `seq >= from_seq` (re-checked under the write lock), then
    /// append the closers.
    Sqlite { from_seq: u64 },
}

/// A full read of one stored session (SPEC §3.5, §4.3).
#[derive(Clone, Debug)]
pub struct StoredLog {
    pub header: SessionHeader,
    /// The intact, contiguous events from seq 0 (packed rows expanded; for a
    /// torn zstd frame, the recovered records included). Not yet converted
    /// (§1.9) or validated (§1.8).
    pub events: Vec<Event>,
    pub revision: Revision,
    /// Present when a torn tail must be cut on load.
    pub torn: Option<TornTail>,
    /// The artifact path to quote in refusals ("raw log: …"), when the
    /// backend keeps one file per session.
    pub raw_log: Option<String>,
    /// How many of `events` (at the end) come from an incomplete write (a
    /// torn zstd frame's decodable prefix): a crash leftover that `load`
    /// keeps, or a live writer's batch that is not there yet. 0 otherwise.
    pub recovered_events: usize,
    /// The decoded bytes this read counted against `maxLogBytes` (JSONL:
    /// the header line included; torn bytes may be included): what the
    /// backend's writer starts its size count from, and so the live
    /// session resumed from this log.
    pub log_bytes: u64,
}

impl StoredLog {
    /// The events of complete writes only (without `recovered_events`).
    pub fn durable_len(&self) -> usize {
        self.events.len() - self.recovered_events.min(self.events.len())
    }
}

/// Where a folding read ([`Backend::read_folding`]) hands the events it
/// accepts, in log order, a stretch at a time.
pub trait EventSink {
    /// The next accepted events, lent: the sink judges them, or moves them
    /// out (`append`, `drain`); what it leaves the reader drops, and it
    /// refills the same allocation with its next stretch (a fresh vector
    /// per stretch cost the kernel's zeroing of new pages: 11% of a cold
    /// SQLite fold).
    fn events(&mut self, events: &mut Vec<Event>);
    /// The read starts again from the beginning (the log changed under
    /// it): what was handed over so far does not count.
    fn restart(&mut self);
}

/// What a persisted append checkpoint records of a stored log besides the
/// rules' fold ([`Backend::append_state`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AppendState {
    /// The next seq.
    pub next_seq: u64,
    /// The log's size count (`maxLogBytes`) as a clean full read counts it.
    pub log_bytes: u64,
    /// A row store's seal of the session's rows ([`rows::seal`]: its
    /// revision misses hand edits); `None` where the revision alone
    /// identifies the log's bytes (JSONL: the file's identity and stamps).
    pub seal: Option<rows::seal::RowSeal>,
}

/// What a folding read ([`Backend::read_folding`]) found besides the events
/// it handed on: [`StoredLog`] without them.
#[derive(Clone, Debug)]
pub struct FoldedLog {
    pub header: SessionHeader,
    pub revision: Revision,
    /// How many events were handed on (the next seq).
    pub event_count: u64,
    /// A torn tail a repair must cut: a cold append then reads the log
    /// again with [`Backend::read`] to adopt it.
    pub torn: bool,
    pub raw_log: Option<String>,
    /// As [`StoredLog::log_bytes`].
    pub log_bytes: u64,
}

impl FoldedLog {
    /// The log of a full read whose events were handed on.
    pub fn of(log: StoredLog, event_count: u64) -> FoldedLog {
        FoldedLog {
            header: log.header,
            revision: log.revision,
            event_count,
            torn: log.torn.is_some(),
            raw_log: log.raw_log,
            log_bytes: log.log_bytes,
        }
    }
}

/// The events a `read_from` examined.
#[derive(Clone, Debug)]
pub struct ScannedSuffix {
    pub header: SessionHeader,
    /// JSONL: every intact event of the log (the whole file is read and
    /// every line checked, the contiguity and torn-tail rules included),
    /// except the members of packed chunk rows with `seq < k`, which are
    /// left out, and so are plain `assistant/chunk` events before `k` whose
    /// data holds no message id (the other plain events before `k` are
    /// kept: legacy conversion may need them). SQLite: only the events
    /// with `seq >= k` (it seeks).
    /// Ascending, but not necessarily contiguous. The store checks all of
    /// these, then returns those with `seq >= k`.
    pub events: Vec<Event>,
    pub raw_log: Option<String>,
    /// As [`StoredLog::recovered_events`]: the last events of `events` that
    /// come from an incomplete write.
    pub recovered_events: usize,
}

/// What an append expects to find.
#[derive(Clone, Copy, Debug)]
pub enum Expect<'a> {
    /// The session is not stored yet: this append materializes it.
    New,
    /// The session is stored at this revision (JSONL compares the file
    /// identity; SQLite checks the stored tail against the first seq).
    At(&'a Revision),
}

/// Which kind of storage a backend is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Jsonl,
    Sqlite,
    Postgres,
}

/// An exclusive writer lock on one session id, from
/// [`Backend::lock_writer`]. Held until dropped; the backend's storage (or
/// the kernel, when the process dies) releases it.
pub struct WriterLock {
    id: String,
    _held: Box<dyn Send + Sync>,
    /// Verifies the lock is still held (a lock that a server can take
    /// away: PostgreSQL's, lost with its connection); `None` for locks that
    /// last as long as this process holds them.
    verify: Option<Box<dyn Fn() -> Result<()> + Send + Sync>>,
}

impl WriterLock {
    /// A lock on `id` that lasts as long as `held` (whose `Drop` releases
    /// the backend's lock: a file descriptor, a database connection, …).
    pub fn new(id: impl Into<String>, held: impl Send + Sync + 'static) -> WriterLock {
        WriterLock {
            id: id.into(),
            _held: Box::new(held),
            verify: None,
        }
    }

    /// Like [`WriterLock::new`] for a lock that can be lost while held:
    /// `verify` fails once it is no longer held.
    pub fn verified(
        id: impl Into<String>,
        held: impl Send + Sync + 'static,
        verify: impl Fn() -> Result<()> + Send + Sync + 'static,
    ) -> WriterLock {
        WriterLock {
            id: id.into(),
            _held: Box::new(held),
            verify: Some(Box::new(verify)),
        }
    }

    /// The session id this lock holds.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Fails when the lock is no longer held (see [`WriterLock::verified`]);
    /// `Ok` for locks that cannot be lost.
    pub fn check(&self) -> Result<()> {
        match &self.verify {
            Some(v) => v(),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for WriterLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterLock").field("id", &self.id).finish()
    }
}

/// Who holds a session's writer lock, as far as it can be known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterHolder {
    /// The holder's process id, when the storage reports it.
    pub pid: Option<u32>,
    /// The holder is this process (another store handle, or this one).
    pub this_process: bool,
    /// Where the holder is, when it is not a local process the kernel
    /// names: a database server's view of the holding connection
    /// (PostgreSQL: `server process 4242 for a client at 10.0.0.5,
    /// application "dsh"`). `None` for file locks.
    pub remote: Option<String>,
}

impl WriterHolder {
    /// A holder in this process.
    pub fn this_process() -> WriterHolder {
        WriterHolder {
            pid: Some(std::process::id()),
            this_process: true,
            remote: None,
        }
    }

    /// `another store handle in this process (pid N)`, `process N`, or
    /// `another process`; with a remote holder, where it is
    /// (`another connection (server process N for a client at …)`).
    pub fn describe(&self) -> String {
        match (self.this_process, self.pid, &self.remote) {
            (true, _, Some(r)) => format!("another store handle in this process ({r})"),
            (false, _, Some(r)) => format!("another connection ({r})"),
            (true, Some(p), None) => format!("another store handle in this process (pid {p})"),
            (true, None, None) => "another store handle in this process".to_string(),
            (false, Some(p), None) => format!("process {p}"),
            (false, None, None) => "another process".to_string(),
        }
    }
}

/// One kind of storage. Implementations are `Send + Sync`; the store
/// serializes calls per session id, while calls for different ids may run
/// concurrently.
///
/// **Writers.** Every write to a session happens under its writer lock
/// ([`Backend::lock_writer`]), which the store takes: a live session (start,
/// resume, fork) for its whole life, a cold `append`, the first append that
/// materializes a created session, and a repair (`load`/`prepare`) for the
/// call. The lock excludes every other writer of the id: other processes
/// and other store handles (backends) in this process alike. Readers never
/// take it; they may ask [`Backend::writer_holder`], which takes no lock.
pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;

    /// Takes the writer lock of `id` without waiting. Fails with
    /// `Error::Busy` naming the session and, where it can be known, the
    /// holder (see [`WriterHolder::describe`]) when another writer holds
    /// it. The lock must not depend on anything but the id (not the
    /// session's cwd or whether it is stored), and must be released when
    /// the guard is dropped or the holding process dies. Two locks of one
    /// id from one backend instance exclude each other too.
    fn lock_writer(&self, id: &str) -> Result<WriterLock>;

    /// Who holds the writer lock of `id` now (`None`: nobody), without
    /// taking or waiting for any lock and without disturbing a writer that
    /// is taking it. Readers use it to tell a live writer's incomplete last
    /// write ("not there yet") from a crash leftover.
    fn writer_holder(&self, id: &str) -> Result<Option<WriterHolder>>;

    /// Where the session of `header` lives (no I/O). SQLite: `None`.
    fn locate(&self, header: &SessionHeader) -> Result<Option<Location>>;

    /// Headers of the materialized sessions, from metadata only.
    fn list(&self) -> Result<SessionList>;

    /// Headers plus current revisions, without reading logs.
    fn list_snapshots(&self) -> Result<Vec<(SessionHeader, Revision)>>;

    /// The current revision of `id`, or `None` when it is not stored.
    fn revision(&self, id: &str) -> Result<Option<Revision>>;

    /// Durably appends `events` (contiguous, `events[0].seq` = the stored
    /// next seq, 0 for a new session). Nothing is written when the check
    /// fails. Returns the new revision.
    fn append(
        &self,
        header: &SessionHeader,
        events: &[Event],
        expect: Expect<'_>,
    ) -> Result<Revision>;

    /// Reads the whole log. `None` when the session is not stored.
    fn read(&self, id: &str) -> Result<Option<StoredLog>>;

    /// [`Backend::read`], handing the events to `sink` as they are read and
    /// judged by the backend's own rules (the same lines, rows, torn tail
    /// and errors), without keeping them: a cold append folds a long log
    /// with memory that does not grow with it. The outcome (including a
    /// clean read's note of the next seq and size count) is that of
    /// [`Backend::read`]. The default reads the whole log and hands it on
    /// at once (no memory saved).
    fn read_folding(&self, id: &str, sink: &mut dyn EventSink) -> Result<Option<FoldedLog>> {
        let Some(mut log) = self.read(id)? else {
            return Ok(None);
        };
        let mut events = std::mem::take(&mut log.events);
        let n = events.len() as u64;
        sink.events(&mut events);
        Ok(Some(FoldedLog::of(log, n)))
    }

    /// Reads what `read_from(id, from_seq)` needs. `None` when not stored.
    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>>;

    /// Commits a repair of `log` (as returned by [`Backend::read`]): cuts its
    /// torn tail, if any, then appends `closers` (continuing the seqs of
    /// `log.events`) in one durable batch. Fails with a conflict when the
    /// stored state moved since `log.revision`.
    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision>;

    /// Gives `events`, just written by [`Backend::commit_repair`], the form
    /// a read of them returns, so a load answers what a later read answers
    /// (DIFFERENCES A.1 #15: the original's row stores return the repaired
    /// log as re-read from the rows). A row store rebuilds each envelope
    /// from its columns in its own key order; JSONL keeps the text as
    /// written (the default: nothing to do).
    fn as_read_back(&self, events: &mut [Event]) {
        let _ = events;
    }

    /// The decoded artifact (JSONL). SQLite: `Error::Unsupported`.
    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>>;

    /// Deletes the stored session `id` (its log, or its events and session
    /// row) as one durable step; `writer` is the id's writer lock, held by
    /// the caller. Returns `false` when `id` is not stored.
    fn delete(&self, id: &str, writer: &WriterLock) -> Result<bool> {
        let _ = (id, writer);
        Err(crate::error::Error::Unsupported(
            "this backend cannot delete sessions".into(),
        ))
    }

    /// When `id` was last written, in ms since the epoch, and how that is
    /// known; `None` when not stored. The default reads the whole log.
    fn updated_at(&self, id: &str) -> Result<Option<(i64, manage::UpdatedSource)>> {
        Ok(self.read(id)?.map(|log| {
            let t = log
                .events
                .last()
                .map_or(log.header.created_at as i64, |e| e.time);
            (t, manage::UpdatedSource::LastEventTime)
        }))
    }

    /// The intact prefix of `id` (see [`manage::IntactPrefix`]), read
    /// without the load path's refusals and without repairing anything.
    /// `None` when not stored.
    fn read_intact_prefix(&self, id: &str) -> Result<Option<manage::IntactPrefix>> {
        let _ = id;
        Err(crate::error::Error::Unsupported(
            "this backend cannot salvage sessions".into(),
        ))
    }

    /// Whether reads of different sessions run side by side on two threads
    /// (JSONL: separate files; PostgreSQL: a pool of two or more
    /// connections). SQLite reads on one connection, so its reads take
    /// turns (the default).
    fn concurrent_reads(&self) -> bool {
        false
    }

    /// Catalog read (see [`catalog`]): the events `spec` asks for, the
    /// event count and the stored size, without reading the whole log where
    /// the backend can avoid it. Lock-free; an incomplete last write is not
    /// there yet. `None` when not stored.
    fn read_window(
        &self,
        id: &str,
        spec: &catalog::WindowSpec<'_>,
    ) -> Result<Option<catalog::Window>> {
        Ok(self
            .read(id)?
            .map(|log| catalog::window_of_log(log, spec, None)))
    }

    /// Catalog read: the complete events after `cursor` (advancing it),
    /// without reading the whole log again where the backend can avoid it.
    /// `None` when not stored.
    fn read_after(
        &self,
        id: &str,
        cursor: &mut catalog::FollowCursor,
    ) -> Result<Option<Vec<Event>>> {
        Ok(self
            .read_from(id, cursor.next_seq)?
            .map(|s| catalog::suffix_after(s, cursor)))
    }

    /// Catalog: something to wait on for the next change of `id`'s log
    /// (default: a poll interval).
    fn change_waiter(&self, _id: &str) -> Result<Box<dyn catalog::ChangeWaiter>> {
        Ok(Box::new(catalog::PollWaiter))
    }

    /// Catalog: the directory beside the store for caches the store can
    /// rebuild (the search index), which the original never reads. `None`
    /// when the store has no place on a file system.
    fn cache_dir(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// What the store's persisted append checkpoint records of a stored
    /// session at `revision` besides the rules' fold ([`AppendState`]),
    /// when this backend knows it exactly as a clean full read would find
    /// it (after its own folding read or writes). The default says `None`,
    /// and no checkpoint is written.
    fn append_state(&self, _header: &SessionHeader, _revision: &Revision) -> Option<AppendState> {
        None
    }

    /// The log's size count (`maxLogBytes`) at `revision`, as a clean full
    /// read counts it and as this backend's next append starts from it,
    /// when it knows it (after its own write or read of the log). A live
    /// session takes it after each batch. The default says `None`.
    fn log_bytes_at(&self, _header: &SessionHeader, _revision: &Revision) -> Option<u64> {
        None
    }

    /// Takes what a persisted append checkpoint says of a stored session at
    /// `revision`, as a clean read would have noted it, so that an append
    /// expecting that revision needs no read of the log (the append still
    /// checks the revision). Returns the header as a read of the log finds
    /// it now, or `None` when the stored log is not the one the checkpoint
    /// describes (a row store: a scan of its rows does not find the
    /// checkpoint's seal, or the session row changed); nothing is noted
    /// then. The default notes nothing and returns `header`.
    fn adopt_append_state(
        &self,
        header: &SessionHeader,
        _revision: &Revision,
        _state: &AppendState,
    ) -> Result<Option<SessionHeader>> {
        Ok(Some(header.clone()))
    }

    /// Flushes and releases storage handles.
    fn close(&self) -> Result<()> {
        Ok(())
    }
}
