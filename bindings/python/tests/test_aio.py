"""dsh_persist.aio (issue 18): every awaitable on each backend (PostgreSQL
when DSH_TEST_POSTGRES_URL is set), cancellation of a 100k-event load (the
await raises CancelledError, the store is unchanged), and the loop keeps
running while a call works."""

import asyncio
import hashlib
import os

import pytest

import dsh_persist
from dsh_persist.aio import AsyncPlanMode, AsyncStore
from conftest import KINDS_WITH_PG, config_with_pg
from conv import complete_turn, user_message

KINDS = KINDS_WITH_PG


def cfg(kind, tmp_path):
    return config_with_pg(kind, tmp_path, "py_aio_")


def snapshot(path):
    """Every file under ``path`` with its digest (what "unchanged" means)."""
    out = []
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if not p.endswith("-shm"):
                with open(p, "rb") as fh:
                    out.append((p, hashlib.sha256(fh.read()).hexdigest()))
    return sorted(out)


@pytest.mark.parametrize("kind", KINDS)
def test_every_awaitable(kind, tmp_path):
    async def main():
        async with AsyncStore.open(cfg(kind, tmp_path)) as store:
            async with await store.start({"id": "a1"}) as s:
                n = complete_turn(s.sync, 1) + 1
                await s.flush()
            assert len((await store.inspect("a1"))["events"]) == n
            assert (await store.read_from("a1", 3))["events"][0]["seq"] == 3
            assert [h["id"] for h in await store.list()] == ["a1"]
            assert len(await store.list_snapshots()) == 1
            loaded, listed = await asyncio.gather(store.load("a1"), store.list())
            assert len(loaded["events"]) == n and len(listed) == 1
            if kind.startswith("jsonl"):
                assert (await store.read_raw("a1"))["filename"] == "session.jsonl"
            else:
                with pytest.raises(dsh_persist.UnsupportedError):
                    await store.read_raw("a1")
            await store.create({"id": "c1"})
            await store.append("c1", [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}])
            assert len((await store.inspect("c1"))["events"]) == 2
            r = await store.resume("a1")
            complete_turn(r.sync, 2)
            f = await store.fork("a1", n - 1, {"id": "f1"})
            assert f.header["parentSession"] == "a1"
            await f.close()
            plan = AsyncPlanMode({"section": "plan"})
            assert (await plan.set(r, True))["outcome"] in ("committed", "queued")
            assert isinstance((await plan.pre_step(r))["appended"], bool)
            plan.close()
            await r.close()
            with pytest.raises(dsh_persist.NotFoundError, match="missing"):
                await store.load("missing")
        assert store.closed
        with pytest.raises(dsh_persist.ClosedError):
            await store.list()

    asyncio.run(main())


def big_open_log(store, sid):
    s = store.start({"id": sid})
    n, turn = 0, 1
    while n + 17 <= 100_000:
        n = complete_turn(s, turn) + 1
        turn += 1
    s.append("turn/start", {"turn": turn})
    s.append("user/message", user_message("last", "go on"), "append")
    s.close()
    return n + 2


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_cancelled_100k_load_changes_nothing(kind, tmp_path):
    config = cfg(kind, tmp_path)
    with dsh_persist.Store.open(config) as sync:
        n = big_open_log(sync, "big")

    async def main():
        async with AsyncStore.open(config) as store:
            await store.list()
            before = snapshot(tmp_path)  # with the store open (SQLite's -wal exists)
            for call in (lambda: store.load("big"), lambda: store.inspect("big"), lambda: store.read_from("big", 5)):
                task = asyncio.create_task(call())
                await asyncio.sleep(0)  # the read has begun in its worker thread
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert snapshot(tmp_path) == before, "a cancelled read wrote nothing"
            loaded = await store.load("big")  # not cancelled: repairs
            assert len(loaded["events"]) > n
            assert snapshot(tmp_path) != before

    asyncio.run(main())


def test_the_loop_runs_while_a_load_works(tmp_path):
    config = cfg("jsonl", tmp_path)
    with dsh_persist.Store.open(config) as sync:
        big_open_log(sync, "big")

    async def main():
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        async with AsyncStore.open(config) as store:
            t = asyncio.create_task(ticker())
            await store.inspect("big")
            done = True
            await t
        return ticks

    assert asyncio.run(main()) > 1, "the loop ran other tasks during the inspect"


