#!/usr/bin/env bash
# Debug compile time of a generated crate, dependencies prebuilt, for this
# revision's generator and (with BASELINE_REF) an older one, so a faster
# generator is not bought with a slower build. RUNS times each, interleaved
# (this, baseline, this, …); medians printed, with the crate's own rustc CPU
# time (user + system of its library and binary, which depends less on the
# machine's load than the wall time).
#
#   [RUNS=3] [BASELINE_REF=main] generator/scripts/compile-time.sh SPEC [generic|cloudflare]
#
# Prints, per generator, the generate time, the debug build's and their sum
# (spec → serving binary). CARGO_ARGS are added to the timed build (e.g.
# `--config profile.dev.package.larder-tools.incremental=true` for the build
# as it was before the generated crates turned incremental caches off).
#
# Standalone (the default): each crate is generated under
# target/compile-time/ and built there once (dependencies, in a target
# directory of its own), then its own package is cleaned and built again.
#
# MEMBER=1: each crate is generated into the workspace member of its policy
# (generated-larder/ with forge.larder.json for generic, generated/ with
# forge.json for cloudflare) and built as that package with the workspace's
# target directory, so the workspace's prebuilt dependencies serve it; the
# member is restored from git afterwards (it must be clean). Both crates link
# this tree's runtime. BASELINE_BIN names a prebuilt baseline generator
# instead of building BASELINE_REF's.
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
if [ -n "${BASELINE_BIN:-}" ]; then
  bins+=("${BASELINE_REF:-baseline}=$(realpath "$BASELINE_BIN")=$PWD")
elif [ -n "${BASELINE_REF:-}" ]; then
  WT="$(baseline_tree "$BASELINE_REF")"
  bins+=("$BASELINE_REF=$WT/target/release/toolforge=$WT")
fi
if [ -n "${MEMBER:-}" ]; then
  case "$POLICY" in
    cloudflare) member=generated config=forge.json pkg=cloudflare-tools ;;
    *) member=generated-larder config=forge.larder.json pkg=larder-tools ;;
  esac
  if [ -n "$(git status --porcelain -- "$member")" ]; then
    echo "$member has uncommitted changes" >&2
    exit 1
  fi
  trap 'git checkout --quiet -- "$member" && git clean -fdq -- "$member"' EXIT
  lib="$(echo "$pkg" | tr - _)"
fi
# The crate's own rustc runs (user + system seconds), from a cargo build -v
# run under `time` per rustc: cargo passes RUSTC_WRAPPER's output through.
WRAP="$DIR/rustc-cpu.sh"
mkdir -p "$DIR"
cat >"$WRAP" <<'EOF'
#!/usr/bin/env bash
case " $* " in
  *" --crate-name $CT_CRATE "* | *" --crate-name $CT_BIN "*)
    exec /usr/bin/time -a -o "$CT_LOG" -f '%U %S' "$@" ;;
  *) exec "$@" ;;
esac
EOF
chmod +x "$WRAP"
secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || { "$@"; return 1; }; e=$(date +%s.%N); echo "$e - $s" | bc; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
# Generates `label`'s crate; prints the directory to build in and the package.
prepare() {
  local label="$1" bin="$2" tree="$3" out
  if [ -n "${MEMBER:-}" ]; then
    "$bin" generate --config "$config" --spec "$SPEC" >/dev/null
    echo "$PWD $pkg"
    return
  fi
  out="$DIR/$label"
  rm -rf "$out"
  (cd "$tree" && "$bin" generate --spec "$SPEC" --policy "$POLICY" --out "$out" >/dev/null)
  cp "$tree/Cargo.lock" "$out/Cargo.lock"
  echo "$out $(sed -n 's/^name = "\(.*\)"/\1/p' "$out/Cargo.toml" | head -1)"
}
declare -A wall cpu size gen total
for run in $(seq "$RUNS"); do
  for entry in "${bins[@]}"; do
    # label=generator=tree: each standalone crate is generated from (and
    # links) its own tree's runtime.
    label="${entry%%=*}"; rest="${entry#*=}"; bin="${rest%%=*}"; tree="${rest#*=}"
    g0=$(date +%s.%N)
    read -r where name < <(prepare "$label" "$bin" "$tree")
    g="$(echo "$(date +%s.%N) - $g0" | bc)"
    if [ -z "${MEMBER:-}" ]; then
      export CARGO_TARGET_DIR="$DIR/target"  # dependencies shared by both crates
    fi
    log="$DIR/$label.cpu"
    krate="$(echo "$name" | tr - _)"
    binname="$(sed -n '/^\[\[bin\]\]/,/^name/ s/^name = "\(.*\)"/\1/p' "$where/${member:-.}/Cargo.toml" | head -1 | tr - _)"
    # The wrapper in both builds, so it cannot count as a changed compiler.
    export RUSTC_WRAPPER="$WRAP" CT_CRATE="$krate" CT_BIN="${binname:-$krate}" CT_LOG="$log"
    # shellcheck disable=SC2086
    (cd "$where" && cargo build --quiet -p "$name" ${CARGO_ARGS:-})
    (cd "$where" && cargo clean --quiet -p "$name")
    rm -f "$log"
    # shellcheck disable=SC2086
    t="$(cd "$where" && secs cargo build -p "$name" ${CARGO_ARGS:-})"
    unset RUSTC_WRAPPER
    c="$(awk '{s += $1 + $2} END {printf "%.2f", s}' "$log")"
    wall[$label]+="$t "; cpu[$label]+="$c "; gen[$label]+="$g "
    total[$label]+="$(echo "$g + $t" | bc) "
    size[$label]="$(du -sh "$where/${member:-.}/src" | cut -f1)"
    unset CARGO_TARGET_DIR
  done
done
for entry in "${bins[@]}"; do
  label="${entry%%=*}"
  # shellcheck disable=SC2086
  echo "$label: generate median $(median ${gen[$label]}) s; generate + debug build median $(median ${total[$label]}) s of ${total[$label]}"
  # shellcheck disable=SC2086
  echo "$label: debug build (deps prebuilt): median $(median ${wall[$label]}) s of ${wall[$label]}; rustc CPU median $(median ${cpu[$label]}) s of ${cpu[$label]}; sources ${size[$label]}; load $(cut -d' ' -f1-3 /proc/loadavg)"
done
