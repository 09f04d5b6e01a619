"""Keeping loaded events out of CPython's cyclic garbage collector.

A host that loads a large log keeps its events: 100k events are some
300k dicts and lists. CPython's cyclic GC (not incremental before 3.14)
walks every tracked container at each full collection, and a collection is
triggered while they appear, so an ``await store.load(id)`` that takes the
events a page at a time still stalled the loop for 60-90 ms in one
collection, and every later full collection of the host pays for them
again.

JSON values hold no reference cycles, so reference counting alone frees
them; :func:`untrack` takes a parsed value's dicts and lists off the GC's
lists (``PyObject_GC_UnTrack``, public C API, children before parents).
What changes for the host: a reference cycle it later makes *through* a
loaded list (``events.append(events)``, or a list of events that holds
an object referring back to it) is never collected and leaks. A dict
re-tracks itself when a container is stored in it, so cycles through the
loaded dicts are still found; a list does not.

Only CPython with a GIL: elsewhere (PyPy, free-threaded builds)
:data:`AVAILABLE` is ``False`` and :func:`untrack` does nothing.
``PyObject_GC_UnTrack`` of an object that is not tracked is a no-op
(CPython 3.8-3.13 check ``_PyObject_GC_IS_TRACKED`` first).
"""

from __future__ import annotations

import ctypes
import gc
import sys
import sysconfig
from typing import Any, Callable, Optional


def _untrack_function() -> Optional[Callable[[Any], None]]:
    """``PyObject_GC_UnTrack`` through ctypes, or ``None`` where it must not be used."""
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    try:
        fn = ctypes.pythonapi.PyObject_GC_UnTrack
    except (AttributeError, OSError):  # pragma: no cover - an embedded CPython without symbols
        return None
    fn.argtypes = [ctypes.py_object]
    fn.restype = None
    return fn  # type: ignore[no-any-return]


_UNTRACK = _untrack_function()

#: Whether :func:`untrack` does anything in this interpreter.
AVAILABLE = _UNTRACK is not None


def untrack(value: Any) -> None:
    """Takes the dicts and lists of a JSON ``value`` (the value itself
    included) off the cyclic GC, children before parents. Meant for a value
    ``json.loads`` just made: it enters dicts and lists only, and a dict that
    is not tracked holds no container (CPython tracks a dict once one is
    stored in it), so it is not entered.

    Walks by levels, mostly in C: the next level is the tracked dicts and
    lists among this level's referents (``gc.get_referents``)."""
    fn = _UNTRACK
    if fn is None or type(value) not in _CONTAINERS or not gc.is_tracked(value):
        return
    levels = []
    level = [value]
    while level:
        levels.append(level)
        tracked = filter(gc.is_tracked, gc.get_referents(*level))
        level = [x for x in tracked if type(x) in _CONTAINERS]
    for level in reversed(levels):
        for v in level:
            fn(v)


_CONTAINERS = (dict, list)
