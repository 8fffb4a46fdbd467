#!/usr/bin/env bash
# The propagation checker's long run (docs/testing.md, "The propagation checker"): many seeds of
# PropagationTests, in batches, until a count or a duration is reached. Each batch is one
# `swift test --skip-build` of the suite with HALYARD_PROPAGATION_SEEDS set to the batch's seeds;
# a failing seed prints its seed and minimal history, and the script goes on with the next batch.
#
#   scripts/propagation-long.sh                  # seeds 1000… for 30 minutes
#
# Environment:
#   PROPAGATION_SEEDS     how many seeds in all (default: unlimited, until the duration)
#   PROPAGATION_MINUTES   how long to go on (default 30)
#   PROPAGATION_FIRST     the first seed (default 1000)
#   PROPAGATION_BATCH     seeds per swift test run (default 10)
#   HALYARD_PROPAGATION_SECONDS  a run's length (default 11)
#
# Output: the batches' failures as they come, then one line per failed seed; logs in
# .build/propagation/batch-<first>.log. Exit status 1 when a seed failed.
set -u
cd "$(dirname "$0")/.."
total=${PROPAGATION_SEEDS:-0}
minutes=${PROPAGATION_MINUTES:-30}
first=${PROPAGATION_FIRST:-1000}
batch=${PROPAGATION_BATCH:-10}
mkdir -p .build/propagation
swift build --build-tests 2>&1 | tail -n 3
start=$(date +%s)
seed=$first
done_count=0
failed=()
while :; do
  if [ "$total" -gt 0 ] && [ "$done_count" -ge "$total" ]; then break; fi
  if [ $(( $(date +%s) - start )) -ge $(( minutes * 60 )) ]; then break; fi
  n=$batch
  if [ "$total" -gt 0 ] && [ $(( total - done_count )) -lt "$n" ]; then n=$(( total - done_count )); fi
  seeds="$seed-$(( seed + n - 1 ))"
  log=.build/propagation/batch-$seed.log
  HALYARD_PROPAGATION=1 HALYARD_PROPAGATION_SEEDS=$seeds swift test --skip-build --filter 'PropagationTests/seededRuns' >"$log" 2>&1
  grep -E '^propagation seed [0-9]+: [0-9]+ reads' "$log" | sed 's/^/  /'
  for s in $(grep -E '^propagation seed [0-9]+: .* [1-9][0-9]* violations$' "$log" | awk '{print $3}' | tr -d ':'); do
    failed+=("$s")
  done
  # The minimal histories of the batch's failures.
  grep -E '^(↳ propagation seed|  I[0-9]|    )' "$log" | grep -v '^↳ ///' | head -n 200
  seed=$(( seed + n ))
  done_count=$(( done_count + n ))
done
echo "propagation-long: $done_count seeds from $first in $(( $(date +%s) - start )) s, ${#failed[@]} failed${failed:+: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
