"""Paged results in dsh_persist.aio (issue 18): ``load``, ``inspect``,
``read_from`` and ``iterate`` read into a ``dsh_result`` and parse it page
by page on the loop. They equal the synchronous results on every backend
(PostgreSQL when DSH_TEST_POSTGRES_URL is set) for logs across page
boundaries, an event larger than a page, non-ASCII text and empty results;
a cancellation while paging raises CancelledError and frees the result
(``live_results()`` back to 0); errors keep their classes."""

import asyncio

import pytest

import dsh_persist
from dsh_persist.aio import AsyncStore, live_results
from conftest import KINDS_WITH_PG, config_with_pg
from conv import complete_turn, user_message

KINDS = KINDS_WITH_PG


def cfg(kind, tmp_path):
    return config_with_pg(kind, tmp_path, "py_paged_")


def turns_to(session, events):
    turn, n = 1, 0
    while n < events:
        n = complete_turn(session, turn) + 1
        turn += 1
    return n


async def result_made():
    while live_results() == 0:
        await asyncio.sleep(0)


@pytest.mark.parametrize("kind", KINDS)
def test_paged_reads_equal_the_synchronous_ones(kind, tmp_path):
    async def main():
        async with AsyncStore.open(cfg(kind, tmp_path)) as store:
            sync = store.sync
            for sid, events in (("one", 1), ("many", 4000)):
                s = sync.start({"id": sid})
                turns_to(s, events)
                s.close()
            s = sync.start({"id": "big"})
            s.append("turn/start", {"turn": 1})
            s.append("user/message", user_message("u1", "é€😀 " * 40_000), surface_op="append")
            s.append("user/message", user_message("u2", "after the big one"), surface_op="append")
            s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
            s.close()
            for sid in ("one", "many", "big"):
                assert await store.load(sid) == sync.load(sid), sid
                assert await store.inspect(sid) == sync.inspect(sid), sid
                assert await store.load_raw(sid) == sync.load_raw(sid), sid
                assert await store.inspect_raw(sid) == sync.inspect_raw(sid), sid
                for start in (0, 1, 2, 1000, 1_000_000):
                    assert await store.read_from(sid, start) == sync.read_from(sid, start), (sid, start)
                    assert await store.read_from_raw(sid, start) == sync.read_from_raw(sid, start), (sid, start)
                    got = [ev async for ev in store.iterate(sid, start)]
                    assert got == sync.read_from(sid, start)["events"], (sid, start)
            empty = await store.read_from("many", 1_000_000)
            assert empty["events"] == [] and empty["meta"]["id"] == "many"
            assert live_results() == 0

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_a_cancellation_while_paging_frees_the_result(kind, tmp_path):
    async def main():
        async with AsyncStore.open(cfg(kind, tmp_path)) as store:
            s = store.sync.start({"id": "p"})
            n = turns_to(s, 30_000)
            s.close()
            before = store.sync.inspect_raw("p")
            calls = (lambda: store.load("p"), lambda: store.inspect("p"), lambda: store.read_from("p", 0), lambda: store.load_raw("p"))
            for call in calls:
                task = asyncio.ensure_future(call())
                await result_made()
                for _ in range(3):  # a few pages in
                    await asyncio.sleep(0)
                assert not task.done()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert live_results() == 0, "the cancelled read freed its result"

            async def iterate_all():
                async for ev in store.iterate("p"):
                    pass

            task = asyncio.ensure_future(iterate_all())
            await result_made()
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert live_results() == 0
            it = store.iterate("p")
            async for ev in it:
                if ev["seq"] == 5:
                    break
            await it.aclose()
            assert live_results() == 0, "closing the iterator frees the result"
            assert store.sync.inspect_raw("p") == before, "nothing changed"
            assert len((await store.load("p"))["events"]) == n

    asyncio.run(main())


@pytest.mark.parametrize("kind", KINDS)
def test_paged_reads_keep_the_error_classes(kind, tmp_path):
    async def main():
        store = await AsyncStore.open(cfg(kind, tmp_path))
        with pytest.raises(dsh_persist.NotFoundError):
            await store.load("missing")
        with pytest.raises(dsh_persist.NotFoundError):
            await store.read_from("missing", 0)
        with pytest.raises(dsh_persist.NotFoundError):
            async for _ in store.iterate("missing"):
                pass
        with pytest.raises(TypeError):
            await store.load(42)
        with pytest.raises(dsh_persist.InvalidArgumentError):
            await store.read_from("x", -1)
        await store.close()
        with pytest.raises(dsh_persist.ClosedError):
            await store.inspect("missing")
        assert live_results() == 0

    asyncio.run(main())
