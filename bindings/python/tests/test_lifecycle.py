"""Handles: close twice, use after close, finalizers, several threads on one
store, and close waiting for calls in flight on other threads."""

import gc
import os
import threading

import pytest

import dsh_persist
from dsh_persist import ClosedError, PlanMode, Store
from conv import complete_turn, types


def test_close_twice_and_use_after_close(config):
    store = Store.open(config)
    s = store.start({"id": "s"})
    plan = PlanMode({"section": "S"})
    for handle in (s, plan, store):
        handle.close()
        handle.close()  # idempotent
        assert handle.closed
    with pytest.raises(ClosedError) as e:
        store.list()
    assert e.value.status == 8 and e.value.message == "this store is closed"
    assert isinstance(e.value, ValueError)
    with pytest.raises(ClosedError):
        s.append("turn/start", {"turn": 1})
    with pytest.raises(ClosedError):
        s.header
    with pytest.raises(ClosedError):
        plan.section(s)
    with pytest.raises(ClosedError):
        store.start({"id": "t"})
    # context managers close too
    with Store.open(config) as again:
        with again.start({"id": "u"}) as u:
            u.append("turn/start", {"turn": 1})
        assert u.closed
    assert again.closed


def test_consume_transfers_ownership(config):
    store = Store.open(config)
    ptr = store._consume()
    assert store.closed
    with pytest.raises(ClosedError):
        store._consume()
    dsh_persist._lib.lib.dsh_store_close(ptr)


def test_finalizer_closes_and_never_raises(config):
    s = Store.open(config).start({"id": "fin"})
    s.append("turn/start", {"turn": 1})
    del s
    gc.collect()
    # the finalizer drained and released the id: it can be resumed again
    with Store.open(config) as store:
        with store.resume("fin") as again:
            assert types(again.events())[:1] == ["turn/start"]
    broken = Store.__new__(Store)  # never initialised: __del__ must not raise
    del broken
    gc.collect()


def test_session_keeps_its_store_alive(config):
    s = Store.open(config).start({"id": "kept"})
    gc.collect()
    complete_turn(s, 1)
    s.flush()
    assert s.store.load("kept")["meta"]["id"] == "kept"
    s.close()
    s.store.close()


def test_threads_append_to_one_store(config):
    store = Store.open(dict(config, writeBatchMaxDelayMs=5))
    shared = store.start({"id": "shared"})
    errors = []
    seqs = []
    lock = threading.Lock()

    def own_session(i):
        try:
            with store.start({"id": f"t{i}"}) as s:
                for turn in range(1, 4):
                    complete_turn(s, turn)
                s.flush()
        except BaseException as e:  # surfaced below
            errors.append(e)

    def to_shared(i):
        try:
            for k in range(50):
                seq = shared.append("session/title", {"title": f"{i}-{k}"})
                with lock:
                    seqs.append(seq)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=own_session, args=(i,)) for i in range(4)]
    threads += [threading.Thread(target=to_shared, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(seqs) == list(range(200))
    shared.close()
    loaded = store.load("shared")["events"]
    assert [e["seq"] for e in loaded] == list(range(200))
    assert sorted(e["data"]["title"] for e in loaded) == sorted(f"{i}-{k}" for i in range(4) for k in range(50))
    for i in range(4):
        assert len(store.load(f"t{i}")["events"]) == 45
    store.close()


def test_close_waits_for_calls_in_flight(config):
    store = Store.open(config)
    with store.start({"id": "busy"}) as s:
        complete_turn(s, 1)
    started = threading.Event()
    outcomes = []

    def reader():
        n = 0
        try:
            while True:
                store.load("busy")
                n += 1
                started.set()
        except ClosedError:
            outcomes.append(n)
        except BaseException as e:
            outcomes.append(e)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    assert started.wait(10)
    store.close()
    for t in threads:
        t.join(10)
    assert len(outcomes) == 3 and all(isinstance(n, int) and n >= 0 for n in outcomes), outcomes


def test_a_failed_session_close_keeps_the_session_for_a_retry(tmp_path):
    # The log is moved away behind the session's back, so its final drain
    # fails; moved back, the retried close writes the kept events.
    root = tmp_path / "root"
    with Store.open({"backend": "jsonl", "root": str(root), "compression": "none"}) as store:
        s = store.start({"id": "c", "cwd": "/w"})
        s.append("turn/start", {"turn": 1})
        s.flush()
        log = store.locate({"id": "c", "cwd": "/w"})["path"]
        os.rename(log, log + ".away")
        s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        with pytest.raises(dsh_persist.DshError):
            s.close()
        assert not s.closed
        with pytest.raises(ClosedError):
            s.append("turn/start", {"turn": 2})
        # Another writer of the id is still refused: the session holds it.
        with Store.open({"backend": "jsonl", "root": str(root), "compression": "none"}) as other:
            with pytest.raises(dsh_persist.BusyError):
                other.resume("c")
        os.rename(log + ".away", log)
        s.close()
        assert s.closed
        assert types(store.load("c")["events"]) == ["turn/start", "turn/end"]
        # Giving up: discard() frees it and drops what was not written.
        d = store.start({"id": "d", "cwd": "/w"})
        d.append("turn/start", {"turn": 1})
        d.flush()
        dlog = store.locate({"id": "d", "cwd": "/w"})["path"]
        os.rename(dlog, dlog + ".away")
        d.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        with pytest.raises(dsh_persist.DshError):
            d.close()
        d.discard()
        assert d.closed
        os.rename(dlog + ".away", dlog)
        assert types(store.inspect("d")["events"])[0] == "turn/start"
        store.resume("d").close()  # the id was released
