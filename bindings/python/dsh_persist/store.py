"""``Store``: an opened JSONL or SQLite store (the ``dsh_store_*`` functions)."""

from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Optional, Union

from . import _lib
from ._handle import Handle
from ._lib import (
    CONFIG_PATH_KEYS,
    HEADER_PATH_KEYS,
    call_owned_text,
    check_uint,
    dumps,
    encode_json,
    encode_text,
    lib,
    loads,
    required,
    with_text_paths,
)

Json = Any
Config = Union[Dict[str, Any], str]
Header = Union[Dict[str, Any], str]


def _by_id(session_id: Any, plain: Any, id_json: Any) -> Any:
    """The call and the id argument for ``session_id``: an id a C string
    cannot carry (one holding U+0000 or a lone surrogate, as logs written by
    the original may have) goes to the ``_id_json`` form as its JSON text
    (DIFFERENCES, exception 2); every other id as itself."""
    if isinstance(session_id, str) and (
        "\0" in session_id or any("\ud800" <= c <= "\udfff" for c in session_id)
    ):
        return id_json, json.dumps(session_id).encode("ascii")
    return plain, encode_text(session_id, "session_id")


def _header(header: Header, name: str = "header") -> bytes:
    """A header argument: a dict (``cwd`` may be an ``os.PathLike``) or its JSON text."""
    return encode_json(with_text_paths(header, HEADER_PATH_KEYS), name, (dict,))


def _close_store(ptr: Any) -> None:
    lib.dsh_store_close(ptr)


