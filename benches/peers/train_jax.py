"""JAX peer of benches/train_bench.cc: one training epoch of the same model on
Fashion-MNIST in the same data order, as one jit-compiled train step.

Usage: train_jax.py --model mlp|cnn --order ORDER_FILE --batch_size 128
                    [--epochs 1] [--threads 2]

The recipe is train_torch.py's: the same layers, the same initial weights
(made by train_torch.py's modules under torch.manual_seed(0), so torch must
be importable too, as it is in tools/peers' environment), mean cross-entropy,
Adam (lr 1e-3, betas 0.9/0.999, eps 1e-8, torch's update) and the batches in
ORDER_FILE's order, gathered on the host as Kindling's loader and the torch
peer do. Compilation of the step at each batch shape of the epoch happens
before the timed epochs and is reported apart ("compile_seconds").

Threads: XLA's CPU client has no single thread-count knob, so the process is
limited by its CPU affinity (train_bench runs it on its own cores, at most
--threads of them) and the Eigen pool is sized to --threads through
XLA_FLAGS; the JSON's cpu_seconds / epoch_seconds shows the cores it used.
Prints one JSON line like train_torch.py's.
"""
import argparse
import json
import os
import resource
import sys
import time

import train_torch  # this folder's torch peer: its layers, data and flags


def limit_threads(threads):
    """Sets XLA's CPU threads before jax is imported; keeps the caller's
    XLA_FLAGS."""
    flags = os.environ.get("XLA_FLAGS", "")
    flags += (f" --xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
              f" intra_op_parallelism_threads={threads}")
    os.environ["XLA_FLAGS"] = flags.strip()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) > threads:
        os.sched_setaffinity(0, cores[:threads])


def main():
    parser = argparse.ArgumentParser()
    train_torch.add_recipe_arguments(parser)
    args = parser.parse_args()
    limit_threads(args.threads)

    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel
    import torch  # pylint: disable=import-outside-toplevel

    torch.manual_seed(0)
    module = train_torch.mlp() if args.model == "mlp" else train_torch.cnn()
    # Parameters as torch lays them out: Linear weight [out, in], Conv2d
    # weight [out, in, kh, kw]; LayerNorm weight/bias [features].
    params = [jnp.asarray(p.detach().numpy()) for p in module.parameters()]

    images = train_torch.read_idx(f"{train_torch.DATA}/train-images-idx3-ubyte.gz")
    labels = train_torch.read_idx(f"{train_torch.DATA}/train-labels-idx1-ubyte.gz")
    x = (images.astype(np.float32) / 255.0 - train_torch.MEAN) / train_torch.STD
    x = x.reshape(-1, 784) if args.model == "mlp" else x.reshape(-1, 1, 28, 28)
    y = labels.astype(np.int32)
    order = np.fromfile(args.order, dtype="<i8")

    def linear(h, weight, bias):
        return h @ weight.T + bias

    def mlp_logits(p, h):
        w1, b1, w2, b2, w3, b3, gamma, beta, w4, b4 = p
        h = jax.nn.relu(linear(h, w1, b1))
        h = jax.nn.relu(linear(h, w2, b2))
        h = jax.nn.relu(linear(h, w3, b3))
        mean = h.mean(-1, keepdims=True)
        var = ((h - mean) ** 2).mean(-1, keepdims=True)
        h = (h - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
        return linear(h, w4, b4)

    def conv(h, weight, bias):
        out = jax.lax.conv_general_dilated(
            h, weight, window_strides=(1, 1), padding=((1, 1), (1, 1)),
            dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return out + bias[None, :, None, None]

    def pool(h):
        return jax.lax.reduce_window(h, -jnp.inf, jax.lax.max,
                                     (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def cnn_logits(p, h):
        c1, cb1, c2, cb2, w1, b1, w2, b2 = p
        h = jax.nn.relu(pool(conv(h, c1, cb1)))
        h = jax.nn.relu(pool(conv(h, c2, cb2)))
        h = h.reshape(h.shape[0], -1)
        h = jax.nn.relu(linear(h, w1, b1))
        return linear(h, w2, b2)

    logits_fn = mlp_logits if args.model == "mlp" else cnn_logits

    def loss_fn(p, batch_x, batch_y):
        log_probs = jax.nn.log_softmax(logits_fn(p, batch_x))
        return -jnp.take_along_axis(log_probs, batch_y[:, None], 1).mean()

    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-8

    @jax.jit
    def step(p, m, v, t, batch_x, batch_y):
        loss, grads = jax.value_and_grad(loss_fn)(p, batch_x, batch_y)
        t = t + 1
        m = [beta1 * mi + (1 - beta1) * g for mi, g in zip(m, grads)]
        v = [beta2 * vi + (1 - beta2) * g * g for vi, g in zip(v, grads)]
        step_size = lr / (1 - beta1 ** t)
        root = jnp.sqrt(1 - beta2 ** t)
        p = [pi - step_size * mi / (jnp.sqrt(vi) / root + eps)
             for pi, mi, vi in zip(p, m, v)]
        return p, m, v, t, loss

    m = [jnp.zeros_like(pi) for pi in params]
    v = [jnp.zeros_like(pi) for pi in params]
    t = jnp.zeros((), jnp.float32)

    # Compile at each batch shape of the epoch (lower + compile: nothing runs).
    start = time.perf_counter()
    sizes = {min(args.batch_size, len(order)), len(order) % args.batch_size}
    for size in sorted(sizes - {0}, reverse=True):
        step.lower(params, m, v, t, x[order[:size]], y[order[:size]]).compile()
    compile_seconds = time.perf_counter() - start

    seconds, losses = [], []
    steps = 0
    cpu_start = time.process_time()
    for _ in range(args.epochs):
        start = time.perf_counter()
        for begin in range(0, len(order), args.batch_size):
            index = order[begin:begin + args.batch_size]
            params, m, v, t, loss = step(params, m, v, t, x[index], y[index])
            steps += 1
            if steps % train_torch.LOSS_EVERY == 0:
                losses.append(float(loss))
        jax.block_until_ready(params)
        seconds.append(time.perf_counter() - start)
    cpu_seconds = time.process_time() - cpu_start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    json.dump({"epoch_seconds": seconds, "peak_rss_mib": peak_mib,
               "final_loss": float(loss), "cpu_seconds": cpu_seconds,
               "compile_seconds": compile_seconds, "losses": losses,
               "version": jax.__version__}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
