#!/usr/bin/env bash
# The project's one test command (README): installs what the tests start
# (Debian packages via tests/install-system-deps.sh, the pinned npm tools into
# tests/node_modules, the Python clients into tests/py/.venv), then runs every
# Rust test. .ci/run calls this same script.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TOOLFORGE_SKIP_SYSTEM_DEPS:-}" != 1 ]; then
  tests/install-system-deps.sh
fi
if command -v npm >/dev/null 2>&1; then
  if [ ! -x tests/node_modules/.bin/prism ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
    npm ci --prefix tests --no-audit --no-fund --loglevel=error
  fi
  # The conformance suite imports fs.globSync (Node 22+) for a command we do not use.
  node tests/js/patch-conformance.mjs
  node tests/js/patch-conformance.mjs tests/node_modules/@modelcontextprotocol/conformance-next/dist/index.js
else
  echo "tests/run.sh: npm not found; tests that need Node tools will fail (set TOOLFORGE_SKIP_NODE=1 to skip them)" >&2
fi
# Python MCP clients (mcp.Client for 2026-07-28, ClientSession for 2025-11-25).
if [ "${TOOLFORGE_SKIP_PYTHON:-}" != 1 ] && command -v python3 >/dev/null 2>&1; then
  if [ ! -x tests/py/.venv/bin/python ] || [ tests/py/requirements.txt -nt tests/py/.venv/.installed ]; then
    python3 -m venv tests/py/.venv
    tests/py/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/py/requirements.txt
    touch tests/py/.venv/.installed
  fi
fi
# ../shared holds the real Cloudflare releases and the spec corpus; tests that
# need it say SKIPPED loudly when it is absent.
if [ -z "${TOOLFORGE_SHARED:-}" ] && [ -d ../shared/specs ]; then
  TOOLFORGE_SHARED="$(cd ../shared && pwd)"
  export TOOLFORGE_SHARED
fi
# Without the shared data a test that needs it fails, unless
# TOOLFORGE_REQUIRE_SHARED=0 asks for a skip; this script asks for one on a
# machine that has no ../shared (CI sets TOOLFORGE_REQUIRE_SHARED=1).
if [ -z "${TOOLFORGE_SHARED:-}" ] && [ -z "${TOOLFORGE_REQUIRE_SHARED:-}" ]; then
  echo "tests/run.sh: no ../shared here: the tests that need the real specs and the corpus are SKIPPED (TOOLFORGE_REQUIRE_SHARED=0)" >&2
  export TOOLFORGE_REQUIRE_SHARED=0
fi
cargo test --workspace "$@"
