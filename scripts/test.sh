#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, fixtures, C ABI via
# cargo), the fault-injection build, Python and Node wrappers.
# Builds once in release mode and reuses that build everywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# The fault-injection build comes first: it rebuilds the library with the
# feature on, and the cdylib's file name does not depend on features, so the
# plain build below must be the last one the C, Python and Node tests see.
step "Fault-injection tests (feature build)"
cargo test --release --features fault-injection --test fault_injection

step "cargo build --release (library, cdylib, CLI)"
cargo build --release --all-targets

step "Rust tests (release build, reused)"
cargo test --release

export DSH_PERSIST_LIB="$PWD/target/release/libdsh_persist.so"

if [ -d bindings/python/tests ]; then
  step "Python wrapper tests"
  python3 -m pip --version >/dev/null
  python3 -c 'import pytest' 2>/dev/null || python3 -m pip install --quiet pytest
  python3 -m pytest -q bindings/python/tests
fi

if [ -f bindings/node/package.json ]; then
  step "Node wrapper tests"
  (cd bindings/node && npm install --no-audit --no-fund --silent && node --test test/)
fi

step "Fixtures untouched"
cargo test --release --test fixtures_untouched

step "all tests passed"
