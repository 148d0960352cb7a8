#!/usr/bin/python3
"""Writes testdata/torch_optim_reference.safetensors: PyTorch's numbers for
tests/optim/torch_reference_test.cc.

Run with Debian's python3 and torch (1.13):
    /usr/bin/python3 tests/optim/make_torch_optim_reference.py

Contents (all float32 unless noted):
  traj.param0 [N]            the starting parameter of every trajectory
  traj.grads  [S, N]         the gradient fed at each of the S steps
  traj.<case> [S + 1, N]     the parameter after 0..S steps of optimizer <case>
                             (the options of each case are in CASES below and
                             mirrored in the C++ test)
  lr.<case>   [T] float64    the learning rate used at steps 0..T-1 under the
                             scheduler <case> (base lr 0.1)
  clip.grads.<i> [..]        three gradients
  clip.<case>.<i>            them after clipping; clip.<case>.norm [1] float64
                             the norm clip_grad_norm_ returned
"""
import json
import os
import struct

import torch

torch.set_num_threads(2)
torch.manual_seed(0)

N = 7
STEPS = 6

# name -> (constructor, keyword arguments). The C++ test mirrors this table.
CASES = {
    "sgd_plain": (torch.optim.SGD, dict(lr=0.1)),
    "sgd_momentum": (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    "sgd_dampening": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.5)),
    "sgd_nesterov": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
    "sgd_weight_decay": (torch.optim.SGD, dict(lr=0.1, momentum=0.8, weight_decay=0.05)),
    "adam_default": (torch.optim.Adam, dict()),
    "adam_lr": (torch.optim.Adam, dict(lr=0.05, betas=(0.8, 0.95))),
    "adam_weight_decay": (torch.optim.Adam, dict(lr=0.05, weight_decay=0.1)),
    "adam_amsgrad": (torch.optim.Adam, dict(lr=0.05, amsgrad=True, eps=1e-6)),
    "adamw_default": (torch.optim.AdamW, dict(lr=0.05)),
    "adamw_amsgrad": (torch.optim.AdamW, dict(lr=0.05, weight_decay=0.1, amsgrad=True)),
    "rmsprop_default": (torch.optim.RMSprop, dict()),
    "rmsprop_weight_decay": (torch.optim.RMSprop, dict(lr=0.02, eps=1e-6, weight_decay=0.1)),
    "rmsprop_momentum_centered": (torch.optim.RMSprop, dict(
        lr=0.01, alpha=0.9, momentum=0.8, centered=True, weight_decay=0.05)),
}


def trajectories(tensors):
    param0 = torch.randn(N)
    # Shrinking, sign-changing gradients so that AMSGrad's maximum matters.
    grads = torch.randn(STEPS, N) * torch.linspace(2.0, 0.2, STEPS).unsqueeze(1)
    tensors["traj.param0"] = param0
    tensors["traj.grads"] = grads
    for name, (make, kwargs) in CASES.items():
        param = torch.nn.Parameter(param0.clone())
        optimizer = make([param], **kwargs)
        rows = [param.detach().clone()]
        for step in range(STEPS):
            param.grad = grads[step].clone()
            optimizer.step()
            rows.append(param.detach().clone())
        tensors["traj." + name] = torch.stack(rows)


LR_STEPS = 30


def schedules():
    s = torch.optim.lr_scheduler
    return {
        "constant": lambda o: s.LambdaLR(o, lambda step: 1.0),
        "step": lambda o: s.StepLR(o, step_size=7, gamma=0.5),
        "linear_warmup": lambda o: s.LinearLR(o, start_factor=0.25, total_iters=5),
        "cosine": lambda o: s.CosineAnnealingLR(o, T_max=20, eta_min=0.001),
        "cosine_warmup": lambda o: s.SequentialLR(
            o,
            [s.LinearLR(o, start_factor=0.1, total_iters=5),
             s.CosineAnnealingLR(o, T_max=25, eta_min=0.001)],
            milestones=[5]),
        "sequential3": lambda o: s.SequentialLR(
            o,
            [s.LinearLR(o, start_factor=0.5, total_iters=3),
             s.StepLR(o, step_size=4, gamma=0.5),
             s.CosineAnnealingLR(o, T_max=10, eta_min=0.0)],
            milestones=[6, 14]),
    }


def learning_rates(tensors):
    for name, make in schedules().items():
        param = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([param], lr=0.1)
        scheduler = make(optimizer)
        rates = []
        for _ in range(LR_STEPS):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        tensors["lr." + name] = torch.tensor(rates, dtype=torch.float64)


def clipping(tensors):
    grads = [torch.randn(3, 4) * 2, torch.randn(5), torch.randn(2, 2) * 0.5]
    for i, g in enumerate(grads):
        tensors[f"clip.grads.{i}"] = g
    cases = {
        "norm2": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.0),
        "norm2_loose": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 100.0),
        "norm1": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 2.0, norm_type=1.0),
        "norm_inf": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.5, norm_type="inf"),
        "norm3": lambda ps: torch.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=3.0),
        "value": lambda ps: torch.nn.utils.clip_grad_value_(ps, 0.7),
    }
    for name, clip in cases.items():
        params = [torch.nn.Parameter(torch.zeros_like(g)) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        norm = clip(params)
        for i, p in enumerate(params):
            tensors[f"clip.{name}.{i}"] = p.grad.clone()
        if norm is not None:
            tensors[f"clip.{name}.norm"] = torch.tensor([float(norm)], dtype=torch.float64)


def write_safetensors(path, tensors, metadata):
    dtypes = {torch.float32: "F32", torch.float64: "F64"}
    header = {"__metadata__": metadata}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def main():
    tensors = {}
    trajectories(tensors)
    learning_rates(tensors)
    clipping(tensors)
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "testdata", "torch_optim_reference.safetensors")
    write_safetensors(out, tensors, {"torch_version": torch.__version__})
    print(f"wrote {len(tensors)} tensors to {out}")


if __name__ == "__main__":
    main()
