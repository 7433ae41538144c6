#!/usr/bin/env bash
# Generates the full Cloudflare release (../shared/specs/cloudflare/openapi.json)
# as a standalone crate under target/ and checks that it compiles:
#   - `cargo clippy -- -D warnings` on the generated crate;
#   - `cargo build` of the generated crate alone from clean (dependencies
#     prebuilt), debug and release, and after touching one product module.
# Prints one line per figure. Not part of `cargo test` (minutes of compiling).
# Usage: generator/scripts/compile-cloudflare.sh [SPEC]
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED="${TOOLFORGE_SHARED:-../shared}"
SPEC="${1:-$SHARED/specs/cloudflare/openapi.json}"
OUT="target/cf-release"
export CARGO_TERM_COLOR=never

cargo build --quiet --release -p toolforge-generator --bin toolforge
TOOLFORGE="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/release/toolforge"
rm -rf "$OUT"
"$TOOLFORGE" generate --spec "$SPEC" --policy cloudflare --out "$OUT"
export CARGO_TARGET_DIR="$PWD/target/cf-release-target"
PKG=$(sed -n 's/^name = "\(.*\)"/\1/p' "$OUT/Cargo.toml" | head -1)
cd "$OUT"

secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { "$@"; return 1; }; e=$(date +%s.%N); echo "$e - $s" | bc; }

echo "== clippy -D warnings"
cargo clippy --quiet --all-targets -- -D warnings
echo "clippy: clean"

for profile in dev release; do
  flag=""; [ "$profile" = release ] && flag="--release"
  cargo build --quiet $flag                      # dependencies (and the crate) once
  cargo clean --quiet $flag -p "$PKG"
  echo "build $profile from clean (deps prebuilt): $(secs cargo build $flag) s"
  module=$(ls src/*.rs | grep -v -e lib.rs -e main.rs -e schemas.rs | head -1)
  touch "$module"
  echo "build $profile after touching $module: $(secs cargo build $flag) s"
done
echo "sources: $(du -sh src | cut -f1), $(ls src | wc -l) files"
