"""Session management (issue 19): delete, prune, salvage, import_jsonl on
every backend the Python tests run (JSONL zstd, JSONL raw, SQLite)."""

import json

import pytest

from dsh_persist import BusyError, ConflictError, InvalidArgumentError, NotFoundError
from conftest import complete_turn, user_message


def turn_events(turn, first, time=5):
    return [
        {"type": "turn/start", "seq": first, "time": time, "data": {"turn": turn}},
        {
            "type": "user/message",
            "seq": first + 1,
            "time": time,
            "data": user_message(f"u{turn}", "hi"),
            "surfaceOp": "append",
        },
        {
            "type": "turn/end",
            "seq": first + 2,
            "time": time,
            "data": {"turn": turn, "reason": {"kind": "completed"}},
        },
    ]


def stored(store, sid, turns=1):
    store.create({"id": sid, "createdAt": 1, "cwd": "/p"})
    for t in range(turns):
        store.append(sid, turn_events(t + 1, 3 * t))


def ids(store):
    return sorted(h["id"] for h in store.list())


def test_delete_frees_the_id_and_refuses_live_sessions(store):
    stored(store, "a")
    stored(store, "b")
    live = store.resume("b")
    with pytest.raises(BusyError):
        store.delete("b")
    live.close()
    store.delete("a")
    store.delete("b")
    assert ids(store) == []
    with pytest.raises(NotFoundError):
        store.delete("a")
    stored(store, "a")  # free again
    assert len(store.load("a")["events"]) == 3


def test_prune_dry_run_then_for_real(store):
    for sid in ["x", "y", "z"]:
        stored(store, sid)
    report = store.prune(keep_newest=1, dry_run=True)
    assert report["dryRun"] is True and len(report["deleted"]) == 2
    assert report["kept"] == 1 and len(ids(store)) == 3
    report = store.prune(keep_newest=1)
    assert len(report["deleted"]) == 2 and len(ids(store)) == 1
    raw = json.loads(store.prune_raw(older_than_days=10000, keep_newest=1))
    assert raw["deleted"] == []
    with pytest.raises(InvalidArgumentError):
        store.prune()


def test_salvage_closes_an_open_turn_and_keeps_the_source(store):
    events = turn_events(1, 0) + [{"type": "turn/start", "seq": 3, "time": 6, "data": {"turn": 2}}]
    store.create({"id": "open", "createdAt": 1})
    store.append("open", events)
    r = store.salvage("open", "closed")
    assert (r["keptEvents"], r["closers"], r["stopped"]) == (4, 1, None)
    assert store.inspect("closed")["events"][-1]["type"] == "turn/end"
    assert len(store.read_from("open")["events"]) == 4
    with pytest.raises(ConflictError):
        store.salvage("open", "closed")
    with pytest.raises(NotFoundError):
        store.salvage("nope", "n")


def test_import_jsonl_all_or_nothing(store):
    with store.start({"id": "orig", "cwd": "/w"}) as live:
        complete_turn(live, 1)
    want = store.load("orig")["events"]
    lines = "\n".join(json.dumps(e) for e in want)
    r = store.import_jsonl("copy", lines)
    assert r == {"id": "copy", "events": len(want), "hadHeader": False}
    assert store.load("copy")["events"] == want
    bad = "\n".join(json.dumps(e) for e in want[1:])
    with pytest.raises(InvalidArgumentError):
        store.import_jsonl("bad", bad)
    assert "bad" not in ids(store)
    store.create({"id": "bad"})  # never taken
