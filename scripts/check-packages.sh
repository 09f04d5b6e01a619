#!/usr/bin/env bash
# Installs the artifacts of scripts/package.sh the way a user would and runs
# a smoke scenario through each, with no DSH_PERSIST_LIB and no
# LD_LIBRARY_PATH, from directories outside the checkout:
#
# - libraries: the shipped copies carry no debug info, the .so has its SONAME,
#   the wheel, the npm package and the C tree ship the same library;
# - Python: the wheel in fresh venvs of several interpreters (the machine's
#   python3, Debian's /usr/bin/python3, other minor versions pyenv has),
#   `import dsh_persist` + scripts/smoke/smoke.py; auditwheel agrees with the
#   platform tag; mypy --strict sees the types (py.typed); pip install of
#   the sdist builds the library with cargo (DSH_CHECK_SDIST=0 skips it);
# - Node: `npm install` of the tarball into a scratch project (koffi comes
#   from the registry), the scenario from CommonJS and from ESM, tsc on a
#   typed consumer of both;
# - C: examples/host.c against the install prefix with pkg-config, shared
#   (rpath to the prefix's libdir) and static, plus CMake's find_package.
#
# Usage: scripts/check-packages.sh [OUT [PREFIX]]   (package.sh's defaults: dist/, OUT/c)
# DSH_CHECK_PYTHONS="py1 py2 …" replaces the interpreter search.
set -euo pipefail
cd "$(dirname "$0")/.."
# Nothing from a developer's or CI's environment may point at a library.
unset DSH_PERSIST_LIB LD_LIBRARY_PATH
repo="$PWD"
out="$(cd "${1:-dist}" && pwd)"
prefix="${2:-$out/c}"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
tools="$repo/target/package-venv"   # made by package.sh: build, setuptools

step() { printf "\n==> %s  (%ss)\n" "$*" "$SECONDS"; }
fail() { echo "check-packages: $*" >&2; exit 1; }
scratch="$(mktemp -d "${TMPDIR:-/tmp}/dsh-packages.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
# A clean environment for the smoke runs: no DSH_PERSIST_LIB, LD_LIBRARY_PATH,
# PYTHONPATH or NODE_PATH can help them find anything.
clean_env=(env -i "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$scratch" "LANG=C.UTF-8")

wheel="$(ls "$out"/dsh_persist-"$version"-py3-none-*.whl)"
sdist="$out/dsh_persist-$version.tar.gz"
tgz="$out/dsh-persist-$version.tgz"
shipped_so="$prefix/lib/libdsh_persist.so.$version"

step "shipped libraries: no debug info, SONAME, one library everywhere"
# DWARF sections (.debug_gdb_scripts is no debug info: rustc's pointer to pretty-printers).
has_debug() { readelf -S -W "$1" 2>/dev/null | grep -Eq '\.(z?debug_(info|line|str|abbrev|aranges|ranges|rnglists|loc|loclists|frame|macro))'; }
unzip -q -o "$wheel" 'dsh_persist/libdsh_persist.so' -d "$scratch/wheel"
mkdir -p "$scratch/npm" && tar -xzf "$tgz" -C "$scratch/npm" package/libdsh_persist.so
for f in "$shipped_so" "$prefix/lib/libdsh_persist.a" "$prefix/bin/dsh-persist" \
    "$scratch/wheel/dsh_persist/libdsh_persist.so" "$scratch/npm/package/libdsh_persist.so"; do
    [ -f "$f" ] || fail "missing $f"
    if has_debug "$f"; then fail "$f carries debug info"; fi
    printf '%10s  %s\n' "$(stat -c %s "$f")" "${f#"$scratch"/}"
done
has_debug target/release/libdsh_persist.so || fail "the build's own library lost its debug info (bench/profiling need it)"
cmp "$shipped_so" "$scratch/wheel/dsh_persist/libdsh_persist.so"
cmp "$shipped_so" "$scratch/npm/package/libdsh_persist.so"
soname="$(objdump -p "$shipped_so" | awk '$1 == "SONAME" { print $2 }')"
IFS=. read -r major minor _ <<<"$version"
want_soname="libdsh_persist.so.$([ "$major" = 0 ] && echo "0.$minor" || echo "$major")"
[ "$soname" = "$want_soname" ] || fail "SONAME is '$soname', want $want_soname"
[ "$(readlink "$prefix/lib/$soname")" = "libdsh_persist.so.$version" ] || fail "no $soname link"
[ "$(readlink "$prefix/lib/libdsh_persist.so")" = "$soname" ] || fail "no libdsh_persist.so link"
[ -f "$prefix/include/dsh_persist.h" ] || fail "no header in $prefix/include"
echo "SONAME $soname; build keeps $(stat -c %s target/release/libdsh_persist.so) bytes with debug info, ships $(stat -c %s "$shipped_so")"

