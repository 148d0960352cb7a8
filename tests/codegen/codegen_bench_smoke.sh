#!/usr/bin/env bash
# Checks that benches/codegen_bench still runs (timings are not gated): one
# pass over its std-only header must report a generator/clang ratio.
#
# Argument: the codegen_bench binary.
set -euo pipefail

output=$("$1" --benchmark_filter='header:0' 2>&1)
echo "$output"
if ! grep -q 'ratio=' <<<"$output"; then
  echo "FAIL: codegen_bench reported no ratio"
  exit 1
fi
