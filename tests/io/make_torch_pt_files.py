"""Writes torch.save files, and what they hold, for torch_pt_test.

Usage: make_torch_pt_files.py OUT_DIR

Runs with whichever PyTorch imports (Debian's 1.13 in the test; today's from
the peers environment in .ci/run). For each good file X.pt it writes
X.expected.safetensors with the same keys and each tensor's values packed
contiguously, written here by hand (Debian has no safetensors package), so
the C++ test can compare what it reads from X.pt bit for bit. The bad files
are made to be refused, each for one reason.
"""

import collections
import json
import os
import struct
import sys
import zipfile

import torch
from torch import nn

_DTYPES = {
    torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
    torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
    torch.bool: "BOOL",
}


def raw_bytes(tensor):
    packed = tensor.detach().contiguous()
    if packed.dtype == torch.bfloat16:
        packed = packed.view(torch.int16)
    return packed.numpy().tobytes()


def write_expected(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        data = raw_bytes(tensor)
        header[name] = {"dtype": _DTYPES[tensor.dtype],
                        "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def save_good(out_dir, name, state_dict, extra=None):
    torch.save(state_dict, os.path.join(out_dir, name + ".pt"))
    expected = collections.OrderedDict(state_dict)
    expected.update(extra or {})
    write_expected(os.path.join(out_dir, name + ".expected.safetensors"),
                   expected)


def dtypes_state_dict():
    g = torch.Generator().manual_seed(1)
    values = torch.randn(3, 5, generator=g)
    return collections.OrderedDict([
        ("f32", values),
        ("f64", values.double() * 1e-3),
        ("f16", values.half()),
        ("bf16", values.bfloat16()),
        ("i64", torch.arange(-6, 6).reshape(3, 4) * (1 << 40)),
        ("i32", torch.arange(-6, 6, dtype=torch.int32)),
        ("i16", torch.arange(-6, 6, dtype=torch.int16)),
        ("i8", torch.arange(-6, 6, dtype=torch.int8)),
        ("u8", torch.arange(250, 256, dtype=torch.uint8)),
        ("bool", values > 0),
        ("scalar", torch.tensor(2.5)),
        ("empty", torch.zeros(0, 3)),
    ])


def views_state_dict():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    half = torch.arange(12, dtype=torch.float16).reshape(3, 4)
    return collections.OrderedDict([
        ("base", base),
        ("rows", base[1:3]),            # an offset into base's storage
        ("transposed", base.t()),       # strides (1, 6)
        ("every_other", base[:, ::2]),  # strides (6, 2)
        ("column", base[:, 4]),         # offset 4, stride 6
        ("broadcast", torch.arange(3.0).expand(4, 3)),  # stride 0
        ("half_t", half.t()),
        ("tied_a", half),
        ("tied_b", half),               # the same tensor twice
    ])


class TiedNet(nn.Module):
    """encoder -> BatchNorm1d -> decoder, decoder.weight tied to encoder's."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)
        self.decoder = nn.Linear(4, 4)
        self.decoder.weight = self.encoder.weight

    def forward(self, x):
        return self.decoder(self.norm(self.encoder(x)))


def tied_net(out_dir):
    torch.manual_seed(0)
    net = TiedNet()
    net.train()
    for _ in range(3):  # running statistics that are not the defaults
        net(torch.randn(8, 4))
    net.eval()
    x = torch.randn(5, 4)
    with torch.no_grad():
        y = net(x)
    state = net.state_dict()
    save_good(out_dir, "tied_net", state, {"input": x, "output": y})
    prefixed = collections.OrderedDict(
        ("bert." + key, value) for key, value in state.items())
    save_good(out_dir, "bert_prefixed", prefixed)
    sharded(os.path.join(out_dir, "sharded"), state)
    return state


def sharded(out_dir, state):
    """Hugging Face's pytorch_model.bin.index.json over two shards."""
    os.makedirs(out_dir, exist_ok=True)
    names = ["pytorch_model-00001-of-00002.bin",
             "pytorch_model-00002-of-00002.bin"]
    parts = [collections.OrderedDict(), collections.OrderedDict()]
    weight_map = {}
    for key, value in state.items():
        part = 1 if key.startswith("decoder.") else 0
        parts[part][key] = value
        weight_map[key] = names[part]
    for name, part in zip(names, parts):
        torch.save(part, os.path.join(out_dir, name))
    with open(os.path.join(out_dir, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f)


class Evil:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def rewrite_zip(source, target, change):
    """Copies the zip `source` to `target`, entry by entry through change()."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            data, compression = change(info.filename, old.read(info))
            new.writestr(info.filename, data, compress_type=compression)


def bad_files(out_dir, state):
    bad = lambda name: os.path.join(out_dir, name)
    torch.save({"model": state, "step": 3}, bad("training_checkpoint.pt"))
    torch.save({"weight": Evil()}, bad("evil.pt"))
    torch.save(state, bad("legacy.pt"), _use_new_zipfile_serialization=False)
    torch.jit.save(torch.jit.script(nn.Linear(2, 2)), bad("torchscript.pt"))
    good = os.path.join(out_dir, "tied_net.pt")
    storage = lambda name: "/data/" in name and not name.endswith(".pkl")
    rewrite_zip(good, bad("short_storage.pt"),
                lambda name, data: (data[:-4] if storage(name) else data,
                                    zipfile.ZIP_STORED))
    rewrite_zip(good, bad("compressed.pt"),
                lambda name, data: (data, zipfile.ZIP_DEFLATED))
    with open(good, "rb") as source, open(bad("truncated.pt"), "wb") as out:
        data = source.read()
        out.write(data[:len(data) // 2])


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    save_good(out_dir, "dtypes", dtypes_state_dict())
    save_good(out_dir, "views", views_state_dict())
    state = tied_net(out_dir)
    bad_files(out_dir, state)
    print("wrote torch.save files with torch", torch.__version__)


if __name__ == "__main__":
    main()
