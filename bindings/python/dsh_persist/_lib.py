"""Loading ``libdsh_persist`` and declaring every C function (SPEC §11).

Search order for the shared library:

1. the path in the ``DSH_PERSIST_LIB`` environment variable (nothing else is
   tried when it is set, so a wrong path fails loudly);
2. the package directory (where ``pip install`` bundles a built library);
3. the crate's ``target/release`` directory, found relative to this file
   (``bindings/python/dsh_persist`` → ``<repo>/target/release``).

The library's ``dsh_version()`` must have the package's major.minor version,
otherwise the import fails with a message naming both.

``DECLARATIONS`` is the one table of ``restype``/``argtypes``: it mirrors
``include/dsh_persist.h`` (a test compares the two). Handles are empty
``ctypes.Structure`` subclasses used through ``POINTER``, so passing a store
where a session is expected raises ``ctypes.ArgumentError``. Status
functions have an ``errcheck`` that reads ``dsh_last_error()`` at once, on the
calling thread, and raises the matching :class:`~dsh_persist.DshError`.
Owned strings come back through ``POINTER(c_void_p)`` out parameters and are
released with ``dsh_free`` in a ``finally``.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from ctypes import POINTER, c_bool, c_char_p, c_int, c_int64, c_uint64, c_void_p
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from ._errors import DSH_OK, InvalidArgumentError, InvariantError, error_for_status

__version__ = "0.1.0"

ENV_VAR = "DSH_PERSIST_LIB"


class dsh_store(ctypes.Structure):
    """Opaque ``dsh_store`` (used only through ``POINTER``)."""


class dsh_session(ctypes.Structure):
    """Opaque ``dsh_session`` (used only through ``POINTER``)."""


class dsh_plan(ctypes.Structure):
    """Opaque ``dsh_plan`` (used only through ``POINTER``)."""


store_p = POINTER(dsh_store)
session_p = POINTER(dsh_session)
plan_p = POINTER(dsh_plan)
# An owned `char **out`: kept as a raw address so it can be handed to dsh_free.
out_str = POINTER(c_void_p)

# Marker for functions returning `dsh_status` (restype c_int + errcheck).
STATUS = "dsh_status"

# name -> (restype, argtypes). Order and types follow include/dsh_persist.h.
DECLARATIONS: List[Tuple[str, Any, Sequence[Any]]] = [
    ("dsh_version", c_char_p, []),
    ("dsh_last_error", c_char_p, []),
    ("dsh_last_error_code", c_char_p, []),
    ("dsh_free", None, [c_void_p]),
    # store
    ("dsh_store_open", STATUS, [c_char_p, POINTER(store_p)]),
    ("dsh_store_close", STATUS, [store_p]),
    ("dsh_store_locate", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_create", STATUS, [store_p, c_char_p]),
    ("dsh_store_append", STATUS, [store_p, c_char_p, c_char_p]),
    ("dsh_store_load", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_inspect", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_read_from", STATUS, [store_p, c_char_p, c_uint64, out_str]),
    ("dsh_store_read_raw", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_list", STATUS, [store_p, out_str]),
    ("dsh_store_list_snapshots", STATUS, [store_p, out_str]),
    # live sessions
    ("dsh_session_start", STATUS, [store_p, c_char_p, POINTER(session_p)]),
    ("dsh_session_resume", STATUS, [store_p, c_char_p, POINTER(session_p)]),
    ("dsh_session_fork", STATUS, [store_p, c_char_p, c_int64, c_char_p, POINTER(session_p)]),
    ("dsh_session_append", STATUS, [session_p, c_char_p, c_char_p, c_char_p, POINTER(c_uint64)]),
    ("dsh_session_flush", STATUS, [session_p]),
    ("dsh_session_events", STATUS, [session_p, c_uint64, out_str]),
    ("dsh_session_header", STATUS, [session_p, out_str]),
    ("dsh_session_messages", STATUS, [session_p, out_str]),
    ("dsh_session_background_error", STATUS, [session_p, out_str]),
    ("dsh_session_close", STATUS, [session_p]),
    ("dsh_session_free", None, [session_p]),
    # plan mode
    ("dsh_plan_new", STATUS, [c_char_p, POINTER(plan_p)]),
    ("dsh_plan_free", None, [plan_p]),
    ("dsh_plan_get", STATUS, [plan_p, session_p, out_str]),
    ("dsh_plan_set", STATUS, [plan_p, session_p, c_bool, out_str]),
    ("dsh_plan_pre_step", STATUS, [plan_p, session_p, out_str]),
    ("dsh_plan_section", STATUS, [plan_p, session_p, out_str]),
    ("dsh_plan_command", STATUS, [plan_p, session_p, c_char_p, c_bool, out_str]),
    ("dsh_plan_exit_check", STATUS, [plan_p, session_p, c_char_p, out_str]),
    ("dsh_plan_exit_answer", STATUS, [plan_p, session_p, c_char_p, out_str]),
    ("dsh_plan_project", STATUS, [c_char_p, out_str]),
]


def _library_file_name() -> str:
    if sys.platform == "darwin":
        return "libdsh_persist.dylib"
    if sys.platform.startswith("win"):
        return "dsh_persist.dll"
    return "libdsh_persist.so"


def candidate_paths() -> List[Path]:
    """Where the library is looked for, in order (see the module docs)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [Path(env)]
    name = _library_file_name()
    here = Path(__file__).resolve()
    return [here.parent / name, here.parents[3] / "target" / "release" / name]


