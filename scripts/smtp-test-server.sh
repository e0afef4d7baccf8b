#!/usr/bin/env bash
# Installs aiosmtpd (a real SMTP server from PyPI) into a cached venv and prints the venv's
# path. The email adapter tests (hermes-gateway tests/email.rs, HERMES_SMTP_PYTHON) run it on
# loopback with STARTTLS or implicit TLS and AUTH through
# crates/hermes-gateway/tests/email_support/smtp_server.py, which keeps every message it
# accepts as a file. Idempotent.
set -euo pipefail
version="1.4.6"
venv="${HERMES_SMTP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-aiosmtpd-$version}"
if [[ ! -f "$venv/.installed-$version" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "aiosmtpd==$version" >&2
  "$venv/bin/python" -c "import aiosmtpd.controller, aiosmtpd.smtp" >&2
  touch "$venv/.installed-$version"
fi
echo "$venv"
