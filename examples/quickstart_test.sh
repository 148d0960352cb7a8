#!/usr/bin/env bash
# Runs the quickstart and checks that it got to the end with a reloaded model
# that predicts what the saved one did.
set -euo pipefail
output=$("$1")
echo "$output"
grep -q 'tensor bytes allocated by Init(): 0' <<<"$output"
grep -q 'the loaded model predicts the same classes: yes' <<<"$output"
