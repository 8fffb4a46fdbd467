#!/usr/bin/env bash
# Build the libFuzzer harnesses, replay the committed seed corpus, then fuzz.
#
#   Fuzz/run.sh [seconds] [target]
#
# seconds: fuzzing time per target (default 60; 0 = only build and replay the corpus).
# target:  FuzzContext, FuzzJSON, FuzzSHA1, FuzzOFREP, FuzzCache, FuzzEventStream or FuzzRESP (default: all seven).
# New corpus entries and crash artifacts go to Fuzz/artifacts/<target>/ (gitignored).
# FUZZ_SEED=N fixes libFuzzer's seed (CI does, so a run explores the same inputs first);
# unset or 0 means a random seed.
# Exits non-zero if any target crashes (or fails to build).
set -uo pipefail

SECONDS_PER_TARGET="${1:-60}"
ONLY="${2:-}"
cd "$(dirname "$0")"

TARGETS=(FuzzContext FuzzJSON FuzzSHA1 FuzzOFREP FuzzCache FuzzEventStream FuzzRESP)
if [[ -n "$ONLY" ]]; then TARGETS=("$ONLY"); fi

# The Swift backtracer would swallow the crash and libFuzzer would write no artifact.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}"
BUILD_FLAGS=(-c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld)

status=0
for target in "${TARGETS[@]}"; do
    echo "== $target: build"
    if ! swift build "${BUILD_FLAGS[@]}" --product "$target"; then
        echo "== $target: BUILD FAILED"
        status=1
        continue
    fi
    bin="$(swift build "${BUILD_FLAGS[@]}" --show-bin-path)/$target"
    out="artifacts/$target"
    mkdir -p "$out/corpus"

    dict=()
    if [[ "$target" != "FuzzSHA1" ]]; then dict=(-dict=json.dict); fi

    echo "== $target: replay Corpus/$target"
    if ! "$bin" -runs=0 "${dict[@]}" -artifact_prefix="$out/" "Corpus/$target"; then
        echo "== $target: CRASH while replaying the seed corpus"
        status=1
        continue
    fi

    if [[ "$SECONDS_PER_TARGET" != "0" ]]; then
        echo "== $target: fuzz for ${SECONDS_PER_TARGET}s"
        # The first directory receives new inputs; the seed corpus is read only.
        if ! "$bin" -max_total_time="$SECONDS_PER_TARGET" -seed="${FUZZ_SEED:-0}" -print_final_stats=1 -max_len=8192 \
            "${dict[@]}" -artifact_prefix="$out/" "$out/corpus" "Corpus/$target"; then
            echo "== $target: CRASH (see $out/crash-* and $out/*.log)"
            status=1
        fi
    fi
done
exit $status
