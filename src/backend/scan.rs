//! What a read-only walk of a store's physical layout found (used by the
//! CLI's `verify`): every session the storage holds, including those that
//! `list` cannot show, and every thing in the store that is not a session.
//!
//! A scan never writes, never repairs and never goes through `list`: the
//! JSONL walk ([`super::jsonl::scan`]) visits every project and session
//! directory and reads each artifact's header line with the read path's
//! rules; the SQLite and PostgreSQL walks ([`super::sqlite::scan`],
//! [`super::postgres::scan`]) read every `sessions` row and every session
//! id present in `events`. What a scan reports is
//! physical; the logical checks of a sound session (conversion,
//! validation, torn tails) stay with the store.

use std::path::PathBuf;

use crate::error::{Error, ErrorKind};

/// What kind of defect a [`Finding`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// Reading the session's header (JSONL) or row (SQLite) failed with
    /// an error of this kind: a corrupt header frame, a foreign version, an
    /// out-of-range column, an I/O error.
    Unreadable(ErrorKind),
    /// A JSONL log whose header belongs in another project or session
    /// directory (the store refuses it).
    MisplacedArtifact,
    /// Two JSONL logs hold the same session id (the store refuses both).
    DuplicateId,
    /// A JSONL log of the other encoding than the one the root is opened
    /// with (the store refuses it, or does not see it).
    MixedEncoding,
    /// An obsolete flat `<project>/<id>.jsonl[.zstd]` file (the store
    /// refuses every session of its project).
    FlatLayout,
    /// A temp file a first append left behind (`session.jsonl[.zstd].<hex>.tmp`).
    OrphanTemp,
    /// A file, link or directory the layout does not produce (the store
    /// ignores it).
    ForeignFile,
    /// SQLite or PostgreSQL `events` rows whose session has no `sessions`
    /// row (the store never reads them).
    OrphanEvents,
}

impl FindingKind {
    /// The stable name (`verify`'s problem kind): the error kind's name for
    /// [`FindingKind::Unreadable`], else a snake_case name of its own.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Unreadable(kind) => kind.as_str(),
            FindingKind::MisplacedArtifact => "misplaced_artifact",
            FindingKind::DuplicateId => "duplicate_id",
            FindingKind::MixedEncoding => "mixed_encoding",
            FindingKind::FlatLayout => "flat_layout",
            FindingKind::OrphanTemp => "orphan_temp",
            FindingKind::ForeignFile => "foreign_file",
            FindingKind::OrphanEvents => "orphan_events",
        }
    }
}

/// One defect, with the path it concerns and a message a user can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// The file or directory (JSONL), the database file (SQLite), or the
    /// store's label (PostgreSQL: server, database and schema).
    pub path: PathBuf,
    pub message: String,
}

impl Finding {
    pub fn new(kind: FindingKind, path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Finding {
            kind,
            path: path.into(),
            message: message.into(),
        }
    }

    /// A finding of the error's kind with its message.
    pub fn from_error(path: impl Into<PathBuf>, e: &Error) -> Self {
        Finding::new(FindingKind::Unreadable(e.kind()), path, e.to_string())
    }
}

/// One session the storage holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScannedSession {
    /// The id from the header or row; for an unreadable JSONL header, the
    /// id its directory (or flat file) name stands for, when it decodes.
    pub id: Option<String>,
    /// The log file (JSONL), the database file (SQLite) or the store's
    /// label (PostgreSQL).
    pub path: PathBuf,
    /// Empty when the session is physically sound: then the store can
    /// read it by `id` and the logical checks apply.
    pub findings: Vec<Finding>,
}

/// The result of a scan.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreScan {
    /// Every session, in path order (JSONL) or id order (SQLite,
    /// PostgreSQL).
    pub sessions: Vec<ScannedSession>,
    /// Defects that belong to no session (foreign files, orphan temp files).
    pub findings: Vec<Finding>,
}
