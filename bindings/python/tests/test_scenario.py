"""The full scenario on every backend: create, live turns with tool calls,
flush, a crash (child process exiting mid-turn without closing), resume with
repair, fork, list and snapshots."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dsh_persist
from dsh_persist import ConflictError, InvalidArgumentError, NotFoundError
from conv import complete_turn, tool_call, types, user_message

TESTS = Path(__file__).resolve().parent
PYTHON_DIR = TESTS.parent

CHILD = textwrap.dedent(
    """
    import json, os, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import dsh_persist
    from conv import complete_turn, open_turn_with_call, tool_result
    config, sid = json.loads(sys.argv[3]), sys.argv[4]
    store = dsh_persist.Store.open(config)
    s = store.start({"id": sid, "cwd": "/work/project"})
    complete_turn(s, 1)
    open_turn_with_call(s, 2)
    s.flush()                      # turn 2 is open on disk, tool/call recorded
    s.append("tool/result", tool_result(2, 1, "call-2", "never durable"), surface_op="append")
    print(json.dumps({"seq": len(s.events())}), flush=True)
    os._exit(0)                    # crash: no flush, no close
    """
)


def run_crashing_child(config, sid):
    """Runs a Python child that writes turn 1, leaves turn 2 open and exits
    with os._exit(0) mid-turn; returns how many events it had appended."""
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(PYTHON_DIR), str(TESTS), json.dumps(config), sid],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])["seq"]


def test_full_scenario(backend, tmp_path):
    from conftest import config_for

    config = config_for(backend, tmp_path, writeBatchMaxDelayMs=60000)

    # 1. store-level create + append of whole events
    with dsh_persist.Store.open(config) as store:
        store.create({"id": "cold", "createdAt": 1, "cwd": "/work/project"})
        store.append(
            "cold",
            [
                {"type": "turn/start", "seq": 0, "time": 10, "data": {"turn": 1}},
                {"type": "turn/end", "seq": 1, "time": 11, "data": {"turn": 1, "reason": {"kind": "completed"}}},
            ],
        )
        assert [h["id"] for h in store.list()] == ["cold"]
        with pytest.raises(ConflictError) as e:
            store.create({"id": "cold"})
        assert e.value.code == "SESSION_ALREADY_EXISTS"
        assert types(store.load("cold")["events"]) == ["turn/start", "turn/end"]

    # 2. a child process crashes mid-turn
    appended = run_crashing_child(config, "crashy")
    assert appended == 25  # 15 events of turn 1 + 9 of turn 2 + the lost tool/result

    with dsh_persist.Store.open(config) as store:
        # inspect: closers in memory only
        inspected = store.inspect("crashy")["events"]
        assert [e["seq"] for e in inspected] == list(range(len(inspected)))
        assert types(inspected[-3:]) == ["tool/result", "step/end", "turn/end"]
        before = store.read_from("crashy", 0)["events"]
        assert len(before) == 24  # the unflushed tool/result was lost
        assert types(before)[-1] == "tool/call"

        # 3. resume repairs: synthetic tool/result + step/end + turn/end interrupted
        with store.resume("crashy") as s:
            events = s.events()
            synthetic = events[24]
            assert synthetic["type"] == "tool/result"
            assert synthetic["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
            assert synthetic["data"]["message"]["source"] == {"kind": "tool", "callId": "call-2"}
            assert synthetic["sourceEventSeqs"] == [23]
            assert events[25]["type"] == "step/end"
            assert events[26]["type"] == "turn/end"
            assert events[26]["data"]["reason"] == {"kind": "interrupted"}
            assert types(events[27:]) == ["session/end-seed"]
            assert s.header["id"] == "crashy"
            # the repaired transcript has the synthetic result
            msgs = s.messages()
            assert msgs[-1]["content"][0]["toolCallId"] == "call-2"
            assert msgs[-1]["content"][0]["isError"] is True
            # a live id cannot be resumed twice
            with pytest.raises(ConflictError):
                store.resume("crashy")
            end3 = complete_turn(s, 3)
            s.flush()
            assert store.read_from("crashy", end3)["events"][0]["type"] == "turn/end"

        loaded = store.load("crashy")
        assert len(loaded["events"]) == end3 + 1
        assert loaded["meta"]["id"] == "crashy"

        # 4. fork: the child is seeded with the prefix and a session/end-seed marker
        with store.fork("crashy", 14, {"id": "child", "createdAt": 5}) as child:
            header = child.header
            assert header["parentSession"] == "crashy"
            assert header["seedLength"] == 15
            assert header["cwd"] == "/work/project"
            assert types(child.events())[14:] == ["turn/end", "session/end-seed"]
            complete_turn(child, 2)
        forked = store.load("child")["events"]
        assert forked[:15] == loaded["events"][:15]

        with store.fork("crashy") as gen:  # boundary -1, generated id
            assert gen.header["parentSession"] == "crashy"
            assert gen.header["seedLength"] == len(loaded["events"])
            gen_id = gen.id
        with pytest.raises(InvalidArgumentError) as e:
            store.fork("crashy", 5)
        assert e.value.code == "OPEN_TURN"
        with pytest.raises(InvalidArgumentError) as e:
            store.fork("crashy", 10_000)
        assert e.value.code == "INVALID_BOUNDARY"
        with pytest.raises(NotFoundError) as e:
            store.fork("nobody")
        assert e.value.code == "SESSION_NOT_FOUND"

        # 5. list and snapshots
        ids = sorted(h["id"] for h in store.list())
        assert ids == sorted(["cold", "crashy", "child", gen_id])
        snaps = store.list_snapshots()
        assert sorted(s["header"]["id"] for s in snaps) == ids
        assert all(isinstance(s["revision"], str) and s["revision"] for s in snaps)
        rev = {s["header"]["id"]: s["revision"] for s in snaps}
        with store.resume("cold") as s:
            complete_turn(s, 2)
        rev_after = {s["header"]["id"]: s["revision"] for s in store.list_snapshots()}
        assert rev_after["cold"] != rev["cold"]
        assert rev_after["crashy"] == rev["crashy"]

        # raw text variants agree with the decoded ones
        assert json.loads(store.load_raw("crashy")) == store.load("crashy")
        assert json.loads(store.list_raw()) == store.list()


def test_jsonl_locate_and_read_raw(tmp_path):
    from conftest import config_for

    with dsh_persist.Store.open(config_for("jsonl", tmp_path)) as store:
        where = store.locate({"id": "a/b", "cwd": "/home/me/my proj"})
        assert where["kind"] == "jsonl"
        assert where["path"].endswith("--home-me-my~0020proj--/a~002Fb/session.jsonl.zstd")
        assert store.read_raw("a/b") is None
        with store.start({"id": "a/b", "cwd": "/home/me/my proj", "createdAt": 7}) as s:
            complete_turn(s, 1)
        raw = store.read_raw("a/b")
        assert raw["filename"] == "session.jsonl"
        lines = raw["content"].splitlines()
        assert json.loads(lines[0]) == {
            "type": "session", "version": 0, "id": "a/b", "createdAt": 7,
            "cwd": "/home/me/my proj", "delegationDepth": 0,
        }
        assert len(lines) > 2
        assert Path(where["path"]).exists()


def test_sqlite_has_no_location_and_no_raw(tmp_path):
    from conftest import config_for

    with dsh_persist.Store.open(config_for("sqlite", tmp_path)) as store:
        assert store.locate({"id": "x"}) is None
        assert store.locate_raw({"id": "x"}) in (None, "null")
        with pytest.raises(dsh_persist.UnsupportedError):
            store.read_raw("x")


def test_store_level_append_validates(store):
    store.create({"id": "s"})
    with pytest.raises(InvalidArgumentError):
        store.append("s", [{"type": "turn/start", "seq": 5, "time": 0, "data": {"turn": 1}}])
    with pytest.raises(NotFoundError):
        store.append("missing", [{"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}])


def test_session_events_from_and_user_message(store):
    with store.start({"id": "s"}) as s:
        assert s.append("user/message", user_message("m1", "hello"), surface_op="append") == 0
        s.append("turn/start", {"turn": 1})
        s.append("step/start", {"turn": 1, "step": 1})
        s.append("tool/call", tool_call(1, 1, "c1"))
        assert [e["seq"] for e in s.events(2)] == [2, 3]
        assert s.events(99) == []
        assert s.messages() == [user_message("m1", "hello")]
        assert s.background_error() is None