class Store(Handle):
    """A store: a backend plus the coordinator around it.

    Open with :meth:`Store.open`; use as a context manager or call
    :meth:`close` (which drains every live session, then closes storage).
    All methods are thread-safe. JSON results are decoded with ``json.loads``
    (Python integers are exact); each also has a ``*_raw`` variant returning
    the library's JSON text unchanged.
    """

    _kind = "store"

    def __init__(self, ptr: Any) -> None:
        """Wraps an opened ``dsh_store *``; use :meth:`Store.open` instead."""
        super().__init__(ptr, _close_store)

    @classmethod
    def open(cls, config: Config) -> "Store":
        """Opens a store. ``config`` is a dict or its JSON text, e.g.
        ``{"backend": "jsonl", "root": "/tmp/logs"}`` or
        ``{"backend": "sqlite", "path": "/tmp/s.db"}`` or
        ``{"backend": "postgres", "url": "postgresql://…", "cacheDir": "/home/me/.cache/dsh"}``;
        ``root``, ``path``, ``cacheDir`` and the TLS file keys may be
        ``pathlib.Path`` (any ``os.PathLike``). The other keys
        (``compression``, ``writeBatchMaxDelayMs``, ``journalMode``,
        ``schema``, …) are listed in the README; an unknown key is an
        :class:`InvalidArgumentError`."""
        raw = encode_json(with_text_paths(config, CONFIG_PATH_KEYS), "config", (dict,))
        out = _lib.store_p()
        lib.dsh_store_open(raw, ctypes.byref(out))
        return cls(out)

    # -- writes ------------------------------------------------------------

    def create(self, header: Header) -> None:
        """Registers a new session (lazy: nothing is written until the first append).

        ``header`` is ``{"id": …}`` plus optional ``createdAt``, ``cwd`` (may be
        an ``os.PathLike``), ``parentSession``, ``seedLength``, … or its JSON
        text. An id already stored or live is a :class:`ConflictError`."""
        raw = _header(header)
        with self._use() as ptr:
            lib.dsh_store_create(ptr, raw)

    def append(self, session_id: str, events: Union[List[Json], str]) -> None:
        """Appends whole events durably (the first seq must be the stored next seq).
        ``events`` is a list of event dicts or its JSON text."""
        sid = encode_text(session_id, "session_id")
        raw = encode_json(events, "events", (list, tuple))
        with self._use() as ptr:
            lib.dsh_store_append(ptr, sid, raw)

    def append_raw(self, session_id: str, events_json: str) -> None:
        """:meth:`append` with the events as JSON text (keeps big integers verbatim)."""
        if not isinstance(events_json, str):
            raise TypeError(f"events_json must be a str, not {type(events_json).__name__}")
        self.append(session_id, events_json)

    # -- reads -------------------------------------------------------------

    def _text(self, fn: Any, *args: Any) -> str:
        with self._use() as ptr:
            return required(call_owned_text(fn, ptr, *args), fn)

    def _nullable_text(self, fn: Any, *args: Any) -> Optional[str]:
        with self._use() as ptr:
            return call_owned_text(fn, ptr, *args)

    def locate_raw(self, header: Header) -> Optional[str]:
        """:meth:`locate` as JSON text (``None`` for SQLite)."""
        return self._nullable_text(lib.dsh_store_locate, _header(header))

    def locate(self, header: Header) -> Optional[Dict[str, Any]]:
        """Where a session with this header lives: ``{"kind": "jsonl", "path": …}``,
        or ``None`` (SQLite). No I/O."""
        return loads(self.locate_raw(header))

    def load_raw(self, session_id: str) -> str:
        """:meth:`load` as the library's JSON text (big integers in ``data`` kept verbatim)."""
        return self._text(*_by_id(session_id, lib.dsh_store_load, lib.dsh_store_load_id_json))

    def load(self, session_id: str) -> Dict[str, Any]:
        """The balanced log ``{"meta": header, "events": [...]}`` (a crashed cold
        session is repaired durably first; a live one is flushed)."""
        return loads(self.load_raw(session_id))

    def inspect_raw(self, session_id: str) -> str:
        """:meth:`inspect` as the library's JSON text."""
        return self._text(
            *_by_id(session_id, lib.dsh_store_inspect, lib.dsh_store_inspect_id_json)
        )

    def inspect(self, session_id: str) -> Dict[str, Any]:
        """Like :meth:`load` but changes nothing on disk (closers in memory only)."""
        return loads(self.inspect_raw(session_id))

    def read_from_raw(self, session_id: str, from_seq: int = 0) -> str:
        """:meth:`read_from` as the library's JSON text."""
        fn, sid = _by_id(session_id, lib.dsh_store_read_from, lib.dsh_store_read_from_id_json)
        seq = check_uint(from_seq, "from_seq")
        return self._text(fn, sid, seq)

    def read_from(self, session_id: str, from_seq: int = 0) -> Dict[str, Any]:
        """Stored events with ``seq >= from_seq`` (no repair): ``{"meta", "events"}``."""
        return loads(self.read_from_raw(session_id, from_seq))

    def read_raw_text(self, session_id: str) -> Optional[str]:
        """:meth:`read_raw` as JSON text (``None`` when absent)."""
        return self._nullable_text(
            *_by_id(session_id, lib.dsh_store_read_raw, lib.dsh_store_read_raw_id_json)
        )

    def read_raw(self, session_id: str) -> Optional[Dict[str, Any]]:
        """JSONL only: the stored artifact as written (header line included),
        or ``None`` when absent. SQLite raises :class:`UnsupportedError`."""
        return loads(self.read_raw_text(session_id))

    def list_raw(self) -> str:
        """:meth:`list` as the library's JSON text."""
        return self._text(lib.dsh_store_list)

    def list(self) -> List[Dict[str, Any]]:
        """Headers of the materialized sessions (metadata only)."""
        return loads(self.list_raw())

    def list_snapshots_raw(self) -> str:
        """:meth:`list_snapshots` as the library's JSON text."""
        return self._text(lib.dsh_store_list_snapshots)

    def list_snapshots(self) -> List[Dict[str, Any]]:
        """Headers with revision tokens, without reading logs."""
        return loads(self.list_snapshots_raw())

    # -- session management (issue 19) ---------------------------------------

    def delete(self, session_id: str) -> None:
        """Deletes a stored session; the id is free afterwards. A live or
        otherwise held session is a :class:`BusyError`, an absent one a
        :class:`NotFoundError`."""
        fn, sid = _by_id(session_id, lib.dsh_store_delete, lib.dsh_store_delete_id_json)
        with self._use() as ptr:
            fn(ptr, sid)

    def prune_raw(
        self,
        older_than_days: Optional[float] = None,
        keep_newest: Optional[int] = None,
        dry_run: bool = False,
    ) -> str:
        """:meth:`prune` as the library's JSON text."""
        options: Dict[str, Any] = {"dryRun": bool(dry_run)}
        if older_than_days is not None:
            options["olderThanDays"] = older_than_days
        if keep_newest is not None:
            options["keepNewest"] = check_uint(keep_newest, "keep_newest")
        return self._text(lib.dsh_store_prune, encode_json(options, "options", (dict,)))

    def prune(
        self,
        older_than_days: Optional[float] = None,
        keep_newest: Optional[int] = None,
        dry_run: bool = False,
    ) -> Dict[str, Any]:
        """Deletes the sessions not updated for ``older_than_days`` days and/or
        all but the ``keep_newest`` most recently updated (both given: a session
        must match both). Updated is the log file's mtime on JSONL and the last
        event's time on SQLite and PostgreSQL. Busy sessions are skipped.
        Returns ``{"dryRun", "updatedFrom", "deleted": [{"id", "updatedAt"}],
        "busy": [{"id", "message"}], "failed": [...], "kept"}``."""
        return loads(self.prune_raw(older_than_days, keep_newest, dry_run))

    def salvage_raw(self, session_id: str, new_id: str) -> str:
        """:meth:`salvage` as the library's JSON text."""
        sid = encode_text(session_id, "session_id")
        nid = encode_text(new_id, "new_id")
        return self._text(lib.dsh_store_salvage, sid, nid)

    def salvage(self, session_id: str, new_id: str) -> Dict[str, Any]:
        """Copies the intact prefix of a session that may no longer load
        (everything before its first bad record), closed like a crash repair,
        into the new session ``new_id``; the source is not changed. Returns
        ``{"sourceId", "newId", "readEvents", "keptEvents", "closers", "stopped"}``."""
        return loads(self.salvage_raw(session_id, new_id))

    def import_jsonl_raw(self, new_id: str, jsonl: str) -> str:
        """:meth:`import_jsonl` as the library's JSON text."""
        nid = encode_text(new_id, "new_id")
        text = encode_text(jsonl, "jsonl")
        return self._text(lib.dsh_store_import, nid, text)

    def import_jsonl(self, new_id: str, jsonl: str) -> Dict[str, Any]:
        """Imports a JSONL text of events (one per line as stored, optionally
        after a session header line) into the new session ``new_id``, checked
        like one append: all or nothing. Returns ``{"id", "events", "hadHeader"}``."""
        return loads(self.import_jsonl_raw(new_id, jsonl))

    # -- catalog reads -------------------------------------------------------

    def list_summaries(self, query: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """The rich listing: per session ``updatedAt``, ``eventCount``,
        ``turnCount``, ``title``, ``firstPrompt``, ``lastPrompt``, ``openTurn``,
        ``bytes`` (and ``meta``), reading only a window of each log. ``query``:
        ``{"sort": "updated"|"created", "ascending", "cwd", "updatedSince",
        "parent", "limit"}``."""
        raw = None if query is None else encode_json(query, "query", (dict,))
        return loads(self._text(lib.dsh_store_list_summaries, raw))

    def last_updated(self) -> Optional[str]:
        """The id of the most recently updated session, or ``None``."""
        rows = self.list_summaries({"limit": 1})
        return rows[0]["id"] if rows else None

    def search(self, query: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
        """Full-text search over message text: ``query`` is the text or
        ``{"text", "limit", "cwd", "cacheDir"}``; returns ``{"hits": [{"id",
        "seq", "role", "snippet"}], "sessions", "indexed", "truncated", "skipped"}``."""
        raw = encode_text(dumps(query), "query") if isinstance(query, str) else encode_json(query, "query", (dict,))
        return loads(self._text(lib.dsh_store_search, raw))

    def export(self, session_id: str, format: str = "md") -> str:
        """The transcript as Markdown (``"md"``) or self-contained HTML (``"html"``)."""
        return self._text(
            lib.dsh_store_export, encode_text(session_id, "session_id"), encode_text(format, "format")
        )

    def follow(self, session_id: str, from_seq: Optional[int] = None) -> "Follower":
        """A :class:`Follower` of ``session_id`` from ``from_seq`` on (``None``:
        only events appended from now on)."""
        from .follow import Follower

        sid = encode_text(session_id, "session_id")
        start = -1 if from_seq is None else check_uint(from_seq, "from_seq")
        out = _lib.follow_p()
        with self._use() as ptr:
            lib.dsh_follow_open(ptr, sid, start, ctypes.byref(out))
        return Follower(out)

    # -- live sessions -------------------------------------------------------

    def start(self, header: Header) -> "Session":
        """Starts a new live session with this header (as for :meth:`create`).
        Close the returned :class:`Session` (or use it as a context manager)."""
        from .session import Session

        raw = _header(header)
        out = _lib.session_p()
        with self._use() as ptr:
            lib.dsh_session_start(ptr, raw, ctypes.byref(out))
        return Session(out, self)

    def resume(self, session_id: str) -> "Session":
        """Resumes a stored session (repairing a crashed tail first)."""
        from .session import Session

        sid = encode_text(session_id, "session_id")
        out = _lib.session_p()
        with self._use() as ptr:
            lib.dsh_session_resume(ptr, sid, ctypes.byref(out))
        return Session(out, self)

    def fork(
        self,
        source_id: str,
        boundary: int = -1,
        child: Optional[Header] = None,
    ) -> "Session":
        """Forks ``source_id`` at the inclusive ``boundary`` seq (``-1``: the last
        event) into a new live session; ``child`` is its header (``None``: a
        generated id; its ``cwd`` is the parent's)."""
        from .session import Session

        sid = encode_text(source_id, "source_id")
        if isinstance(boundary, bool) or not isinstance(boundary, int):
            raise TypeError(f"boundary must be an int, not {type(boundary).__name__}")
        if not -1 <= boundary < 2**63:
            raise _lib.InvalidArgumentError(1, f"boundary must be -1 (last) or a seq, got {boundary}")
        raw_child = None if child is None else _header(child, "child")
        out = _lib.session_p()
        with self._use() as ptr:
            lib.dsh_session_fork(ptr, sid, boundary, raw_child, ctypes.byref(out))
        return Session(out, self)

    def __repr__(self) -> str:
        """``<dsh_persist.Store open>`` or ``<dsh_persist.Store closed>``."""
        return f"<dsh_persist.Store {'closed' if self.closed else 'open'}>"


__all__ = ["Store"]
