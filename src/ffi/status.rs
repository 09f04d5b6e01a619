//! `dsh_status` and the one mapping from the core's error kinds to it.

use crate::error::ErrorKind;

/// The result of every fallible `dsh_*` call. On anything but `DSH_OK`,
/// `dsh_last_error()` holds the message (and `dsh_last_error_code()` the
/// machine-readable code, when the operation defines one).
///
/// The values are part of the ABI (SPEC §11): never renumbered, never reused.
/// New kinds are appended; retired ones stay as reserved comments.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum dsh_status {
    /// Success.
    DSH_OK = 0,
    /// A NULL or non-UTF-8 argument, bad JSON, or input the contract forbids.
    DSH_INVALID_ARGUMENT = 1,
    /// The session does not exist.
    DSH_NOT_FOUND = 2,
    /// The id is already stored or live, or another writer moved the log.
    DSH_CONFLICT = 3,
    /// Stored data failed validation (the message names file, line or seq).
    DSH_CORRUPTION = 4,
    /// An intact log this build will not interpret (newer version, unknown type).
    DSH_FORMAT_UNSUPPORTED = 5,
    /// The operating system refused a file or database operation.
    DSH_IO = 6,
    /// The database stayed locked beyond the busy timeout.
    DSH_BUSY = 7,
    /// The store or session is closed.
    DSH_CLOSED = 8,
    /// An internal rule was broken (a bug, or a result text that cannot be
    /// a C string).
    DSH_INVARIANT = 9,
    /// The operation does not exist for this backend (e.g. `read_raw` on SQLite).
    DSH_UNSUPPORTED = 10,
    /// The call's cancel token (`dsh_cancel`) stopped it; nothing was changed.
    DSH_CANCELLED = 11,
    /// A Rust panic was caught at the boundary; the message starts with `panic: `.
    DSH_PANIC = 99,
}

/// The status of a core error kind. Exhaustive on purpose: a new core kind
/// must be given a status here before the crate compiles.
pub(crate) fn status_of(kind: ErrorKind) -> dsh_status {
    match kind {
        ErrorKind::InvalidArgument => dsh_status::DSH_INVALID_ARGUMENT,
        ErrorKind::NotFound => dsh_status::DSH_NOT_FOUND,
        ErrorKind::Conflict => dsh_status::DSH_CONFLICT,
        ErrorKind::Corruption => dsh_status::DSH_CORRUPTION,
        ErrorKind::FormatUnsupported => dsh_status::DSH_FORMAT_UNSUPPORTED,
        ErrorKind::Io => dsh_status::DSH_IO,
        ErrorKind::Busy => dsh_status::DSH_BUSY,
        ErrorKind::Closed => dsh_status::DSH_CLOSED,
        ErrorKind::Invariant => dsh_status::DSH_INVARIANT,
        ErrorKind::Unsupported => dsh_status::DSH_UNSUPPORTED,
        ErrorKind::Cancelled => dsh_status::DSH_CANCELLED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_are_the_spec_values() {
        let table = [
            (dsh_status::DSH_OK, 0),
            (dsh_status::DSH_INVALID_ARGUMENT, 1),
            (dsh_status::DSH_NOT_FOUND, 2),
            (dsh_status::DSH_CONFLICT, 3),
            (dsh_status::DSH_CORRUPTION, 4),
            (dsh_status::DSH_CANCELLED, 11),
            (dsh_status::DSH_FORMAT_UNSUPPORTED, 5),
            (dsh_status::DSH_IO, 6),
            (dsh_status::DSH_BUSY, 7),
            (dsh_status::DSH_CLOSED, 8),
            (dsh_status::DSH_INVARIANT, 9),
            (dsh_status::DSH_UNSUPPORTED, 10),
            (dsh_status::DSH_PANIC, 99),
        ];
        for (status, value) in table {
            assert_eq!(status as i32, value, "{status:?}");
        }
        assert_eq!(std::mem::size_of::<dsh_status>(), 4);
    }

    #[test]
    fn every_kind_maps_to_its_status() {
        let table = [
            (ErrorKind::InvalidArgument, dsh_status::DSH_INVALID_ARGUMENT),
            (ErrorKind::NotFound, dsh_status::DSH_NOT_FOUND),
            (ErrorKind::Conflict, dsh_status::DSH_CONFLICT),
            (ErrorKind::Corruption, dsh_status::DSH_CORRUPTION),
            (
                ErrorKind::FormatUnsupported,
                dsh_status::DSH_FORMAT_UNSUPPORTED,
            ),
            (ErrorKind::Io, dsh_status::DSH_IO),
            (ErrorKind::Busy, dsh_status::DSH_BUSY),
            (ErrorKind::Closed, dsh_status::DSH_CLOSED),
            (ErrorKind::Invariant, dsh_status::DSH_INVARIANT),
            (ErrorKind::Unsupported, dsh_status::DSH_UNSUPPORTED),
        ];
        for (kind, status) in table {
            assert_eq!(status_of(kind), status, "{kind:?}");
        }
    }
}
