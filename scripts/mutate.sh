#!/usr/bin/env bash
# Mutation check (docs/testing.md): puts one deliberate bug at a time into Sources/, builds,
# runs the tests that should catch it with a time limit, records what happened, and restores
# the sources.
#
#   scripts/mutate.sh                          # every Tests/mutants/*.patch
#   scripts/mutate.sh Tests/mutants/02-*.patch # some of them
#
# Environment:
#   MUTATE_TIMEOUT  seconds per mutant test run (default 600); a run that hits it is HUNG
#   MUTATE_FULL=1   run the whole suite instead of each patch's `Filter:` line
#
# Each patch starts with a header that `git apply` ignores:
#   Mutant: <number> <title>
#   What:   <the bug, in words, so it can be re-made when the code moves>
#   Filter: <the --filter regex of the suites expected to kill it>
#
# Output: one tab-separated line per mutant (name, result, seconds, killing tests) on stdout,
# the full logs in .build/mutants/<name>.log. Results: KILLED (tests failed), SURVIVED (tests
# passed: a gap), KILLED(crash) (the test process died: a crash hides every later result),
# HUNG (the time limit ended it: a wait that is not bounded), STILLBORN (the
# mutant does not compile: re-make it), NOT-APPLIED (the code moved: re-make it from `What:`).
set -u
cd "$(dirname "$0")/.."

timeout_seconds=${MUTATE_TIMEOUT:-600}
if [ $# -gt 0 ]; then patches=("$@"); else patches=(Tests/mutants/*.patch); fi

if ! git diff --quiet -- Sources; then
    echo "mutate.sh: Sources/ has uncommitted changes; commit or stash them first" >&2
    exit 2
fi
restore() { git checkout -q -- Sources; }
trap restore EXIT
trap 'restore; exit 130' INT TERM

mkdir -p .build/mutants
echo "mutate.sh: building the unmutated package" >&2
swift build --build-tests >.build/mutants/baseline-build.log 2>&1 || {
    echo "mutate.sh: the unmutated package does not build (see .build/mutants/baseline-build.log)" >&2
    exit 2
}

# The tests run from the test binary itself, not through `swift test`: the binary runs in a
# process group of its own under `swift test`, so `timeout` would end `swift test` and leave a
# hung test process behind. (Swift Testing only: the target has no XCTest cases.)
tests=$(swift build --show-bin-path)/HalyardPackageTests.xctest
run_tests() {
    if [ -n "$filter" ]; then
        timeout -k 10 "$timeout_seconds" "$tests" --testing-library swift-testing --filter "$filter"
    else
        timeout -k 10 "$timeout_seconds" "$tests" --testing-library swift-testing
    fi
}

printf 'mutant\tresult\tseconds\tkilled by\n'
survivors=0
for patch in "${patches[@]}"; do
    name=$(basename "$patch" .patch)
    log=.build/mutants/$name.log
    filter=$(sed -n 's/^Filter: //p' "$patch" | head -n 1)
    [ "${MUTATE_FULL:-0}" = 1 ] && filter=""
    if ! git apply "$patch" 2>"$log"; then
        printf '%s\tNOT-APPLIED\t-\t-\n' "$name"
        continue
    fi
    if ! swift build --build-tests >"$log" 2>&1; then
        printf '%s\tSTILLBORN\t-\t-\n' "$name"
        restore
        continue
    fi
    start=$(date +%s)
    run_tests >>"$log" 2>&1
    status=$?
    seconds=$(($(date +%s) - start))
    # The tests that recorded an issue (Swift Testing) or failed (XCTest), or a crash.
    killers=$(grep -oE '✘ Test [A-Za-z0-9_]+\([^)]*\)' "$log" | sed 's/✘ Test //' | sort -u | head -n 6 | paste -sd ' ' -)
    [ -z "$killers" ] && killers=$(grep -m 1 -oE 'Fatal error.*|error: .*|Test Case .* failed' "$log" | cut -c 1-120)
    if [ $status -eq 124 ] || [ $status -eq 137 ]; then
        result=HUNG
    elif [ $status -gt 128 ]; then
        result="KILLED(crash)"
    elif [ $status -eq 0 ]; then
        result=SURVIVED
        survivors=$((survivors + 1))
        killers="-"
    else
        result=KILLED
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$result" "$seconds" "${killers:--}"
    restore
done
exit $((survivors > 0 ? 1 : 0))
