#!/usr/bin/env bash
# Compiles every C header the Swift code imports for every target the package declares, with
# the toolchain's own clang (-ffreestanding -fsyntax-only: no SDK needed), so the layout checks
# at the end of CHalyardAtomics.h (_Static_assert on sizes, offsets and lock-free 64-bit
# atomics) hold on each: Apple arm64 and x86_64, watchOS arm64_32 and armv7k (32-bit), tvOS,
# and, beyond the declared Apple targets, 32-bit Linux and Android. docs/architecture.md,
# "Platforms", has the table. Exits non-zero on the first header that does not compile.
set -euo pipefail
cd "$(dirname "$0")/.."
clang="$(dirname "$(readlink -f "$(command -v swift)")")/clang"
[ -x "$clang" ] || { echo "the toolchain's clang was not found beside swift ($clang)"; exit 1; }
targets=(
  arm64-apple-ios15 arm64_32-apple-watchos8 armv7k-apple-watchos8 x86_64-apple-macos13
  arm64-apple-macos13 arm64-apple-tvos15 i686-unknown-linux-gnu aarch64-unknown-linux-android
  x86_64-unknown-linux-gnu
)
headers=(Sources/CHalyardAtomics/include/CHalyardAtomics.h Sources/CHalyardCurl/include/CHalyardCurl.h)
failed=0
for target in "${targets[@]}"; do
  for header in "${headers[@]}"; do
    if ! out=$("$clang" -target "$target" -ffreestanding -fsyntax-only -std=c11 -Wall -Wno-unused-function -Werror -x c "$header" 2>&1); then
      echo "FAIL $target $header"; echo "$out" | head -n 6; failed=1
    fi
  done
done
[ "$failed" = 0 ] && echo "C layout checks: ${#headers[@]} headers × ${#targets[@]} targets compile"
exit "$failed"
