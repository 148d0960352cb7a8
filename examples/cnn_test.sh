#!/usr/bin/env bash
# Runs the CNN example for 20 steps and checks that it learned something
# (chance is 0.1), that the reloaded checkpoint evaluates exactly as the
# trained model, and that it ends with its summary line.
set -euo pipefail
output=$("$1" --max_steps=20 --epochs=1)
echo "$output"
grep -q 'reloaded: test accuracy .*, matches: yes' <<<"$output"
accuracy=$(sed -n 's/^test accuracy of the trained model: \([0-9.]*\)$/\1/p' <<<"$output")
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.3) }'
grep -q '^cnn: test accuracy' <<<"$output"
