#!/usr/bin/env bash
# Runs load_bench at a tiny size: checks that it still runs, not its figures.
set -euo pipefail
"$1" --layers=2 --input=32 --width=64 --repetitions=1 --dir="${TEST_TMPDIR:-/tmp}"
