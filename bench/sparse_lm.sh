#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lm on a libsvm file (issue 31): the data is generated here by
# bench/sparse_lm_gen.c (random features, label X beta + noise; not
# committed: the full size is a ~1.5 GB file), then
#  1. a small case read once held sparse and once held dense
#     (DML_SPARSE_MIN_CELLS above its cell count keeps every matrix dense):
#     lm's coefficients must agree;
#  2. the issue's size (default 1,000,000 x 100,000 at 0.1%): time and peak
#     RSS of read + lm (conjugate gradient: more than 1024 columns).
#   sh bench/sparse_lm.sh [rows cols density]      (default 1000000 100000 0.001)
#   SMALL="20000 2000 0.01" MAXI=0 sh bench/sparse_lm.sh
# MAXI caps lm's iterations in the large run (0: lm's default, until the
# tolerance 1e-7 is met). Files go to $TMPDIR (default /tmp)/dml_sparse_lm.
set -e
ROWS=${1:-1000000} COLS=${2:-100000} DENS=${3:-0.001}
SMALL=${SMALL:-"20000 2000 0.01"}
MAXI=${MAXI:-0}
B=build/release
DML=${DML:-$B/dml}
DIR=${TMPDIR:-/tmp}/dml_sparse_lm
mkdir -p "$DIR"
make -s "$DML" >/dev/null
cc -std=gnu11 -O2 -o "$B/sparse_lm_gen" bench/sparse_lm_gen.c -lm

gen() {   # rows cols density -> file name
    f="$DIR/X_$1_$2_$3.svm"
    if [ ! -f "$f" ]; then
        "$B/sparse_lm_gen" "$1" "$2" "$3" 42 >"$f.tmp"
        mv "$f.tmp" "$f"
    fi
    echo "$f"
}

echo "# $(date -u) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(git rev-parse --short HEAD)"

# 1. the small case, sparse and dense
# shellcheck disable=SC2086
set -- $SMALL "$ROWS" "$COLS" "$DENS"
fs=$(gen "$1" "$2" "$3")
/usr/bin/time -f "small sparse: %e s wall, %U s user, %S s sys, max RSS %M KB" \
    "$DML" run bench/sparse_lm.dml -nvargs file="$fs" out="$DIR/B_sparse.csv"
/usr/bin/time -f "small dense: %e s wall, %U s user, %S s sys, max RSS %M KB" env DML_SPARSE_MIN_CELLS=1000000000000000 \
    "$DML" run bench/sparse_lm.dml -nvargs file="$fs" out="$DIR/B_dense.csv"
"$DML" -s "
  S = read('$DIR/B_sparse.csv', format='csv')
  D = read('$DIR/B_dense.csv', format='csv')
  d = max(abs(S - D)) / max(abs(D))
  print('small case: ' + nrow(D) + ' coefficients, max |sparse - dense| / max |dense| = ' + d
        + ', identical: ' + (sum(S != D) == 0))
"

# 2. the issue's size
shift 3
fl=$(gen "$1" "$2" "$3")
echo "large file: $fl, $(du -h "$fl" | cut -f1)"
/usr/bin/time -f "large sparse: %e s wall, %U s user, %S s sys, max RSS %M KB" \
    "$DML" run bench/sparse_lm.dml --stats -nvargs file="$fl" out="$DIR/B_large.csv" maxi="$MAXI"
