#!/usr/bin/env bash
# Runs the quickstart briefly (60 training steps, then evaluation, checkpoint
# and reload) and checks the lazy tour, that the model learned something,
# and that the reloaded checkpoint evaluates exactly as the trained model.
set -euo pipefail
output=$("$1" --max_steps=60 --epochs=1)
echo "$output"
grep -q 'tensor bytes allocated by Init(): 0' <<<"$output"
grep -q 'reloaded: test accuracy .*, matches: yes' <<<"$output"
accuracy=$(sed -n 's/^test accuracy of the trained model: \([0-9.]*\)$/\1/p' <<<"$output")
# 60 steps of 128 reach about 0.7; chance is 0.1.
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.5) }'
grep -q '^quickstart: test accuracy' <<<"$output"
