"""Every reachable status becomes its exception class, with status, kind,
code and the library's message; wrong argument types are TypeErrors."""

import ctypes
import json
import subprocess
import sys
import time

import pytest

from dsh_persist import (
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
    PlanMode,
    Store,
    UnsupportedError,
)
from dsh_persist import _errors, _lib
from conftest import config_for
from conv import complete_turn


def check(err, cls, status, kind):
    assert type(err) is cls
    assert isinstance(err, DshError)
    assert err.status == status
    assert err.kind == kind
    assert str(err) == err.message and err.message


def test_invalid_argument(tmp_path):
    with pytest.raises(InvalidArgumentError) as e:
        Store.open('{"backend": "jsonl"')
    check(e.value, InvalidArgumentError, 1, "invalid_argument")
    assert isinstance(e.value, ValueError)
    with pytest.raises(InvalidArgumentError) as e:
        Store.open({"backend": "jsonl", "root": str(tmp_path), "bogus": 1})
    assert "bogus" in e.value.message
    with Store.open(config_for("jsonl", tmp_path)) as store:
        with pytest.raises(InvalidArgumentError) as e:
            store.create({"id": "x", "createdAt": -1})
        assert "createdAt" in e.value.message
        # a lone surrogate reaches the library as invalid UTF-8 and is refused
        # there (the reads take such an id as JSON text: test_ids.py)
        with pytest.raises(InvalidArgumentError) as e:
            store.append("bad\ud800id", [])
        assert "UTF-8" in e.value.message
        with store.start({"id": "s"}) as s:
            with pytest.raises(InvalidArgumentError) as e:
                s.append("turn/start", {"turn": 1, "x": float("nan")})
            with pytest.raises(InvalidArgumentError) as e:
                s.append("turn/start", {"turn": 1, "x": -0.0})
            assert "losslessly JSON-serializable" in e.value.message
            assert '"turn/start"' in e.value.message
            with pytest.raises(InvalidArgumentError) as e:
                s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            with pytest.raises(InvalidArgumentError) as e:
                s.append_raw("turn/start", '{"turn":1}', surface_op="append")  # surfaceOp on a non-surface type
            assert "surfaceOp" in e.value.message
            # a NUL inside a str would silently truncate the C string: refused here
            with pytest.raises(InvalidArgumentError) as e:
                s.append("turn/\0start", {"turn": 1})
            assert "NUL" in e.value.message


def test_not_found_conflict_unsupported(tmp_path):
    with Store.open(config_for("sqlite", tmp_path)) as store:
        with pytest.raises(NotFoundError) as e:
            store.load("nope")
        check(e.value, NotFoundError, 2, "not_found")
        with pytest.raises(NotFoundError):
            store.resume("nope")
        with pytest.raises(NotFoundError):
            store.read_from("nope", 0)
        store.create({"id": "dup"})
        with pytest.raises(ConflictError) as e:
            store.start({"id": "dup"})
        check(e.value, ConflictError, 3, "conflict")
        assert e.value.code == "SESSION_ALREADY_EXISTS"
        with pytest.raises(UnsupportedError) as e:
            store.read_raw("dup")
        check(e.value, UnsupportedError, 10, "unsupported")


def write_none_log(tmp_path, lines):
    """A compression-none JSONL root holding one session `s` with these lines."""
    config = config_for("jsonl-none", tmp_path)
    with Store.open(config) as store:
        with store.start({"id": "s", "createdAt": 1}) as s:
            complete_turn(s, 1)
        path = store.locate({"id": "s"})["path"]
    with open(path) as f:
        content = f.read().splitlines()
    content = lines(content)
    with open(path, "w") as f:
        f.write("\n".join(content) + "\n")
    return config


def test_corruption(tmp_path):
    # an unparsable committed line followed by a later turn/end
    config = write_none_log(tmp_path, lambda c: c[:3] + ["{not json"] + c[3:])
    with Store.open(config) as store:
        with pytest.raises(CorruptionError) as e:
            store.load("s")
        check(e.value, CorruptionError, 4, "corruption")
        assert "line" in e.value.message


def test_format_unsupported(tmp_path):
    unknown = json.dumps({"type": "future/thing", "seq": 15, "time": 1, "data": {}})
    config = write_none_log(tmp_path, lambda c: c + [unknown])
    with Store.open(config) as store:
        with pytest.raises(FormatUnsupportedError) as e:
            store.load("s")
        check(e.value, FormatUnsupportedError, 5, "format_unsupported")
        assert "future/thing" in e.value.message
    # the host may register the type
    with Store.open(dict(config, extraEventTypes=["future/thing"])) as store:
        assert store.load("s")["events"][-1]["type"] == "future/thing"


