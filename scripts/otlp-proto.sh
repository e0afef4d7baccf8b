#!/usr/bin/env bash
# Installs the official OpenTelemetry protocol definitions for Python (`opentelemetry-proto`
# from PyPI) and gRPC (`grpcio`) into a cached venv and prints the venv's path. The trace
# export test (hermes-cli tests/traces.rs, HERMES_OTLP_PYTHON) decodes what hermes sends with
# them, in a loopback OTLP/HTTP or OTLP/gRPC receiver
# (crates/hermes-cli/tests/otlp/receiver.py). Idempotent.
set -euo pipefail
version="1.45.2"
grpcio="1.76.0"
venv="${HERMES_OTLP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-otlp-proto-$version}"
if [[ ! -f "$venv/.installed-$version-grpcio-$grpcio" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "opentelemetry-proto==$version" "grpcio==$grpcio" >&2
  "$venv/bin/python" -c "import grpc; from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc" >&2
  touch "$venv/.installed-$version-grpcio-$grpcio"
fi
echo "$venv"
