"""Loaded events kept out of CPython's cyclic GC (dsh_persist._gc, issue 18):
``dsh_persist.aio``'s load, inspect and read_from untrack the events they
return (``gc_untrack=True``, the default), ``gc_untrack=False`` keeps them
tracked, ``dsh_persist.gc_untrack`` does it for a synchronous result. The
values equal the synchronous ones, reference counting alone frees them when
the view is dropped, and a container stored into a loaded dict re-tracks it
(a cycle through it is still collected)."""

import asyncio
import gc
import sys
import tracemalloc
import weakref

import pytest

import dsh_persist
from dsh_persist import _gc
from dsh_persist.aio import AsyncStore, live_results
from conftest import BACKENDS, config_for
from conv import complete_turn

needs_untrack = pytest.mark.skipif(not _gc.AVAILABLE, reason="CPython with a GIL only")


def fill(store, sid, events):
    s = store.start({"id": sid})
    turn, n = 1, 0
    while n < events:
        n = complete_turn(s, turn) + 1
        turn += 1
    s.close()


def containers(value):
    """Every dict and list of a JSON value (the value included)."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            out.append(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            out.append(v)
            stack.extend(v)
    return out


def tracked(value):
    return [c for c in containers(value) if gc.is_tracked(c)]


def test_untracking_is_available_on_cpython_with_a_gil():
    free_threaded = bool(__import__("sysconfig").get_config_var("Py_GIL_DISABLED"))
    assert _gc.AVAILABLE == (sys.implementation.name == "cpython" and not free_threaded)


@needs_untrack
@pytest.mark.parametrize("kind", BACKENDS)
def test_aio_reads_untrack_their_events_unless_turned_off(kind, tmp_path):
    async def main():
        async with AsyncStore.open(config_for(kind, tmp_path)) as store:
            fill(store.sync, "s", 3000)
            assert store.gc_untrack is True
            for read in (lambda: store.load("s"), lambda: store.inspect("s"), lambda: store.read_from("s", 7)):
                view = await read()
                assert tracked(view) == []
                assert not gc.is_tracked(view["events"])
                # Events that hold a container are tracked when parsed plainly.
                assert any(isinstance(v, dict) for v in view["events"][-1]["data"].values())
            assert await store.load("s") == store.sync.load("s")
            assert await store.read_from("s", 7) == store.sync.read_from("s", 7)

            store.gc_untrack = False
            view = await store.load("s")
            assert view == store.sync.load("s")
            assert gc.is_tracked(view["events"])
            assert gc.is_tracked(view["events"][-1])
            assert len(tracked(view)) == len(tracked(store.sync.load("s")))
            assert live_results() == 0

        async with AsyncStore.open(config_for(kind, tmp_path), gc_untrack=False) as store:
            assert gc.is_tracked((await store.inspect("s"))["events"][-1])

    asyncio.run(main())


@needs_untrack
def test_iterate_leaves_its_events_tracked(tmp_path):
    async def main():
        async with AsyncStore.open(config_for("jsonl", tmp_path)) as store:
            fill(store.sync, "s", 300)
            last = [ev async for ev in store.iterate("s")][-1]
            assert gc.is_tracked(last)

    asyncio.run(main())


@needs_untrack
def test_a_dropped_view_is_freed_by_reference_counting(tmp_path):
    """With the cyclic GC off, dropping an untracked view gives its memory back:
    the walk keeps no reference, and refcounting frees the whole tree."""

    async def main():
        async with AsyncStore.open(config_for("jsonl", tmp_path)) as store:
            fill(store.sync, "s", 5000)
            await store.load("s")  # warm caches (imports, interned keys)
            gc.collect()
            gc.disable()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                view = await store.load("s")
                loaded = tracemalloc.get_traced_memory()[0] - before
                assert tracked(view) == []
                # Each event is referred to by the events list alone (and the
                # argument of getrefcount).
                evs = view["events"]
                assert {sys.getrefcount(evs[i]) for i in range(len(evs))} == {2}
                del evs
                del view
                left = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
                gc.enable()
            assert loaded > 1_000_000, loaded
            assert left < loaded / 50, (left, loaded)

    asyncio.run(main())


@needs_untrack
def test_a_container_stored_in_a_loaded_dict_retracks_it(tmp_path):
    class Node:
        pass

    async def main():
        async with AsyncStore.open(config_for("jsonl", tmp_path)) as store:
            fill(store.sync, "s", 50)
            view = await store.load("s")
            ev = view["events"][0]
            assert not gc.is_tracked(ev)
            ev["extra"] = []
            assert gc.is_tracked(ev)
            # A cycle through that dict is collected.
            node = Node()
            node.back = ev
            ev["node"] = node
            alive = weakref.ref(node)
            del node, ev, view
            gc.collect()
            assert alive() is None
            # A list does not re-track itself (the documented cost).
            view = await store.load("s")
            view["events"].append([])
            assert not gc.is_tracked(view["events"])

    asyncio.run(main())


@needs_untrack
def test_gc_untrack_of_a_synchronous_load(tmp_path):
    with dsh_persist.Store.open(config_for("sqlite", tmp_path)) as store:
        fill(store, "s", 500)
        view = store.load("s")
        assert len(tracked(view)) > 500
        dsh_persist.gc_untrack(view)
        assert tracked(view) == []
        assert view == store.load("s")
        # Not entered: objects that are not dicts or lists (and what they hold).
        inner = []
        holder = type("Holder", (), {})()
        holder.inner = inner
        dsh_persist.gc_untrack({"h": holder, "l": [holder]})
        assert gc.is_tracked(holder) and gc.is_tracked(inner)


def test_without_the_c_api_nothing_is_untracked(tmp_path, monkeypatch):
    monkeypatch.setattr(_gc, "_UNTRACK", None)

    async def main():
        async with AsyncStore.open(config_for("jsonl", tmp_path)) as store:
            fill(store.sync, "s", 50)
            view = await store.load("s")
            assert gc.is_tracked(view["events"]) and gc.is_tracked(view["events"][-1])
            assert view == store.sync.load("s")

    asyncio.run(main())
