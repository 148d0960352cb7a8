#!/usr/bin/python3
"""Writes the reference of Kindling's sequence-layer tests
(tests/nn/attention_test.cc: attention, transformer layer, RMSNorm,
GroupNorm, Conv1d, positions, rotary embeddings) from Debian's PyTorch 1.13.

Run once, from the repository root:

    /usr/bin/python3 tests/nn/make_torch_attention_reference.py

It writes tests/nn/testdata/torch_mha.safetensors, the state_dict of a
torch.nn.MultiheadAttention(8, 2, batch_first=True) (PyTorch's keys and
layouts), and tests/nn/testdata/torch_attention_io.safetensors with, per case,
the inputs, the output and the gradients of sum(output * r) for a random r:
  self.*   self-attention over x [2, 5, 8], causal and with a key padding mask
  cross.*  attention of q [2, 3, 8] over k, v [2, 4, 8], no mask
  rms.*    RMSNorm of x [3, 6] (written out: torch 1.13 has no nn.RMSNorm)
  layer.*  a pre-norm TransformerEncoderLayer(8, 2, 16), causal, whose
           state_dict is testdata/torch_encoder_layer.safetensors
  gn.*     GroupNorm(2, 6) on [2, 6, 5]
  conv1d.* Conv1d(3, 4, 3, stride 2, padding 1, dilation 2) on [2, 3, 11]
  rope.*   rotary embeddings ("rotate half") from position 3
The files are small and checked in; the test reads them without PyTorch.
"""
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from make_torch_checkpoints import save_safetensors  # noqa: E402

OUT = os.path.join(HERE, "testdata")


def grads_of(output, r, tensors):
    """The gradients of sum(output * r) with respect to `tensors`."""
    return torch.autograd.grad((output * r).sum(), tensors)


def main():
    torch.manual_seed(20)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    # Non-zero biases, so a wrong bias layout shows.
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.5, 0.5)
        mha.out_proj.bias.uniform_(-0.5, 0.5)
    mha.eval()
    save_safetensors(dict(mha.state_dict()),
                     os.path.join(OUT, "torch_mha.safetensors"), {"format": "pt"})
    params = [mha.in_proj_weight, mha.in_proj_bias, mha.out_proj.weight,
              mha.out_proj.bias]
    names = ["in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    io = {}

    # Self-attention, causal, batch 1's last two keys padding.
    x = torch.randn(2, 5, 8, requires_grad=True)
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    padding[1, 3:] = True
    y, _ = mha(x, x, x, attn_mask=causal, key_padding_mask=padding,
               need_weights=False)
    r = torch.randn_like(y)
    grads = grads_of(y, r, [x] + params)
    io.update({"self.x": x, "self.padding": padding, "self.r": r, "self.y": y,
               "self.grad.x": grads[0]})
    io.update({f"self.grad.{n}": g for n, g in zip(names, grads[1:])})

    # Cross-attention, no mask.
    q = torch.randn(2, 3, 8, requires_grad=True)
    k = torch.randn(2, 4, 8, requires_grad=True)
    v = torch.randn(2, 4, 8, requires_grad=True)
    y, _ = mha(q, k, v, need_weights=False)
    r = torch.randn_like(y)
    grads = grads_of(y, r, [q, k, v])
    io.update({"cross.q": q, "cross.k": k, "cross.v": v, "cross.r": r,
               "cross.y": y, "cross.grad.q": grads[0], "cross.grad.k": grads[1],
               "cross.grad.v": grads[2]})

    # RMSNorm, as LLaMA and torch 2.4's nn.RMSNorm define it.
    x = torch.randn(3, 6, requires_grad=True)
    w = (torch.rand(6) + 0.5).requires_grad_(True)
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    r = torch.randn_like(y)
    gx, gw = grads_of(y, r, [x, w])
    io.update({"rms.x": x, "rms.weight": w, "rms.r": r, "rms.y": y,
               "rms.grad.x": gx, "rms.grad.weight": gw})

    # A pre-norm encoder layer (GELU written with erf: Debian's 1.13 F.gelu
    # backward is wrong for a strided incoming gradient).
    torch.manual_seed(21)
    layer = torch.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0,
        activation=lambda t: t * 0.5 * (1 + torch.erf(t / math.sqrt(2))),
        batch_first=True, norm_first=True)
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    layer.eval()
    save_safetensors(dict(layer.state_dict()),
                     os.path.join(OUT, "torch_encoder_layer.safetensors"),
                     {"format": "pt"})
    x = torch.randn(2, 5, 8, requires_grad=True)
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    y = layer(x, src_mask=causal)
    r = torch.randn_like(y)
    gx, gw1 = grads_of(y, r, [x, layer.linear1.weight])
    io.update({"layer.x": x, "layer.r": r, "layer.y": y, "layer.grad.x": gx,
               "layer.grad.linear1.weight": gw1})

    # Sinusoidal positions as "Attention Is All You Need" defines them.
    position = torch.arange(7, dtype=torch.float64).unsqueeze(1)
    rate = torch.pow(10000.0, torch.arange(0, 6, 2, dtype=torch.float64) / 6)
    table = torch.zeros(7, 6, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position / rate)
    table[:, 1::2] = torch.cos(position / rate)
    io["sinusoidal"] = table.float()

    # GroupNorm(2 groups, 6 channels) on [2, 6, 5], with torch's module.
    torch.manual_seed(22)
    gn = torch.nn.GroupNorm(2, 6)
    with torch.no_grad():
        gn.weight.uniform_(0.5, 1.5)
        gn.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 6, 5, requires_grad=True)
    y = gn(x)
    r = torch.randn_like(y)
    gx, gw, gb = grads_of(y, r, [x, gn.weight, gn.bias])
    io.update({"gn.weight": gn.weight, "gn.bias": gn.bias, "gn.x": x,
               "gn.r": r, "gn.y": y, "gn.grad.x": gx, "gn.grad.weight": gw,
               "gn.grad.bias": gb})

    # Conv1d(3 -> 4, kernel 3, stride 2, padding 1, dilation 2) on [2, 3, 11].
    conv = torch.nn.Conv1d(3, 4, 3, stride=2, padding=1, dilation=2)
    x = torch.randn(2, 3, 11, requires_grad=True)
    y = conv(x)
    r = torch.randn_like(y)
    gx, gw, gb = grads_of(y, r, [x, conv.weight, conv.bias])
    io.update({"conv1d.weight": conv.weight, "conv1d.bias": conv.bias,
               "conv1d.x": x, "conv1d.r": r, "conv1d.y": y,
               "conv1d.grad.x": gx, "conv1d.grad.weight": gw,
               "conv1d.grad.bias": gb})

    # Rotary embeddings, "rotate half" (GPT-NeoX, Hugging Face LLaMA), on
    # [1, 2, 6, 8] starting at position 3.
    x = torch.randn(1, 2, 6, 8, dtype=torch.float64)
    inv_freq = 1.0 / (10000 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
    angles = torch.outer(torch.arange(3, 9, dtype=torch.float64), inv_freq)
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :4], x[..., 4:]
    y = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    io.update({"rope.x": x.float(), "rope.y": y.float()})

    save_safetensors({k: t.detach() for k, t in io.items()},
                     os.path.join(OUT, "torch_attention_io.safetensors"),
                     {"format": "pt", "torch": torch.__version__})


if __name__ == "__main__":
    main()
