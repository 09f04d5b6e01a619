//! The one error type of the library (SPEC §6 error kinds).
//!
//! Every variant carries a message that names what went wrong and where (file,
//! line, seq, field), so a user can act on it. [`ErrorKind`] is the stable,
//! data-free classification used by the C ABI, the CLI exit codes and the
//! wrappers.

use std::sync::Arc;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The library error. Cheap to clone (background write errors are kept and
/// reported more than once).
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A caller passed something the contract forbids (bad JSON, bad header,
    /// a seq gap in an append batch, a negative `read_from` start, …).
    #[error("{message}")]
    InvalidArgument {
        message: String,
        /// Machine-readable code where the original had one (e.g. `INVALID_BOUNDARY`).
        code: Option<&'static str>,
    },
    /// The session (or other named thing) does not exist.
    #[error("{message}")]
    NotFound {
        message: String,
        code: Option<&'static str>,
    },
    /// The id is already stored or live, or another writer moved the log.
    #[error("{message}")]
    Conflict {
        message: String,
        code: Option<&'static str>,
    },
    /// Stored data failed validation. `cause` holds the inner error message
    /// when the original wrapped one (`SessionPersistenceCorruptionError`).
    #[error("{message}")]
    Corruption {
        message: String,
        cause: Option<String>,
    },
    /// An intact log that this build will not interpret (newer version,
    /// unknown required event type).
    #[error("{0}")]
    FormatUnsupported(String),
    /// The operating system refused a file or database operation.
    #[error("{message}")]
    Io {
        message: String,
        #[source]
        source: Option<Arc<std::io::Error>>,
    },
    /// The database is locked by another writer beyond the busy timeout.
    #[error("{0}")]
    Busy(String),
    /// The store or session was closed.
    #[error("{0}")]
    Closed(String),
    /// An internal rule was broken (a bug).
    #[error("{0}")]
    Invariant(String),
    /// The operation does not exist for this backend (e.g. `read_raw` on SQLite).
    #[error("{0}")]
    Unsupported(String),
    /// The caller's cancel token stopped the operation (issue 18); nothing
    /// was changed.
    #[error("{0}")]
    Cancelled(String),
}

/// Data-free error classification (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    InvalidArgument,
    NotFound,
    Conflict,
    Corruption,
    FormatUnsupported,
    Io,
    Busy,
    Closed,
    Invariant,
    Unsupported,
    Cancelled,
}

impl ErrorKind {
    /// The snake_case name used in JSON error objects (`{"error":{"kind":…}}`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Corruption => "corruption",
            ErrorKind::FormatUnsupported => "format_unsupported",
            ErrorKind::Io => "io",
            ErrorKind::Busy => "busy",
            ErrorKind::Closed => "closed",
            ErrorKind::Invariant => "invariant",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::FormatUnsupported(_) => ErrorKind::FormatUnsupported,
            Error::Io { .. } => ErrorKind::Io,
            Error::Busy(_) => ErrorKind::Busy,
            Error::Closed(_) => ErrorKind::Closed,
            Error::Invariant(_) => ErrorKind::Invariant,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::Cancelled(_) => ErrorKind::Cancelled,
        }
    }

    /// The machine-readable code, when the operation defines one.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Error::InvalidArgument { code, .. }
            | Error::NotFound { code, .. }
            | Error::Conflict { code, .. } => *code,
            _ => None,
        }
    }

    /// The inner cause of a wrapped corruption error.
    pub fn cause(&self) -> Option<&str> {
        match self {
            Error::Corruption { cause, .. } => cause.as_deref(),
            _ => None,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            message: message.into(),
            code: None,
        }
    }

    pub fn invalid_code(code: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            message: message.into(),
            code: Some(code),
        }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Error::NotFound {
            message: message.into(),
            code: None,
        }
    }

    pub fn not_found_code(code: &'static str, message: impl Into<String>) -> Self {
        Error::NotFound {
            message: message.into(),
            code: Some(code),
        }
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Error::Conflict {
            message: message.into(),
            code: None,
        }
    }

    pub fn conflict_code(code: &'static str, message: impl Into<String>) -> Self {
        Error::Conflict {
            message: message.into(),
            code: Some(code),
        }
    }

    pub fn corruption(message: impl Into<String>) -> Self {
        Error::Corruption {
            message: message.into(),
            cause: None,
        }
    }

    /// A corruption that wraps an inner validation error, worded like the
    /// original's `SessionPersistenceCorruptionError`.
    pub fn failed_validation(session_id: &str, cause: impl Into<String>) -> Self {
        let cause = cause.into();
        Error::Corruption {
            message: format!(
                "stored session {} failed validation: Error: {cause}",
                crate::model::json::quote(session_id)
            ),
            cause: Some(cause),
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        let context = context.into();
        Error::Io {
            message: format!("{context}: {source}"),
            source: Some(Arc::new(source)),
        }
    }

    pub fn io_msg(message: impl Into<String>) -> Self {
        Error::Io {
            message: message.into(),
            source: None,
        }
    }

    pub fn invariant(message: impl Into<String>) -> Self {
        Error::Invariant(message.into())
    }

    /// The same error with its message prefixed by `context: ` (kind kept).
    pub fn context(self, context: &str) -> Self {
        let wrap = |m: String| format!("{context}: {m}");
        match self {
            Error::InvalidArgument { message, code } => Error::InvalidArgument {
                message: wrap(message),
                code,
            },
            Error::NotFound { message, code } => Error::NotFound {
                message: wrap(message),
                code,
            },
            Error::Conflict { message, code } => Error::Conflict {
                message: wrap(message),
                code,
            },
            Error::Corruption { message, cause } => Error::Corruption {
                message: wrap(message),
                cause,
            },
            Error::FormatUnsupported(m) => Error::FormatUnsupported(wrap(m)),
            Error::Io { message, source } => Error::Io {
                message: wrap(message),
                source,
            },
            Error::Busy(m) => Error::Busy(wrap(m)),
            Error::Closed(m) => Error::Closed(wrap(m)),
            Error::Invariant(m) => Error::Invariant(wrap(m)),
            Error::Unsupported(m) => Error::Unsupported(wrap(m)),
            Error::Cancelled(m) => Error::Cancelled(wrap(m)),
        }
    }
}
