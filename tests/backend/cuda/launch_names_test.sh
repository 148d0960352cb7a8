#!/usr/bin/env bash
# Runs launch_names_test.py over the CUDA sources in the runfiles tree.
set -euo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
exec /usr/bin/python3 "$root/tests/backend/cuda/launch_names_test.py" "$root"