step "Python: the wheel in fresh venvs, imported from elsewhere with no environment"
pythons=()
seen_versions=" "
add_python() {
    local py="$1" v
    [ -x "$py" ] || return 0
    v="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3]) if sys.version_info >= (3, 8) else None' 2>/dev/null)" || return 0
    [ -n "$v" ] && [ "$v" != None ] || return 0
    case "$seen_versions" in *" $v "*) return 0 ;; esac
    seen_versions="$seen_versions$v "
    pythons+=("$py")
}
if [ -n "${DSH_CHECK_PYTHONS:-}" ]; then
    for py in $DSH_CHECK_PYTHONS; do add_python "$(command -v "$py" || echo "$py")"; done
else
    own="$(python3 -c 'import sys; print(sys.executable)')"
    add_python "$own"                 # the machine's python3
    add_python /usr/bin/python3       # Debian's (apt)
    # Other minor versions: the oldest and the newest pyenv has.
    own_minor="$("$own" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    others=()
    for py in $(ls -d "$pyenv_root"/versions/3.*/bin/python3 2>/dev/null | sort -V); do
        py_minor="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2]) if sys.version_info >= (3, 8) else None' 2>/dev/null)" || continue
        [ -n "$py_minor" ] && [ "$py_minor" != None ] && [ "$py_minor" != "$own_minor" ] && others+=("$py")
    done
    if [ "${#others[@]}" -gt 0 ]; then
        add_python "${others[0]}"
        add_python "${others[${#others[@]}-1]}"
    fi
fi
minors="$(for py in "${pythons[@]}"; do "$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; done | sort -u | wc -l)"
[ "${#pythons[@]}" -ge 2 ] || fail "found fewer than two Python interpreters (${pythons[*]:-none})"
if [ "$minors" -lt 2 ]; then
    echo "note: only one Python minor version is available here; checked ${#pythons[@]} interpreters of it"
fi
[ -x "$tools/bin/python" ] || fail "no $tools (scripts/package.sh makes it)"
for py in "${pythons[@]}"; do
    v="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
    venv="$scratch/venv-$v"
    # A venv without its own pip (ensurepip takes ~8 s a venv), the wheel
    # installed into it by pip --python; an interpreter that pip cannot run
    # on gets a venv with its own pip.
    "$py" -m venv --without-pip "$venv"
    if ! "$tools/bin/python" -m pip --python "$venv/bin/python" install --quiet --no-index \
        --disable-pip-version-check "$wheel" 2>"$scratch/pip-$v.log"; then
        rm -rf "$venv"
        "$py" -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --no-index --disable-pip-version-check "$wheel"
    fi
    mkdir -p "$scratch/py-$v"
    cp scripts/smoke/smoke.py "$scratch/py-$v/"
    (cd "$scratch/py-$v" && "${clean_env[@]}" "$venv/bin/python" smoke.py "$scratch/py-$v")
done
own_venv="$scratch/venv-$("${pythons[0]}" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"

ensure_tool() {  # ensure_tool MODULE PIP-SPEC: installs into the tool venv when missing
    "$tools/bin/python" -c "import $1" 2>/dev/null ||
        "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "$2"
}
ensure_tool auditwheel 'auditwheel>=6'
ensure_tool mypy 'mypy>=1.8'
plat="$(basename "$wheel" .whl)"
plat="${plat##*-}"
report="$("$tools/bin/auditwheel" show "$wheel" 2>&1)"
echo "$report" | grep -q "platform tag: \"$plat\"" || fail "auditwheel does not confirm $plat: $report"
echo "auditwheel: the wheel is consistent with $plat"
(cd "$scratch" && cp "$repo/scripts/smoke/typed.py" . &&
    "$tools/bin/mypy" --strict --no-incremental --python-executable "$own_venv/bin/python" typed.py)

if [ "${DSH_CHECK_SDIST:-1}" != 0 ]; then
    step "Python: pip install of the sdist builds the library with cargo"
    # With the checkout's target dir: cargo hashes path packages relative to
    # their root, so the sdist's crate (the same sources) reuses the release
    # build instead of compiling everything a second time; a file missing
    # from the sdist would make it recompile and fail.
    sdist_venv="$scratch/venv-sdist"
    "${pythons[0]}" -m venv --without-pip "$sdist_venv"
    CARGO_TARGET_DIR="$repo/target" "$tools/bin/python" -m pip --python "$sdist_venv/bin/python" \
        install --quiet --disable-pip-version-check "$sdist"
    mkdir -p "$scratch/py-sdist"
    cp scripts/smoke/smoke.py "$scratch/py-sdist/"
    (cd "$scratch/py-sdist" && "${clean_env[@]}" "$sdist_venv/bin/python" smoke.py "$scratch/py-sdist")
fi

