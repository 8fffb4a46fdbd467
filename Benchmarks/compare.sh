#!/usr/bin/env bash
# Compares Halyard's single-thread read costs between the working tree and another git revision.
#
#   Benchmarks/compare.sh [REV] [ROUNDS]     (REV defaults to main, ROUNDS to 2)
#
# Builds halyard-bench (release) in the working tree and in a temporary worktree at REV, then
# runs the two binaries alternately (A B A B ...), ROUNDS times each, with --skip-multi (checksums,
# allocations, publish cost and the paired single-thread ratios only, ~10 s a run). Ratios to
# the unsynchronized lower bounds are measured inside each run, so they compare across runs far
# better than raw ns on these noisy shared machines. Extra arguments after ROUNDS are passed to
# both runs (e.g. --filter halyard --single-rounds 61).
set -euo pipefail
rev=${1:-main}
rounds=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

echo "building the working tree..." >&2
swift build -c release --product halyard-bench --package-path "$top" >&2
here="$top/.build/release/halyard-bench"
echo "building $rev..." >&2
git -C "$top" worktree add --detach "$tmp/base" "$rev" >/dev/null 2>&1
swift build -c release --product halyard-bench --package-path "$tmp/base" >&2
base="$tmp/base/.build/release/halyard-bench"

for i in $(seq 1 "$rounds"); do
  for side in base here; do
    bin=$base; label=$rev
    [ "$side" = here ] && { bin=$here; label="working tree"; }
    echo
    echo "=== $label, run $i ==="
    "$bin" --skip-multi "$@" 2>/dev/null | sed -n '/^Single thread/,/^$/p;/^Allocations/,/^$/p'
  done
done
