"""Data fidelity: big integers through the raw variants, and round trips of
logs written by the original implementation (the upstream fixtures)."""

import json
import os
import shutil

import pytest

from dsh_persist import InvalidArgumentError, Store
from conftest import FIXTURES

BIG = 12345678901234567890123456789
NEG = -98765432109876543210


def open_step(s):
    s.append("turn/start", {"turn": 1})
    s.append("step/start", {"turn": 1, "step": 1})


def test_big_integers_round_trip(store, backend):
    with store.start({"id": "big"}) as s:
        open_step(s)
        # from Python ints (exact) and from JSON text (verbatim)
        s.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "n", "arguments": {"big": BIG, "neg": NEG}})
        raw = '{"turn":1,"step":1,"callId":"c2","name":"n","arguments":{"big":99999999999999999999999,"f":1.50,"e":1E21}}'
        seq = s.append_raw("tool/call", raw)
        assert seq == 3
        assert s.events()[2]["data"]["arguments"] == {"big": BIG, "neg": NEG}
        events_raw = s.events_raw(3)
        # kept digit for digit; non-integers in ECMAScript form
        assert '"arguments":{"big":99999999999999999999999,"f":1.5,"e":1e+21}' in events_raw
        s.flush()
        live_raw = store.read_from_raw("big", 0)  # a live session with an open turn cannot be loaded
        assert str(BIG) in live_raw and str(NEG) in live_raw
        assert "99999999999999999999999" in store.inspect_raw("big")
        # but not in the envelope fields the original reads as numbers
        with pytest.raises(InvalidArgumentError) as e:
            s.append("step/end", {"turn": 2**53 + 1, "step": 1})
        assert "losslessly JSON-serializable" in e.value.message
    loaded_raw = store.load_raw("big")  # closed: the open turn is repaired
    assert str(BIG) in loaded_raw and "99999999999999999999999" in loaded_raw
    loaded = store.load("big")
    assert loaded["events"][3]["data"]["arguments"]["big"] == 99999999999999999999999
    assert store.read_from("big", 2)["events"][0]["data"]["arguments"]["neg"] == NEG
    if backend != "sqlite":
        assert str(BIG) in store.read_raw("big")["content"]


def test_store_append_raw_keeps_key_order_and_digits(store, backend):
    store.create({"id": "raw"})
    events = (
        '[{"seq":0,"type":"turn/start","data":{"turn":1},"time":5},'
        '{"type":"session/title","seq":1,"time":6,"data":{"z":1,"a":123456789012345678901234567890}},'
        '{"type":"turn/end","seq":2,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}]'
    )
    store.append_raw("raw", events)
    text = store.load_raw("raw")
    if backend != "sqlite":  # SQLite stores the envelope in columns
        assert '{"seq":0,"type":"turn/start","data":{"turn":1},"time":5}' in text
    assert '"data":{"z":1,"a":123456789012345678901234567890}' in text


def copy_fixture(rel, dest):
    src = FIXTURES / rel
    if not src.exists():
        pytest.skip(f"fixtures not available at {src}")
    shutil.copytree(src, dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        os.chmod(dirpath, 0o700)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o600)
    return dest


def expected(root):
    return json.loads((FIXTURES / f"expected-{root}.json").read_text())


def canonical(value):
    return json.loads(json.dumps(value, sort_keys=True))


@pytest.mark.parametrize("sid", ["numbers-escapes", "conv-basic", "open-turn", "surface-replace"])
def test_upstream_jsonl_fixture_round_trip(tmp_path, sid):
    root = copy_fixture("jsonl/jsonl-zstd-packed", tmp_path / "root")
    want = expected("jsonl-zstd-packed")["sessions"][sid]
    with Store.open({"backend": "jsonl", "root": str(root), "compression": "zstd"}) as store:
        # the artifact text, byte for byte (numbers and escapes as the original wrote them)
        assert store.read_raw(sid)["content"] == want["readRawBefore"]["ok"]["content"]
        inspected = store.inspect(sid)
        assert canonical(inspected) == want["inspect"]["ok"]
        assert canonical(store.load(sid)) == want["inspect"]["ok"]  # load = sameAs inspect
        if want["afterLoad"]["readRaw"] != {"sameAs": "readRawBefore"}:
            assert store.read_raw(sid)["content"] == want["afterLoad"]["readRaw"]["ok"]["content"]


def test_upstream_sqlite_fixture_round_trip(tmp_path):
    root = copy_fixture("sqlite/corpus", tmp_path / "corpus")
    want = expected("sqlite-corpus")["sessions"]["numbers-escapes"]
    with Store.open({"backend": "sqlite", "path": str(root / "sessions.db")}) as store:
        assert canonical(store.inspect("numbers-escapes")) == want["inspect"]["ok"]
        # the original wrote 12345678901234567890 as a JS number: 12345678901234567000
        assert "12345678901234567000" in store.load_raw("numbers-escapes")


def test_upstream_refused_root(tmp_path):
    from dsh_persist import FormatUnsupportedError

    root = copy_fixture("jsonl/jsonl-zstd-refused", tmp_path / "root")
    dump = expected("jsonl-zstd-refused")
    refused = [
        sid for sid, entry in dump["sessions"].items()
        if entry.get("inspect", {}).get("error", {}).get("class") == "SessionFormatUnsupportedError"
    ]
    assert refused
    with Store.open({"backend": "jsonl", "root": str(root), "compression": "zstd"}) as store:
        for sid in refused:
            with pytest.raises(FormatUnsupportedError) as e:
                store.inspect(sid)
            want = dump["sessions"][sid]["inspect"]["error"]["message"]
            assert e.value.message.replace(str(root), "<ROOT>") == want
