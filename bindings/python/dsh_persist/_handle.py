"""The lifecycle every handle class shares (model: wasmtime-py ``_managed.py``).

- ``_use()`` is a context manager yielding the raw pointer; it counts the
  call as *in flight* and raises :class:`ClosedError` once the handle is
  closed.
- ``close()`` is idempotent: it takes the pointer (so new calls are refused),
  waits under a ``threading.Condition`` until calls running on other threads
  have returned, then calls the C close/free function exactly once. A handle
  class with ``_retry_close`` (``Session``) gets the pointer back when the C
  close fails, so the close can be retried (the C handle stays valid then).
- ``__del__`` is a safety net that never raises; close handles explicitly
  (a session is durable only once closed or flushed).
- ``_consume()`` hands the pointer over (ownership transfer) without closing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

from ._errors import DSH_CLOSED, ClosedError


class Handle:
    """Base class of :class:`Store`, :class:`Session` and :class:`PlanMode`."""

    _kind = "handle"
    #: Whether a failed C close leaves the C handle valid (then ``close()``
    #: raises and the handle stays open for a retry).
    _retry_close = False

    def __init__(self, ptr: Any, release: Callable[[Any], Any]) -> None:
        self._ptr: Optional[Any] = ptr
        self._release = release
        self._cond = threading.Condition()
        self._in_flight = 0

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has been called."""
        return self._ptr is None

    def _ptr_or_raise(self) -> Any:
        ptr = self._ptr
        if ptr is None:
            raise ClosedError(DSH_CLOSED, f"this {self._kind} is closed")
        return ptr

    @contextmanager
    def _use(self) -> Iterator[Any]:
        with self._cond:
            ptr = self._ptr_or_raise()
            self._in_flight += 1
        try:
            yield ptr
        finally:
            with self._cond:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._cond.notify_all()

    def _take(self) -> Optional[Any]:
        """Takes the pointer once no call is in flight; ``None`` when already taken."""
        with self._cond:
            ptr, self._ptr = self._ptr, None
            while self._in_flight:
                self._cond.wait()
        return ptr

    def _consume(self) -> Any:
        """Transfers ownership of the pointer to the caller; the handle is closed after."""
        ptr = self._take()
        if ptr is None:
            raise ClosedError(DSH_CLOSED, f"this {self._kind} is closed")
        return ptr

    def close(self) -> None:
        """Releases the handle. Idempotent; waits for calls on other threads."""
        ptr = self._take()
        if ptr is None:
            return
        try:
            self._release(ptr)
        except BaseException:
            if self._retry_close:
                with self._cond:
                    self._ptr = ptr
            raise

    def _finalize(self) -> None:
        """What ``__del__`` does: close (and, when that fails, give up)."""
        self.close()

    def __enter__(self):  # type: ignore[no-untyped-def]
        """Returns the handle itself; ``with`` closes it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Closes the handle (exceptions propagate)."""
        self.close()

    def __del__(self) -> None:
        """Safety net: closes a handle that was never closed; never raises."""
        try:
            if getattr(self, "_ptr", None) is not None:
                self._finalize()
        except BaseException:  # a finalizer never raises
            pass
