"""asyncio forms of the store and its live sessions (issue 18).

    from dsh_persist.aio import AsyncStore

    async with AsyncStore.open({"backend": "jsonl", "root": "/tmp/logs"}) as store:
        async with await store.start({"id": "s1"}) as session:
            session.append("turn/start", {"turn": 1})   # synchronous: no disk
            await session.flush()
        view = await store.load("s1")

Every call that may touch the disk runs in a worker thread (the loop's
default executor; ctypes releases the GIL), so the event loop keeps running.
The reads (``load``, ``inspect``, ``read_from``, ``read_raw``, ``list``,
``list_snapshots``, ``list_summaries``, ``last_updated``, ``search``,
``export``, and the reads of ``resume``, ``fork``, ``prune`` and
``salvage``) are
cancellable: cancelling the awaiting task sets the library's cancel token
(``dsh_cancel``), the read stops between chunks or rows, the await raises
:class:`asyncio.CancelledError` once the worker has stopped, and the store
is unchanged. Writes run to their end once begun (a cancelled task still
waits for them, then raises ``CancelledError``).

The large reads (``load``, ``inspect``, ``read_from`` and their ``_raw``
forms) are paged: the worker thread reads the log into a result the library
keeps, then the loop parses it a page of events at a time (or joins text
slices), with ``await asyncio.sleep(0)`` between pages, so no single step
parses the whole log under the GIL. ``iterate(id, from_seq)`` yields the
events one at a time (``async for``) without keeping them all; leave it
with ``break`` inside ``contextlib.aclosing`` (or call ``aclose()``) to free
its read at once. The events ``load``, ``inspect`` and ``read_from`` return
are taken off CPython's cyclic GC as each page is parsed (``gc_untrack``,
see :class:`AsyncStore` and :mod:`dsh_persist._gc`), so full collections
(not incremental before CPython 3.14) do not walk them.

Two helpers carry every operation: :func:`_in_thread` (a synchronous method
in the executor) and :func:`_cancellable` (an ``_ex`` read under a token), so
a new operation gets its async form in one line.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import json
import time
from ctypes import c_void_p
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, TypeVar, Union

from . import _gc, _lib
from ._lib import check_uint, dumps, encode_json, encode_text, lib, loads, required
from .plan import PlanMode
from .session import Session
from .store import Store, _by_id

T = TypeVar("T")
Json = Any


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Runs ``fn(*args)`` in the loop's executor. A cancelled await waits for
    the call to end (its handle stays in use until then), then re-raises."""
    fut = asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))
    return await _settle(fut, on_cancel=None)


async def _settle(fut: "asyncio.Future[T]", on_cancel: Optional[Callable[[], None]]) -> T:
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        # The worker must be done before the caller sees the cancellation:
        # nothing of this call runs on after it (and its token can be freed).
        while not fut.done():
            try:
                await asyncio.shield(fut)
            except asyncio.CancelledError:
                continue
            except BaseException:
                break
        raise


def _read_ex(handle: Any, fn: Any, args: tuple, token: Any) -> Optional[str]:
    """Calls ``fn(ptr, *args, &out, token, NULL)`` (an ``_ex`` read) on this
    worker thread; its errcheck reads the last error on this same thread."""
    with handle._use() as ptr:
        return _lib.call_owned_text(fn, ptr, *args, after=(token, None))


def _handle_ex(handle: Any, fn: Any, args: tuple, token: Any, out: Any) -> None:
    """As :func:`_read_ex` for an ``_ex`` call whose result is a handle."""
    with handle._use() as ptr:
        fn(ptr, *args, ctypes.byref(out), token, None)


async def _cancellable(call: Callable[[Any], T]) -> T:
    """Runs ``call(token)`` in the executor under a new cancel token that the
    cancellation of the awaiting task sets."""
    token = _lib.cancel_p()
    lib.dsh_cancel_new(ctypes.byref(token))
    try:
        fut = asyncio.get_running_loop().run_in_executor(None, call, token)
        return await _settle(fut, on_cancel=lambda: lib.dsh_cancel_cancel(token))
    finally:
        lib.dsh_cancel_free(token)


def _paged_ex(handle: Any, fn: Any, args: tuple, token: Any) -> Any:
    """Calls ``fn(ptr, *args, &result, token, NULL)`` (a ``_paged_ex`` read) on
    this worker thread; returns the ``dsh_result`` pointer."""
    out = _lib.result_p()
    with handle._use() as ptr:
        fn(ptr, *args, ctypes.byref(out), token, None)
    return out


