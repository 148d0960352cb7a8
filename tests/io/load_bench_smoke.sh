#!/usr/bin/env bash
# Runs load_bench at a tiny size: checks that it still runs, not its figures.
set -euo pipefail
"$1" --layers=2 --input=32 --width=64 --repetitions=1 \
  --bert_layers=2 --bert_hidden=32 --bert_vocab=100 --bert_tokens=8 \
  --dir="${TEST_TMPDIR:-/tmp}"
