#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Sparse kernels side by side (issue 31): dml's (runtime/sparse_ops.c, sparse_mm.c),
# SuiteSparse:GraphBLAS (when libgraphblas-dev is installed), scipy.sparse
# and R's Matrix, on 1 and 2 threads, in ROUNDS interleaved rounds; each
# line is the median of REPS repetitions. Not part of `make bench` yet.
#   sh bench/sparse_bench.sh [rows cols density]     (default 1000000 100000 0.001)
#   ROUNDS=2 REPS=5 sh bench/sparse_bench.sh
# Ends with a summary: per implementation, operation and thread count, the
# median over the rounds of the per-round medians (wall and CPU ms), and
# dml's wall time over scipy.sparse's (1 thread).
set -e
# as a user runs them: no OpenBLAS core type or cache size forced
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
ROWS=${1:-1000000} COLS=${2:-100000} DENS=${3:-0.001}
ROUNDS=${ROUNDS:-2} REPS=${REPS:-5}
B=build/release
make -s "$B/libdml.a" >/dev/null
LIBS="-Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=posix_memalign \
  $(pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -lreadline -lz \
  $(pkg-config --libs cairo 2>/dev/null || echo -lcairo) -lmvec -lm -pthread"
GRB=
if [ -f /usr/include/suitesparse/GraphBLAS.h ] || [ -f /usr/include/GraphBLAS.h ]; then
    GRB="-DHAVE_GRAPHBLAS -I/usr/include/suitesparse -lgraphblas"
fi
# shellcheck disable=SC2086
cc -std=gnu11 -O2 -I. -I$B/gen -pthread -o $B/sparse_bench bench/sparse_bench.c $B/libdml.a $GRB $LIBS
LOG=$(mktemp "${TMPDIR:-/tmp}/sparse_bench.XXXXXX")
trap 'rm -f "$LOG"' EXIT
{
echo "# $(date -u) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    for t in 1 2; do
        $B/sparse_bench "$ROWS" "$COLS" "$DENS" "$t" "$REPS"
        [ -n "$GRB" ] && $B/sparse_bench "$ROWS" "$COLS" "$DENS" "$t" "$REPS" graphblas
    done
    PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3   # Debian's, with python3-scipy
    "$PY" -c "import scipy" 2>/dev/null && "$PY" bench/sparse_peers.py "$ROWS" "$COLS" "$DENS" "$REPS" || true
    command -v Rscript >/dev/null && Rscript bench/sparse_peers.R "$ROWS" "$COLS" "$DENS" "$REPS" || true
    echo "# round $r done, load: $(cut -d' ' -f1-3 /proc/loadavg)"
    r=$((r + 1))
done
} | tee "$LOG"
echo "# summary over $ROUNDS rounds: impl op threads wall_ms cpu_ms (medians); dml/scipy wall"
awk '!/^#/ && NF == 5 && $4 + 0 == $4 {
        k = $1 " " $2 " " $3; n[k]++; w[k, n[k]] = $4; c[k, n[k]] = $5
        if (!(k in seen)) { seen[k] = 1; order[++m] = k }
     }
     function med(a, k, cnt,   i, j, t, v) {
        for (i = 1; i <= cnt; i++) v[i] = a[k, i]
        for (i = 2; i <= cnt; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
     }
     END {
        for (i = 1; i <= m; i++) { k = order[i]; W[k] = med(w, k, n[k]); C[k] = med(c, k, n[k]) }
        for (i = 1; i <= m; i++) {
            k = order[i]; split(k, f, " "); s = "scipy " f[2] " 1"
            r = (f[1] == "dml" && (s in W) && W[s] > 0) ? sprintf("  %.2fx", W[k] / W[s]) : ""
            printf "%s %.2f %.2f%s\n", k, W[k], C[k], r
        }
     }' "$LOG"
