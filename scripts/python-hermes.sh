#!/usr/bin/env bash
# Installs the real Python Hermes Agent (`hermes-agent==0.19.0` from PyPI) into a cached venv
# and prints the venv's path. The interop tests (HERMES_PYTHON_HERMES) drive its `hermes`
# console script and import its modules (`hermes_state`, `cron.jobs`, …) on the same
# HERMES_HOME as ours. Idempotent: the venv is rebuilt only when its marker is missing.
set -euo pipefail
version="0.19.0"
venv="${HERMES_PYTHON_HERMES:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-python-$version}"
if [[ ! -f "$venv/.installed-$version" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "hermes-agent==$version" >&2
  "$venv/bin/python" -c "import hermes_state, hermes_cli.main" >&2
  touch "$venv/.installed-$version"
fi
echo "$venv"
