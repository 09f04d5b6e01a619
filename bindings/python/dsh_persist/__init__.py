"""dsh_persist: crash-safe session logs of the DeepSeek Harness, from Python.

A thin ``ctypes`` wrapper over ``libdsh_persist`` (the library's C ABI):

    from dsh_persist import Store, PlanMode

    with Store.open({"backend": "jsonl", "root": "/tmp/logs"}) as store:
        with store.start({"id": "s1", "cwd": "/work"}) as session:
            session.append("turn/start", {"turn": 1})
            session.flush()
        print(store.load("s1")["events"])

An installed package carries the library; ``DSH_PERSIST_LIB`` overrides it,
and a checkout of the repository uses the crate's ``target/release`` (see
:mod:`dsh_persist._lib`). Paths in configs and headers may be
``pathlib.Path``; :class:`DshIOError` is also an :class:`OSError`.
:func:`gc_untrack` takes a loaded value off CPython's cyclic GC (see
:mod:`dsh_persist._gc`; ``dsh_persist.aio`` does it by default).
"""

from ._errors import (
    BusyError,
    ClosedError,
    ConflictError,
    CorruptionError,
    DshError,
    DshIOError,
    DshPanicError,
    FormatUnsupportedError,
    InvalidArgumentError,
    InvariantError,
    NotFoundError,
    UnsupportedError,
)
from ._gc import untrack as gc_untrack
from ._lib import __version__, library_path, library_version
from .follow import Follower
from .plan import PlanMode
from .session import Session
from .store import Store

__all__ = [
    "Store",
    "Session",
    "PlanMode",
    "Follower",
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
    "gc_untrack",
    "__version__",
    "library_path",
    "library_version",
]
