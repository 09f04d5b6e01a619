"""Ids a C string cannot carry (DIFFERENCES, exception 2): sessions the
original wrote with U+0000 or a lone surrogate in their id are listed and
reached by the ordinary methods, which pass such an id to the library's
``_id_json`` calls as its JSON text."""

import asyncio
import json

import pytest

from dsh_persist import CorruptionError, NotFoundError, Store
from dsh_persist.aio import AsyncStore, live_results

HEADER = '{{"type":"session","version":0,"id":{},"createdAt":1,"cwd":"/w","delegationDepth":0}}\n'
EVENTS = (
    '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
    '{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n'
)


def write_log(root, segment, id_json):
    d = root / "--w--" / segment
    d.mkdir(parents=True)
    (d / "session.jsonl").write_text(HEADER.format(id_json) + EVENTS)


def test_ids_with_nul_and_lone_surrogates(tmp_path):
    root = tmp_path / "root"
    write_log(root, "a~0000b", '"a\\u0000b"')
    write_log(root, "~D800x", '"\\ud800x"')
    with Store.open({"backend": "jsonl", "root": str(root), "compression": "none"}) as store:
        assert sorted(h["id"] for h in store.list()) == sorted(["a\0b", "\ud800x"])
        assert [e["type"] for e in store.load("a\0b")["events"]] == ["turn/start", "turn/end"]
        assert len(store.inspect("a\0b")["events"]) == 2
        assert len(store.read_from("a\0b", 1)["events"]) == 1
        assert store.read_raw("a\0b")["filename"] == "session.jsonl"
        lone = store.read_from("\ud800x")
        assert lone["meta"]["id"] == "\ud800x"
        assert len(lone["events"]) == 2
        # Its header fails validation at load, as in the original.
        with pytest.raises(CorruptionError) as e:
            store.load("\ud800x")
        assert "lone surrogate" in e.value.message
        store.delete("a\0b")
        with pytest.raises(NotFoundError):
            store.load("a\0b")
        assert json.dumps([h["id"] for h in store.list()]) == '["\\ud800x"]'


def test_the_aio_forms_reach_the_same_ids(tmp_path):
    root = tmp_path / "root"
    write_log(root, "a~0000b", '"a\\u0000b"')
    write_log(root, "~D800x", '"\\ud800x"')

    async def main():
        async with AsyncStore.open({"backend": "jsonl", "root": str(root), "compression": "none"}) as store:
            sync = store.sync
            assert await store.load("a\0b") == sync.load("a\0b")
            assert await store.load_raw("a\0b") == sync.load_raw("a\0b")
            assert await store.inspect("a\0b") == sync.inspect("a\0b")
            assert await store.inspect_raw("a\0b") == sync.inspect_raw("a\0b")
            assert await store.read_from("a\0b", 1) == sync.read_from("a\0b", 1)
            assert await store.read_from_raw("\ud800x", 1) == sync.read_from_raw("\ud800x", 1)
            assert await store.read_raw("a\0b") == sync.read_raw("a\0b")
            assert [ev async for ev in store.iterate("\ud800x", 1)] == sync.read_from("\ud800x", 1)["events"]
            lone = await store.read_from("\ud800x")
            assert lone["meta"]["id"] == "\ud800x"
            assert len(lone["events"]) == 2
            # Errors keep their classes (the header fails validation at load).
            with pytest.raises(CorruptionError) as e:
                await store.load("\ud800x")
            assert "lone surrogate" in e.value.message
            with pytest.raises(CorruptionError):
                await store.inspect("\ud800x")
            await store.delete("a\0b")
            with pytest.raises(NotFoundError):
                await store.load("a\0b")
            with pytest.raises(NotFoundError):
                await store.delete("a\0b")
            assert [h["id"] for h in await store.list()] == ["\ud800x"]
            assert live_results() == 0

    asyncio.run(main())
