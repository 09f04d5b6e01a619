"""The declaration table matches include/dsh_persist.h exactly and the
library's exports; loading and the version check."""

import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

from dsh_persist import _lib
from conftest import PYTHON_DIR, REPO

HEADER = REPO / "include" / "dsh_persist.h"

C_TO_CTYPES = {
    "const char *": ctypes.c_char_p,
    "char **": _lib.out_str,
    "char *": ctypes.c_void_p,  # dsh_free takes the raw address
    "uint64_t": ctypes.c_uint64,
    "uint64_t *": ctypes.POINTER(ctypes.c_uint64),
    "int64_t": ctypes.c_int64,
    "bool": ctypes.c_bool,
    "dsh_store *": _lib.store_p,
    "dsh_store **": ctypes.POINTER(_lib.store_p),
    "dsh_session *": _lib.session_p,
    "dsh_session **": ctypes.POINTER(_lib.session_p),
    "dsh_plan *": _lib.plan_p,
    "dsh_plan **": ctypes.POINTER(_lib.plan_p),
    "uint32_t": ctypes.c_uint32,
    "dsh_follow *": _lib.follow_p,
    "dsh_follow **": ctypes.POINTER(_lib.follow_p),
    "dsh_cancel *": _lib.cancel_p,
    "dsh_cancel **": ctypes.POINTER(_lib.cancel_p),
    "dsh_error *": _lib.error_p,
    "const dsh_error *": _lib.error_p,
    "dsh_error **": ctypes.POINTER(_lib.error_p),
    "const dsh_result *": _lib.result_p,
    "dsh_result *": _lib.result_p,
    "dsh_result **": ctypes.POINTER(_lib.result_p),
}
C_RETURN = {"dsh_status": _lib.STATUS, "void": None, "const char *": ctypes.c_char_p, "uint64_t": ctypes.c_uint64}


def header_prototypes():
    text = HEADER.read_text()
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    protos = {}
    for m in re.finditer(r"^(dsh_status|void|const char \*|uint64_t)\s*(dsh_\w+)\(([^)]*)\);", text, flags=re.M):
        ret, name, params = m.groups()
        params = " ".join(params.split())
        args = []
        if params != "void":
            for p in params.split(","):
                ptype = re.sub(r"\s*\b\w+$", "", p.strip())  # drop the parameter name
                ptype = re.sub(r"\s*\*", " *", ptype).replace("* *", "**")
                args.append(ptype.strip())
        protos[name] = (ret.strip(), args)
    return protos


def test_declarations_match_the_header():
    protos = header_prototypes()
    assert len(protos) >= 35
    table = {name: (restype, list(argtypes)) for name, restype, argtypes in _lib.DECLARATIONS}
    assert sorted(table) == sorted(protos), "the declaration table and the header list different functions"
    for name, (ret, params) in protos.items():
        restype, argtypes = table[name]
        if name == "dsh_error_status":
            # A getter: the status it returns is the error object's, not a
            # failure of the call (plain c_int, no errcheck).
            assert restype is ctypes.c_int, name
        else:
            assert restype is C_RETURN[ret], name
        assert argtypes == [C_TO_CTYPES[p] for p in params], f"{name}: header {params}"


def test_declarations_match_the_exported_symbols():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm not available")
    out = subprocess.run([nm, "-D", "--defined-only", str(_lib.library_path)], capture_output=True, text=True, check=True)
    exported = sorted(set(re.findall(r"\bT (dsh_\w+)$", out.stdout, flags=re.M)))
    assert exported == sorted(name for name, _, _ in _lib.DECLARATIONS)


def test_version_check_refuses_another_minor(monkeypatch):
    assert _lib.library_version.split(".")[:2] == _lib.__version__.split(".")[:2]
    monkeypatch.setattr(_lib, "__version__", "0.99.0")
    with pytest.raises(ImportError) as e:
        _lib._check_version(_lib.lib, _lib.library_path)
    assert "needs libdsh_persist 0.99.x" in str(e.value) and _lib.library_version in str(e.value)


def run_python(code, **env):
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        cwd=str(PYTHON_DIR),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_env_var_is_the_only_place_looked_at_when_set(tmp_path):
    proc = run_python("import dsh_persist", DSH_PERSIST_LIB=str(tmp_path / "nope.so"))
    assert proc.returncode != 0
    assert "libdsh_persist not found" in proc.stderr and "nope.so (missing)" in proc.stderr
    bogus = tmp_path / "bogus.so"
    bogus.write_text("not a library")
    proc = run_python("import dsh_persist", DSH_PERSIST_LIB=str(bogus))
    assert proc.returncode != 0 and "cannot load" in proc.stderr


def test_last_error_is_cleared_by_the_next_call():
    with pytest.raises(Exception):
        _lib.lib.dsh_plan_project(b"[", ctypes.byref(ctypes.c_void_p()))
    assert _lib.lib.dsh_last_error() != b""
    out = ctypes.c_void_p()
    _lib.lib.dsh_plan_project(b"[]", ctypes.byref(out))
    _lib.lib.dsh_free(out)
    assert _lib.lib.dsh_last_error() == b""
    assert _lib.lib.dsh_last_error_code() == b""
