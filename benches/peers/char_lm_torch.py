#!/usr/bin/python3
"""PyTorch peer of benches/char_lm_bench.cc: examples/char_lm.h's byte-level
GPT, trained from the same initial weights on the same windows of the same
corpus in the same order with the same recipe (AdamW, constant learning
rate), timed, with the validation loss along the way.

Usage: char_lm_torch.py --init INIT.safetensors --order ORDER_FILE
                        --steps N --eval_every K [--threads 2] [...]
INIT is the Kindling model's initial state_dict in PyTorch's layout (what
SaveModule writes with the PyTorch adapter); ORDER_FILE the training
windows' indices, little-endian int64, batch after batch (the Kindling
loader's EpochOrder). Prints one JSON line: the torch version, the median
seconds of a training step, the validation bits per byte after every
--eval_every steps, and the process's peak RSS in MiB.

`--compile` trains torch.compile(model) (TorchInductor): one forward +
backward and one evaluation forward compile it before the timed steps (the
gradients are dropped, no optimizer step), and the JSON's "compile_seconds"
says how long that took. Torch 1.13 has no torch.compile: exits 4.

`--export DIR` instead writes DIR/torch_char_lm.safetensors (the state_dict of
a freshly initialized model of the given size) and
DIR/torch_char_lm_io.safetensors (a batch of byte ids and the model's logits),
the reference of tests/nn/char_lm_interop_test.cc.

GELU is written with erf (Debian's 1.13 F.gelu backward is wrong for a
strided incoming gradient); the attention is nn.MultiheadAttention's.
"""
import argparse
import json
import math
import os
import resource
import statistics
import struct
import sys
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))


def gelu(x):
    return x * 0.5 * (1 + torch.erf(x / math.sqrt(2)))


class CharLm(nn.Module):
    """examples/char_lm.h: the same parameter names and layouts."""

    def __init__(self, layers, d_model, heads, context):
        super().__init__()
        self.tokens = nn.Embedding(256, d_model)
        self.positions = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                       activation=gelu, batch_first=True,
                                       norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.register_buffer(
            "causal", torch.triu(torch.ones(context, context, dtype=torch.bool),
                                 diagonal=1), persistent=False)

    def forward(self, ids):
        length = ids.shape[1]
        h = self.tokens(ids) + self.positions.weight[:length].unsqueeze(0)
        mask = self.causal[:length, :length]
        for block in self.blocks:
            h = block(h, src_mask=mask)
        return self.norm(h) @ self.tokens.weight.t()


def load_fortunes(directory):
    """examples/text_corpus.cc's LoadFortunes: the quote files in name
    order, without their "%" lines."""
    text = bytearray()
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if (os.path.islink(path) or not os.path.isfile(path)
                or name.endswith((".dat", ".u8")) or name == "ascii-art"):
            continue
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        if data.endswith(b"\n") or not data:
            lines = lines[:-1]  # what std::getline does not return
        for line in lines:
            if line != b"%":
                text += line + b"\n"
    return bytes(text)


def read_safetensors(path):
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    dtypes = {"F32": torch.float32, "I64": torch.int64, "F64": torch.float64}
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = torch.frombuffer(
            bytearray(data[begin:end]), dtype=dtypes[info["dtype"]]).reshape(
                info["shape"])
    return tensors


def windows(text, indices, context):
    rows = [text[i * context:i * context + context + 1] for i in indices]
    ids = torch.tensor([list(r) for r in rows], dtype=torch.int64)
    return ids[:, :-1], ids[:, 1:]


def bits_per_byte(model, text, context, count):
    """char_lm.cc's BitsPerByte: mean loss over the first `count` windows."""
    total, seen = 0.0, 0
    with torch.no_grad():
        for begin in range(0, count, 32):
            inputs, targets = windows(text, range(begin, min(count, begin + 32)),
                                      context)
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits.reshape(-1, 256),
                                               targets.reshape(-1))
            total += loss.item() * inputs.shape[0]
            seen += inputs.shape[0]
    return total / seen / math.log(2)


def export(args):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "data"))
    from make_torch_checkpoints import save_safetensors
    torch.manual_seed(7)
    model = CharLm(args.layers, args.d_model, args.heads, args.context)
    with torch.no_grad():
        for block in model.blocks:  # non-trivial norms and biases
            for norm in (block.norm1, block.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.2, 0.2)
    model.eval()
    ids = torch.randint(0, 256, (2, args.context))
    with torch.no_grad():
        logits = model(ids)
    save_safetensors(dict(model.state_dict()),
                     os.path.join(args.export, "torch_char_lm.safetensors"),
                     {"format": "pt"})
    save_safetensors({"ids": ids, "logits": logits},
                     os.path.join(args.export, "torch_char_lm_io.safetensors"),
                     {"format": "pt"})


def add_recipe_arguments(parser):
    """The flags every char-LM peer takes (char_lm_jax.py too)."""
    parser.add_argument("--init")
    parser.add_argument("--order")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--eval_every", type=int, default=50)
    parser.add_argument("--validation_windows", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d_model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--corpus_dir", default="/usr/share/games/fortunes")


def main():
    parser = argparse.ArgumentParser()
    add_recipe_arguments(parser)
    parser.add_argument("--export")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    if args.compile and not hasattr(torch, "compile"):
        print(f"char_lm_torch.py: torch {torch.__version__} has no torch.compile")
        sys.exit(4)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    if args.export:
        export(args)
        return

    text = load_fortunes(args.corpus_dir)
    cut = int(len(text) * (1 - 0.05))
    train_text, validation_text = text[:cut], text[cut:]
    model = CharLm(args.layers, args.d_model, args.heads, args.context)
    model.load_state_dict(read_safetensors(args.init))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    with open(args.order, "rb") as f:
        order = struct.unpack(f"<{os.path.getsize(args.order) // 8}q", f.read())
    forward = model
    compile_seconds = 0.0
    if args.compile:
        forward = torch.compile(model)
        start = time.perf_counter()
        inputs, targets = windows(train_text, order[:args.batch_size],
                                  args.context)
        nn.functional.cross_entropy(forward(inputs).reshape(-1, 256),
                                    targets.reshape(-1)).backward()
        optimizer.zero_grad(set_to_none=True)
        model.eval()
        bits_per_byte(forward, validation_text, args.context,
                      min(args.batch_size, args.validation_windows))
        compile_seconds = time.perf_counter() - start
    step_seconds, bits = [], []
    model.train()
    for step in range(args.steps):
        batch = order[step * args.batch_size:(step + 1) * args.batch_size]
        inputs, targets = windows(train_text, batch, args.context)
        start = time.perf_counter()
        logits = forward(inputs)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256),
                                           targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        step_seconds.append(time.perf_counter() - start)
        if (step + 1) % args.eval_every == 0:
            model.eval()
            bits.append(bits_per_byte(forward, validation_text, args.context,
                                      args.validation_windows))
            model.train()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"version": torch.__version__,
                      "step_seconds": statistics.median(step_seconds),
                      "bits": bits, "peak_rss_mib": peak,
                      "compile_seconds": compile_seconds}))


if __name__ == "__main__":
    main()
