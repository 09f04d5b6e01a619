#!/usr/bin/env bash
# Builds every release artifact of dsh-persist from this checkout:
#
#   OUT/dsh_persist-V-py3-none-manylinux_2_G_ARCH.whl  Python wheel, any Python 3, library inside
#   OUT/dsh_persist-V.tar.gz                           Python sdist, builds the library with cargo
#   OUT/dsh-persist-V.tgz                              npm package, library inside, koffi a dependency
#   PREFIX/                                            C install tree (below)
#   OUT/debug/                                         debug info of the shipped binaries (gdb, perf)
#
# The C install tree: include/dsh_persist.h, lib/libdsh_persist.so.V (SONAME
# libdsh_persist.so.0.M, with the SONAME and `-ldsh_persist` links),
# lib/libdsh_persist.a, lib/pkgconfig/dsh_persist.pc,
# lib/cmake/dsh_persist/ (find_package(dsh_persist)) and bin/dsh-persist.
#
# Usage: scripts/package.sh [--out OUT] [--prefix PREFIX] [--destdir DESTDIR] [--no-build]
#   OUT      default dist/
#   PREFIX   where the C tree will live, written into the .pc and used for the
#            install (default OUT/c); an absolute path
#   DESTDIR  stage the C install under DESTDIR/PREFIX (packagers)
#   --no-build  package the release build already in target/release instead
#            of running `cargo build --release --lib --bin` (CI: the build
#            its tests ran against; `--all-targets` gives some dependencies
#            other features, so a plain build would compile the crate again)
#
# Reuses the release build when it is fresh (one `cargo build --release`).
# Shipped binaries are stripped copies; target/release keeps its debug info
# for the bench and profiling. The wheel's platform tag comes from the glibc
# symbol versions the library needs (objdump -T). Needs cargo, binutils
# (strip, objcopy, objdump), python3 with venv (the first run installs
# `build` and setuptools from PyPI into target/package-venv) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

out="dist"
prefix=""
destdir=""
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --prefix) prefix="$2"; shift 2 ;;
        --destdir) destdir="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "package.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
