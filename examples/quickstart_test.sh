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
# --device: a spelling Device::Parse rejects is a clear error, and so is a
# device whose backend this build lacks (the default build has no CUDA; a
# --config=cuda build on a GPU trains there).
if output=$("$1" --device=tpu 2>&1); then exit 1; fi
grep -q -- '--device: invalid device "tpu" (expected cpu, cuda or cuda:N)' <<<"$output"
if ! output=$("$1" --device=cuda --max_steps=2 --epochs=1 2>&1); then
  grep -q -- '--device=cuda: this binary has no backend for cuda:0; build it with --config=cuda' <<<"$output"
fi
