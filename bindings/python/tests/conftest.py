"""Shared fixtures: stores over every backend and conversation builders.

The library is found as the package finds it: ``DSH_PERSIST_LIB``, else the
crate's ``target/release``. The package itself is imported from the source
tree (``bindings/python``) unless it is installed.
"""

import os
import sys
import uuid
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

import dsh_persist  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conv import *  # noqa: E402,F401,F403

REPO = PYTHON_DIR.parents[1]
FIXTURES = Path(os.environ.get("DSH_FIXTURES", "/work/shared/fixtures/upstream"))

BACKENDS = ["jsonl", "jsonl-none", "sqlite"]


def config_for(kind, tmp_path, **extra):
    if kind == "jsonl":
        cfg = {"backend": "jsonl", "root": str(tmp_path / "root")}
    elif kind == "jsonl-none":
        cfg = {"backend": "jsonl", "root": str(tmp_path / "root"), "compression": "none"}
    elif kind == "sqlite":
        cfg = {"backend": "sqlite", "path": str(tmp_path / "sessions.db")}
    else:
        raise ValueError(kind)
    cfg.update(extra)
    return cfg


#: A PostgreSQL server for the tests that also run there (unset: skipped).
PG_URL = os.environ.get("DSH_TEST_POSTGRES_URL", "")
#: ``BACKENDS``, and ``"postgres"`` when a server is given.
KINDS_WITH_PG = BACKENDS + (["postgres"] if PG_URL else [])


def config_with_pg(kind, tmp_path, schema_prefix):
    """:func:`config_for`, or for ``"postgres"`` a new schema on ``PG_URL``."""
    if kind == "postgres":
        return {"backend": "postgres", "url": PG_URL, "schema": f"{schema_prefix}{uuid.uuid4().hex[:12]}"}
    return config_for(kind, tmp_path)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def config(backend, tmp_path):
    return config_for(backend, tmp_path)


@pytest.fixture
def store(config):
    s = dsh_persist.Store.open(config)
    yield s
    s.close()
