#!/usr/bin/env bash
# Line coverage of Halyard's sources reached by the fuzz corpora (committed seeds plus whatever
# run.sh has found in artifacts/<target>/corpus), using the toolchain's own llvm-cov.
#
#   Fuzz/coverage.sh [target...]     (default: FuzzContext FuzzJSON)
set -euo pipefail
cd "$(dirname "$0")"
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then TARGETS=(FuzzContext FuzzJSON); fi
TOOLCHAIN="$(dirname "$(readlink -f "$(command -v swift)")")"
FLAGS=(-c release --scratch-path .build/cov --sanitize=fuzzer -Xswiftc -sanitize=fuzzer
       -Xswiftc -profile-generate -Xswiftc -profile-coverage-mapping -Xswiftc -use-ld=lld)
export SWIFT_BACKTRACE=enable=no
mkdir -p .build/cov/prof
for target in "${TARGETS[@]}"; do
    swift build "${FLAGS[@]}" --product "$target" >/dev/null
    bin="$(swift build "${FLAGS[@]}" --show-bin-path)/$target"
    mkdir -p "artifacts/$target/corpus"
    LLVM_PROFILE_FILE=".build/cov/prof/$target.profraw" "$bin" -runs=0 "artifacts/$target/corpus" "Corpus/$target" 2>/dev/null
    "$TOOLCHAIN/llvm-profdata" merge -o ".build/cov/prof/$target.profdata" ".build/cov/prof/$target.profraw"
    echo "== $target"
    "$TOOLCHAIN/llvm-cov" report "$bin" -instr-profile=".build/cov/prof/$target.profdata" \
        -ignore-filename-regex='(\.build|Fuzz/Sources)' | grep -E 'Filename|Context/|JSONValue|TOTAL'
done
