#!/usr/bin/env bash
# How large a regeneration diff is when a release changes one shared schema:
# generates SPEC and a copy of it whose components.schemas.SCHEMA has a new
# description on its first property (same file name, so only that change
# differs), and prints the changed files, changed lines and changed bytes
# (the `>` lines of `diff -r`). With BASELINE_REF, that revision's toolforge
# (built as bench.sh builds it) is measured too, in the same run.
#
#   [SPEC=../shared/specs/cloudflare/openapi.json] [SCHEMA=zones_base] [POLICY=cloudflare] [BASELINE_REF=ref] generator/scripts/shared-change-diff.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=baseline.sh
. generator/scripts/baseline.sh
SPEC="${SPEC:-${TOOLFORGE_SHARED:-../shared}/specs/cloudflare/openapi.json}"
SCHEMA="${SCHEMA:-zones_base}"
POLICY="${POLICY:-cloudflare}"
cargo build --quiet --release -p toolforge-generator --bin toolforge
TARGET="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')"
BINS=("this tree=$TARGET/release/toolforge")
if [ -n "${BASELINE_REF:-}" ]; then
  WT="$(baseline_tree "$BASELINE_REF")"
  BINS+=("$BASELINE_REF=$WT/target/release/toolforge")
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/old" "$WORK/new"
cp "$SPEC" "$WORK/old/openapi.json"
python3 - "$SPEC" "$WORK/new/openapi.json" "$SCHEMA" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
props = spec["components"]["schemas"][sys.argv[3]]["properties"]
first = next(iter(props))
props[first]["description"] = "Changed in this release."
json.dump(spec, open(sys.argv[2], "w"))
PY
for entry in "${BINS[@]}"; do
  label="${entry%%=*}"; bin="${entry#*=}"
  for v in old new; do
    "$bin" generate --spec "$WORK/$v/openapi.json" --policy "$POLICY" --out "$WORK/out-$v" >/dev/null
  done
  files=$(diff -rq "$WORK/out-old" "$WORK/out-new" | wc -l || true)
  lines=$(diff -r "$WORK/out-old" "$WORK/out-new" | grep -c '^>' || true)
  bytes=$(diff -r "$WORK/out-old" "$WORK/out-new" | grep '^>' | wc -c || true)
  echo "$label: $files files, $lines changed lines, $bytes changed bytes ($SCHEMA changed)"
  rm -rf "$WORK/out-old" "$WORK/out-new"
done