async def _read_paged(handle: Any, fn: Any, args: tuple) -> Any:
    """Runs a ``_paged_ex`` read in the executor under a cancel token; a
    cancellation that arrives after the read finished frees its result."""
    token = _lib.cancel_p()
    lib.dsh_cancel_new(ctypes.byref(token))
    fut = asyncio.get_running_loop().run_in_executor(None, _paged_ex, handle, fn, args, token)
    try:
        return await _settle(fut, on_cancel=lambda: lib.dsh_cancel_cancel(token))
    except asyncio.CancelledError:
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            lib.dsh_result_free(fut.result())
        raise
    finally:
        lib.dsh_cancel_free(token)


# Paged results (issue 18): load, inspect and read_from read the log in a
# worker thread into a ``dsh_result`` the library keeps, then take it on the
# loop in pages (a JSON array of events each, parsed and appended), yielding
# to the loop (``await asyncio.sleep(0)``) between pages, so no single step
# parses megabytes while holding the GIL. The page size adapts to keep one
# step (parse and use of a page) near _PAGE_TARGET_S on this machine.
#
# The target is small (0.125 ms, a few KB) for the cyclic GC's sake: a young
# collection that fires inside json.loads promotes the half-built page, and
# enough promoted objects trigger a full collection (the host's whole heap).
# Measured on a 100k-event load: 2 full collections at 0.5 ms steps, 1 at
# 0.25, 0 at 0.125, the same total time; 0.0625 took ~10% longer. The text
# slices of the _raw forms are plain copies and keep 0.5 ms.
_PAGE_TARGET_S = 0.000125
_SLICE_TARGET_S = 0.0005
_MIN_PAGE_BYTES = 4 << 10
_MAX_PAGE_BYTES = 128 << 10
_FIRST_PAGE_BYTES = 32 << 10


def _owned(fn: Any, *args: Any) -> str:
    out = c_void_p()
    fn(*args, ctypes.byref(out))
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.dsh_free(out)


def _next_budget(budget: int, nbytes: int, seconds: float, target: float = _PAGE_TARGET_S) -> int:
    """The next page size, from how long the last one took (grows at most 2x a page)."""
    want = min(nbytes / max(seconds, 0.00005) * target, 2 * budget)
    return int(min(_MAX_PAGE_BYTES, max(_MIN_PAGE_BYTES, want)))


async def _pages(result: Any) -> AsyncIterator[List[Any]]:
    """The parsed pages of events of ``result``, yielding to the loop between
    them (does not free it)."""
    count = ctypes.c_uint64()
    lib.dsh_result_count(result, ctypes.byref(count), None)
    first, budget = 0, _FIRST_PAGE_BYTES
    nxt = ctypes.c_uint64()
    while first < count.value:
        t0 = time.perf_counter()
        out = c_void_p()
        lib.dsh_result_page(result, first, budget, ctypes.byref(out), ctypes.byref(nxt))
        try:
            raw = ctypes.string_at(out.value)
        finally:
            lib.dsh_free(out)
        first = nxt.value
        yield json.loads(raw)
        # The step includes what the consumer did with the page (iterate: every event).
        budget = _next_budget(budget, len(raw), time.perf_counter() - t0)
        await asyncio.sleep(0)


async def _collect(result: Any, gc_untrack: bool) -> Dict[str, Any]:
    """The whole ``{meta, events}`` of ``result``, page by page; frees it.
    ``gc_untrack``: each page is taken off the cyclic GC as it is parsed
    (:func:`dsh_persist._gc.untrack`), and the whole value at the end."""
    try:
        value = json.loads(_owned(lib.dsh_result_head, result))
        if gc_untrack:
            _gc.untrack(value)  # while its events list is empty: no walk of 100k events
        events = value["events"]
        async for page in _pages(result):
            if gc_untrack:
                _gc.untrack(page)
            events.extend(page)
        return value
    finally:
        lib.dsh_result_free(result)


async def _collect_text(result: Any) -> str:
    """The whole text of ``result`` (what the synchronous call returns), slice
    by slice, yielding between slices; frees it."""
    try:
        total = ctypes.c_uint64()
        lib.dsh_result_count(result, None, ctypes.byref(total))
        parts: List[str] = []
        offset, budget = 0, 4 * _FIRST_PAGE_BYTES
        nxt = ctypes.c_uint64()
        while offset < total.value:
            t0 = time.perf_counter()
            parts.append(_owned_slice(result, offset, budget, nxt))
            budget = _next_budget(budget, nxt.value - offset, time.perf_counter() - t0, _SLICE_TARGET_S)
            offset = nxt.value
            await asyncio.sleep(0)
        return "".join(parts)
    finally:
        lib.dsh_result_free(result)


