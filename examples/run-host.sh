#!/usr/bin/env bash
# Builds everything the demo uses (the library, the CLI `dsh-persist`, and
# examples/host.c), then runs the crash + resume demo and reads the result
# back with the CLI:
#   examples/run-host.sh [STORE]      (default ./dsh-demo-store, recreated)
# DSH_PROFILE=debug uses the debug build instead of --release.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
profile="${DSH_PROFILE:-release}"
store="${1:-./dsh-demo-store}"

if [ "$profile" = release ]; then
    cargo build --release --lib --bin dsh-persist --manifest-path "$repo/Cargo.toml"
else
    cargo build --lib --bin dsh-persist --manifest-path "$repo/Cargo.toml"
fi
libdir="$repo/target/$profile"
cli="$libdir/dsh-persist"
# The demo records the library's SONAME (set by build.rs, e.g.
# libdsh_persist.so.0.1) and the loader looks for that file; cargo writes
# only libdsh_persist.so, so make the link an install would make.
soname="$(objdump -p "$libdir/libdsh_persist.so" | awk '$1 == "SONAME" { print $2 }')"
if [ -n "$soname" ]; then
    ln -sf libdsh_persist.so "$libdir/$soname"
fi
mkdir -p "$repo/target/host"
exe="$repo/target/host/host-$profile"
"${CC:-cc}" -std=c11 -Wall -Wextra -Werror -pedantic -O2 -I "$repo/include" \
    "$repo/examples/host.c" -o "$exe" \
    -L "$libdir" -Wl,-rpath,"$libdir" -ldsh_persist -pthread

rm -rf "$store"
echo "== host crash $store"
"$exe" crash "$store"
echo
echo "== host resume $store"
"$exe" resume "$store"
echo
echo "== dsh-persist --jsonl $store cat demo   (the CLI reads the compressed log)"
"$cli" --jsonl "$store" cat demo
echo
echo "The CLI is $cli; \`cargo install --path $repo\` puts dsh-persist on your PATH."
