#!/usr/bin/env bash
# Checks that a benchmark binary still runs and reports the counter its figure
# depends on. Timings are never gated: one short pass, then a grep.
#
#   bench_smoke.sh BINARY FILTER COUNTER
set -euo pipefail
binary=$1 filter=$2 counter=$3
output=$("$binary" --benchmark_filter="$filter" --benchmark_min_time=0.01 2>&1)
echo "$output"
if grep -q 'ERROR OCCURRED' <<<"$output"; then
  echo "FAIL: $binary reported an error"
  exit 1
fi
if ! grep -q "$counter=" <<<"$output"; then
  echo "FAIL: $binary did not report $counter"
  exit 1
fi
