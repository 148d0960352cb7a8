"""JAX peer of benches/char_lm_bench.cc: examples/char_lm.h's byte-level GPT
as one jit-compiled AdamW train step, from the same initial weights, on the
same windows in the same order as the Kindling run and char_lm_torch.py.

Usage: char_lm_jax.py --init INIT.safetensors --order ORDER_FILE
                      --steps N --eval_every K [--threads 2] [...]
The flags are char_lm_torch.py's (its corpus, windows and weight reader are
reused, so torch must be importable, as it is in tools/peers' environment).
The blocks are nn.TransformerEncoderLayer's with norm_first (pre-norm),
GELU written with erf, a causal mask, and the output projection tied to the
token embedding; AdamW is torch's (betas 0.9/0.999, eps 1e-8, weight decay
0.01 on every parameter). The step and the evaluation forward are compiled
before the timed steps; "compile_seconds" says how long that took. Threads
as train_jax.py sets them; "cpu_seconds" / the steps' wall seconds shows the
cores used. Prints one JSON line like char_lm_torch.py's.
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

import char_lm_torch  # corpus, windows and the safetensors reader
import train_jax  # limit_threads


def block_names(index):
    prefix = f"blocks.{index}."
    return [prefix + name for name in (
        "norm1.weight", "norm1.bias", "self_attn.in_proj_weight",
        "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "norm2.weight", "norm2.bias",
        "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias")]


def main():
    parser = argparse.ArgumentParser()
    char_lm_torch.add_recipe_arguments(parser)
    parser.add_argument("--weight_decay", type=float, default=0.01)
    args = parser.parse_args()
    if args.init is None or args.order is None:
        sys.exit("char_lm_jax.py: --init and --order are required")
    train_jax.limit_threads(args.threads)

    import jax  # pylint: disable=import-outside-toplevel
    import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
    import numpy as np  # pylint: disable=import-outside-toplevel

    state = char_lm_torch.read_safetensors(args.init)
    names = ["tokens.weight", "positions.weight", "norm.weight", "norm.bias"]
    for index in range(args.layers):
        names += block_names(index)
    missing = [n for n in names if n not in state]
    if missing:
        sys.exit(f"char_lm_jax.py: {args.init} lacks {', '.join(missing)}")
    params = {n: jnp.asarray(state[n].numpy()) for n in names}
    heads = args.heads

    def layer_norm(h, weight, bias):
        mean = h.mean(-1, keepdims=True)
        var = ((h - mean) ** 2).mean(-1, keepdims=True)
        return (h - mean) / jnp.sqrt(var + 1e-5) * weight + bias

    def gelu(h):
        return h * 0.5 * (1 + jax.lax.erf(h / math.sqrt(2)))

    def attention(p, prefix, h):
        batch, length, width = h.shape
        qkv = h @ p[prefix + "self_attn.in_proj_weight"].T
        qkv = qkv + p[prefix + "self_attn.in_proj_bias"]
        qkv = qkv.reshape(batch, length, 3, heads, width // heads)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(width // heads)
        causal = jnp.tril(jnp.ones((length, length), bool))
        weights = jax.nn.softmax(jnp.where(causal, scores, -jnp.inf), -1)
        out = (weights @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
        return (out @ p[prefix + "self_attn.out_proj.weight"].T
                + p[prefix + "self_attn.out_proj.bias"])

    def logits_fn(p, ids):
        h = p["tokens.weight"][ids] + p["positions.weight"][:ids.shape[1]]
        for index in range(args.layers):
            prefix = f"blocks.{index}."
            h = h + attention(p, prefix, layer_norm(
                h, p[prefix + "norm1.weight"], p[prefix + "norm1.bias"]))
            hidden = layer_norm(h, p[prefix + "norm2.weight"],
                                p[prefix + "norm2.bias"])
            hidden = gelu(hidden @ p[prefix + "linear1.weight"].T
                          + p[prefix + "linear1.bias"])
            h = h + (hidden @ p[prefix + "linear2.weight"].T
                     + p[prefix + "linear2.bias"])
        h = layer_norm(h, p["norm.weight"], p["norm.bias"])
        return h @ p["tokens.weight"].T

    def loss_fn(p, ids, targets):
        log_probs = jax.nn.log_softmax(logits_fn(p, ids))
        return -jnp.take_along_axis(log_probs, targets[..., None], -1).mean()

    lr, beta1, beta2, eps, decay = args.lr, 0.9, 0.999, 1e-8, args.weight_decay

    @jax.jit
    def step(p, m, v, t, ids, targets):
        loss, grads = jax.value_and_grad(loss_fn)(p, ids, targets)
        t = t + 1
        m = {n: beta1 * m[n] + (1 - beta1) * grads[n] for n in p}
        v = {n: beta2 * v[n] + (1 - beta2) * grads[n] * grads[n] for n in p}
        step_size = lr / (1 - beta1 ** t)
        root = jnp.sqrt(1 - beta2 ** t)
        p = {n: p[n] * (1 - lr * decay)
                - step_size * m[n] / (jnp.sqrt(v[n]) / root + eps) for n in p}
        return p, m, v, t, loss

    evaluate = jax.jit(loss_fn)

    text = char_lm_torch.load_fortunes(args.corpus_dir)
    cut = int(len(text) * (1 - 0.05))
    train_text, validation_text = text[:cut], text[cut:]

    def batch_of(source, indices):
        inputs, targets = char_lm_torch.windows(source, indices, args.context)
        return (jnp.asarray(inputs.numpy().astype(np.int32)),
                jnp.asarray(targets.numpy().astype(np.int32)))

    def bits_per_byte(p):
        total, seen = 0.0, 0
        for begin in range(0, args.validation_windows, 32):
            end = min(args.validation_windows, begin + 32)
            ids, targets = batch_of(validation_text, range(begin, end))
            total += float(evaluate(p, ids, targets)) * (end - begin)
            seen += end - begin
        return total / seen / math.log(2)

    with open(args.order, "rb") as f:
        order = struct.unpack(f"<{os.path.getsize(args.order) // 8}q", f.read())
    m = {n: jnp.zeros_like(x) for n, x in params.items()}
    v = {n: jnp.zeros_like(x) for n, x in params.items()}
    t = jnp.zeros((), jnp.float32)

    # Compile the step and the evaluation (lower + compile: nothing runs).
    start = time.perf_counter()
    ids, targets = batch_of(train_text, order[:args.batch_size])
    step.lower(params, m, v, t, ids, targets).compile()
    ids, targets = batch_of(validation_text, range(32))
    evaluate.lower(params, ids, targets).compile()
    compile_seconds = time.perf_counter() - start

    step_seconds, bits = [], []
    cpu_seconds = 0.0
    for index in range(args.steps):
        batch = order[index * args.batch_size:(index + 1) * args.batch_size]
        ids, targets = batch_of(train_text, batch)
        start, cpu_start = time.perf_counter(), time.process_time()
        params, m, v, t, loss = step(params, m, v, t, ids, targets)
        jax.block_until_ready(params)
        step_seconds.append(time.perf_counter() - start)
        cpu_seconds += time.process_time() - cpu_start
        if (index + 1) % args.eval_every == 0:
            bits.append(bits_per_byte(params))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"version": "jax " + jax.__version__,
                      "step_seconds": statistics.median(step_seconds),
                      "bits": bits, "peak_rss_mib": peak,
                      "compile_seconds": compile_seconds,
                      "cpu_seconds": cpu_seconds,
                      "wall_seconds": sum(step_seconds),
                      "final_loss": float(loss)}))


if __name__ == "__main__":
    main()
