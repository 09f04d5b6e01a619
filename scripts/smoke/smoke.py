"""Smoke scenario of an installed dsh_persist (scripts/check-packages.sh runs
it in fresh venvs, from a directory outside the checkout, with no
DSH_PERSIST_LIB): the library must come from inside the installed package.

Usage: python smoke.py SCRATCH_DIR"""

import sys
import sysconfig
from pathlib import Path

import dsh_persist
from dsh_persist import DshIOError, NotFoundError, Store

scratch = Path(sys.argv[1])
lib = Path(dsh_persist.library_path).resolve()
site = Path(sysconfig.get_paths()["platlib"]).resolve()
assert lib.parent == Path(dsh_persist.__file__).resolve().parent, lib
assert site in lib.parents, f"{lib} is not inside {site}"
assert (lib.parent / "py.typed").is_file()

USER = {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
for config in (
    {"backend": "jsonl", "root": scratch / "jsonl"},  # a pathlib.Path, not a str
    {"backend": "sqlite", "path": scratch / "sessions.db"},
):
    with Store.open(config) as store:
        with store.start({"id": "smoke", "cwd": scratch}) as s:
            assert s.append("turn/start", {"turn": 1}) == 0
            s.append("user/message", USER, surface_op="append")
            s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    with Store.open(config) as store:
        view = store.load("smoke")
        assert [e["type"] for e in view["events"]] == ["turn/start", "user/message", "turn/end"], view
        assert view["meta"]["cwd"] == str(scratch)
        assert [h["id"] for h in store.list()] == ["smoke"]
        try:
            store.load("absent")
            raise AssertionError("load of an absent id succeeded")
        except NotFoundError:
            pass
blocker = scratch / "blocker-file"
blocker.write_text("")
try:
    Store.open({"backend": "jsonl", "root": blocker / "root"})
    raise AssertionError("opened a JSONL root below a regular file")
except OSError as e:
    assert isinstance(e, DshIOError)
print(f"python {sys.version.split()[0]}: smoke ok (library {lib}, version {dsh_persist.library_version})")