def _load() -> Tuple[ctypes.CDLL, Path]:
    tried = []
    for path in candidate_paths():
        if not path.exists():
            tried.append(f"{path} (missing)")
            continue
        try:
            return ctypes.CDLL(str(path)), path
        except OSError as e:
            raise ImportError(f"dsh_persist: cannot load {path}: {e}") from e
    raise ImportError(
        "dsh_persist: libdsh_persist not found; build it with `cargo build --release` "
        f"or set {ENV_VAR} to its path. Tried: " + "; ".join(tried)
    )


def _check_status(result: int, func: Any, arguments: Tuple[Any, ...]) -> Tuple[Any, ...]:
    """errcheck of every status function: raise on anything but DSH_OK.

    Runs on the calling thread right after the call, before any other dsh_*
    call, so the thread-local last error belongs to this failure.
    """
    if result == DSH_OK:
        return arguments
    message = (lib.dsh_last_error() or b"").decode("utf-8", "replace")
    code = (lib.dsh_last_error_code() or b"").decode("utf-8", "replace")
    raise error_for_status(result, message or f"{func.__name__} failed with status {result}", code)


def _declare(cdll: ctypes.CDLL) -> None:
    for name, restype, argtypes in DECLARATIONS:
        fn = getattr(cdll, name)
        fn.argtypes = list(argtypes)
        if restype is STATUS:
            fn.restype = c_int
            fn.errcheck = _check_status
        else:
            fn.restype = restype


def _check_version(cdll: ctypes.CDLL, path: Path) -> str:
    found = cdll.dsh_version().decode("utf-8", "replace")
    if found.split(".")[:2] != __version__.split(".")[:2]:
        raise ImportError(
            f"dsh_persist {__version__} needs libdsh_persist {'.'.join(__version__.split('.')[:2])}.x, "
            f"but {path} is version {found}; rebuild the library or install the matching package"
        )
    return found


lib, library_path = _load()
_declare(lib)
library_version = _check_version(lib, library_path)


# ---------------------------------------------------------------------------
# argument and result conversion


def encode_text(value: Any, name: str) -> bytes:
    """A ``str`` argument as NUL-terminated UTF-8.

    Lone surrogates pass through as their (invalid) UTF-8 bytes so the library
    rejects them with its own message (SPEC §1.3). Embedded NULs would
    silently truncate the C string and are refused here.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    data = value.encode("utf-8", "surrogatepass")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InvalidArgumentError(1, f"`{name}` contains a NUL character at byte {nul}")
    return data


def encode_optional_text(value: Any, name: str) -> Optional[bytes]:
    return None if value is None else encode_text(value, name)


def dumps(value: Any) -> str:
    """JSON text of a Python value, as the library expects it (UTF-8, compact)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_json(value: Any, name: str, containers: Tuple[type, ...]) -> bytes:
    """A JSON argument: a ``str`` is taken as JSON text as is; a value of one of
    ``containers`` is serialized. Anything else is a ``TypeError``."""
    if isinstance(value, str):
        return encode_text(value, name)
    if isinstance(value, containers):
        return encode_text(dumps(value), name)
    kinds = " or ".join(t.__name__ for t in containers + (str,))
    raise TypeError(f"{name} must be a {kinds} (JSON text), not {type(value).__name__}")


def check_uint(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise InvalidArgumentError(1, f"{name} must be a non-negative integer, got {value}")
    return value


def check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def call_owned_text(fn: Any, *args: Any) -> Optional[str]:
    """Calls ``fn(*args, &out)`` and returns the owned string (``None`` for a
    NULL result), always releasing it with ``dsh_free``."""
    out = c_void_p()
    fn(*args, ctypes.byref(out))
    try:
        if out.value is None:
            return None
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.dsh_free(out)


def loads(text: Optional[str]) -> Any:
    return None if text is None else json.loads(text)


def required(text: Optional[str], fn: Any) -> str:
    """A result the C contract never leaves NULL."""
    if text is None:
        raise InvariantError(9, f"{fn.__name__} returned DSH_OK with a NULL result")
    return text
