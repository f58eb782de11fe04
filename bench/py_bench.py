#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Peers for bench/run.sh: the rows of the builtins table in numpy and
PyTorch, timed like the dml scripts (first run, then the median of 11).

  py_bench.py numpy matmul N THREADS      -> "matmul N <first GF/s> <steady GF/s>"
  py_bench.py numpy elementwise THREADS   -> "elementwise <first s> <steady s>"
  py_bench.py torch64|torch32 matmul|elementwise ...   (the same, in PyTorch)

numpy's threads are OpenBLAS's: the caller sets OPENBLAS_NUM_THREADS.
Run with /usr/bin/python3 (Debian's python3-numpy, python3-torch)."""
import sys
import time


def median(t):
    t = sorted(t)
    return t[len(t) // 2]


def timed(f, reps=11):
    t0 = time.perf_counter()
    f()
    first = time.perf_counter() - t0
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return first, median(ts)


def main():
    lib, what = sys.argv[1], sys.argv[2]
    if lib == "numpy":
        import numpy as np
        rng = np.random.default_rng(1)
        if what == "matmul":
            n = int(sys.argv[3])
            A, B = rng.random((n, n)), rng.random((n, n))
            first, steady = timed(lambda: A @ B)
            f = 2.0 * n ** 3 / 1e9
            print("matmul %d %.3f %.3f" % (n, f / first, f / steady))
        else:
            X, Y = rng.random((1000, 1000)), rng.random((1000, 1000))
            first, steady = timed(lambda: np.exp(X) * Y + X)
            print("elementwise %.6f %.6f" % (first, steady))
        return
    import torch
    dt = torch.float64 if lib == "torch64" else torch.float32
    threads = int(sys.argv[-1])
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    if what == "matmul":
        n = int(sys.argv[3])
        A = torch.rand((n, n), generator=g, dtype=dt)
        B = torch.rand((n, n), generator=g, dtype=dt)
        first, steady = timed(lambda: A @ B)
        f = 2.0 * n ** 3 / 1e9
        print("matmul %d %.3f %.3f" % (n, f / first, f / steady))
    else:
        X = torch.rand((1000, 1000), generator=g, dtype=dt)
        Y = torch.rand((1000, 1000), generator=g, dtype=dt)
        first, steady = timed(lambda: torch.exp(X) * Y + X)
        print("elementwise %.6f %.6f" % (first, steady))


if __name__ == "__main__":
    main()
