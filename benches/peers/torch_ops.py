#!/usr/bin/python3
"""PyTorch timings of the ops in benches/tensor_bench.cc, for its vs_torch.

Each op runs on the same shapes and value distributions as the Kindling
benchmark of the same name, with torch.set_num_threads(--threads), 2 by
default (Kindling's OpenMP thread count here; tensor_bench passes its own).
Two modes:

  torch_ops.py [--runs N]   times every op: N timed runs after warm-up, prints
                            one line per op, "<name> <median wall seconds>
                            <median process CPU seconds>".
  torch_ops.py --serve      reads requests "<name> <runs> [<warmups>]" from
                            stdin (default 2 warm-up calls) and answers each
                            with the same line on stdout, so tensor_bench can
                            interleave a torch run with each of its own
                            iterations (same machine load).

An unknown name is answered "<name> error unknown op" (serve mode) or exits
with status 2 (batch mode).
"""
import argparse
import statistics
import sys
import time

import torch

WHOLE = 16 << 20  # elements of the whole-tensor reductions (64 MiB of f32)
ROWS, COLS = 4096, 1024  # the [rows, cols] matrix of the other ops


def _ops():
    """Returns {name: zero-argument callable}; inputs are made here, once."""
    generator = torch.Generator().manual_seed(1)
    flat = torch.randn(WHOLE, generator=generator)
    matrix = torch.randn(ROWS, COLS, generator=generator)
    positive = torch.empty(ROWS, COLS).uniform_(0.01, 10.0, generator=generator)
    ops = {}
    whole = {
        "sum": torch.sum,
        "mean": torch.mean,
        "max": torch.max,
        "min": torch.min,
        "argmax": torch.argmax,
    }
    for name, fn in whole.items():
        ops[f"{name}_all"] = lambda fn=fn: fn(flat)
    along = {
        "sum": torch.sum,
        "mean": torch.mean,
        # Kindling's max_dim/min_dim give values only: amax/amin, not max.
        "max": torch.amax,
        "min": torch.amin,
        "argmax": torch.argmax,
        "softmax": torch.softmax,
        "log_softmax": torch.log_softmax,
    }
    for name, fn in along.items():
        ops[f"{name}_last"] = lambda fn=fn: fn(matrix, 1)
        ops[f"{name}_first"] = lambda fn=fn: fn(matrix, 0)
    ops["exp"] = lambda: torch.exp(matrix)
    ops["tanh"] = lambda: torch.tanh(matrix)
    ops["sigmoid"] = lambda: torch.sigmoid(matrix)
    ops["gelu"] = lambda: torch.nn.functional.gelu(matrix)
    ops["log"] = lambda: torch.log(positive)
    ops["sqrt"] = lambda: torch.sqrt(positive)
    gamma, beta = torch.ones(COLS), torch.zeros(COLS)
    ops["layer_norm_last"] = lambda: torch.nn.functional.layer_norm(
        matrix, (COLS,), gamma, beta, 1e-5)
    # Forward + backward of input, gamma and beta (grad mode is off
    # globally, so it is switched on here for the op).
    leaves = [t.clone().requires_grad_() for t in (matrix, gamma, beta)]
    upstream = torch.randn(ROWS, COLS, generator=generator)

    def layer_norm_backward():
        with torch.enable_grad():
            y = torch.nn.functional.layer_norm(leaves[0], (COLS,), leaves[1],
                                               leaves[2], 1e-5)
            return torch.autograd.grad(y, leaves, upstream)

    ops["layer_norm_backward"] = layer_norm_backward
    return ops


def median_seconds(op, runs, warmups=2):
    """Median wall time and median process CPU time (all threads) of `runs`
    calls of op() after `warmups` calls."""
    for _ in range(warmups):
        op()
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        op()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return statistics.median(wall), statistics.median(cpu)


def serve(ops):
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        name = words[0]
        runs = int(words[1]) if len(words) > 1 else 1
        warmups = int(words[2]) if len(words) > 2 else 2
        if name not in ops:
            print(f"{name} error unknown op", flush=True)
            continue
        wall, cpu = median_seconds(ops[name], runs, warmups)
        print(f"{name} {wall:.9g} {cpu:.9g}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("ops", nargs="*", help="op names (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    ops = _ops()
    if args.serve:
        serve(ops)
        return
    for name in args.ops or ops:
        if name not in ops:
            print(f"unknown op {name}; known: {' '.join(ops)}", file=sys.stderr)
            sys.exit(2)
        wall, cpu = median_seconds(ops[name], args.runs)
        print(f"{name} {wall:.9g} {cpu:.9g}", flush=True)


if __name__ == "__main__":
    main()
