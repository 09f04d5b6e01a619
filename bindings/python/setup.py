"""Builds the dsh-persist wheel: pure-ctypes Python code plus libdsh_persist.

There is no extension module, so the wheel is tagged ``py3-none-<platform>``:
any Python 3, one platform (the library's). Metadata lives in pyproject.toml.

Where the library comes from, first match wins:

1. ``DSH_PERSIST_LIB``: a built library, copied as is (``scripts/package.sh``
   passes the stripped release library);
2. the Rust crate: ``rust/`` inside an sdist, or the repository root when
   building from a checkout (``pip install bindings/python``), built with
   ``cargo build --release --lib --locked`` when cargo is on PATH; the copy
   is stripped of debug info when ``strip`` is on PATH;
3. in a checkout without cargo, an existing ``target/release`` library.

Otherwise the build fails and says what to do: a package without its library
would install and then fail at import.

``DSH_WHEEL_PLATFORM`` replaces the platform tag (``scripts/package.sh``
sets ``manylinux_2_X_x86_64`` from the library's glibc symbol versions).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
# The repository root when building from a checkout (<repo>/bindings/python).
CHECKOUT = HERE.parents[1] if len(HERE.parents) > 1 else None
NAME = {"darwin": "libdsh_persist.dylib", "win32": "dsh_persist.dll"}.get(sys.platform, "libdsh_persist.so")
ENV_LIB = "DSH_PERSIST_LIB"
ENV_PLATFORM = "DSH_WHEEL_PLATFORM"


def crate_dir():
    """The crate to build: ``rust/`` in an sdist, the repository in a checkout."""
    for candidate in (HERE / "rust", CHECKOUT):
        if candidate is not None and (candidate / "Cargo.toml").is_file() and (candidate / "src" / "lib.rs").is_file():
            return candidate
    return None


def cargo_build(crate):
    """``cargo build --release --lib``; returns the cdylib cargo reports."""
    cmd = [
        "cargo", "build", "--release", "--lib", "--locked",
        "--manifest-path", str(crate / "Cargo.toml"),
        "--message-format", "json-render-diagnostics",
    ]
    print("dsh-persist: building the library:", " ".join(cmd), file=sys.stderr)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, check=False, universal_newlines=True)
    if proc.returncode != 0:
        raise SystemExit(f"dsh-persist: `{' '.join(cmd)}` failed (exit {proc.returncode}); see its output above")
    for line in proc.stdout.splitlines():
        msg = json.loads(line) if line.startswith("{") else {}
        if msg.get("reason") == "compiler-artifact" and "cdylib" in msg.get("target", {}).get("kind", []):
            for filename in msg.get("filenames", []):
                if Path(filename).name == NAME:
                    return Path(filename), True
    raise SystemExit(f"dsh-persist: cargo built no {NAME}")


def find_library():
    """(path, strip?) of the library to bundle; exits with advice when there is none."""
    env = os.environ.get(ENV_LIB)
    if env:
        if not Path(env).is_file():
            raise SystemExit(f"dsh-persist: {ENV_LIB}={env} is not a file")
        return Path(env), False
    crate = crate_dir()
    if crate is not None and shutil.which("cargo"):
        return cargo_build(crate)
    if crate is not None and crate == CHECKOUT:
        built = crate / "target" / "release" / NAME
        if built.is_file():
            return built, True
    if crate is None:
        why = "this source tree has no crate to build it from (an sdist made by scripts/package.sh has it in rust/)"
        todo = "Build from the repository or its sdist"
    else:
        why = f"Rust's cargo is not on PATH to build it from {crate}"
        todo = "Install Rust (https://rustup.rs) and retry"
    raise SystemExit(
        f"dsh-persist: no {NAME} to bundle: {why}. {todo}, install a prebuilt wheel "
        f"(scripts/package.sh writes dist/dsh_persist-*.whl), or set {ENV_LIB} to a built {NAME}."
    )


class BuildPyWithLibrary(build_py):
    """build_py that also puts the native library into the package."""

    def run(self):
        super().run()
        if self.editable_mode:
            return  # an editable install finds the checkout's target/release
        lib, strip = find_library()
        target = Path(self.build_lib) / "dsh_persist" / NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lib, target)
        if strip and sys.platform.startswith("linux") and shutil.which("strip"):
            subprocess.run(["strip", "--strip-unneeded", str(target)], check=True)


class BinaryDistribution(Distribution):
    """The package carries a native library: build it into the platform
    library directory and make a platform wheel (not ``py3-none-any``)."""

    def has_ext_modules(self):
        return True


class Py3PlatformWheel(bdist_wheel):
    """A platform wheel for any Python 3: ``py3-none-<platform>`` (setuptools
    would write ``cpXY-cpXY-<platform>``; there is no extension module)."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", os.environ.get(ENV_PLATFORM) or platform


class SdistWithCrate(sdist):
    """An sdist must carry the crate (``rust/``) it builds the library from."""

    def run(self):
        if not (HERE / "rust" / "Cargo.toml").is_file():
            raise SystemExit(
                "dsh-persist: an sdist must carry the crate (rust/) it builds the library from; "
                "build the sdist with scripts/package.sh, which adds it"
            )
        super().run()


setup(
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": Py3PlatformWheel, "sdist": SdistWithCrate},
    distclass=BinaryDistribution,
)
