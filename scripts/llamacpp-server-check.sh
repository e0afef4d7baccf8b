#!/usr/bin/env bash
# Manual peer check (not run by CI): the same hermes binary against a real OpenAI-compatible
# server — llama-cpp-python's server on loopback serving the default GGUF.
#
#   scripts/llamacpp-server-check.sh            # builds hermes, sets up the server venv once
#
# The venv is kept in ${HERMES_PEER_CACHE:-~/.cache/hermes-peer}/llamacpp-venv; the first
# `pip install 'llama-cpp-python[server]'` compiles llama.cpp (about 16 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${HERMES_PEER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-peer}"
venv="$cache/llamacpp-venv"
port="${HERMES_PEER_PORT:-8799}"
gguf="$(scripts/fetch-test-model.sh)"

if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  python3 -m venv "$venv"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "$venv/bin/pip" install --quiet 'llama-cpp-python[server]'
fi

cargo build --quiet -p hermes-cli
hermes="$PWD/target/debug/hermes"

"$venv/bin/python" -m llama_cpp.server --model "$gguf" --model_alias smollm2-135m \
  --host 127.0.0.1 --port "$port" --n_ctx 4096 --n_threads "$(nproc)" >"$cache/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
  sleep 0.5
done

home="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; rm -rf "$home"' EXIT
export HERMES_HOME="$home"
echo "== hermes chat -q against llama-cpp-python on 127.0.0.1:$port"
"$hermes" chat -q "What is the capital of France?" --max-turns 2 \
  --provider custom --base-url "http://127.0.0.1:$port/v1" --model smollm2-135m --prompt-profile compact
echo "== exit code: $?"
"$hermes" sessions list
