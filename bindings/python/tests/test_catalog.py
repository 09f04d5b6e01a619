"""The catalog reads on every backend: rich listing, search, export, follow."""

import pytest

import dsh_persist
from dsh_persist import Follower, NotFoundError, Store
from conv import complete_turn


def test_catalog_reads(config):
    with Store.open(config) as store:
        with store.start({"id": "a", "cwd": "/a"}) as a:
            complete_turn(a, 1)
            a.append("session/title", {"title": "Files <here>", "messageSeqs": [1], "source": {"kind": "fallback"}})
        with store.start({"id": "b", "cwd": "/b"}) as b:
            complete_turn(b, 1)

        rows = store.list_summaries()
        assert len(rows) == 2
        ra = next(r for r in rows if r["id"] == "a")
        assert ra["title"] == "Files <here>"
        assert ra["turnCount"] == 1 and ra["openTurn"] is False
        assert ra["eventCount"] == len(store.read_from("a")["events"])
        assert store.last_updated() == "b"
        assert [r["id"] for r in store.list_summaries({"cwd": "/a"})] == ["a"]

        found = store.search("FILE.TXT")
        assert len(found["hits"]) == 2
        assert all(h["role"] == "tool" for h in found["hits"])
        assert store.search({"text": "file.txt", "limit": 1})["truncated"] is True

        assert store.export("a", "md").startswith("# Files <here>")
        assert "<title>Files &lt;here&gt;</title>" in store.export("a", "html")

        with store.follow("b") as f:
            assert isinstance(f, Follower)
            assert f.next(0) == []
            with Store.open(config) as other:
                with other.resume("b") as live:
                    complete_turn(live, 2)
            got = []
            for _ in range(50):
                got += f.next(100)
                if got:
                    break
            assert got
        with pytest.raises(NotFoundError):
            store.follow("nope")
        with pytest.raises(dsh_persist.InvalidArgumentError):
            store.export("a", "pdf")
