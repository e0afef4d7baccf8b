#!/usr/bin/env bash
# Runs every benchmark of the README table and prints the numbers (release build).
#   bench/run.sh            # all
# Measure on a quiet machine: other work on the 2 cores skews every number here.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p hermes-cli
python3 bench/process_stats.py target/release/hermes --version
cargo bench --quiet -p hermes-agent --bench turn_overhead
if gguf="${HERMES_BENCH_GGUF:-$(scripts/fetch-test-model.sh 2>/dev/null)}" && [[ -f "$gguf" ]]; then
  HERMES_BENCH_GGUF="$gguf" bench/local_model.sh
else
  echo "local model: skipped (no GGUF; run scripts/fetch-test-model.sh)"
fi
