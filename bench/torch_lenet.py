#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The LeNet of scripts/mnist_lenet.dml in PyTorch, for the speed race of
issue #6 (bench/paramserv.sh runs it next to dml).

Same network (conv 32 5x5 pad 2 -> relu -> maxpool 2 -> conv 64 5x5 pad 2
-> relu -> maxpool 2 -> affine 512 -> relu -> dropout 0.5 -> affine 10 ->
softmax + cross-entropy), same optimizer (SGD, Nesterov momentum 0.9,
lr 0.01, L2 5e-4 on the weights only, as the DML aggregation does), batch
size 64, same data (IDX files; Fashion-MNIST from the Debian package
dataset-fashion-mnist by default, else the MNIST digits in data/).

Configurations (--configs, comma-separated; default all four):
  f64        float64, one process, torch.set_num_threads(2)
  f32        float32, one process, 2 threads
  f64-hog    float64, 2 Hogwild processes (torch.multiprocessing, model in
             shared memory, each process 1 thread, its own half of the data
             (contiguous, like paramserv's DISJOINT_CONTIGUOUS) and its own
             optimizer state, updating the shared weights without locks)
  f32-hog    float32, Hogwild as above

Prints one line per configuration:
  torch <config> <seconds per epoch> s/epoch (<images> images in <s> s, ...)
With --limit N only the first N training images are used and the seconds per
epoch are extrapolated linearly to the full training set (--full-n, default:
the file's size). --threads sets the single-process thread count.

Needs python3-torch (Debian); run it with /usr/bin/python3 if another
python3 comes first on PATH.
"""
import argparse
import gzip
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

FASHION = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        b = f.read()
    magic = struct.unpack(">I", b[:4])[0]
    nd = magic & 0xFF
    dims = struct.unpack(">" + "I" * nd, b[4:4 + 4 * nd])
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def default_data():
    if os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
        return (os.path.join(FASHION, "train-images-idx3-ubyte.gz"),
                os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
    here = os.path.dirname(os.path.abspath(__file__))
    d = os.path.join(here, "..", "data")
    return (os.path.join(d, "mnist-train-images-idx3-ubyte.gz"),
            os.path.join(d, "mnist-train-labels-idx1-ubyte.gz"))


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, stride=1, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, stride=1, padding=2)
        self.fc1 = nn.Linear(64 * 7 * 7, 512)
        self.fc2 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        x = F.dropout(F.relu(self.fc1(x)), p=0.5, training=self.training)
        return self.fc2(x)            # softmax + cross-entropy in the loss


def make_optimizer(model, lr):
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.SGD([{"params": weights, "weight_decay": 5e-4},
                            {"params": biases, "weight_decay": 0.0}],
                           lr=lr, momentum=0.9, nesterov=True)


def train_epochs(model, X, Y, epochs, batch, lr):
    opt = make_optimizer(model, lr)
    model.train()
    n = X.shape[0]
    loss = None
    for _ in range(epochs):
        for beg in range(0, n, batch):
            xb = X[beg:beg + batch]
            yb = Y[beg:beg + batch]
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
    return float(loss) if loss is not None else float("nan")


def warm_up(X, Y, batch, lr):
    """A few untimed steps on a throwaway model (allocator, kernels)."""
    m = LeNet().to(X.dtype)
    train_epochs(m, X[:3 * batch], Y[:3 * batch], 1, batch, lr)


def hog_worker(rank, model, X, Y, epochs, batch, lr, barrier, results):
    torch.set_num_threads(1)
    warm_up(X, Y, batch, lr)
    barrier.wait()
    t0 = time.perf_counter()
    loss = train_epochs(model, X, Y, epochs, batch, lr)
    results.put((rank, time.perf_counter() - t0, loss))


def run_config(name, Xu8, Yu8, args):
    dtype = torch.float64 if name.startswith("f64") else torch.float32
    torch.manual_seed(args.seed)
    X = torch.from_numpy(Xu8.astype(np.float64) / 255.0).to(dtype).reshape(-1, 1, 28, 28)
    Y = torch.from_numpy(Yu8.astype(np.int64))
    model = LeNet().to(dtype)
    n = X.shape[0]
    if name.endswith("-hog"):
        procs = 2
        model.share_memory()
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(procs + 1)
        results = ctx.Queue()
        half = (n + procs - 1) // procs
        ps = []
        for r in range(procs):
            sl = slice(r * half, min(n, (r + 1) * half))
            p = ctx.Process(target=hog_worker,
                            args=(r, model, X[sl].clone(), Y[sl].clone(), args.epochs,
                                  args.batch_size, args.lr, barrier, results))
            p.start()
            ps.append(p)
        barrier.wait()
        t0 = time.perf_counter()
        out = [results.get() for _ in range(procs)]
        wall = time.perf_counter() - t0
        for p in ps:
            p.join()
            if p.exitcode != 0:
                raise SystemExit("hogwild worker failed with exit code %d" % p.exitcode)
        loss = sum(o[2] for o in out) / procs
        threads = "2 processes x 1 thread"
    else:
        torch.set_num_threads(args.threads)
        warm_up(X, Y, args.batch_size, args.lr)
        t0 = time.perf_counter()
        loss = train_epochs(model, X, Y, args.epochs, args.batch_size, args.lr)
        wall = time.perf_counter() - t0
        threads = "1 process x %d threads" % args.threads
    per_epoch = wall / args.epochs * (args.full_n / n)
    print("torch %s %.2f s/epoch (%d images x %d epochs in %.2f s, %s, last loss %.4f)"
          % (name, per_epoch, n, args.epochs, wall, threads, loss), flush=True)


def main():
    ap = argparse.ArgumentParser(description="LeNet in PyTorch: seconds per epoch")
    ap.add_argument("--images")
    ap.add_argument("--labels")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N images only")
    ap.add_argument("--full-n", type=int, default=0,
                    help="images of a full epoch for the extrapolation (default: the file's)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--configs", default="f64,f32,f64-hog,f32-hog")
    args = ap.parse_args()
    di, dl = default_data()
    images = args.images or di
    labels = args.labels or dl
    Xu8 = read_idx(images).reshape(-1, 28 * 28)
    Yu8 = read_idx(labels)
    total = Xu8.shape[0]
    if args.limit > 0:
        Xu8 = Xu8[:args.limit]
        Yu8 = Yu8[:args.limit]
    if args.full_n <= 0:
        args.full_n = total
    print("torch %s, data %s (%d of %d images), batch %d, %d epoch(s)"
          % (torch.__version__, images, Xu8.shape[0], total, args.batch_size, args.epochs),
          file=sys.stderr, flush=True)
    for name in args.configs.split(","):
        name = name.strip()
        if name not in ("f64", "f32", "f64-hog", "f32-hog"):
            raise SystemExit("unknown configuration %r" % name)
        run_config(name, Xu8, Yu8, args)


if __name__ == "__main__":
    main()
