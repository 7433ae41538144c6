# Sourced by the benchmark scripts (bench.sh, compile-time.sh,
# shared-change-diff.sh), from the repository root.
#
# baseline_tree REF: REF's tree, unpacked from `git archive` under
# target/bench-baseline-REF once, with its toolforge built (release, own
# target directory); prints the tree's path. Its generator is
# "$(baseline_tree REF)/target/release/toolforge".
baseline_tree() {
  local wt="$PWD/target/bench-baseline-$1"
  if [ ! -f "$wt/Cargo.toml" ]; then
    mkdir -p "$wt" && git archive "$1" | tar -x -C "$wt"
  fi
  (cd "$wt" && cargo build --quiet --release -p toolforge-generator --bin toolforge --target-dir "$wt/target") >&2
  echo "$wt"
}
