#!/usr/bin/env bash
# Benchmark of the direct-mode MCP server on the full Cloudflare release, side by side with
# FastMCP's OpenAPI server (see tests/bench/README.md). Not a test: it measures and reports.
#
#   tests/bench/run.sh [server_bench.py options]      e.g. --runs 9, --servers toolforge
#
# Environment: TOOLFORGE_SHARED (default ../shared), SKIP_FASTMCP=1 (toolforge only),
# SKIP_BUILD=1 (measure the binary already in target/bench/cf-target without regenerating).
# Everything it builds or installs goes to the git-ignored target/bench/.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SHARED=${TOOLFORGE_SHARED:-$ROOT/../shared}
SPEC=$SHARED/specs/cloudflare/openapi.json
BENCH=target/bench
FASTMCP_VERSION=4.1.6

if [ ! -f "$SPEC" ]; then
  echo "SKIPPED: the full Cloudflare release is not at $SPEC (set TOOLFORGE_SHARED)" >&2
  exit 2
fi
mkdir -p "$BENCH"

# 1. The full release as a standalone crate, built in its own target dir. The workspace's
#    Cargo.lock is copied in so the server links the same dependency versions as the workspace.
if [ "${SKIP_BUILD:-}" != 1 ]; then
  echo "== building the generator and generating the full Cloudflare release" >&2
  cargo build --release -p toolforge-generator
  ./target/release/toolforge generate --spec "$SPEC" --out "$BENCH/cf-full"
  cp Cargo.lock "$BENCH/cf-full/Cargo.lock"
  echo "== building $BENCH/cf-full (cloudflare-mcp)" >&2
  CARGO_TARGET_DIR="$BENCH/cf-target" cargo build --release --manifest-path "$BENCH/cf-full/Cargo.toml"
fi

# 2. FastMCP in a venv, pinned (plus the dependencies that shape its HTTP path).
servers=toolforge,fastmcp
if [ "${SKIP_FASTMCP:-}" = 1 ]; then
  servers=toolforge
elif ! "$BENCH/venv/bin/python" -c "import fastmcp, sys; sys.exit(fastmcp.__version__ != '$FASTMCP_VERSION')" 2>/dev/null; then
  echo "== installing fastmcp==$FASTMCP_VERSION into $BENCH/venv" >&2
  python3 -m venv "$BENCH/venv"
  "$BENCH/venv/bin/pip" install --quiet --disable-pip-version-check \
    "fastmcp==$FASTMCP_VERSION" "mcp==2.3.0" "httpx2==2.16.2" "pydantic==2.14.4" \
    "starlette==1.10.0" "uvicorn==0.54.0" "sse-starlette==3.7.0"
fi
if [ -x "$BENCH/venv/bin/pip" ]; then
  "$BENCH/venv/bin/pip" freeze --disable-pip-version-check > "$BENCH/venv-freeze.txt"
fi

# 3. Measure (standard-library Python driver; bounded loops; loopback only).
echo "== measuring" >&2
exec python3 tests/bench/server_bench.py run \
  --binary "$BENCH/cf-target/release/cloudflare-mcp" \
  --spec "$SPEC" \
  --venv-python "$BENCH/venv/bin/python" \
  --servers "$servers" \
  "$@"