step "Node: npm install of the tarball into a scratch project, CommonJS and ESM"
project="$scratch/node-project"
mkdir -p "$project"
cp scripts/smoke/scenario.cjs scripts/smoke/smoke.cjs scripts/smoke/smoke.mjs scripts/smoke/types.mts scripts/smoke/types.cts "$project/"
(cd "$project" && npm init -y >/dev/null && npm install --no-audit --no-fund --prefer-offline --loglevel=error "$tgz")
[ -d "$project/node_modules/koffi" ] || fail "npm install did not bring koffi"
node_bin="$(dirname "$(command -v node)")"
(cd "$project" && "${clean_env[@]}" "PATH=$node_bin:/usr/bin:/bin" node smoke.cjs "$project")
(cd "$project" && "${clean_env[@]}" "PATH=$node_bin:/usr/bin:/bin" node smoke.mjs "$project")
tsc="$repo/bindings/node/node_modules/typescript/bin/tsc"
[ -f "$tsc" ] || fail "no TypeScript in bindings/node/node_modules (npm install there)"
(cd "$project" && node "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext \
    --target es2022 --lib es2022,esnext.disposable types.mts types.cts)
echo "tsc: the ESM and CommonJS consumers type-check against the installed package"

step "C: examples/host.c against $prefix with pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir dsh_persist)"
[ "$(pkg-config --modversion dsh_persist)" = "$version" ] || fail "pkg-config reports another version"
pkg-config --static --libs dsh_persist | grep -q -- '-lm' || fail "Libs.private lacks -lm"
cflags=(-std=c11 -Wall -Wextra -Werror -pedantic -O2)
# Shared: the prefix is no system directory, so the test adds an rpath to it.
# shellcheck disable=SC2046
cc "${cflags[@]}" examples/host.c -o "$scratch/host-shared" \
    $(pkg-config --cflags --libs dsh_persist) -Wl,-rpath,"$libdir"
readelf -d "$scratch/host-shared" | grep -q "NEEDED.*\[$soname\]" || fail "host-shared does not need $soname"
# Static: the archive, then the system libraries it needs (Libs.private).
# shellcheck disable=SC2046
cc "${cflags[@]}" examples/host.c -o "$scratch/host-static" $(pkg-config --cflags dsh_persist) \
    -Wl,-Bstatic $(pkg-config --libs dsh_persist) -Wl,-Bdynamic $(pkg-config --variable=static_libs dsh_persist)
if readelf -d "$scratch/host-static" | grep -q 'NEEDED.*libdsh_persist'; then fail "host-static needs the shared library"; fi
# Without Libs.private the static link fails: the flags are needed, not decoration.
# shellcheck disable=SC2046
if cc "${cflags[@]}" examples/host.c -o "$scratch/host-bare" $(pkg-config --cflags dsh_persist) \
    -Wl,-Bstatic $(pkg-config --libs dsh_persist) -Wl,-Bdynamic 2>/dev/null; then
    fail "a static link without Libs.private succeeded: is the list still right?"
fi
for kind in shared static; do
    store="$scratch/c-store-$kind"
    "${clean_env[@]}" "$scratch/host-$kind" crash "$store" >"$scratch/host-$kind.crash.log"
    "${clean_env[@]}" "$scratch/host-$kind" resume "$store" >"$scratch/host-$kind.resume.log"
    grep -q "synthetic tool/result for call-3" "$scratch/host-$kind.resume.log" || fail "host-$kind: no repair after the crash"
    echo "C host ($kind): crash + resume ok"
done
"${clean_env[@]}" "$prefix/bin/dsh-persist" --jsonl "$scratch/c-store-shared" list | grep -q demo ||
    fail "the installed CLI does not list the demo session"
echo "CLI $prefix/bin/dsh-persist reads the demo store"

step "C: CMake find_package(dsh_persist)"
cmake_bin="$(command -v cmake || true)"
if [ -z "$cmake_bin" ]; then
    ensure_tool cmake 'cmake>=3.20'
    cmake_bin="$tools/bin/cmake"
fi
mkdir -p "$scratch/cmake"
cat >"$scratch/cmake/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(dsh_host C)
find_package(dsh_persist $major.$minor REQUIRED)
add_executable(host_shared "$repo/examples/host.c")
target_link_libraries(host_shared PRIVATE dsh_persist::dsh_persist)
add_executable(host_static "$repo/examples/host.c")
target_link_libraries(host_static PRIVATE dsh_persist::static)
EOF
"$cmake_bin" -S "$scratch/cmake" -B "$scratch/cmake/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$scratch/cmake.log" 2>&1 || { cat "$scratch/cmake.log"; fail "cmake configure"; }
"$cmake_bin" --build "$scratch/cmake/build" >>"$scratch/cmake.log" 2>&1 || { cat "$scratch/cmake.log"; fail "cmake build"; }
for kind in shared static; do
    "${clean_env[@]}" "$scratch/cmake/build/host_$kind" crash "$scratch/cmake-store-$kind" >/dev/null
    "${clean_env[@]}" "$scratch/cmake/build/host_$kind" resume "$scratch/cmake-store-$kind" | grep -q "synthetic tool/result" ||
        fail "cmake host_$kind: no repair after the crash"
    echo "CMake host ($kind): crash + resume ok"
done
mkdir -p "$scratch/cmake-next"
cat >"$scratch/cmake-next/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(dsh_next C)
find_package(dsh_persist $major.$((minor + 1)) REQUIRED)
EOF
if "$cmake_bin" -S "$scratch/cmake-next" -B "$scratch/cmake-next/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
    fail "find_package(dsh_persist $major.$((minor + 1))) accepted $version"
fi
echo "CMake: find_package($major.$((minor + 1))) refuses $version (another minor, another ABI)"

echo
echo "packages ok"
