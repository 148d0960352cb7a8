#!/usr/bin/python3
"""PyTorch timings of the ops in benches/tensor_bench.cc, optim_bench.cc and
autodiff_bench.cc, for their vs_torch / vs_torch113 counters.

Each op runs on the same shapes and value distributions as the Kindling
benchmark of the same name, with torch.set_num_threads(--threads) and
torch.set_num_interop_threads(--threads), 2 by default (Kindling's OpenMP
thread count here; the benches pass their own). The interpreter is the
caller's choice (benches/torch_peer.h: today's torch from tools/peers, or
Debian's 1.13), so the file runs on both. Two modes:

  torch_ops.py [--runs N]   times every op: N timed runs after warm-up, prints
                            one line per op, "<name> <median wall seconds>
                            <median process CPU seconds>".
  torch_ops.py --serve      first prints "hello torch=<version> threads=<n>
                            interop=<n> cores=<cpu list>", then reads
                            requests "<name> <runs> [<warmups>]" from stdin
                            (default 2 warm-up calls) and answers each with
                            the same line on stdout, so a bench can
                            interleave a torch run with each of its own
                            iterations (same machine load).

  torch_ops.py --peak-bytes OP
                            prints "torch=<version> <name> <bytes>": the
                            resident memory one call of OP adds at its peak,
                            in a process of its own (see peak_bytes()).

Ops are built on first use (the optimizer ops hold a 312 MiB model).
An unknown name is answered "<name> error unknown op" (serve mode) or exits
with status 2 (batch mode).
"""
import argparse
import math
import os
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
    # Cross-entropy of the matrix's rows over COLS classes, forward + backward
    # of the logits; row r's label is r * 7919 mod COLS.
    labels = torch.arange(ROWS) * 7919 % COLS

    def cross_entropy_backward():
        with torch.enable_grad():
            loss = torch.nn.functional.cross_entropy(leaves[0], labels)
            return torch.autograd.grad(loss, leaves[0])

    ops["cross_entropy_backward"] = cross_entropy_backward
    ops["gelu_backward"] = _gelu_backward(matrix, upstream)
    return ops


def _gelu_backward(matrix, upstream):
    """GELU forward + backward through torch's own fused kernels, checked
    once against the erf formula: Debian's 1.13 has returned zeros or NaN
    from F.gelu's f32 backward for a strided incoming gradient (this one is
    contiguous), and a wrong result must not be timed as a fast one."""
    leaf = matrix.clone().requires_grad_()

    def gelu_backward():
        with torch.enable_grad():
            y = torch.nn.functional.gelu(leaf)
            return torch.autograd.grad(y, leaf, upstream)

    x = matrix.double()
    slope = 0.5 * torch.erfc(-x / math.sqrt(2)) + x * torch.exp(
        -0.5 * x * x) / math.sqrt(2 * math.pi)
    error = (gelu_backward()[0].double() - upstream.double() * slope).abs()
    if not bool(error.max() < 1e-4):
        raise SystemExit(f"torch_ops.py: torch {torch.__version__}'s GELU "
                         f"backward is off by {float(error.max()):.3g}")
    return gelu_backward


def _optimizer_op(make_optimizer, layers, width):
    """One step of make_optimizer(params) over `layers` Linear layers
    (1024 -> width, then width -> width) whose gradients are all 1e-3:
    benches/optim_bench.cc's model."""
    params = []
    for i in range(layers):
        fan_in = 1024 if i == 0 else width
        params.append(torch.empty(width, fan_in).uniform_(-0.01, 0.01))
        params.append(torch.zeros(width))
    for param in params:
        param.requires_grad_()
        param.grad = torch.full_like(param, 1e-3)
    optimizer = make_optimizer(params)  # its first steps created the state
    return optimizer.step


def _mlp_ops():
    """benches/autodiff_bench.cc's MLP (784-256-256-10, batch 128): the
    recording forward and forward + backward of the mean NLL."""
    generator = torch.Generator().manual_seed(1)
    weights = [
        torch.randn(784, 256, generator=generator) * 0.05,
        torch.randn(256, 256, generator=generator) * 0.06,
        torch.randn(256, 10, generator=generator) * 0.06,
    ]
    biases = [torch.zeros(256), torch.zeros(256), torch.zeros(10)]
    leaves = [t.requires_grad_() for t in weights + biases]
    x = torch.randn(128, 784, generator=generator)
    labels = (torch.arange(128) % 10).reshape(128, 1)

    def loss():
        w1, w2, w3, b1, b2, b3 = leaves
        h1 = torch.relu(x @ w1 + b1)
        h2 = torch.relu(h1 @ w2 + b2)
        logits = h2 @ w3 + b3
        return -torch.log_softmax(logits, 1).gather(1, labels).mean()

    def forward():
        with torch.enable_grad():
            return loss()

    def forward_backward():
        with torch.enable_grad():
            return torch.autograd.grad(loss(), leaves)

    return {"mlp_forward": forward, "mlp_forward_backward": forward_backward}


def _attention_op(length, backward=True):
    """benches/attention_bench.cc's causal attention (batch 4, 4 heads of 32,
    `length` queries and keys): forward and the gradients of its sum with
    respect to q, k and v, or (backward=False) the forward alone without
    recording a graph. torch 2.x runs its fused
    F.scaled_dot_product_attention; 1.13, which has none, composes it."""
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(4, 4, length, 32, generator=generator).requires_grad_()
               for _ in range(3))
    fused = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)

    def attention():
        if fused is not None:
            return fused(q, k, v, is_causal=True)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(32)
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), 3)
        return weights @ v

    def forward_backward():
        with torch.enable_grad():
            return torch.autograd.grad(attention().sum(), [q, k, v])

    def forward():
        with torch.no_grad():
            return attention()

    return forward_backward if backward else forward