def _turn(text, time=5):
    return [
        {"type": "turn/start", "seq": 0, "time": time, "data": {"turn": 1}},
        {
            "type": "user/message",
            "seq": 1,
            "time": time,
            "data": {"id": "u1", "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
            "surfaceOp": "append",
        },
        {"type": "turn/end", "seq": 2, "time": time, "data": {"turn": 1, "reason": {"kind": "completed"}}},
    ]


def _stored(store, sid, text="hi", time=5):
    store.create({"id": sid, "createdAt": 1, "cwd": "/p"})
    store.append(sid, _turn(text, time))


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_the_issue_19_awaitables(kind, tmp_path):
    async def main():
        async with AsyncStore.open(cfg(kind, tmp_path)) as store:
            _stored(store.sync, "a", "find the needle here", 5)
            _stored(store.sync, "b", "nothing", 7)
            _stored(store.sync, "c", "nothing", 9)
            rows = await store.list_summaries()
            assert sorted(r["id"] for r in rows) == ["a", "b", "c"]
            assert len(await store.list_summaries({"limit": 1})) == 1
            assert await store.last_updated() == store.sync.last_updated()
            found = await store.search("NEEDLE")
            assert [h["id"] for h in found["hits"]] == ["a"]
            assert (await store.search({"text": "nothing", "limit": 1}))["truncated"] is True
            assert "needle" in await store.export("a")
            assert "<html" in (await store.export("a", "html")).lower()
            with pytest.raises(dsh_persist.NotFoundError):
                await store.export("zz")

            live = store.sync.resume("a")
            with pytest.raises(dsh_persist.BusyError):
                await store.delete("a")
            live.close()
            await store.delete("a")
            with pytest.raises(dsh_persist.NotFoundError):
                await store.delete("a")
            dry = await store.prune(keep_newest=1, dry_run=True)
            assert dry["dryRun"] is True and len(dry["deleted"]) == 1
            assert len(await store.list()) == 2
            assert len((await store.prune(keep_newest=1))["deleted"]) == 1
            assert len(await store.list()) == 1
            with pytest.raises(dsh_persist.InvalidArgumentError):
                await store.prune()

            store.sync.create({"id": "open", "createdAt": 1})
            store.sync.append("open", _turn("hi") + [{"type": "turn/start", "seq": 3, "time": 6, "data": {"turn": 2}}])
            r = await store.salvage("open", "closed")
            assert [r["keptEvents"], r["closers"], r["stopped"]] == [4, 1, None]
            with pytest.raises(dsh_persist.ConflictError):
                await store.salvage("open", "closed")

            lines = "\n".join(dsh_persist._lib.dumps(e) for e in _turn("hi"))
            assert await store.import_jsonl("imp", lines) == {"id": "imp", "events": 3, "hadHeader": False}
            assert len((await store.load("imp"))["events"]) == 3
            with pytest.raises(dsh_persist.InvalidArgumentError):
                await store.import_jsonl("bad", "\n".join(lines.split("\n")[1:]))
            assert "bad" not in [h["id"] for h in await store.list()]

    asyncio.run(main())


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_cancelled_search_listing_or_prune_over_many_sessions_changes_nothing(kind, tmp_path):
    config = cfg(kind, tmp_path / "store")
    cache = str(tmp_path / "cache")  # the search index cache, outside the store
    with dsh_persist.Store.open(config) as sync:
        for i in range(300):
            _stored(sync, f"s{i:03}", f"text {i}")

    async def main():
        async with AsyncStore.open(config) as store:
            await store.list()
            before = snapshot(tmp_path / "store")
            calls = (
                lambda: store.search({"text": "text", "cacheDir": cache}),
                lambda: store.list_summaries(),
                lambda: store.prune(keep_newest=1),
            )
            for call in calls:
                task = asyncio.create_task(call())
                await asyncio.sleep(0)  # the call has begun in its worker thread
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                if snapshot(tmp_path / "store") != before:
                    # Only a prune whose deletions had begun when the cancel
                    # arrived: they all ran (documented; never a part).
                    assert call is calls[-1], "a cancelled read wrote nothing"
                    assert len(await store.list()) == 1, "keep_newest=1 kept one"
                    return
            assert len(await store.list()) == 300
            found = await store.search({"text": "text", "cacheDir": cache, "limit": 1000})
            assert len(found["hits"]) == 300
            assert len(await store.list_summaries()) == 300

    asyncio.run(main())