prefix="${prefix:-$out/c}"
case "$prefix" in
    /*) ;;
    *) echo "package.sh: --prefix must be an absolute path, got $prefix" >&2; exit 2 ;;
esac

step() { printf '\n==> %s\n' "$*"; }

# -- one version everywhere ---------------------------------------------------
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
py_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' bindings/python/pyproject.toml | head -1)"
py_lib_version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' bindings/python/dsh_persist/_lib.py)"
node_version="$(node -p 'require("./bindings/node/package.json").version')"
for v in "$py_version" "$py_lib_version" "$node_version"; do
    if [ "$v" != "$version" ]; then
        echo "package.sh: versions differ: Cargo.toml $version, pyproject.toml $py_version," \
            "dsh_persist/_lib.py $py_lib_version, package.json $node_version" >&2
        exit 1
    fi
done
IFS=. read -r major minor patch <<<"$version"

if [ "$build" = 1 ]; then
    step "cargo build --release (library and CLI; a no-op when the build is fresh)"
    cargo build --release --locked --lib --bin dsh-persist
fi
so="target/release/libdsh_persist.so"
for f in "$so" target/release/libdsh_persist.a target/release/dsh-persist; do
    [ -f "$f" ] || { echo "package.sh: no $f (run without --no-build)" >&2; exit 1; }
done
soname="$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')"
if [ -z "$soname" ]; then
    echo "package.sh: $so has no SONAME (build.rs sets it)" >&2
    exit 1
fi

# -- stripped copies, debug info kept aside -----------------------------------
stage="target/dist-stage"
rm -rf "$stage" "$out/debug"
mkdir -p "$stage/bin" "$out/debug"
# ship SRC DST STRIP_FLAG: DST is SRC without debug info (and, for the .so
# and the CLI, without the static symbol table); the debug info goes to
# OUT/debug/NAME.debug and DST gets a .gnu_debuglink to it.
ship() {
    local src="$1" dst="$2" flag="$3" debug
    debug="$out/debug/$(basename "$dst").debug"
    objcopy --only-keep-debug "$src" "$debug"
    strip "$flag" -o "$dst" "$src"
    objcopy --add-gnu-debuglink="$debug" "$dst"
}
ship "$so" "$stage/libdsh_persist.so" --strip-unneeded
ship target/release/dsh-persist "$stage/bin/dsh-persist" --strip-all
rm -f "$out/debug/libdsh_persist.a.debug"
strip --strip-debug -o "$stage/libdsh_persist.a" target/release/libdsh_persist.a

# The glibc floor: the newest GLIBC_x.y symbol version the library needs.
glibc="$(objdump -T "$stage/libdsh_persist.so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)"
arch="$(uname -m)"
platform="manylinux_${glibc//./_}_${arch}"
echo "glibc floor of the library: $glibc (symbol versions) -> wheel platform $platform"

# What a static link needs besides the archive: rustc's own list for a
# staticlib (what cargo-c does); the bundled SQLite and zstd are inside.
native_static="$(rustc --crate-type staticlib --crate-name probe --print native-static-libs \
    -o "$stage/probe.a" - </dev/null 2>&1 | sed -n 's/.*native-static-libs: //p')"
rm -f "$stage/probe.a"
if [ -z "$native_static" ]; then
    echo "package.sh: rustc printed no native-static-libs" >&2
    exit 1
fi
# rustc's list is that of an empty crate: any library the crate's own
# dependencies link dynamically would be a NEEDED entry of the shared
# library that the list lacks (today there is none: TLS is rustls, built
# in); a static link would need it too, before the system libraries.
extra_static=""
for needed in $(objdump -p "$stage/libdsh_persist.so" | awk '$1 == "NEEDED" { print $2 }'); do
    name="${needed#lib}"
    name="${name%%.so*}"
    case "$name" in ld-linux*) continue ;; esac
    case " $native_static $extra_static " in
        *" -l$name "*) ;;
        *) extra_static="$extra_static -l$name" ;;
    esac
done
native_static="${extra_static# } $native_static"
native_static="${native_static# }"

# -- C install tree ------------------------------------------------------------
step "C install tree in ${destdir}${prefix}"
root="${destdir}${prefix}"
real="libdsh_persist.so.$version"
# Replace this version's files only (other versions' libraries stay).
rm -rf "$root/include/dsh_persist.h" "$root/lib/$real" "$root/lib/$soname" "$root/lib/libdsh_persist.so" \
    "$root/lib/libdsh_persist.a" "$root/lib/pkgconfig/dsh_persist.pc" "$root/lib/cmake/dsh_persist" "$root/bin/dsh-persist"
mkdir -p "$root/include" "$root/lib/pkgconfig" "$root/lib/cmake/dsh_persist" "$root/bin"
install -m 0644 include/dsh_persist.h "$root/include/dsh_persist.h"
install -m 0755 "$stage/libdsh_persist.so" "$root/lib/$real"
ln -sf "$real" "$root/lib/$soname"
ln -sf "$soname" "$root/lib/libdsh_persist.so"
install -m 0644 "$stage/libdsh_persist.a" "$root/lib/libdsh_persist.a"
install -m 0755 "$stage/bin/dsh-persist" "$root/bin/dsh-persist"
description="$(sed -n 's/^description = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
cat >"$root/lib/pkgconfig/dsh_persist.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include
# What a static link needs after libdsh_persist.a (also in Libs.private):
#   cc app.c \$(pkg-config --cflags dsh_persist) -Wl,-Bstatic \$(pkg-config --libs dsh_persist) \\
#      -Wl,-Bdynamic \$(pkg-config --variable=static_libs dsh_persist)
static_libs=$native_static

Name: dsh_persist
Description: $description
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -ldsh_persist
Libs.private: \${static_libs}
EOF
cmake_libs="$(printf '%s\n' $native_static | sed 's/^-l//' | paste -sd ';')"
cat >"$root/lib/cmake/dsh_persist/dsh_persistConfig.cmake" <<EOF
# find_package(dsh_persist) gives two imported targets:
#   dsh_persist::dsh_persist  the shared library ($soname)
#   dsh_persist::static       libdsh_persist.a with the system libraries it needs
# Relocatable: paths are found from this file's place in the install tree.
get_filename_component(_dsh_persist_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET dsh_persist::dsh_persist)
  add_library(dsh_persist::dsh_persist SHARED IMPORTED)
  set_target_properties(dsh_persist::dsh_persist PROPERTIES
    IMPORTED_LOCATION "\${_dsh_persist_prefix}/lib/$real"
    IMPORTED_SONAME "$soname"
    INTERFACE_INCLUDE_DIRECTORIES "\${_dsh_persist_prefix}/include")
endif()
if(NOT TARGET dsh_persist::static)
  add_library(dsh_persist::static STATIC IMPORTED)
  set_target_properties(dsh_persist::static PROPERTIES
    IMPORTED_LOCATION "\${_dsh_persist_prefix}/lib/libdsh_persist.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "\${_dsh_persist_prefix}/include"
    INTERFACE_LINK_LIBRARIES "$cmake_libs")
endif()
unset(_dsh_persist_prefix)
EOF
cat >"$root/lib/cmake/dsh_persist/dsh_persistConfigVersion.cmake" <<EOF
# Before 1.0 a minor release may change the C ABI: $version satisfies a
# request for $major.$minor.x up to $version (for 1.0 and later, the same major).
set(PACKAGE_VERSION "$version")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION_MAJOR EQUAL $major
   AND ($major GREATER 0 OR PACKAGE_FIND_VERSION_MINOR EQUAL $minor)
   AND NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
EOF

# -- Python wheel and sdist ----------------------------------------------------
step "Python wheel ($platform) and sdist"
venv="target/package-venv"
if ! "$venv/bin/python" -c 'import build, setuptools, sys; sys.exit(tuple(map(int, setuptools.__version__.split(".")[:2])) < (70, 1))' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'build>=1.0' 'setuptools>=70.1'
fi
pystage="$stage/python"
mkdir -p "$pystage"
cp bindings/python/pyproject.toml bindings/python/setup.py bindings/python/MANIFEST.in bindings/python/README.md "$pystage/"
cp -r bindings/python/dsh_persist "$pystage/dsh_persist"
find "$pystage/dsh_persist" \( -name '__pycache__' -o -name '*.so' \) -prune -exec rm -rf {} +
# The crate, as `cargo package` lists it (the include list of Cargo.toml).
cargo package --quiet --no-verify --allow-dirty --locked
mkdir -p "$pystage/rust"
tar -xzf "target/package/dsh-persist-$version.crate" -C "$pystage/rust" --strip-components=1
rm -f "$out"/dsh_persist-*.whl "$out"/dsh_persist-*.tar.gz
# --sdist --wheel: the wheel is built from the sdist, as pip would.
DSH_PERSIST_LIB="$repo/$stage/libdsh_persist.so" DSH_WHEEL_PLATFORM="$platform" \
    "$venv/bin/python" -m build --no-isolation --sdist --wheel --outdir "$out" "$pystage" >"$stage/python-build.log" 2>&1 || {
    cat "$stage/python-build.log" >&2
    exit 1
}

# -- npm package ---------------------------------------------------------------
step "npm package"
nodestage="$stage/node"
mkdir -p "$nodestage"
cp bindings/node/package.json bindings/node/README.md bindings/node/index.js bindings/node/index.mjs \
    bindings/node/index.d.ts bindings/node/index.d.mts "$nodestage/"
cp -r bindings/node/src "$nodestage/src"
cp "$stage/libdsh_persist.so" "$nodestage/libdsh_persist.so"
rm -f "$out"/dsh-persist-*.tgz
(cd "$nodestage" && npm pack --quiet --pack-destination "$out" >/dev/null)

step "artifacts"
wheel="$(ls "$out"/dsh_persist-"$version"-py3-none-"$platform".whl)"
ls -l "$wheel" "$out/dsh_persist-$version.tar.gz" "$out/dsh-persist-$version.tgz" | awk '{ printf "%12s  %s\n", $5, $NF }'
echo "C tree: ${destdir}${prefix} (SONAME $soname, Libs.private $native_static)"
echo "debug info: $out/debug/"
