#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 60 s each).
#
#   fuzz/run-all.sh [seconds-per-target] [target...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and libFuzzer's nightly
# flags: a nightly toolchain, or stable with RUSTC_BOOTSTRAP=1 (used here).
# Seeds come from the upstream fixtures (written by the `write_seed_corpus`
# test into fuzz/corpus/<target>/seed-*); crashes land in
# fuzz/artifacts/<target>/. Debug assertions (overflow checks) are on.
set -euo pipefail
secs="${1:-60}"
shift || true
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(record_line jsonl_log zstd_frames chunk_row sqlite_row header json_canonical c_abi store_files append_checkpoint catalog_index)
fi
DSH_FUZZ_CORPUS="$here/corpus" cargo test -q --test fuzz_smoke write_seed_corpus -- --ignored >/dev/null
cd "$here"
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O -a
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t (${secs}s)"
  if ! cargo fuzz run -O -a "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=65536 \
      -rss_limit_mb=2048 -print_final_stats=1 2>"artifacts/$t.log"; then
    echo "   CRASH: see fuzz/artifacts/$t/ and fuzz/artifacts/$t.log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "artifacts/$t.log" | tail -3 | sed 's/^/   /'
done
exit $status
