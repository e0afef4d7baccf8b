#!/usr/bin/env bash
# The test command of the README: format check, lints, and every test of the workspace.
# The real-model tests run when HERMES_TEST_GGUF names the default GGUF
# (scripts/fetch-test-model.sh prints one); without it they print why they skip.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace
