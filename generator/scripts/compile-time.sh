#!/usr/bin/env bash
# Debug compile time of a generated crate, dependencies prebuilt, for this
# revision's generator and (with BASELINE_REF) an older one, so a faster
# generator is not bought with a slower build. Each crate is generated
# standalone under target/compile-time/, built once (dependencies), then
# its own package is cleaned and built again, RUNS times (median printed).
#
#   [RUNS=3] [BASELINE_REF=main] generator/scripts/compile-time.sh SPEC [generic|cloudflare]
#
# The baseline generator is the one bench.sh builds (target/bench-baseline-REF).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=baseline.sh
. generator/scripts/baseline.sh
SPEC="$(realpath "$1")"
POLICY="${2:-generic}"
RUNS="${RUNS:-3}"
DIR="$PWD/target/compile-time"
export CARGO_TERM_COLOR=never
cargo build --quiet --release -p toolforge-generator --bin toolforge
TARGET="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')"
bins=("this=$TARGET/release/toolforge=$PWD")
if [ -n "${BASELINE_REF:-}" ]; then
  WT="$(baseline_tree "$BASELINE_REF")"
  bins+=("$BASELINE_REF=$WT/target/release/toolforge=$WT")
fi
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { "$@"; return 1; }; e=$(date +%s.%N); echo "$e - $s" | bc; }
for entry in "${bins[@]}"; do
  # label=generator=tree: each crate is generated from (and links) its own tree's runtime.
  label="${entry%%=*}"; rest="${entry#*=}"; bin="${rest%%=*}"; tree="${rest#*=}"
  out="$DIR/$label"
  rm -rf "$out"
  (cd "$tree" && "$bin" generate --spec "$SPEC" --policy "$POLICY" --out "$out" >/dev/null)
  cp "$tree/Cargo.lock" "$out/Cargo.lock"
  pkg=$(sed -n 's/^name = "\(.*\)"/\1/p' "$out/Cargo.toml" | head -1)
  export CARGO_TARGET_DIR="$DIR/target"  # dependencies shared by both crates
  (cd "$out" && cargo build --quiet)
  times=()
  for _ in $(seq "$RUNS"); do
    (cd "$out" && cargo clean --quiet -p "$pkg")
    times+=("$(cd "$out" && secs cargo build)")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  echo "$label: debug build of $pkg from clean (deps prebuilt): median ${median} s of ${times[*]}; sources $(du -sh "$out/src" | cut -f1)"
done
