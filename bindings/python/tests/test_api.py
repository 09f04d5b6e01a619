"""What a Python user relies on beyond the calls: DshIOError is an OSError,
paths may be os.PathLike, every public method is documented (without
references to documents the user does not have), the package is typed, and a
package without its library says what to do."""

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dsh_persist
from dsh_persist import DshIOError, Store
from conftest import PYTHON_DIR


def test_io_error_is_an_os_error(tmp_path):
    # A JSONL root below a regular file cannot be created. (A missing SQLite
    # parent directory is no error: it is made at the first write.)
    blocker = tmp_path / "blocker-file"
    blocker.write_text("")
    with pytest.raises(OSError) as e:
        Store.open({"backend": "jsonl", "root": str(blocker / "root")})
    assert type(e.value) is DshIOError and e.value.status == 6
    assert str(e.value) == e.value.message and "blocker-file" in e.value.message
    assert e.value.errno is None and e.value.filename is None


class CustomPath:
    """An os.PathLike that is not a pathlib.Path."""

    def __init__(self, path):
        self.path = str(path)

    def __fspath__(self):
        return self.path


@pytest.mark.parametrize("backend", ["jsonl", "sqlite"])
def test_paths_may_be_path_like(tmp_path, backend):
    if backend == "jsonl":
        config = {"backend": "jsonl", "root": tmp_path / "root"}
    else:
        config = {"backend": "sqlite", "path": CustomPath(tmp_path / "s.db")}
    before = dict(config)
    with Store.open(config) as store:
        assert config == before  # the caller's dict is not changed
        with store.start({"id": "s1", "cwd": Path("/home/dev/project")}) as s:
            assert s.header["cwd"] == "/home/dev/project"
            s.append("turn/start", {"turn": 1})
        store.create({"id": "s2", "cwd": CustomPath("/srv/other")})
        assert store.start({"id": "s3", "cwd": Path("/x")}).close() is None
        if backend == "jsonl":
            where = store.locate({"id": "s1", "cwd": Path("/home/dev/project")})
            assert where["kind"] == "jsonl" and where["path"].startswith(str(tmp_path / "root"))
        with store.fork("s1", -1, {"id": "child", "cwd": Path("/ignored")}) as child:
            assert child.header["cwd"] == "/home/dev/project"
        assert store.load("s1")["meta"]["cwd"] == "/home/dev/project"
    # the store really is where the Path pointed
    if backend == "jsonl":
        assert (tmp_path / "root").is_dir()
    else:
        assert (tmp_path / "s.db").is_file()
    # a path in event data is data, not a path: json refuses it as before
    with Store.open({"backend": "sqlite", "path": ":memory:"}) as store, store.start({"id": "d"}) as s:
        with pytest.raises(TypeError):
            s.append("turn/start", {"turn": 1, "file": Path("/x")})


def public_members():
    for name in dsh_persist.__all__:
        obj = getattr(dsh_persist, name)
        if not inspect.isclass(obj):
            continue
        yield name, obj
        for attr, member in inspect.getmembers(obj):
            if attr.startswith("_") and attr not in ("__init__", "__enter__", "__exit__"):
                continue
            if inspect.isfunction(member) or inspect.ismethod(member) or isinstance(member, property):
                owner = next((k for k in obj.__mro__ if attr in vars(k)), obj)
                if owner.__module__.startswith("dsh_persist"):
                    yield f"{name}.{attr}", member


def test_every_public_method_is_documented():
    seen = 0
    for name, member in public_members():
        doc = inspect.getdoc(member)
        assert doc and doc.strip(), f"{name} has no docstring"
        assert "SPEC" not in doc and "§" not in doc, f"{name} refers to a document the user does not have: {doc}"
        seen += 1
    assert seen > 60
    for module in (dsh_persist, dsh_persist.store, dsh_persist.session, dsh_persist.plan, dsh_persist._errors):
        assert "SPEC" not in (module.__doc__ or "") and "§" not in (module.__doc__ or ""), module.__name__


def test_the_package_is_typed():
    assert (Path(dsh_persist.__file__).parent / "py.typed").is_file()


def test_a_package_without_its_library_says_what_to_do(tmp_path):
    # A copy of the package outside any checkout, without a library: what a
    # broken installation looks like.
    copy = tmp_path / "site" / "dsh_persist"
    shutil.copytree(PYTHON_DIR / "dsh_persist", copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "DSH_PERSIST_LIB"}
    proc = subprocess.run(
        [sys.executable, "-c", "import dsh_persist"],
        cwd=str(tmp_path / "site"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "libdsh_persist not found" in proc.stderr
    assert f"{copy / 'libdsh_persist.so'} (missing)" in proc.stderr
    assert "carries no library" in proc.stderr and "scripts/package.sh" in proc.stderr
    assert "DSH_PERSIST_LIB" in proc.stderr
    assert "target/release" not in proc.stderr  # no checkout there, so no checkout advice


def test_a_postgres_cache_dir_keeps_append_checkpoints(tmp_path):
    """``cacheDir`` reaches a PostgreSQL store through the C ABI: a closed
    live session leaves its append checkpoint there, a fresh store's cold
    append continues the log, and a directory others may write to is
    refused at open, naming it."""
    from conftest import PG_URL, config_with_pg, complete_turn
    from dsh_persist import InvalidArgumentError

    if not PG_URL:
        if os.environ.get("CI"):
            pytest.fail("DSH_TEST_POSTGRES_URL is not set under CI")
        pytest.skip("no PostgreSQL server (DSH_TEST_POSTGRES_URL)")
    cache = tmp_path / "cache"
    # (a pathlib.Path, as root and path may be)
    cfg = dict(config_with_pg("postgres", tmp_path, "py_cache_"), cacheDir=cache)
    with Store.open(cfg) as store:
        with store.start({"id": "s"}) as live:
            end = complete_turn(live, 1)
    checkpoints = sorted(cache.glob("*/append/*.ckpt"))
    assert len(checkpoints) == 1, checkpoints
    assert (cache.stat().st_mode & 0o777) == 0o700
    with Store.open(cfg) as store:
        store.append("s", [{"type": "turn/start", "seq": end + 1, "time": 0, "data": {"turn": 2}}])
        assert len(store.inspect("s")["events"]) >= end + 2
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(InvalidArgumentError) as e:
        Store.open(dict(cfg, cacheDir=shared))
    assert str(shared) in str(e.value)
