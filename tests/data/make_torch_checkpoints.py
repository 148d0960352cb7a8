#!/usr/bin/python3
"""Writes small checkpoints from real torch.nn layers, for Kindling's interop
tests (tests/io/torch_interop_test.cc).

Run once, from the repository root, with Debian's PyTorch (python3-torch; no
network, no `safetensors` package needed):

    /usr/bin/python3 tests/data/make_torch_checkpoints.py

For each layer it writes tests/data/torch_<layer>.safetensors (the module's
state_dict, PyTorch's keys and layouts) and tests/data/torch_<layer>_io.safetensors
({"input": x, "output": module(x)}). torch_linear_bf16.safetensors is the
Linear state_dict stored as bfloat16 (loaded with conversion). The files are
tiny and checked in; Kindling's tests read them without PyTorch.
"""
import json
import os
import struct

import torch

OUT = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    torch.float32: ("F32", 4),
    torch.float16: ("F16", 2),
    torch.bfloat16: ("BF16", 2),
    torch.float64: ("F64", 8),
    torch.int64: ("I64", 8),
    torch.int32: ("I32", 4),
    torch.uint8: ("U8", 1),
    torch.bool: ("BOOL", 1),
}


def tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.detach().contiguous().cpu()
    # bfloat16 has no numpy dtype: reinterpret as int16 first.
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def save_safetensors(tensors: dict, path: str, metadata=None):
    """A minimal safetensors writer, per the spec: sorted by alignment then
    name, contiguous offsets, header padded with spaces to a multiple of 8."""
    items = sorted(tensors.items(), key=lambda kv: (-DTYPES[kv[1].dtype][1], kv[0]))
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs = []
    offset = 0
    for name, t in items:
        data = tensor_bytes(t)
        header[name] = {
            "dtype": DTYPES[t.dtype][0],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def write(name, module, x):
    module.eval()
    with torch.no_grad():
        y = module(x)
    state = {k: v for k, v in module.state_dict().items()}
    save_safetensors(state, os.path.join(OUT, f"torch_{name}.safetensors"), {"format": "pt"})
    save_safetensors({"input": x, "output": y},
                     os.path.join(OUT, f"torch_{name}_io.safetensors"), {"format": "pt"})
    return state


def main():
    torch.manual_seed(20261122)
    linear = torch.nn.Linear(4, 3)
    state = write("linear", linear, torch.randn(2, 4))
    save_safetensors({k: v.to(torch.bfloat16) for k, v in state.items()},
                     os.path.join(OUT, "torch_linear_bf16.safetensors"), {"format": "pt"})

    conv = torch.nn.Conv2d(2, 3, kernel_size=3, stride=1, padding=1)
    write("conv2d", conv, torch.randn(1, 2, 5, 5))

    norm = torch.nn.LayerNorm(6)
    with torch.no_grad():  # non-trivial affine parameters
        norm.weight.copy_(torch.randn(6))
        norm.bias.copy_(torch.randn(6))
    write("layer_norm", norm, torch.randn(2, 6))

    embedding = torch.nn.Embedding(10, 4)
    write("embedding", embedding, torch.tensor([[1, 0, 9], [3, 3, 7]], dtype=torch.int64))
    print("wrote torch checkpoints to", OUT, "with torch", torch.__version__)


if __name__ == "__main__":
    main()
