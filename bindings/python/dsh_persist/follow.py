"""``Follower``: the events of one session as another process appends them
(the ``dsh_follow_*`` functions), poll style."""

from __future__ import annotations

from typing import Any, Dict, List

from ._handle import Handle
from ._lib import call_owned_text, lib, loads, required


def _close_follow(ptr: Any) -> None:
    lib.dsh_follow_close(ptr)


class Follower(Handle):
    """From :meth:`Store.follow`. Close it when done (or use it as a context
    manager)."""

    _kind = "follower"

    def __init__(self, ptr: Any) -> None:
        super().__init__(ptr, _close_follow)

    def next_raw(self, timeout_ms: int = 0) -> str:
        """:meth:`next` as the library's JSON text."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
            raise TypeError(f"timeout_ms must be an int, not {type(timeout_ms).__name__}")
        if not 0 <= timeout_ms <= 0xFFFFFFFF:
            raise ValueError(f"timeout_ms must be within 0 .. 2**32-1, got {timeout_ms}")
        with self._use() as ptr:
            return required(call_owned_text(lib.dsh_follow_next, ptr, timeout_ms), lib.dsh_follow_next)

    def next(self, timeout_ms: int = 0) -> List[Dict[str, Any]]:
        """The new events; ``[]`` when none came within ``timeout_ms`` (0: look once)."""
        return loads(self.next_raw(timeout_ms))


__all__ = ["Follower"]
