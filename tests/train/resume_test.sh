#!/usr/bin/env bash
# Exact resume across processes: train N steps, checkpoint, go on M steps;
# a second process loads the checkpoint and runs the same M steps. Losses and
# final weights must be bit-identical (printed as hex floats).
set -euo pipefail
tool="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}/resume"
"$tool" --phase=first --out_dir="$dir" --n=10 --m=13 >"$dir.first"
test -f "$dir/latest"
grep -q 'step-00000010' "$dir/latest"
"$tool" --phase=second --out_dir="$dir" --n=10 --m=13 >"$dir.second"
test "$(grep -c '^step ' "$dir.first")" -eq 13
if ! cmp "$dir.first" "$dir.second"; then
  diff "$dir.first" "$dir.second" | head -20
  echo "FAIL: resumed run differs from the uninterrupted one"
  exit 1
fi
echo "PASS: 13 steps after resume and final weights are bit-identical"
