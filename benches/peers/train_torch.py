#!/usr/bin/python3
"""PyTorch peer of benches/train_bench.cc: one training epoch of the same
model on Fashion-MNIST in the same data order, timed.

Usage: train_torch.py --model mlp|cnn --order ORDER_FILE --batch_size 128
                      [--epochs 1] [--threads 2] [--device cpu|cuda]
                      [--compile]
ORDER_FILE holds the epoch's sample indices as little-endian int64 (the
Kindling loader's EpochOrder). Prints one JSON line: the torch version, the
seconds of each epoch, the process CPU seconds of the epochs, the loss every
LOSS_EVERY steps and the process's peak RSS in MiB. With --device cuda and a
PyTorch without CUDA it prints why and exits 3.

--compile trains torch.compile(model) (TorchInductor). Compilation happens
before the timed epochs, in a forward + backward at each batch shape of the
epoch with the gradients then dropped (no optimizer step, so the trained
weights follow the same recipe as the eager run); its seconds are reported
apart as "compile_seconds". Torch 1.13 has no torch.compile: exits 4.

The interpreter is the caller's (benches/train_bench.cc: today's torch from
tools/peers, and Debian's 1.13); intra-op and inter-op threads are --threads.
"""
import argparse
import gzip
import json
import os
import resource
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

# KINDLING_TRAIN_BENCH_DATA: the same directory train_bench reads (the GPU
# bundle carries a subset); Debian's dataset-fashion-mnist by default.
DATA = os.environ.get("KINDLING_TRAIN_BENCH_DATA",
                      "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530  # as kindling::data::LoadMnistLike
LOSS_EVERY = 50  # steps between the loss values reported


def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    shape = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def mlp():
    return nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 256), nn.ReLU(),
        nn.Linear(256, 256), nn.ReLU(),
        nn.LayerNorm(256), nn.Linear(256, 10))


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.MaxPool2d(2), nn.ReLU(),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
        nn.Linear(128, 10))


def add_recipe_arguments(parser):
    """The flags every training peer takes (train_jax.py too)."""
    parser.add_argument("--model", choices=["mlp", "cnn"], required=True)
    parser.add_argument("--order", required=True)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)


def main():
    parser = argparse.ArgumentParser()
    add_recipe_arguments(parser)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("train_torch.py: this PyTorch has no CUDA device")
        sys.exit(3)
    if args.compile and not hasattr(torch, "compile"):
        print(f"train_torch.py: torch {torch.__version__} has no torch.compile")
        sys.exit(4)

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    torch.manual_seed(0)
    images = read_idx(f"{DATA}/train-images-idx3-ubyte.gz")
    labels = read_idx(f"{DATA}/train-labels-idx1-ubyte.gz")
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - MEAN) / STD
    y = torch.from_numpy(labels.astype(np.int64))
    x = x.reshape(-1, 784) if args.model == "mlp" else x.reshape(-1, 1, 28, 28)
    order = torch.from_numpy(
        np.fromfile(args.order, dtype="<i8").astype(np.int64))

    device = torch.device(args.device)
    model = (mlp() if args.model == "mlp" else cnn()).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    forward = model
    compile_seconds = 0.0
    if args.compile:
        forward = torch.compile(model)
        start = time.perf_counter()
        sizes = {min(args.batch_size, len(order)), len(order) % args.batch_size}
        for size in sorted(sizes - {0}, reverse=True):
            index = order[:size]
            loss_fn(forward(x[index].to(device)), y[index].to(device)).backward()
            optimizer.zero_grad(set_to_none=True)
        compile_seconds = time.perf_counter() - start
    seconds = []
    losses = []
    step = 0
    cpu_start = time.process_time()
    for _ in range(args.epochs):
        start = time.perf_counter()
        for begin in range(0, len(order), args.batch_size):
            index = order[begin:begin + args.batch_size]
            # The gather is part of the epoch, as the Kindling loader's is.
            # Gathered on the host, then moved: what Kindling's loader and
            # trainer do on a device.
            batch_x, batch_y = x[index].to(device), y[index].to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(forward(batch_x), batch_y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % LOSS_EVERY == 0:
                losses.append(float(loss.detach()))
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    cpu_seconds = time.process_time() - cpu_start
    json.dump({"epoch_seconds": seconds, "peak_rss_mib": peak_mib,
               "final_loss": float(loss.detach()), "cpu_seconds": cpu_seconds,
               "compile_seconds": compile_seconds, "losses": losses,
               "version": torch.__version__}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
