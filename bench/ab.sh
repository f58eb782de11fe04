#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Interleaved A/B of two dml builds on the rows of issue #13, for a shared
# machine where one run proves nothing:
#   sh bench/ab.sh OLD_DML NEW_DML [ROUNDS]
# Each round runs every configuration with cblas_dgemm from C, OLD and NEW
# in turn; each kernel run reports the median and the best of AB_REPS
# (default 31) timed repetitions after a warm-up. Prints one line per run
#   <config> <program> median <v> best <v> load <1-min load average>
# (GFLOP/s for matmul, ms for the element-wise expression), then the median
# over the rounds of each. AB_CONFIGS picks the configurations (default
# "gemm1 gemm2 ew1 ew2"); the paramserv ones train LeNet for one epoch on
# the first AB_PS_N (default 4096) embedded MNIST digits, one run each,
# the seconds of the training in both fields and "cpu <user+sys s>" of the
# whole process added:
#   ps1   bench/dml/lenet_ps.dml k=1 (BSP, freq=BATCH)
#   loop  bench/dml/lenet_loop.dml, the same training as a plain DML loop
#   ps2   bench/dml/lenet_ps.dml k=2
# Runs without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (see bench/run.sh) and
# prints the OpenBLAS kernel in use.
set -eu
if [ -z "${DML_BENCH_CLEAN:-}" ]; then
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE DML_BENCH_CLEAN=1 sh "$0" "$@"
fi
OLD=${1:?usage: sh bench/ab.sh OLD_DML NEW_DML [ROUNDS]}
NEW=${2:?usage: sh bench/ab.sh OLD_DML NEW_DML [ROUNDS]}
ROUNDS=${3:-3}
REPS=${AB_REPS:-31}
CONFIGS=${AB_CONFIGS:-gemm1 gemm2 ew1 ew2}
PS_N=${AB_PS_N:-4096}
PS_DATA="images=data/mnist-train-images-idx3-ubyte.gz labels=data/mnist-train-labels-idx1-ubyte.gz"
B=build/bench
mkdir -p "$B"
cc -O2 -o "$B/blas_bench" bench/blas_bench.c $(pkg-config --cflags --libs openblas 2>/dev/null || echo -lopenblas) -lm
echo "kernel: $("$B/blas_bench" dgemm 8 1 | awk '{print $6}') from C; $("$NEW" --version | sed -n 's/.*kernel \([^)]*\)).*/\1/p') in dml; $(nproc) cores"
LOG=$B/ab.$$
: > "$LOG"
load() { awk '{print $1}' /proc/loadavg; }
one() { # one CONFIG PROGRAM: a result line
    c=$1 p=$2
    case $c in
    gemm1|gemm2)
        t=${c#gemm}
        if [ "$p" = C ]; then
            v=$("$B/blas_bench" dgemm 1000 "$t" | awk '{printf "%.2f %.2f\n", $5, $7}')
        else
            v=$("$p" run bench/dml/matmul.dml --threads "$t" -nvargs n=1000 reps="$REPS" | awk '$1 == "matmul" {printf "%.2f %.2f\n", $4, $5}')
        fi ;;
    ew1|ew2)
        t=${c#ew}
        [ "$p" = C ] && return 0
        v=$("$p" run bench/dml/elementwise.dml --threads "$t" -nvargs reps="$REPS" |
            awk '$1 == "elementwise" {printf "%.3f %.3f\n", $3 * 1000, $6 * 1000}') ;;
    ps1|loop|ps2)
        [ "$p" = C ] && return 0
        case $c in
            ps1) s=lenet_ps k=1 ;; loop) s=lenet_loop k=1 ;; ps2) s=lenet_ps k=2 ;;
        esac
        v=$(/usr/bin/time -f "cpu %U %S" "$p" run "bench/dml/$s.dml" -nvargs $PS_DATA n="$PS_N" k="$k" 2>&1 |
            awk -v s="$s" '$1 == s {t = $2} $1 == "cpu" {c = $2 + $3} END {printf "%.3f %.3f cpu %.2f\n", t, t, c}') ;;
    esac
    set -- $v
    echo "$c $p median $1 best $2${3:+ $3 $4} load $(load)" | tee -a "$LOG"
}
r=1
while [ "$r" -le "$ROUNDS" ]; do
    for c in $CONFIGS; do
        for p in C "$OLD" "$NEW"; do one "$c" "$p"; done
    done
    r=$((r + 1))
done
echo "medians over $ROUNDS rounds (GFLOP/s for gemm, ms for ew, s for ps1/loop/ps2):"
awk '{k = $1 " " $2; m[k] = m[k] " " $4; b[k] = b[k] " " $6; c[k] = c[k] " " ($7 == "cpu" ? $8 : "")}
     END {for (k in m) print k, m[k], "|", b[k], "|", c[k]}' "$LOG" | sort | while read -r c p rest; do
    mid() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}'; }
    med=$(echo "$rest" | cut -d'|' -f1 | mid)
    best=$(echo "$rest" | cut -d'|' -f2 | mid)
    cpu=$(echo "$rest" | cut -d'|' -f3 | mid)
    echo "$c $p median $med best $best${cpu:+ cpu $cpu}"
done
rm -f "$LOG"
