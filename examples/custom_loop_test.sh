#!/usr/bin/env bash
# Runs examples/custom_loop and checks that training worked (the last
# printed loss is below a tenth of the first) and that the reloaded model
# predicts exactly as the trained one.
set -euo pipefail
output=$("$1" "$TEST_TMPDIR/regressor.safetensors")
echo "$output"
first=$(sed -n 's/^step   0  loss \([0-9.]*\)$/\1/p' <<<"$output")
last=$(sed -n 's/^step 500  loss \([0-9.]*\)$/\1/p' <<<"$output")
awk -v a="$first" -v b="$last" 'BEGIN { exit !(a > 0 && b < a / 10) }'
grep -q 'predictions identical' <<<"$output"
