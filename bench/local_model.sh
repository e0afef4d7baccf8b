#!/usr/bin/env bash
# Speed benchmark of the embedded local model (FEATURES §14): load time, prefill tok/s on a
# ~200-token prompt, greedy decode tok/s over 96 tokens, median of 3. Runs in the test
# profile (the one CI builds), where llama.cpp is still built Release with AVX2/FMA
# (see .cargo/config.toml). Model: $HERMES_BENCH_GGUF, else $HERMES_TEST_GGUF, else the
# default model in $HERMES_HOME/models (install it with `hermes model pull`).
# Optional: HERMES_BENCH_THREADS (default: all cores). Measure on a quiet machine: with
# other work on the cores, llama.cpp's spinning worker threads slow down sharply.
set -euo pipefail
cd "$(dirname "$0")/.."
gguf="${HERMES_BENCH_GGUF:-${HERMES_TEST_GGUF:-}}"
if [ -z "$gguf" ]; then
  gguf="${HERMES_HOME:-$HOME/.hermes}/models/SmolLM2-135M-Instruct.Q4_1.gguf"
fi
if [ ! -f "$gguf" ]; then
  echo "no model at $gguf: run 'hermes model pull' or set HERMES_BENCH_GGUF" >&2
  exit 1
fi
HERMES_BENCH_GGUF="$gguf" cargo test -q -p hermes-llm --bench local_model
