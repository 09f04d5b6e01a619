//! What the session-management operations (delete, prune, salvage) need
//! from a backend beyond the read and write paths: see
//! [`super::Backend::delete`], [`super::Backend::updated_at`] and
//! [`super::Backend::read_intact_prefix`].

use crate::model::event::Event;
use crate::model::header::SessionHeader;

/// The intact prefix of a stored session that may no longer load: every
/// event before the first record (line, frame or row) that cannot be read,
/// in seq order from 0. Nothing is repaired to find it.
#[derive(Clone, Debug)]
pub struct IntactPrefix {
    pub header: SessionHeader,
    pub events: Vec<Event>,
    /// Why the prefix ends where it does (`None`: the whole log is intact
    /// as records; the model rules may still cut it).
    pub stopped: Option<String>,
}

/// How a backend knows when a session was last written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdatedSource {
    /// The modification time of the log file (JSONL: one `stat`).
    FileMtime,
    /// The `time` of the last stored event row (SQLite, PostgreSQL: one
    /// indexed row).
    LastEventTime,
}
