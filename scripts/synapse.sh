#!/usr/bin/env bash
# Installs the Synapse Matrix homeserver (`matrix-synapse` from PyPI) into a cached venv and
# prints the venv's path. The Matrix adapter tests (hermes-gateway tests/matrix.rs,
# HERMES_SYNAPSE) start it on loopback with a generated homeserver.yaml (SQLite, a free
# port) and register their users through its shared-secret admin API. Idempotent: the venv
# is rebuilt only when its marker is missing.
set -euo pipefail
version="1.163.2"
venv="${HERMES_SYNAPSE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-synapse-$version}"
if [[ ! -f "$venv/.installed-$version" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "matrix-synapse==$version" >&2
  "$venv/bin/python" -c "import synapse.app.homeserver" >&2
  touch "$venv/.installed-$version"
fi
echo "$venv"
