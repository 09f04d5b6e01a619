"""Loading ``libdsh_persist`` and declaring every C function of its C ABI.

Search order for the shared library:

1. the path in the ``DSH_PERSIST_LIB`` environment variable (nothing else is
   tried when it is set, so a wrong path fails loudly);
2. the package directory, where a wheel carries the library (an installed
   package needs no environment variable);
3. in a checkout of the repository only, the crate's ``target/release``
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
from ctypes import POINTER, c_bool, c_char_p, c_int, c_int64, c_uint32, c_uint64, c_void_p
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


class dsh_follow(ctypes.Structure):
    """Opaque ``dsh_follow`` (used only through ``POINTER``)."""


class dsh_cancel(ctypes.Structure):
    """Opaque ``dsh_cancel`` (used only through ``POINTER``)."""


class dsh_error(ctypes.Structure):
    """Opaque ``dsh_error`` (used only through ``POINTER``)."""


class dsh_result(ctypes.Structure):
    """Opaque ``dsh_result`` (used only through ``POINTER``)."""


store_p = POINTER(dsh_store)
session_p = POINTER(dsh_session)
plan_p = POINTER(dsh_plan)
follow_p = POINTER(dsh_follow)
cancel_p = POINTER(dsh_cancel)
error_p = POINTER(dsh_error)
result_p = POINTER(dsh_result)
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
    # ids a C string cannot carry (U+0000, lone surrogates), as JSON string text
    ("dsh_store_load_id_json", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_inspect_id_json", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_read_from_id_json", STATUS, [store_p, c_char_p, c_uint64, out_str]),
    ("dsh_store_read_raw_id_json", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_delete_id_json", STATUS, [store_p, c_char_p]),
    # session management (issue 19)
    ("dsh_store_delete", STATUS, [store_p, c_char_p]),
    ("dsh_store_prune", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_salvage", STATUS, [store_p, c_char_p, c_char_p, out_str]),
    ("dsh_store_import", STATUS, [store_p, c_char_p, c_char_p, out_str]),
    # catalog reads
    ("dsh_store_list_summaries", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_search", STATUS, [store_p, c_char_p, out_str]),
    ("dsh_store_export", STATUS, [store_p, c_char_p, c_char_p, out_str]),
    ("dsh_follow_open", STATUS, [store_p, c_char_p, c_int64, POINTER(follow_p)]),
    ("dsh_follow_next", STATUS, [follow_p, c_uint32, out_str]),
    ("dsh_follow_close", STATUS, [follow_p]),
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
    # cancel tokens, error objects and the _ex forms (issue 18; dsh_persist.aio)
    ("dsh_cancel_new", STATUS, [POINTER(cancel_p)]),
    ("dsh_cancel_cancel", STATUS, [cancel_p]),
    ("dsh_cancel_free", STATUS, [cancel_p]),
    ("dsh_error_status", c_int, [error_p]),
    ("dsh_error_message", c_char_p, [error_p]),
    ("dsh_error_code", c_char_p, [error_p]),
    ("dsh_error_free", STATUS, [error_p]),
    ("dsh_store_open_ex", STATUS, [c_char_p, POINTER(store_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_close_ex", STATUS, [store_p, cancel_p, POINTER(error_p)]),
    ("dsh_store_create_ex", STATUS, [store_p, c_char_p, cancel_p, POINTER(error_p)]),
    ("dsh_store_append_ex", STATUS, [store_p, c_char_p, c_char_p, cancel_p, POINTER(error_p)]),
    ("dsh_store_load_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_inspect_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_read_from_ex", STATUS, [store_p, c_char_p, c_uint64, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_read_raw_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_list_ex", STATUS, [store_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_list_snapshots_ex", STATUS, [store_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_session_start_ex", STATUS, [store_p, c_char_p, POINTER(session_p), cancel_p, POINTER(error_p)]),
    ("dsh_session_resume_ex", STATUS, [store_p, c_char_p, POINTER(session_p), cancel_p, POINTER(error_p)]),
    ("dsh_session_fork_ex", STATUS, [store_p, c_char_p, c_int64, c_char_p, POINTER(session_p), cancel_p, POINTER(error_p)]),
    ("dsh_session_flush_ex", STATUS, [session_p, cancel_p, POINTER(error_p)]),
    ("dsh_session_close_ex", STATUS, [session_p, cancel_p, POINTER(error_p)]),
    ("dsh_plan_set_ex", STATUS, [plan_p, session_p, c_bool, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_plan_pre_step_ex", STATUS, [plan_p, session_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_plan_command_ex", STATUS, [plan_p, session_p, c_char_p, c_bool, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_plan_exit_check_ex", STATUS, [plan_p, session_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_plan_exit_answer_ex", STATUS, [plan_p, session_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_delete_ex", STATUS, [store_p, c_char_p, cancel_p, POINTER(error_p)]),
    ("dsh_store_prune_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_salvage_ex", STATUS, [store_p, c_char_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_import_ex", STATUS, [store_p, c_char_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_list_summaries_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_search_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_export_ex", STATUS, [store_p, c_char_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    # paged results (dsh_persist.aio)
    ("dsh_store_load_paged_ex", STATUS, [store_p, c_char_p, POINTER(result_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_inspect_paged_ex", STATUS, [store_p, c_char_p, POINTER(result_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_read_from_paged_ex", STATUS, [store_p, c_char_p, c_uint64, POINTER(result_p), cancel_p, POINTER(error_p)]),
    # the same for ids a C string cannot carry (id as JSON string text)
    ("dsh_store_load_id_json_paged_ex", STATUS, [store_p, c_char_p, POINTER(result_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_inspect_id_json_paged_ex", STATUS, [store_p, c_char_p, POINTER(result_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_read_from_id_json_paged_ex", STATUS, [store_p, c_char_p, c_uint64, POINTER(result_p), cancel_p, POINTER(error_p)]),
    ("dsh_store_read_raw_id_json_ex", STATUS, [store_p, c_char_p, out_str, cancel_p, POINTER(error_p)]),
    ("dsh_store_delete_id_json_ex", STATUS, [store_p, c_char_p, cancel_p, POINTER(error_p)]),
    ("dsh_result_count", STATUS, [result_p, POINTER(c_uint64), POINTER(c_uint64)]),
    ("dsh_result_head", STATUS, [result_p, out_str]),
    ("dsh_result_page", STATUS, [result_p, c_uint64, c_uint64, out_str, POINTER(c_uint64)]),
    ("dsh_result_text", STATUS, [result_p, c_uint64, c_uint64, out_str, POINTER(c_uint64)]),
    ("dsh_result_free", STATUS, [result_p]),
    ("dsh_result_live", c_uint64, []),
]


def _library_file_name() -> str:
    if sys.platform == "darwin":
        return "libdsh_persist.dylib"
    if sys.platform.startswith("win"):
        return "dsh_persist.dll"
    return "libdsh_persist.so"


def _checkout_root() -> Optional[Path]:
    """The repository root when this package is imported from a checkout
    (``<repo>/bindings/python/dsh_persist``), else ``None``."""
    here = Path(__file__).resolve()
    if len(here.parents) < 4:
        return None
    root = here.parents[3]
    if (root / "Cargo.toml").is_file() and (root / "include" / "dsh_persist.h").is_file():
        return root
    return None


def candidate_paths() -> List[Path]:
    """Where the library is looked for, in order (see the module docs)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [Path(env)]
    name = _library_file_name()
    paths = [Path(__file__).resolve().parent / name]
    root = _checkout_root()
    if root is not None:
        paths.append(root / "target" / "release" / name)
    return paths


