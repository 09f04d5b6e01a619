#!/usr/bin/env bash
# Builds the cdylib and examples/host.c, then runs the crash + resume demo:
#   examples/run-host.sh [STORE]      (default ./dsh-demo-store, recreated)
# DSH_PROFILE=debug uses the debug build instead of --release.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
profile="${DSH_PROFILE:-release}"
store="${1:-./dsh-demo-store}"

if [ "$profile" = release ]; then
    cargo build --release --lib --manifest-path "$repo/Cargo.toml"
else
    cargo build --lib --manifest-path "$repo/Cargo.toml"
fi
libdir="$repo/target/$profile"
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