def test_io(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    # (A missing SQLite parent directory is no error: it is created at the
    # first write, like the original's.)
    with pytest.raises(DshIOError) as e:
        Store.open({"backend": "jsonl", "root": str(afile / "root")})
    check(e.value, DshIOError, 6, "io")
    with pytest.raises(DshIOError):
        with Store.open({"backend": "jsonl", "root": str(afile)}) as store:
            store.create({"id": "a"})
            store.append("a", [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])


def test_background_error(tmp_path):
    root = tmp_path / "root"
    with Store.open({"backend": "jsonl", "root": str(root), "writeBatchMaxDelayMs": 10}) as store:
        s = store.start({"id": "s", "cwd": "/p"})
        root.rename(tmp_path / "moved")
        root.write_text("now a file")  # the project directory cannot be created
        s.append("turn/start", {"turn": 1})
        deadline = time.time() + 10
        while s.background_error() is None and time.time() < deadline:
            time.sleep(0.02)
        err = s.background_error()
        assert err["kind"] == "io" and err["message"]
        with pytest.raises(DshIOError):
            s.flush()
        root.unlink()
        (tmp_path / "moved").rename(root)
        s.flush()
        assert s.background_error() is None
        s.close()


LOCK_HOLDER = """
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
c.execute("ROLLBACK")
"""


def test_busy(tmp_path):
    # The lock is held by another process: two copies of SQLite in one process
    # (Python's sqlite3 and the library's) do not see each other's POSIX locks.
    path = tmp_path / "s.db"
    with Store.open({"backend": "sqlite", "path": str(path), "busyTimeoutMs": 50}) as store:
        # The first write creates the database (mode 0600) before the holder
        # opens it.
        store.create({"id": "z"})
        store.append("z", [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])
        store.create({"id": "a"})
        holder = subprocess.Popen(
            [sys.executable, "-c", LOCK_HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout.readline().strip() == "locked"
            with pytest.raises(BusyError) as e:
                store.append("a", [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])
            check(e.value, BusyError, 7, "busy")
        finally:
            holder.communicate("\n", timeout=30)
        store.append("a", [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])


def test_closed_from_the_library(tmp_path):
    store = Store.open(config_for("jsonl", tmp_path))
    s = store.start({"id": "s"})
    s.append("turn/start", {"turn": 1})
    store.close()
    with pytest.raises(ClosedError) as e:
        s.append("step/start", {"turn": 1, "step": 1})
    check(e.value, ClosedError, 8, "closed")
    assert "this session is closed" not in e.value.message  # the library's own message
    s.close()  # still releases the handle


def test_invariant(tmp_path):
    # a result text with a NUL character cannot be a C string
    with Store.open(config_for("jsonl", tmp_path)) as store, PlanMode({"section": "a\u0000b"}) as plan:
        with store.start({"id": "s"}) as s:
            assert plan.section(s) == ""
            plan.set(s, True)
            with pytest.raises(InvariantError) as e:
                plan.section(s)
            check(e.value, InvariantError, 9, "invariant")
            assert "NUL" in e.value.message


def test_status_mapping_of_unreachable_statuses():
    # DSH_PANIC needs a test-only panicking entry point (not in a release
    # build); the mapping is checked directly.
    for status, cls, kind in [(9, InvariantError, "invariant"), (99, DshPanicError, "panic")]:
        err = _errors.error_for_status(status, "boom", "")
        check(err, cls, status, kind)
        assert err.code is None
    unknown = _errors.error_for_status(42, "from the future", "X")
    assert type(unknown) is DshError and unknown.kind == "unknown" and unknown.code == "X"


def test_errcheck_reads_the_last_error_of_this_thread():
    with pytest.raises(DshPanicError) as e:
        _lib._check_status(99, _lib.lib.dsh_store_open, ())
    assert e.value.message == "dsh_store_open failed with status 99"  # no message was set


def test_wrong_argument_types(tmp_path):
    with pytest.raises(TypeError):
        Store.open(None)
    with pytest.raises(TypeError):
        Store.open(["backend"])
    with Store.open(config_for("jsonl", tmp_path)) as store:
        with pytest.raises(TypeError):
            store.load(42)
        with pytest.raises(TypeError):
            store.create(["id"])
        with pytest.raises(TypeError):
            store.append("x", {"not": "a list"})
        with pytest.raises(TypeError):
            store.read_from("x", "0")
        with pytest.raises(TypeError):
            store.read_from("x", True)
        with pytest.raises(InvalidArgumentError):
            store.read_from("x", -1)
        with pytest.raises(TypeError):
            store.fork("x", 1.5)
        with pytest.raises(InvalidArgumentError):
            store.fork("x", -2)
        with store.start({"id": "s"}) as s:
            with pytest.raises(TypeError):
                s.append(1, {})
            with pytest.raises(TypeError):
                s.append_raw("turn/start", {"turn": 1})
            with pytest.raises(TypeError):
                s.append("turn/start", {"turn": 1}, ignorable="yes")
            with pytest.raises(TypeError):
                s.append("user/message", {}, source_event_seqs="1")
            with pytest.raises(TypeError):
                s.events(None)
            with pytest.raises(TypeError):
                s.append("turn/start", {1j: 1})  # not JSON-serializable
            plan = PlanMode({"section": "S"})
            with pytest.raises(TypeError):
                plan.get(store)
            with pytest.raises(TypeError):
                plan.set(s, 1)
            with pytest.raises(TypeError):
                plan.command(s, "", has_attachments=None)
            plan.close()
            # the declaration table types the handles: a store is not a session
            with store._use() as store_ptr:
                with pytest.raises(ctypes.ArgumentError):
                    _lib.lib.dsh_session_flush(store_ptr)
            with pytest.raises(ctypes.ArgumentError):
                _lib.lib.dsh_store_load(None, "x", None)  # str, not bytes
