#!/usr/bin/env bash
# Trains char_lm's smallest configuration on the fortunes for 200 steps and
# checks that it learned (a uniform guess costs 8 bits per byte), that a run
# stopped at step 100 and resumed ends exactly where the straight run does,
# that --sample continues the prompt, and that a checkpoint of another
# architecture is refused with the missing keys named.
set -euo pipefail
bin="$1"
dir="${TEST_TMPDIR:-/tmp}/char_lm_test"
rm -rf "$dir"
tiny=(--layers=1 --d_model=32 --heads=2 --context=32 --batch_size=16
  --validation_windows=64 --threads=2)

bits() { sed -n 's/^char_lm: validation \([0-9.]*\) bits per byte.*/\1/p'; }

straight=$("$bin" "${tiny[@]}" --out_dir="$dir/straight" --max_steps=200)
echo "$straight"
straight_bits=$(bits <<<"$straight")
awk -v b="$straight_bits" 'BEGIN { exit !(b < 5.5) }'

"$bin" "${tiny[@]}" --out_dir="$dir/resumed" --max_steps=100 >/dev/null
resumed=$("$bin" "${tiny[@]}" --out_dir="$dir/resumed" --max_steps=200 --resume)
echo "$resumed"
grep -q '^resumed from' <<<"$resumed"
test "$(bits <<<"$resumed")" = "$straight_bits"

sample=$("$bin" "${tiny[@]}" --out_dir="$dir/straight" --sample \
  --prompt="Life is " --length=80)
echo "$sample"
grep -q '^Life is ' <<<"$sample"
test "$(printf '%s' "$sample" | wc -c)" -ge 88

if "$bin" --layers=2 --d_model=32 --heads=2 --context=32 \
  --out_dir="$dir/straight" --sample 2>"$dir/err"; then
  echo "a checkpoint of another architecture was accepted" >&2
  exit 1
fi
grep -q 'missing from the file: "blocks.1' "$dir/err"