def _owned_slice(result: Any, offset: int, budget: int, nxt: Any) -> str:
    out = c_void_p()
    lib.dsh_result_text(result, offset, budget, ctypes.byref(out), ctypes.byref(nxt))
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.dsh_free(out)


def live_results() -> int:
    """How many ``dsh_result`` objects are live (made, not freed) in this process."""
    return int(lib.dsh_result_live())


# (plain, _id_json) forms of the paged reads.
_LOAD = (lib.dsh_store_load_paged_ex, lib.dsh_store_load_id_json_paged_ex)
_INSPECT = (lib.dsh_store_inspect_paged_ex, lib.dsh_store_inspect_id_json_paged_ex)
_READ_FROM = (lib.dsh_store_read_from_paged_ex, lib.dsh_store_read_from_id_json_paged_ex)


class _Opening:
    """``await AsyncStore.open(cfg)`` or ``async with AsyncStore.open(cfg) as s``."""

    def __init__(self, config: Any, gc_untrack: bool) -> None:
        self._config = config
        self._gc_untrack = gc_untrack
        self._store: Optional[AsyncStore] = None

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._open().__await__()

    async def _open(self) -> "AsyncStore":
        return AsyncStore(await _in_thread(Store.open, self._config), gc_untrack=self._gc_untrack)

    async def __aenter__(self) -> "AsyncStore":
        self._store = await self._open()
        return self._store

    async def __aexit__(self, *exc: Any) -> None:
        if self._store is not None:
            await self._store.close()


