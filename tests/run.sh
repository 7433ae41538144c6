#!/usr/bin/env bash
# The project's one test command (README): installs the pinned npm test
# tools (Prism) into tests/node_modules, then runs every Rust test.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v npm >/dev/null 2>&1; then
  if [ ! -x tests/node_modules/.bin/prism ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; then
    npm ci --prefix tests --no-audit --no-fund --loglevel=error
  fi
else
  echo "tests/run.sh: npm not found; tests that need Node tools will fail (set TOOLFORGE_SKIP_NODE=1 to skip them)" >&2
fi
# ../shared holds the real Cloudflare releases and the spec corpus; tests that
# need it say SKIPPED loudly when it is absent.
if [ -z "${TOOLFORGE_SHARED:-}" ] && [ -d ../shared/specs ]; then
  TOOLFORGE_SHARED="$(cd ../shared && pwd)"
  export TOOLFORGE_SHARED
fi
cargo test --workspace --all-targets "$@"
