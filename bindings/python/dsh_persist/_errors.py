"""Exceptions raised by dsh_persist: one class per ``dsh_status`` of the C library.

Every failure of the library becomes a :class:`DshError` subclass carrying
the numeric ``status``, its ``kind`` name (``"not_found"``, ``"io"``, …) and
the optional machine-readable ``code`` (e.g. ``"SESSION_NOT_FOUND"``). A
status this version does not know maps to :class:`DshError` itself.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

# The dsh_status values (never renumbered; see include/dsh_persist.h).
DSH_OK = 0
DSH_INVALID_ARGUMENT = 1
DSH_NOT_FOUND = 2
DSH_CONFLICT = 3
DSH_CORRUPTION = 4
DSH_FORMAT_UNSUPPORTED = 5
DSH_IO = 6
DSH_BUSY = 7
DSH_CLOSED = 8
DSH_INVARIANT = 9
DSH_UNSUPPORTED = 10
DSH_CANCELLED = 11
DSH_PANIC = 99


class DshError(Exception):
    """A failed dsh_persist call.

    Attributes:
        status: the ``dsh_status`` number returned by the C function.
        kind: its snake_case name (``"not_found"``, …; ``"unknown"`` for a
            status this version does not know).
        code: the machine-readable code of the failure (``"OPEN_TURN"``,
            ``"SESSION_ALREADY_EXISTS"``, …) or ``None``.
        message: the library's message (``dsh_last_error()``).
    """

    kind = "unknown"

    def __init__(self, status: int, message: str, code: Optional[str] = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code or None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class InvalidArgumentError(DshError, ValueError):
    """NULL/non-UTF-8/bad JSON input, or input the contract forbids (status 1)."""

    kind = "invalid_argument"


class NotFoundError(DshError, LookupError):
    """The session does not exist (status 2)."""

    kind = "not_found"


class ConflictError(DshError):
    """The id is already stored or live, or another writer moved the log (status 3)."""

    kind = "conflict"


class CorruptionError(DshError):
    """Stored data failed validation (status 4)."""

    kind = "corruption"


class FormatUnsupportedError(DshError):
    """An intact log this build will not interpret (status 5)."""

    kind = "format_unsupported"


class DshIOError(DshError, OSError):
    """The operating system refused a file or database operation (status 6).

    Also an :class:`OSError`, so ``except OSError`` handlers see it. The
    library reports the failure as text (the message names the file and the
    system error), so ``errno`` and ``filename`` are ``None``. Named
    ``DshIOError`` so it does not shadow the builtin ``IOError`` (an alias of
    ``OSError``).
    """

    kind = "io"


class BusyError(DshError):
    """The database stayed locked beyond the busy timeout (status 7)."""

    kind = "busy"


class ClosedError(DshError, ValueError):
    """The store, session or plan controller is closed (status 8).

    Also raised, without calling the library, when a closed Python handle is
    used; it is a ``ValueError`` too (the convention of wasmtime-py handles).
    """

    kind = "closed"


class InvariantError(DshError):
    """An internal rule was broken: a bug (status 9)."""

    kind = "invariant"


class UnsupportedError(DshError):
    """The operation does not exist for this backend, e.g. ``read_raw`` on SQLite (status 10)."""

    kind = "unsupported"


class CancelledError(DshError):
    """A call stopped by its cancel token (status 11); nothing was changed.
    (:mod:`dsh_persist.aio` raises :class:`asyncio.CancelledError` instead.)"""

    kind = "cancelled"


class DshPanicError(DshError):
    """A Rust panic was caught at the C boundary (status 99)."""

    kind = "panic"


_BY_STATUS: Dict[int, Type[DshError]] = {
    DSH_INVALID_ARGUMENT: InvalidArgumentError,
    DSH_NOT_FOUND: NotFoundError,
    DSH_CONFLICT: ConflictError,
    DSH_CORRUPTION: CorruptionError,
    DSH_FORMAT_UNSUPPORTED: FormatUnsupportedError,
    DSH_IO: DshIOError,
    DSH_BUSY: BusyError,
    DSH_CLOSED: ClosedError,
    DSH_INVARIANT: InvariantError,
    DSH_UNSUPPORTED: UnsupportedError,
    DSH_CANCELLED: CancelledError,
    DSH_PANIC: DshPanicError,
}


def error_for_status(status: int, message: str, code: Optional[str] = None) -> DshError:
    """The exception for a failure status; unknown statuses give a plain :class:`DshError`."""
    cls = _BY_STATUS.get(status, DshError)
    return cls(status, message, code)


__all__ = [
    "CancelledError",
    "DshError",
    "InvalidArgumentError",
    "NotFoundError",
    "ConflictError",
    "CorruptionError",
    "FormatUnsupportedError",
    "DshIOError",
    "BusyError",
    "ClosedError",
    "InvariantError",
    "UnsupportedError",
    "DshPanicError",
    "error_for_status",
]
