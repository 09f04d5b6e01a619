//! Storage backends: the contract between the store coordinator and one kind
//! of storage (SPEC §3 JSONL, §4 SQLite).
//!
//! A backend stores headers and events and finds torn tails; it does not
//! interpret the log beyond that. The store applies the model rules
//! (legacy conversion, unknown-type refusal, message shapes, surface rules,
//! closers) on top of what a backend returns.

pub mod jsonl;
pub mod parallel;
pub mod postgres;
pub mod rows;
pub mod scan;
pub mod sqlite;

use crate::error::Result;
use crate::model::event::Event;
use crate::model::header::SessionHeader;

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
}

/// The events a `read_from` examined.
#[derive(Clone, Debug)]
pub struct ScannedSuffix {
    pub header: SessionHeader,
    /// JSONL: every intact event of the log (the whole file is read and
    /// every line checked, the contiguity and torn-tail rules included),
    /// except the members of packed chunk rows with `seq < k`, which are
    /// left out (plain events before `k` are kept: legacy conversion may
    /// need them). SQLite: only the events with `seq >= k` (it seeks).
    /// Ascending, but not necessarily contiguous. The store checks all of
    /// these, then returns those with `seq >= k`.
    pub events: Vec<Event>,
    pub raw_log: Option<String>,
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

/// One kind of storage. Implementations are `Send + Sync`; the store
/// serializes calls per session id, while calls for different ids may run
/// concurrently.
pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;

    /// Where the session of `header` lives (no I/O). SQLite: `None`.
    fn locate(&self, header: &SessionHeader) -> Result<Option<Location>>;

    /// Headers of the materialized sessions, from metadata only.
    fn list(&self) -> Result<Vec<SessionHeader>>;

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

    /// Reads what `read_from(id, from_seq)` needs. `None` when not stored.
    fn read_from(&self, id: &str, from_seq: u64) -> Result<Option<ScannedSuffix>>;

    /// Commits a repair of `log` (as returned by [`Backend::read`]): cuts its
    /// torn tail, if any, then appends `closers` (continuing the seqs of
    /// `log.events`) in one durable batch. Fails with a conflict when the
    /// stored state moved since `log.revision`.
    fn commit_repair(&self, id: &str, log: &StoredLog, closers: &[Event]) -> Result<Revision>;

    /// The decoded artifact (JSONL). SQLite: `Error::Unsupported`.
    fn read_raw(&self, id: &str) -> Result<Option<RawArtifact>>;

    /// Flushes and releases storage handles.
    fn close(&self) -> Result<()> {
        Ok(())
    }
}
