# SPDX-License-Identifier: Apache-2.0
# scipy.sparse on bench/sparse_bench.c's cases (run by bench/sparse_bench.sh):
#   python3 bench/sparse_peers.py rows cols density reps
# X: CSR with about density*cols entries per row at random columns (sorted,
# duplicates summed), uniform values. scipy.sparse runs these on one thread;
# the lines say threads 1. t(X) %*% X on X's first 1000 columns at 10x the
# density, as sparse_bench.c does.
import resource
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp


def rand_csr(rng, rows, cols, dens):
    counts = rng.binomial(cols, dens, size=rows)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    nnz = int(indptr[-1])
    indices = rng.integers(0, cols, size=nnz, dtype=np.int32)
    data = rng.random(nnz)
    X = sp.csr_matrix((data, indices, indptr), shape=(rows, cols))
    X.sum_duplicates()          # sorts the indices too
    return X


def timed(name, reps, fn):
    ts, cs = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
        cs.append((time.process_time() - c0) * 1e3)
    print("scipy %s 1 %.2f %.2f" % (name, float(np.median(ts)), float(np.median(cs))), flush=True)


def main():
    rows, cols, dens, reps = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(1)
    m0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    X = rand_csr(rng, rows, cols, dens)
    Xn = rand_csr(rng, rows, 1000, 10 * dens)
    bytes_x = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    print("# scipy %s numpy %s X nnz %d" % (scipy.__version__, np.__version__, X.nnz))
    print("scipy bytes_per_nnz_arrays 1 %.2f" % (bytes_x / X.nnz))
    v = rng.random(cols)
    u = rng.random(rows)
    timed("X%*%v", reps, lambda: X @ v)
    timed("t(X)%*%v", reps, lambda: X.T @ u)
    timed("rowSums", reps, lambda: X.sum(axis=1))
    timed("colSums", reps, lambda: X.sum(axis=0))
    timed("X*2", reps, lambda: X * 2)
    timed("t(X)%*%X", reps, lambda: (Xn.T @ Xn))
    print("# scipy peak rss MB %.0f" % ((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - m0) / 1e3))


main()
