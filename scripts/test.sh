#!/usr/bin/env bash
# Every test of the project: Rust (unit, integration, fixtures, C ABI via
# cargo), the fault-injection build, Python and Node wrappers, the
# PostgreSQL backend against a real server started here, and the packages
# (wheel, sdist, npm tarball, C install tree) installed and used as a user
# would. Builds once in release mode and reuses that build everywhere.
# Installs what the tests need on a new machine: pytest in a venv
# (target/test-venv), the Node dev dependencies (bindings/node), the
# packaging tools in target/package-venv, PostgreSQL (and the openssl tool
# for its test certificate) from the distribution's packages. Checks
# formatting, clippy and the API docs too. Needs ../shared beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s  (%ss)\n' "$*" "$SECONDS"; }

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

step "Formatting and lints (cargo fmt --check, cargo clippy -D warnings)"
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy || {
    echo "error: cargo fmt and cargo clippy are needed (rustup component add rustfmt clippy)" >&2
    exit 1
  }
fi
cargo fmt --check
cargo clippy --release --all-targets -- -D warnings

step "Rust API docs build without a warning (broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --release --no-deps

step "Rust tests (release build, reused)"
cargo test --release

export DSH_PERSIST_LIB="$PWD/target/release/libdsh_persist.so"

if [ -d bindings/python/tests ]; then
  step "Python wrapper tests"
  venv=target/test-venv
  if ! "$venv/bin/python" -c 'import pytest' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pytest
  fi
  "$venv/bin/python" -m pytest -q bindings/python/tests
fi

if [ -f bindings/node/package.json ]; then
  step "Node wrapper tests"
  (cd bindings/node && npm install --no-audit --no-fund --silent && node --test test/)
fi

# After every test that reads the upstream fixtures; the packaging checks
# below use only files of their own.
step "Fixtures untouched"
cargo test --release --test fixtures_untouched

# The packages carry the release build the tests above ran against
# (--no-build). The sdist check compiles the crate once more, as `cargo build
# --release --lib` (dependencies reused), which is why it comes last.
step "Packages: every artifact (scripts/package.sh)"
bash scripts/package.sh --out target/ci-dist --no-build

step "Packages: installed and used as a user would (scripts/check-packages.sh)"
bash scripts/check-packages.sh target/ci-dist

step "all tests passed"