class AsyncStore:
    """A :class:`~dsh_persist.Store` whose disk work runs off the event loop.

    ``sync`` is the underlying store (its synchronous methods stay usable).

    ``gc_untrack`` (default ``True``; an attribute, may be changed at any
    time): :meth:`load`, :meth:`inspect` and :meth:`read_from` take the
    events they return off CPython's cyclic GC as each page is parsed
    (:mod:`dsh_persist._gc`), so neither the load nor the host's later full
    collections walk them. The cost: a reference cycle made later *through*
    a returned list is never collected (dicts re-track themselves when a
    container is stored in them). Set it to ``False`` to keep them tracked.
    No effect outside CPython with a GIL. ``iterate`` never untracks (its
    pages die young)."""

    def __init__(self, store: Store, *, gc_untrack: bool = True) -> None:
        self.sync = store
        self.gc_untrack = gc_untrack

    @staticmethod
    def open(config: Any, *, gc_untrack: bool = True) -> _Opening:
        """Opens a store (see :meth:`Store.open`); await it or use ``async with``.
        ``gc_untrack``: see the class."""
        return _Opening(config, gc_untrack)

    async def close(self) -> None:
        """Drains every live session and closes the store (waits for calls in flight)."""
        await _in_thread(self.sync.close)

    @property
    def closed(self) -> bool:
        return self.sync.closed

    async def __aenter__(self) -> "AsyncStore":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- writes (run to their end once begun) ----------------------------------

    async def create(self, header: Any) -> None:
        await _in_thread(self.sync.create, header)

    async def append(self, session_id: str, events: Union[List[Json], str]) -> None:
        await _in_thread(self.sync.append, session_id, events)

    async def start(self, header: Any) -> "AsyncSession":
        return AsyncSession(await _in_thread(self.sync.start, header))

    # -- cancellable reads -------------------------------------------------------

    def _text(self, fn: Any, *args: Any) -> "asyncio.Future[str]":
        return _cancellable(lambda t: required(_read_ex(self.sync, fn, args, t), fn))  # type: ignore[return-value]

    def _json(self, fn: Any, *args: Any) -> "asyncio.Future[Any]":
        # Parsed in the worker too: a large log's json.loads stays off the loop
        # (the GIL still switches every sys.getswitchinterval()).
        return _cancellable(lambda t: loads(required(_read_ex(self.sync, fn, args, t), fn)))  # type: ignore[return-value]

    # load, inspect and read_from (and their _raw forms, and iterate) route an
    # id a C string cannot carry to the `_id_json` form, as the sync methods.

    async def _paged(self, session_id: str, plain: Any, id_json: Any, *args: Any) -> Dict[str, Any]:
        fn, sid = _by_id(session_id, plain, id_json)
        return await _collect(await _read_paged(self.sync, fn, (sid, *args)), self.gc_untrack)

    async def _paged_text(self, session_id: str, plain: Any, id_json: Any, *args: Any) -> str:
        fn, sid = _by_id(session_id, plain, id_json)
        return await _collect_text(await _read_paged(self.sync, fn, (sid, *args)))

    async def load_raw(self, session_id: str) -> str:
        """:meth:`Store.load_raw`, paged: the text arrives in slices (see :meth:`load`)."""
        return await self._paged_text(session_id, *_LOAD)

    async def load(self, session_id: str) -> Dict[str, Any]:
        """:meth:`Store.load`; cancelled before its repair began, it commits none.
        Paged: read in a worker thread, parsed on the loop a page at a time."""
        return await self._paged(session_id, *_LOAD)

    async def inspect_raw(self, session_id: str) -> str:
        """:meth:`Store.inspect_raw`, paged: the text arrives in slices (see :meth:`load`)."""
        return await self._paged_text(session_id, *_INSPECT)

    async def inspect(self, session_id: str) -> Dict[str, Any]:
        """:meth:`Store.inspect`, paged as :meth:`load`."""
        return await self._paged(session_id, *_INSPECT)

    async def read_from_raw(self, session_id: str, from_seq: int = 0) -> str:
        """:meth:`Store.read_from_raw`, paged as :meth:`load_raw`."""
        return await self._paged_text(session_id, *_READ_FROM, check_uint(from_seq, "from_seq"))

    async def read_from(self, session_id: str, from_seq: int = 0) -> Dict[str, Any]:
        """:meth:`Store.read_from`, paged as :meth:`load`."""
        return await self._paged(session_id, *_READ_FROM, check_uint(from_seq, "from_seq"))

    async def iterate(self, session_id: str, from_seq: int = 0) -> AsyncIterator[Dict[str, Any]]:
        """The events of :meth:`read_from` one at a time
        (``async for ev in store.iterate(id)``): read at the first step, then
        parsed a page at a time; leaving the loop early frees the read."""
        fn, sid = _by_id(session_id, *_READ_FROM)
        result = await _read_paged(self.sync, fn, (sid, check_uint(from_seq, "from_seq")))
        try:
            async for page in _pages(result):
                for ev in page:
                    yield ev
        finally:
            lib.dsh_result_free(result)

    async def read_raw(self, session_id: str) -> Optional[Dict[str, Any]]:
        fn, sid = _by_id(session_id, lib.dsh_store_read_raw_ex, lib.dsh_store_read_raw_id_json_ex)
        return loads(await _cancellable(lambda t: _read_ex(self.sync, fn, (sid,), t)))

    async def list_raw(self) -> str:
        return await self._text(lib.dsh_store_list_ex)

    async def list(self) -> List[Dict[str, Any]]:
        return await self._json(lib.dsh_store_list_ex)

    async def list_snapshots_raw(self) -> str:
        return await self._text(lib.dsh_store_list_snapshots_ex)

    async def list_snapshots(self) -> List[Dict[str, Any]]:
        return await self._json(lib.dsh_store_list_snapshots_ex)

    async def _session(self, fn: Any, *args: Any) -> "AsyncSession":
        def call(token: Any) -> Session:
            out = _lib.session_p()
            _handle_ex(self.sync, fn, args, token, out)
            return Session(out, self.sync)

        return AsyncSession(await _cancellable(call))

    async def resume(self, session_id: str) -> "AsyncSession":
        """:meth:`Store.resume`; cancellable while the log is read."""
        return await self._session(lib.dsh_session_resume_ex, encode_text(session_id, "session_id"))

    async def fork(self, source_id: str, boundary: int = -1, child: Optional[Any] = None) -> "AsyncSession":
        """:meth:`Store.fork`; cancellable while the source is read."""
        if isinstance(boundary, bool) or not isinstance(boundary, int):
            raise TypeError(f"boundary must be an int, not {type(boundary).__name__}")
        if not -1 <= boundary < 2**63:
            raise _lib.InvalidArgumentError(1, f"boundary must be -1 (last) or a seq, got {boundary}")
        from .store import _header

        raw_child = None if child is None else _header(child, "child")
        return await self._session(lib.dsh_session_fork_ex, encode_text(source_id, "source_id"), boundary, raw_child)

    # -- session management and the catalog reads (issue 19) --------------------

    async def delete(self, session_id: str) -> None:
        """:meth:`Store.delete` (a write: runs to its end once begun; the
        sync method routes an id a C string cannot carry)."""
        await _in_thread(self.sync.delete, session_id)

    async def import_jsonl(self, new_id: str, jsonl: str) -> Dict[str, Any]:
        """:meth:`Store.import_jsonl` (a write: runs to its end once begun)."""
        return await _in_thread(self.sync.import_jsonl, new_id, jsonl)

    async def prune(
        self,
        older_than_days: Optional[float] = None,
        keep_newest: Optional[int] = None,
        dry_run: bool = False,
    ) -> Dict[str, Any]:
        """:meth:`Store.prune`; cancellable while it lists the sessions (a
        cancelled prune deletes nothing); once the deletions begin they all run."""
        options: Dict[str, Any] = {"dryRun": bool(dry_run)}
        if older_than_days is not None:
            options["olderThanDays"] = older_than_days
        if keep_newest is not None:
            options["keepNewest"] = check_uint(keep_newest, "keep_newest")
        return await self._json(lib.dsh_store_prune_ex, encode_json(options, "options", (dict,)))

    async def salvage(self, session_id: str, new_id: str) -> Dict[str, Any]:
        """:meth:`Store.salvage`; cancellable while the source is read (a
        cancelled salvage writes nothing); once the write begins it finishes."""
        sid = encode_text(session_id, "session_id")
        return await self._json(lib.dsh_store_salvage_ex, sid, encode_text(new_id, "new_id"))

    async def list_summaries(self, query: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """:meth:`Store.list_summaries`, cancellable."""
        raw = None if query is None else encode_json(query, "query", (dict,))
        return await self._json(lib.dsh_store_list_summaries_ex, raw)

    async def last_updated(self) -> Optional[str]:
        """:meth:`Store.last_updated`, cancellable."""
        rows = await self.list_summaries({"limit": 1})
        return rows[0]["id"] if rows else None

    async def search(self, query: Union[str, Dict[str, Any]]) -> Dict[str, Any]:
        """:meth:`Store.search`, cancellable (between sessions and within each read)."""
        raw = encode_text(dumps(query), "query") if isinstance(query, str) else encode_json(query, "query", (dict,))
        return await self._json(lib.dsh_store_search_ex, raw)

    async def export(self, session_id: str, format: str = "md") -> str:
        """:meth:`Store.export`, cancellable."""
        sid = encode_text(session_id, "session_id")
        return await self._text(lib.dsh_store_export_ex, sid, encode_text(format, "format"))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Any other synchronous call (e.g. a :class:`PlanMode` method) off the loop."""
        return await _in_thread(fn, *args)


class AsyncSession:
    """A live :class:`~dsh_persist.Session` with awaitable ``flush``/``close``.
    ``append`` stays synchronous (it does not touch the disk); ``sync`` is the
    underlying session (for :class:`AsyncPlanMode` and reads of memory)."""

    def __init__(self, session: Session) -> None:
        self.sync = session

    def append(self, type: str, data: Json, *args: Any, **kwargs: Any) -> int:
        """:meth:`Session.append` (same arguments), synchronous."""
        return self.sync.append(type, data, *args, **kwargs)

    def append_raw(self, type: str, data_json: str, *args: Any, **kwargs: Any) -> int:
        """:meth:`Session.append_raw` (same arguments), synchronous."""
        return self.sync.append_raw(type, data_json, *args, **kwargs)

    def events(self, from_seq: int = 0) -> List[Dict[str, Any]]:
        return self.sync.events(from_seq)

    @property
    def header(self) -> Dict[str, Any]:
        return self.sync.header

    @property
    def id(self) -> str:
        return self.sync.id

    @property
    def closed(self) -> bool:
        return self.sync.closed

    async def flush(self) -> None:
        await _in_thread(self.sync.flush)

    async def close(self) -> None:
        await _in_thread(self.sync.close)

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


class AsyncPlanMode:
    """:class:`~dsh_persist.PlanMode` with awaitable calls (they may append)."""

    def __init__(self, config: Any) -> None:
        self.sync = PlanMode(config)

    async def set(self, session: AsyncSession, active: bool) -> Dict[str, Any]:
        return await _in_thread(self.sync.set, session.sync, active)

    async def pre_step(self, session: AsyncSession) -> Dict[str, Any]:
        return await _in_thread(self.sync.pre_step, session.sync)

    async def command(self, session: AsyncSession, raw_input: str, has_attachments: bool = False) -> Dict[str, Any]:
        return await _in_thread(self.sync.command, session.sync, raw_input, has_attachments)

    async def exit_check(self, session: AsyncSession, plan_markdown: str) -> Dict[str, Any]:
        return await _in_thread(self.sync.exit_check, session.sync, plan_markdown)

    async def exit_answer(self, session: AsyncSession, answer: Any) -> Dict[str, Any]:
        return await _in_thread(self.sync.exit_answer, session.sync, answer)

    def close(self) -> None:
        self.sync.close()


__all__ = ["AsyncStore", "AsyncSession", "AsyncPlanMode", "live_results"]