def _not_found_message(tried: List[str]) -> str:
    name = _library_file_name()
    lines = ["dsh_persist: libdsh_persist not found. Tried: " + "; ".join(tried) + "."]
    if os.environ.get(ENV_VAR):
        lines.append(f"{ENV_VAR} is set, so nothing else was tried: point it at a built {name} or unset it.")
    elif _checkout_root() is not None:
        root = _checkout_root()
        lines.append(
            f"This is a checkout of dsh-persist: build the library with `cargo build --release` in {root}, "
            "or install the package with `pip install bindings/python` (it builds the library with cargo)."
        )
    else:
        lines.append(
            "The installed package carries no library. Reinstall it from a wheel for your platform "
            "(`scripts/package.sh` in the repository writes `dist/dsh_persist-*.whl`) or from the source "
            "distribution with Rust's cargo on PATH (https://rustup.rs; it builds the library), "
            f"or set {ENV_VAR} to the path of a built {name}."
        )
    return "\n".join(lines)


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
    raise ImportError(_not_found_message(tried))


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
    rejects them with its own message. Embedded NULs would
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
    """:func:`encode_text`, with ``None`` passed through (a NULL argument)."""
    return None if value is None else encode_text(value, name)


def dumps(value: Any) -> str:
    """JSON text of a Python value, as the library expects it (UTF-8, compact)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


CONFIG_PATH_KEYS = ("root", "path", "cacheDir", "sslRootCert", "sslCert", "sslKey")
HEADER_PATH_KEYS = ("cwd",)


def with_text_paths(value: Any, keys: Tuple[str, ...]) -> Any:
    """``value`` with the path fields ``keys`` of a dict turned into ``str``
    when they are :class:`os.PathLike` (``pathlib.Path`` and the like); a copy,
    the caller's dict is not changed. Anything else is returned as is."""
    if not isinstance(value, dict) or not any(isinstance(value.get(k), os.PathLike) for k in keys):
        return value
    copy = dict(value)
    for key in keys:
        if isinstance(copy.get(key), os.PathLike):
            copy[key] = os.fsdecode(copy[key])
    return copy


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
    """A ``uint64_t`` argument: an ``int`` (not a ``bool``) in ``0 .. 2**64-1``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < 2**64:
        raise InvalidArgumentError(1, f"{name} must be a non-negative integer, got {value}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """A ``bool`` argument (no truthy stand-ins)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def call_owned_text(fn: Any, *args: Any, after: tuple = ()) -> Optional[str]:
    """Calls ``fn(*args, &out, *after)`` and returns the owned string
    (``None`` for a NULL result), always releasing it with ``dsh_free``."""
    out = c_void_p()
    fn(*args, ctypes.byref(out), *after)
    try:
        if out.value is None:
            return None
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.dsh_free(out)


def loads(text: Optional[str]) -> Any:
    """``json.loads`` of a result, ``None`` for a NULL result."""
    return None if text is None else json.loads(text)


def required(text: Optional[str], fn: Any) -> str:
    """A result the C contract never leaves NULL."""
    if text is None:
        raise InvariantError(9, f"{fn.__name__} returned DSH_OK with a NULL result")
    return text
