#!/usr/bin/env bash
# Installs hermes on a fresh Debian/Ubuntu machine with a Rust toolchain, pulls the default
# local model and asks it a question — the README's first command.
#
#   scripts/install.sh [question]
set -euo pipefail
cd "$(dirname "$0")/.."
question="${1:-What is the capital of France?}"

# Build dependencies of the embedded llama.cpp engine.
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
if ((${#missing[@]})); then
  sudo=""; [[ "$(id -u)" -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

cargo install --locked --path crates/hermes-cli
bin="${CARGO_HOME:-$HOME/.cargo}/bin/hermes"
"$bin" model pull
"$bin" chat -q "$question"
