#!/usr/bin/python3
"""Checks that PyTorch reads checkpoints Kindling wrote (with the PyTorch
adapter) and computes the same outputs as the original PyTorch layers.

    # 1. Let Kindling write its files (the interop test saves them):
    tools/bazel build //tests/io:torch_interop_test
    mkdir -p /tmp/kindling_out
    (cd bazel-bin/tests/io/torch_interop_test.runfiles/kindling &&
     TEST_TMPDIR=/tmp/kindling_out ../../torch_interop_test)
    # 2. Read them with PyTorch (Debian's python3-torch; no network):
    /usr/bin/python3 tests/data/check_torch_reads_kindling.py /tmp/kindling_out

Reads the safetensors files with a minimal reader (no `safetensors` package),
loads them into torch.nn.Linear / torch.nn.LayerNorm with
load_state_dict(strict=True), and compares the forward pass with the outputs
PyTorch recorded in tests/data/torch_*_io.safetensors. Exits 1 on mismatch.
"""
import json
import os
import struct
import sys

import torch

DATA = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "F64": torch.float64, "I64": torch.int64, "I32": torch.int32,
          "U8": torch.uint8, "BOOL": torch.bool}


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[begin:end])
        dtype = DTYPES[info["dtype"]]
        tensors[name] = torch.frombuffer(raw, dtype=dtype).reshape(info["shape"]) \
            if end > begin else torch.empty(info["shape"], dtype=dtype)
    return tensors, metadata


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/kindling_out"
    modules = {"linear": torch.nn.Linear(4, 3), "layer_norm": torch.nn.LayerNorm(6)}
    failures = 0
    for layer, module in modules.items():
        state, metadata = load_safetensors(os.path.join(out_dir, f"kindling_{layer}.safetensors"))
        module.load_state_dict(state, strict=True)
        io, _ = load_safetensors(os.path.join(DATA, f"torch_{layer}_io.safetensors"))
        with torch.no_grad():
            y = module(io["input"])
        error = (y - io["output"]).abs().max().item()
        ok = error <= 1e-5
        failures += not ok
        print(f"{layer}: keys {sorted(state)} module {metadata.get('kindling.module')} "
              f"max |torch - expected| = {error:.3g} {'OK' if ok else 'MISMATCH'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
