"""``Session``: a live session this process writes (the ``dsh_session_*`` functions)."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from ._handle import Handle
from ._lib import (
    call_owned_text,
    check_uint,
    dumps,
    encode_optional_text,
    encode_text,
    lib,
    loads,
    required,
)

if TYPE_CHECKING:
    from .store import Store


def _close_session(ptr: Any) -> None:
    lib.dsh_session_close(ptr)


def _free_session(ptr: Any) -> None:
    lib.dsh_session_free(ptr)


class Session(Handle):
    """A live session, from :meth:`Store.start`, :meth:`Store.resume` or
    :meth:`Store.fork`.

    ``append`` assigns seq and time and returns at once; a background writer
    makes events durable within ``writeBatchMaxDelayMs``. ``flush()`` waits
    for durability; ``close()`` drains and releases the id. A session that is
    never closed (or flushed) may lose its last batch: the finalizer is only a
    safety net. Thread-safe. The session keeps its :class:`Store` object alive.

    While open, the session holds its id's writer lock: another process or
    store handle that starts, resumes or appends to the id gets
    :class:`BusyError` (or :class:`ConflictError` when creating it).

    When ``close()`` raises (its final drain failed, e.g. a full disk), the
    session stays open: its pending events are kept, appends raise
    :class:`ClosedError`, and ``close()`` may be called again. ``discard()``
    gives up and frees it, dropping what could not be written.
    """

    _kind = "session"
    _retry_close = True

    def __init__(self, ptr: Any, store: "Store") -> None:
        """Wraps a live ``dsh_session *``; sessions come from :meth:`Store.start`,
        :meth:`Store.resume` and :meth:`Store.fork`."""
        super().__init__(ptr, _close_session)
        self.store = store

    def discard(self) -> None:
        """Frees the session without a successful drain (after ``close()``
        failed): one last drain is tried, events that still cannot be written
        are dropped, and the id is released. Idempotent."""
        ptr = self._take()
        if ptr is not None:
            _free_session(ptr)

    def _finalize(self) -> None:
        try:
            self.close()
        finally:
            self.discard()

    def _text(self, fn: Any, *args: Any) -> str:
        with self._use() as ptr:
            return required(call_owned_text(fn, ptr, *args), fn)

    # -- writes ------------------------------------------------------------

    def append(
        self,
        type: str,
        data: Any,
        surface_op: Any = None,
        source_event_seqs: Optional[Sequence[int]] = None,
        ignorable: bool = False,
    ) -> int:
        """Appends one event and returns its seq.

        ``data`` is any JSON-serializable value (serialized with ``json.dumps``;
        use :meth:`append_raw` to pass JSON text). ``surface_op`` is
        ``"append"`` or ``{"op": "replace", "start": S, "end": E}`` (required on
        ``user/message``, ``assistant/message`` and ``tool/result``).
        """
        return self.append_raw(type, dumps(data), surface_op, source_event_seqs, ignorable)

    def append_raw(
        self,
        type: str,
        data_json: str,
        surface_op: Any = None,
        source_event_seqs: Optional[Sequence[int]] = None,
        ignorable: bool = False,
    ) -> int:
        """:meth:`append` with ``data`` as JSON text, kept verbatim (big integers)."""
        raw_type = encode_text(type, "type")
        raw_data = encode_text(data_json, "data_json")
        if not isinstance(ignorable, bool):
            raise TypeError(f"ignorable must be a bool, not {type_name(ignorable)}")
        options: Dict[str, Any] = {}
        if surface_op is not None:
            if not isinstance(surface_op, (str, dict)):
                raise TypeError(f"surface_op must be a str or dict, not {type_name(surface_op)}")
            options["surfaceOp"] = surface_op
        if source_event_seqs is not None:
            if isinstance(source_event_seqs, (str, bytes)) or not isinstance(source_event_seqs, Sequence):
                raise TypeError(f"source_event_seqs must be a list of int, not {type_name(source_event_seqs)}")
            options["sourceEventSeqs"] = [check_uint(s, "source_event_seqs[]") for s in source_event_seqs]
        if ignorable:
            options["ignorable"] = True
        raw_options = encode_optional_text(dumps(options) if options else None, "options")
        seq = ctypes.c_uint64()
        with self._use() as ptr:
            lib.dsh_session_append(ptr, raw_type, raw_data, raw_options, ctypes.byref(seq))
        return seq.value

    def flush(self) -> None:
        """Waits until every appended event is durable; raises the write error."""
        with self._use() as ptr:
            lib.dsh_session_flush(ptr)

    # -- reads -------------------------------------------------------------

    def events_raw(self, from_seq: int = 0) -> str:
        """:meth:`events` as the library's JSON text."""
        return self._text(lib.dsh_session_events, check_uint(from_seq, "from_seq"))

    def events(self, from_seq: int = 0) -> List[Dict[str, Any]]:
        """The session's events with ``seq >= from_seq`` (in memory, durable or not)."""
        return loads(self.events_raw(from_seq))

    def header_raw(self) -> str:
        """:attr:`header` as the library's JSON text."""
        return self._text(lib.dsh_session_header)

    @property
    def header(self) -> Dict[str, Any]:
        """The session header."""
        return loads(self.header_raw())

    @property
    def id(self) -> str:
        """The session id (from the header)."""
        return self.header["id"]

    def messages_raw(self) -> str:
        """:meth:`messages` as the library's JSON text."""
        return self._text(lib.dsh_session_messages)

    def messages(self) -> List[Dict[str, Any]]:
        """The model-visible transcript: the messages the model sees, derived
        from the session's message events and their ``surface_op``."""
        return loads(self.messages_raw())

    def background_error(self) -> Optional[Any]:
        """The last failed background write as ``{"kind", "message", "code"?}``,
        or ``None``. :meth:`flush` and :meth:`close` raise it as well."""
        with self._use() as ptr:
            return loads(call_owned_text(lib.dsh_session_background_error, ptr))

    def __repr__(self) -> str:
        """``<dsh_persist.Session live>`` or ``<dsh_persist.Session closed>``."""
        return f"<dsh_persist.Session {'closed' if self.closed else 'live'}>"


def type_name(value: Any) -> str:
    """The name of ``value``'s type, for error messages."""
    return type(value).__name__


__all__ = ["Session"]
