#!/usr/bin/env bash
# Runs every reproducer in ../shared (interop/repro/*.cjs on the three store kinds, and
# reliability/*.py) against this checkout's release build, and prints one line per run:
# what ran, its exit code, and what that code means here.
#
#   cargo build --release && bash .ci/run   # once: the build, and bindings/node's node_modules
#   bash scripts/run-reproducers.sh [SHARED]  # SHARED defaults to ../shared
#
# Expected on a clean build (see README "Reproducers"):
#   interop: every file exits 0 on every kind, except 15-zstd-first-frame-two-lines.cjs, which
#            needs Node >= 22.15 (zstd in node:zlib) and exits 2 on older Node before it runs.
#   reliability: every script exits 0, except repro_symlink_escape.py (exits 1 by design: the
#            planted symlink is refused with an error, and the script counts an error as exit 1;
#            its verdict lines say "ok"), and sqlite_cap.py, which exits 1 on the error that
#            refuses the 1 GiB event up front (nothing is acknowledged, so nothing is lost).
#            The bombs must be refused as corruption (exit 4) under a 1 GiB address-space limit.
# Not a test: it needs strace, prlimit and about 6 GB of memory (sqlite_cap), and takes a few
# minutes. docs/reliability.md §7 has what each one prints on this build.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${1:-$here/../shared}
shared=$(cd "$shared" && pwd)
cli=$here/target/release/dsh-persist
[ -x "$cli" ] || { echo "build first: cargo build --release" >&2; exit 2; }
[ -d "$here/bindings/node/node_modules" ] || { echo "run .ci/run once (npm install in bindings/node)" >&2; exit 2; }
export DSH_REPO=$here DSH_PERSIST_NODE=$here/bindings/node
export PYTHONPATH=$here/bindings/python${PYTHONPATH:+:$PYTHONPATH}
scratch=$(mktemp -d /tmp/dsh-repro-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export ATTACK_SCRATCH=$scratch
defects=0

report() { # label rc expected-codes...
  local label=$1 rc=$2 verdict=UNEXPECTED; shift 2
  for want in "$@"; do [ "$rc" = "$want" ] && verdict=ok; done
  [ $verdict = ok ] || defects=$((defects + 1))
  printf '%-10s rc=%-3s %s\n' "$verdict" "$rc" "$label"
}

echo "# interop ($(node --version))"
node_major=$(node -p 'process.versions.node.split(".").map(Number).slice(0,2).join(".")')
for f in "$shared"/interop/repro/[0-9]*.cjs; do
  for kind in jsonl-none jsonl-zstd sqlite; do
    out=$(node "$f" "$kind" 2>&1); rc=$?
    want=0
    case $(basename "$f") in
      15-zstd-first-frame-two-lines.cjs)
        awk -v v="$node_major" 'BEGIN { exit !(v < 22.15) }' && want=2 ;;
    esac
    report "$(basename "$f") $kind" $rc $want
    [ $rc = "$want" ] || printf '%s\n' "$out" | sed 's/^/    /'
  done
done

echo "# reliability"
rel=$shared/reliability
py() { python3 "$@" 2>&1 | tail -5 | sed 's/^/    /'; return "${PIPESTATUS[0]}"; }
py "$rel/accept_then_refuse.py"; report accept_then_refuse.py $? 0
py "$rel/create_race.py" 40; report "create_race.py 40" $? 0
for kind in jsonl-raw jsonl-zstd sqlite; do
  py "$rel/repro_cli_load_while_live.py" "$kind" 3; report "repro_cli_load_while_live.py $kind 3" $? 0
done
for kind in jsonl-raw jsonl-zstd; do
  py "$rel/repro_jsonl_two_writers.py" $kind; report "repro_jsonl_two_writers.py $kind" $? 0
done
py "$rel/repro_symlink_escape.py"; report "repro_symlink_escape.py (1 by design)" $? 1

python3 "$rel/zstd_bomb.py" "$scratch/zbomb" 16 >/dev/null
prlimit --as=$((1 << 30)) "$cli" --jsonl "$scratch/zbomb/header-bomb/root" list >/dev/null 2>&1
report "zstd header bomb: list (4 = corruption)" $? 4
for cmd in load inspect; do
  prlimit --as=$((1 << 30)) "$cli" --jsonl "$scratch/zbomb/body-bomb/root" $cmd body-bomb >/dev/null 2>&1
  report "zstd body bomb: $cmd (4 = corruption)" $? 4
done
python3 "$rel/sqlite_bomb.py" "$scratch/bomb.db" 24 >/dev/null
for cmd in "inspect bomb" "load bomb" verify; do
  prlimit --as=$((1 << 30)) "$cli" --sqlite "$scratch/bomb.db" $cmd >/dev/null 2>&1
  report "sqlite row bomb: $cmd (4 = corruption)" $? 4
done
for mode in open closed; do
  py "$rel/sqlite_cap.py" "$scratch/cap-$mode" $mode; report "sqlite_cap.py $mode (1: refused up front)" $? 1
done

echo "# $defects unexpected"
[ $defects = 0 ]
