#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, fixtures, C ABI via
# cargo), the fault-injection build, Python and Node wrappers, the
# PostgreSQL backend against a real server started here.
# Builds once in release mode and reuses that build everywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# The TLS library the PostgreSQL backend links (native-tls: OpenSSL on
# Linux) needs its headers to build; Debian's image has them, a bare
# machine gets them here.
if ! pkg-config --exists openssl 2>/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    step "Installing libssl-dev and pkg-config (for the PostgreSQL backend's TLS)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev pkg-config
  else
    echo "OpenSSL headers missing: install libssl-dev and pkg-config" >&2
    exit 1
  fi
fi

# A PostgreSQL server for the PostgreSQL tests (contract, fixtures, crash,
# exclusion, CLI), installed if missing, run by an unprivileged user on a
# free localhost port, stopped on every way out.
step "Starting the PostgreSQL test server"
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/dsh-pg.XXXXXX")
trap 'bash scripts/pg-test-server.sh stop "$PG_DIR"' EXIT
bash scripts/pg-test-server.sh start "$PG_DIR"
# shellcheck disable=SC1091
source "$PG_DIR/env"
echo "DSH_TEST_POSTGRES_URL=$DSH_TEST_POSTGRES_URL"

# The fault-injection build comes first: it rebuilds the library with the
# feature on, and the cdylib's file name does not depend on features, so the
# plain build below must be the last one the C, Python and Node tests see.
step "Fault-injection tests (feature build)"
cargo test --release --features fault-injection --test fault_injection --test postgres_faults

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
