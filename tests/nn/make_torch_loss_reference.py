#!/usr/bin/python3
"""Writes tests/nn/torch_loss_reference.txt: PyTorch's losses and input
gradients for fixed small inputs, which loss_test.cc compares Kindling's fused
losses against.

Run from the repository root with Debian's torch:
  /usr/bin/python3 tests/nn/make_torch_loss_reference.py

Every case is one block:
  case <name>
  <tensor name> <shape dims...> : <values...>
  ...
Inputs are written too, so the test reads the exact same numbers. All values
are float64 with 17 significant digits.
"""
import os

import torch

torch.set_num_threads(2)
torch.manual_seed(20261123)


def fmt(tensor):
    dims = " ".join(str(d) for d in tensor.shape)
    values = " ".join(f"{v:.17g}" for v in tensor.detach().flatten().tolist())
    return f"{dims} : {values}"


def write_case(out, name, tensors):
    out.write(f"case {name}\n")
    for key, tensor in tensors:
        out.write(f"{key} {fmt(tensor)}\n")


def cross_entropy_case(out, name, batch, classes, smoothing, scale):
    logits = (torch.randn(batch, classes, dtype=torch.float64) * scale)
    logits.requires_grad_(True)
    labels = torch.randint(0, classes, (batch,))
    loss = torch.nn.functional.cross_entropy(logits, labels,
                                             label_smoothing=smoothing)
    loss.backward()
    write_case(out, name, [
        ("logits", logits),
        ("labels", labels.to(torch.float64)),
        ("smoothing", torch.tensor([smoothing], dtype=torch.float64)),
        ("loss", loss.reshape(1)),
        ("grad_logits", logits.grad),
    ])


def mse_case(out, name, shape):
    prediction = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    target = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.mse_loss(prediction, target)
    loss.backward()
    write_case(out, name, [
        ("prediction", prediction),
        ("target", target),
        ("loss", loss.reshape(1)),
        ("grad_prediction", prediction.grad),
        ("grad_target", target.grad),
    ])


def bce_case(out, name, shape, scale):
    logits = (torch.randn(*shape, dtype=torch.float64) * scale)
    logits.requires_grad_(True)
    targets = torch.rand(*shape, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets)
    loss.backward()
    write_case(out, name, [
        ("logits", logits),
        ("targets", targets),
        ("loss", loss.reshape(1)),
        ("grad_logits", logits.grad),
        ("grad_targets", targets.grad),
    ])


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "torch_loss_reference.txt")
    with open(path, "w") as out:
        out.write("# Written by tests/nn/make_torch_loss_reference.py with "
                  f"torch {torch.__version__}; do not edit.\n")
        cross_entropy_case(out, "cross_entropy", 4, 5, 0.0, 2.0)
        cross_entropy_case(out, "cross_entropy_smoothed", 4, 5, 0.1, 2.0)
        cross_entropy_case(out, "cross_entropy_smoothed_batch1", 1, 7, 0.25,
                           3.0)
        cross_entropy_case(out, "cross_entropy_large_logits", 3, 4, 0.05,
                           100.0)
        mse_case(out, "mse", (3, 4))
        bce_case(out, "bce_with_logits", (2, 5), 3.0)
        bce_case(out, "bce_with_logits_large", (6,), 60.0)


if __name__ == "__main__":
    main()
