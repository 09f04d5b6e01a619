"""Bundles the built shared library into the package when it exists.

`pip install bindings/python` copies `<repo>/target/release/libdsh_persist.*`
(or the file named by `DSH_PERSIST_LIB`) next to `_lib.py` in the wheel, so
the installed package needs no environment variable. Without a built library
the package installs without it and looks in `DSH_PERSIST_LIB` at import.
Metadata lives in pyproject.toml.
"""

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
NAME = {"darwin": "libdsh_persist.dylib", "win32": "dsh_persist.dll"}.get(sys.platform, "libdsh_persist.so")


def built_library():
    env = os.environ.get("DSH_PERSIST_LIB")
    candidates = [Path(env)] if env else []
    candidates.append(HERE.parents[1] / "target" / "release" / NAME)
    return next((p for p in candidates if p.is_file()), None)


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        lib = built_library()
        if lib is not None:
            target = Path(self.build_lib) / "dsh_persist" / NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(lib, target)


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this platform."""

    def has_ext_modules(self):
        return built_library() is not None


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
