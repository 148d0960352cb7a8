#!/usr/bin/env bash
# Real PyTorch (Debian's python3-torch, which tools/bazel installs) reads the
# checkpoints Kindling writes with the PyTorch adapter and reproduces the
# outputs PyTorch recorded: the Kindling -> PyTorch half of the interop check.
set -euo pipefail
runfiles="$TEST_SRCDIR/$TEST_WORKSPACE"
out="$TEST_TMPDIR/kindling_out"
mkdir -p "$out"
# torch_interop_test saves its Kindling-written files under TEST_TMPDIR.
(cd "$runfiles" && TEST_TMPDIR="$out" tests/io/torch_interop_test >/dev/null)
ls "$out"/*.safetensors >/dev/null
/usr/bin/python3 "$runfiles/tests/data/check_torch_reads_kindling.py" "$out"