def _fastest(optimizer_class, params, **options):
    """optimizer_class(params, **options) in the fastest implementation this
    torch has on the CPU: each of fused (torch >= 2.4 for Adam), foreach and
    the default loop that this torch accepts takes three steps, and the one
    with the fastest last step is kept. Says which on stderr."""
    best, best_seconds, best_name = None, float("inf"), None
    variants = {"fused": {"fused": True}, "foreach": {"foreach": True},
                "for-loop": {"foreach": False}}
    for name, variant in variants.items():
        try:
            optimizer = optimizer_class(params, **options, **variant)
            for _ in range(3):  # the first creates the state
                start = time.perf_counter()
                optimizer.step()
                seconds = time.perf_counter() - start
        except (RuntimeError, TypeError, ValueError):
            continue  # this torch has no such implementation on the CPU
        if seconds < best_seconds:
            best, best_seconds, best_name = optimizer, seconds, name
        optimizer = None
    if best is None:
        raise RuntimeError(f"no {optimizer_class.__name__} implementation ran")
    print(f"torch {torch.__version__}: {optimizer_class.__name__} {best_name} "
          f"({best_seconds * 1e3:.3g} ms)", file=sys.stderr)
    return best


def _adam(params):
    return _fastest(torch.optim.Adam, params, lr=1e-3)


def _sgd_momentum(params):
    return _fastest(torch.optim.SGD, params, lr=0.01, momentum=0.9)


def _rmsprop(params):
    return _fastest(torch.optim.RMSprop, params, lr=0.01)


# Ops built on first use: name -> zero-argument builder of the op. The
# optimizer steps use each torch's fastest CPU implementation (_fastest).
_LAZY = {
    "adam_step_20x2048": lambda: _optimizer_op(_adam, 20, 2048),
    "adam_step_2x64": lambda: _optimizer_op(_adam, 2, 64),
    "sgd_momentum_step_20x2048": lambda: _optimizer_op(_sgd_momentum, 20, 2048),
    "sgd_momentum_step_2x64": lambda: _optimizer_op(_sgd_momentum, 2, 64),
    "rmsprop_step_20x2048": lambda: _optimizer_op(_rmsprop, 20, 2048),
    "rmsprop_step_2x64": lambda: _optimizer_op(_rmsprop, 2, 64),
    "attention_128": lambda: _attention_op(128),
    "attention_512": lambda: _attention_op(512),
    "attention_2048": lambda: _attention_op(2048),
    "attention_forward_128": lambda: _attention_op(128, backward=False),
    "attention_forward_512": lambda: _attention_op(512, backward=False),
    "attention_forward_2048": lambda: _attention_op(2048, backward=False),
    "mlp_forward": lambda: _mlp_ops()["mlp_forward"],
    "mlp_forward_backward": lambda: _mlp_ops()["mlp_forward_backward"],
}


class Ops(dict):
    """The eager ops of _ops() plus those of _LAZY, built when first asked."""

    def __missing__(self, name):
        if name not in _LAZY:
            raise KeyError(name)
        self[name] = _LAZY[name]()
        return self[name]

    def __contains__(self, name):
        return dict.__contains__(self, name) or name in _LAZY

    def names(self):
        return list(dict.keys(self)) + [n for n in _LAZY if not dict.__contains__(self, n)]


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


# glibc's mmap threshold for --peak-bytes: every allocation of this size or
# more gets a mapping of its own, returned to the kernel when freed (a fixed
# threshold also stops glibc from raising it after frees), so the resident
# set follows the live tensor buffers.
MMAP_THRESHOLD = "65536"


def resident_kib(field):
    """VmRSS or VmHWM of this process, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def peak_bytes(op):
    """The resident bytes one call of op() adds at its peak, after one warm-up
    call: the high-water mark is reset to the current resident set (writing
    5 to /proc/self/clear_refs) just before the call and read just after.
    Torch's CPU allocator keeps no cache, and with MMAP_THRESHOLD every
    buffer of 64 KiB or more is resident exactly while it lives."""
    op()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    before = resident_kib("VmRSS")
    result = op()
    peak = resident_kib("VmHWM")
    del result
    return 1024 * (peak - before)


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
    parser.add_argument("--peak-bytes", metavar="OP")
    parser.add_argument("ops", nargs="*", help="op names (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.set_grad_enabled(False)
    if args.peak_bytes and os.environ.get("MALLOC_MMAP_THRESHOLD_") != MMAP_THRESHOLD:
        # glibc reads its tunables at start: run again with the threshold.
        os.execve(sys.executable, [sys.executable] + sys.argv,
                  dict(os.environ, MALLOC_MMAP_THRESHOLD_=MMAP_THRESHOLD))
    ops = Ops(_ops())
    if args.peak_bytes:
        if args.peak_bytes not in ops:
            print(f"unknown op {args.peak_bytes}", file=sys.stderr)
            sys.exit(2)
        peak = peak_bytes(ops[args.peak_bytes])
        print(f"torch={torch.__version__} {args.peak_bytes} {peak}", flush=True)
        return
    if args.serve:
        cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        print(f"hello torch={torch.__version__} "
              f"threads={torch.get_num_threads()} "
              f"interop={torch.get_num_interop_threads()} cores={cores}",
              flush=True)
        serve(ops)
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads",
          file=sys.stderr)
    for name in args.ops or ops.names():
        if name not in ops:
            print(f"unknown op {name}; known: {' '.join(ops.names())}", file=sys.stderr)
            sys.exit(2)
        wall, cpu = median_seconds(ops[name], args.runs)
        print(f"{name} {wall:.9g} {cpu:.9g}", flush=True)


if __name__ == "__main__":
    main()
