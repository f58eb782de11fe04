#!/bin/sh
# make bench: measures dml against its references and peers side by side in
# one run and writes bench/RESULTS.md. Every program reports its first run
# and the median of 11 steady-state runs; the whole set runs BENCH_REPS
# rounds (default 3), configurations in turn so background load hits all of
# them alike, and the tables give the median over the rounds.
#   DML=build/release/dml sh bench/run.sh
# Runs without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (a user's machine has
# neither; some build machines export values that halve dgemm).
set -eu
if [ -z "${DML_BENCH_CLEAN:-}" ]; then
    exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE DML_BENCH_CLEAN=1 sh "$0" "$@"
fi
DML=${DML:-build/release/dml}
OUT=${OUT:-bench/RESULTS.md}
REPS=${BENCH_REPS:-3}
B=build/bench
mkdir -p "$B"
cc -O2 -o "$B/blas_bench" bench/blas_bench.c $(pkg-config --cflags --libs openblas 2>/dev/null || echo -lopenblas) -lm
cc -O2 -std=gnu11 -I. -o "$B/lenet_kernels" bench/lenet_kernels.c builtins/dnn_kernels.c builtins/dnn_winograd.c \
    $(pkg-config --cflags --libs openblas 2>/dev/null || echo -lopenblas) -lm -lpthread

PY=""
for p in /usr/bin/python3 python3; do
    if "$p" -c "import numpy" >/dev/null 2>&1; then PY=$p; break; fi
done
HAVE_TORCH=no
if [ -n "$PY" ] && "$PY" -c "import torch" >/dev/null 2>&1; then HAVE_TORCH=yes; fi
HAVE_R=no
if command -v Rscript >/dev/null 2>&1; then HAVE_R=yes; fi

# The OpenBLAS kernel dml measures fastest (runtime/blas.c; cached after the
# first run) and the one OpenBLAS picks itself. Every peer runs with the
# fastest (as a user's numpy/R/PyTorch with MKL would have the best kernel);
# the C reference runs with both.
FASTCORE=$("$DML" --version | sed -n 's/.*kernel \([^)]*\)).*/\1/p')
LIBCORE=$("$B/blas_bench" dgemm 8 1 | awk '{print $6}')
FC="OPENBLAS_CORETYPE=$FASTCORE"

# ---- one measurement per function: prints "first steady" (or NA NA) ----
c_gemm() { env "$FC" "$B/blas_bench" dgemm 1000 "$1" | awk '{print $4, $5}'; }
c_gemm_lib() { "$B/blas_bench" dgemm 1000 "$1" | awk '{print $4, $5}'; }
d_gemm_single() { "$DML" run bench/dml/matmul.dml --threads "$1" --precision single -nvargs n=1000 | awk '$1 == "matmul" {print $3, $4}'; }
d_gemm() { "$DML" run bench/dml/matmul.dml --threads "$1" -nvargs n=1000 | awk '$1 == "matmul" {print $3, $4}'; }
np_gemm() { env "$FC" OPENBLAS_NUM_THREADS=$1 "$PY" bench/py_bench.py numpy matmul 1000 "$1" | awk '{print $3, $4}'; }
r_gemm() { env "$FC" OPENBLAS_NUM_THREADS=$1 Rscript bench/r_bench.R matmul 1000 | awk '{print $3, $4}'; }
t64_gemm() { env "$FC" "$PY" bench/py_bench.py torch64 matmul 1000 "$1" | awk '{print $3, $4}'; }
t32_gemm() { env "$FC" "$PY" bench/py_bench.py torch32 matmul 1000 "$1" | awk '{print $3, $4}'; }
c_ew() { env "$FC" "$B/blas_bench" elementwise | awk '{print $2, $3}'; }
d_ew() { "$DML" run bench/dml/elementwise.dml --threads "$1" | awk '$1 == "elementwise" {print $2, $3}'; }
d_ew_nofuse() { DML_FUSE=0 "$DML" run bench/dml/elementwise.dml --threads "$1" | awk '$1 == "elementwise" {print $2, $3}'; }
np_ew() { env "$FC" OPENBLAS_NUM_THREADS=1 "$PY" bench/py_bench.py numpy elementwise 1 | awk '{print $2, $3}'; }
r_ew() { env "$FC" Rscript bench/r_bench.R elementwise | awk '{print $2, $3}'; }
t64_ew() { env "$FC" "$PY" bench/py_bench.py torch64 elementwise "$1" | awk '{print $2, $3}'; }
t32_ew() { env "$FC" "$PY" bench/py_bench.py torch32 elementwise "$1" | awk '{print $2, $3}'; }
d_conv() { "$DML" run bench/dml/conv2d.dml | awk '$1 == "conv2d" {print $2, $2}'; }
wall() { # seconds of wall time of a command, output discarded
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    awk "BEGIN{printf \"%.3f\", $e - $s}"
}
d_sl() { v=$(wall "$DML" run bench/dml/scalar_loop.dml); echo "$v $v"; }
d_fc() { v=$(wall "$DML" run bench/dml/func_calls.dml); echo "$v $v"; }
d_ml() { v=$(wall "$DML" run bench/dml/matrix_loop.dml); echo "$v $v"; }
r_ml() { v=$(wall env "$FC" Rscript bench/dml/matrix_loop.R); echo "$v $v"; }
r_sl() { v=$(wall env "$FC" Rscript bench/dml/scalar_loop.R); echo "$v $v"; }
r_fc() { v=$(wall env "$FC" Rscript bench/dml/func_calls.R); echo "$v $v"; }

# The configurations: name, then the command (a function and its argument).
CONFIGS="c_gemm1 c_gemm2 d_gemm1 d_gemm2 d_gemms1 d_gemms2 c_ew d_ew1 d_ew2 d_ewn1 d_conv d_sl d_fc d_ml"
if [ "$LIBCORE" != "$FASTCORE" ]; then CONFIGS="$CONFIGS c_gemml1 c_gemml2"; fi
if [ -n "$PY" ]; then CONFIGS="$CONFIGS np_gemm1 np_gemm2 np_ew"; fi
if [ $HAVE_TORCH = yes ]; then CONFIGS="$CONFIGS t64_gemm1 t64_gemm2 t32_gemm1 t32_gemm2 t64_ew1 t32_ew1"; fi
if [ $HAVE_R = yes ]; then CONFIGS="$CONFIGS r_gemm1 r_gemm2 r_ew r_sl r_fc r_ml"; fi
run_config() {
    case $1 in
        c_gemm1) c_gemm 1 ;; c_gemm2) c_gemm 2 ;; d_gemm1) d_gemm 1 ;; d_gemm2) d_gemm 2 ;;
        c_gemml1) c_gemm_lib 1 ;; c_gemml2) c_gemm_lib 2 ;; d_gemms1) d_gemm_single 1 ;; d_gemms2) d_gemm_single 2 ;;
        d_ml) d_ml ;; r_ml) r_ml ;;
        np_gemm1) np_gemm 1 ;; np_gemm2) np_gemm 2 ;; r_gemm1) r_gemm 1 ;; r_gemm2) r_gemm 2 ;;
        t64_gemm1) t64_gemm 1 ;; t64_gemm2) t64_gemm 2 ;; t32_gemm1) t32_gemm 1 ;; t32_gemm2) t32_gemm 2 ;;
        c_ew) c_ew ;; d_ew1) d_ew 1 ;; d_ew2) d_ew 2 ;; d_ewn1) d_ew_nofuse 1 ;;
        np_ew) np_ew ;; r_ew) r_ew ;; t64_ew1) t64_ew 1 ;; t32_ew1) t32_ew 1 ;;
        d_conv) d_conv ;; d_sl) d_sl ;; d_fc) d_fc ;; r_sl) r_sl ;; r_fc) r_fc ;;
    esac
}

loads=""
r=1
while [ $r -le "$REPS" ]; do
    echo "bench: builtins, round $r/$REPS" >&2
    loads="$loads $(awk '{print $1}' /proc/loadavg)"
    for c in $CONFIGS; do
        v=$(run_config "$c" 2>/dev/null || true)
        [ -n "$v" ] || v="NA NA"
        echo "$v" | awk '{print $1}' >> "$B/$c.first.$$"
        echo "$v" | awk '{print $2}' >> "$B/$c.steady.$$"
    done
    r=$((r + 1))
done

# ---- every OpenBLAS kernel this CPU runs: dgemm and sgemm, 1 and 2 threads ----
# A name the library does not have, or maps to another, is skipped; one the
# CPU cannot execute dies (SIGILL) in its own process and is skipped too.
CORES=""
for c in SapphireRapids Cooperlake SkylakeX Zen Haswell Excavator Sandybridge Nehalem Prescott; do
    got=$(OPENBLAS_CORETYPE=$c "$B/blas_bench" dgemm 8 1 2>/dev/null | awk '{print $6}') || true
    [ "$got" = "$c" ] && CORES="$CORES $c"
done
r=1
while [ $r -le "$REPS" ]; do
    echo "bench: OpenBLAS kernels, round $r/$REPS" >&2
    for c in $CORES; do
        for op in dgemm sgemm; do
            for t in 1 2; do
                v=$(OPENBLAS_CORETYPE=$c "$B/blas_bench" $op 1000 $t 2>/dev/null | awk '{print $7}') || true
                echo "${v:-NA}" >> "$B/k_${c}_${op}_$t.$$"
            done
        done
    done
    r=$((r + 1))
done
kbest() { # kbest CORE OP T: the best GFLOP/s over the rounds
    f="$B/k_$1_$2_$3.$$"
    [ -f "$f" ] || { echo NA; return; }
    grep -v NA "$f" | sort -g | tail -1 | awk '{printf "%.1f", $1} END {if (NR == 0) print "NA"}'
}

med() { # med CONFIG first|steady: median over the rounds (NA if none)
    f="$B/$1.$2.$$"
    [ -f "$f" ] || { echo NA; return; }
    grep -v NA "$f" | sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "NA"; else print v[int((NR + 1) / 2)]}'
}
ratio() { awk "BEGIN{ if (\"$1\" == \"NA\" || \"$2\" == \"NA\" || $2 == 0) print \"NA\"; else printf \"%.2f\", $1 / $2 }"; }
ms() { awk "BEGIN{ if (\"$1\" == \"NA\") print \"NA\"; else printf \"%.2f\", $1 * 1000 }"; }
gf() { awk "BEGIN{ if (\"$1\" == \"NA\") print \"NA\"; else printf \"%.1f\", $1 }"; }

# Sections written by hand (A/B runs of bench/ab.sh with their commands)
# sit below this marker in RESULTS.md and are carried over.
MARK='<!-- kept by bench/run.sh: hand-written sections below -->'
KEPT=$B/kept.$$
if [ -f "$OUT" ]; then awk -v m="$MARK" '$0 == m {on = 1} on' "$OUT" > "$KEPT"; else : > "$KEPT"; fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
kernel=$("$B/blas_bench" dgemm 8 1 | awk '{print $6}')
dkernel=$("$DML" --version | sed -n 's/.*kernel \([^)]*\)).*/\1/p')
isa=$(grep -qw avx512f /proc/cpuinfo && echo "AVX-512" || (grep -qw avx2 /proc/cpuinfo && echo "AVX2" || echo "SSE2"))
pyver=$([ -n "$PY" ] && "$PY" -c "import numpy; print(numpy.__version__)" 2>/dev/null || echo "(not installed)")
tver=$([ $HAVE_TORCH = yes ] && "$PY" -c "import torch; print(torch.__version__)" 2>/dev/null || echo "(not installed)")
rver=$([ $HAVE_R = yes ] && Rscript -e 'cat(paste(R.version$major, R.version$minor, sep="."))' 2>/dev/null || echo "(not installed)")

gemm_row() { # gemm_row THREADS
    t=$1
    cs=$(med c_gemm$t steady); ds=$(med d_gemm$t steady)
    echo "| cblas_dgemm from C, kernel $FASTCORE | $(gf "$cs") | $(gf "$(med c_gemm$t first)") | 1.00 |"
    if [ "$LIBCORE" != "$FASTCORE" ]; then
        echo "| cblas_dgemm from C, OpenBLAS's own kernel $LIBCORE | $(gf "$(med c_gemml$t steady)") | $(gf "$(med c_gemml$t first)") | $(ratio "$(med c_gemml$t steady)" "$cs") |"
    fi
    echo "| **dml** \`A %*% B\` | **$(gf "$ds")** | $(gf "$(med d_gemm$t first)") | **$(ratio "$ds" "$cs")** |"
    echo "| dml \`A %*% B\`, \`--precision single\` (sgemm) | $(gf "$(med d_gemms$t steady)") | $(gf "$(med d_gemms$t first)") | $(ratio "$(med d_gemms$t steady)" "$cs") |"
    echo "| numpy $pyver \`A @ B\` | $(gf "$(med np_gemm$t steady)") | $(gf "$(med np_gemm$t first)") | $(ratio "$(med np_gemm$t steady)" "$cs") |"
    echo "| R $rver \`A %*% B\` | $(gf "$(med r_gemm$t steady)") | $(gf "$(med r_gemm$t first)") | $(ratio "$(med r_gemm$t steady)" "$cs") |"
    echo "| PyTorch $tver f64 | $(gf "$(med t64_gemm$t steady)") | $(gf "$(med t64_gemm$t first)") | $(ratio "$(med t64_gemm$t steady)" "$cs") |"
    echo "| PyTorch $tver f32 | $(gf "$(med t32_gemm$t steady)") | $(gf "$(med t32_gemm$t first)") | $(ratio "$(med t32_gemm$t steady)" "$cs") |"
}
ew_row() { # ew_row LABEL CONFIG
    s=$(med "$2" steady)
    echo "| $1 | $(ms "$s") | $(ms "$(med "$2" first)") | $(ratio "$s" "$(med np_ew steady)") |"
}

{
    echo "# Benchmark results"
    echo
    echo "Reproduce with \`make bench\` (runs \`sh bench/run.sh\` under"
    echo "\`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE\`). Measured $(date -u '+%Y-%m-%d %H:%M UTC') on"
    echo "$(nproc) cores of: $cpu ($isa); OpenBLAS kernel (openblas_get_corename): $kernel from C,"
    echo "$dkernel in dml. Load average at the start of each round:$loads (the machine is shared:"
    echo "figures taken under load are slower for everyone, the ratios less so)."
    echo "Every program reports its first run and the median of 11 steady-state runs; the"
    echo "tables give the median of $REPS rounds, all configurations run in turn each round."
    echo
    echo "## \`C = A %*% B\`, 1000x1000 (issue #13: dml >= 0.95 of cblas_dgemm)"
    echo
    echo "### 1 thread"
    echo
    echo "| implementation | steady GFLOP/s | first run GFLOP/s | steady / cblas_dgemm |"
    echo "|---|---|---|---|"
    gemm_row 1
    echo
    echo "### 2 threads"
    echo
    echo "| implementation | steady GFLOP/s | first run GFLOP/s | steady / cblas_dgemm |"
    echo "|---|---|---|---|"
    gemm_row 2
    echo
    echo "## The OpenBLAS kernels this CPU runs (issue #29: pick the fastest by measurement)"
    echo
    echo "\`build/bench/blas_bench dgemm|sgemm 1000 T\` under \`OPENBLAS_CORETYPE=name\`, best GFLOP/s of"
    echo "$REPS rounds (kernels interleaved). dml's choice (its own short measurement, cached):"
    echo "**$FASTCORE**; OpenBLAS's own pick: $LIBCORE. Every peer below runs with $FASTCORE."
    echo
    echo "| kernel | dgemm 1 thread | dgemm 2 threads | sgemm 1 thread | sgemm 2 threads |"
    echo "|---|---|---|---|---|"
    for c in $CORES; do
        echo "| $c | $(kbest $c dgemm 1) | $(kbest $c dgemm 2) | $(kbest $c sgemm 1) | $(kbest $c sgemm 2) |"
    done
    echo
    echo "dml's own measurement (\`dml run X.dml --stats\`, 256^3 on one thread, GFLOP/s dgemm/sgemm):"
    echo
    echo '```'
    echo 'print(1)' > "$B/one.$$.dml"
    "$DML" run "$B/one.$$.dml" --stats | grep '^BLAS kernel'
    rm -f "$B/one.$$.dml"
    echo '```'
    echo
    echo "## \`Z = exp(X) * Y + X\`, 1000x1000 (issue #13: dml <= 1.0 ms, <= 0.5x numpy)"
    echo
    echo "| implementation | steady ms | first run ms | steady / numpy |"
    echo "|---|---|---|---|"
    ew_row "numpy $pyver (1 thread)" np_ew
    ew_row "C loop, libm exp (1 thread)" c_ew
    ew_row "R $rver" r_ew
    ew_row "PyTorch $tver f64, 1 thread" t64_ew1
    ew_row "PyTorch $tver f32, 1 thread" t32_ew1
    ew_row "**dml, fused, 1 thread** (\`--threads 1\`)" d_ew1
    ew_row "**dml, fused, 2 threads**" d_ew2
    ew_row "dml, one operator at a time (\`DML_FUSE=0\`), 1 thread" d_ewn1
    echo
    echo "dml's vector exp, picked at run time ($isa here): libmvec's 8-wide exp on AVX-512, a 4-wide"
    echo "polynomial of dml's own on AVX2 (libmvec's AVX2 exp gathers from a table, slow on AMD Zen),"
    echo "libmvec's 2-wide exp on SSE2 (runtime/vmath.c)."
    echo
    echo "## conv2d, LeNet shapes (batch 64): forward + both backward passes"
    echo
    echo "| dml GFLOP/s | peak dgemm from C (2 threads) | ratio |"
    echo "|---|---|---|"
    echo "| $(gf "$(med d_conv steady)") | $(gf "$(med c_gemm2 steady)") | $(ratio "$(med d_conv steady)" "$(med c_gemm2 steady)") |"
    echo
    echo "## Interpreter overhead, whole-program wall seconds"
    echo
    echo "| program | R (Rscript) | dml | ratio (dml / R) |"
    echo "|---|---|---|---|"
    echo "| 2,000,000-iteration scalar loop | $(med r_sl steady) | $(med d_sl steady) | $(ratio "$(med d_sl steady)" "$(med r_sl steady)") |"
    echo "| 500,000 calls of a small function | $(med r_fc steady) | $(med d_fc steady) | $(ratio "$(med d_fc steady)" "$(med r_fc steady)") |"
    echo "| 200,000 updates of a 10x10 matrix and its sum | $(med r_ml steady) | $(med d_ml steady) | $(ratio "$(med d_ml steady)" "$(med r_ml steady)") |"
    echo
    echo "Commands (from the repository root):"
    echo
    echo '```'
    echo "build/bench/blas_bench dgemm 1000 T          # T = 1, 2"
    echo "$DML run bench/dml/matmul.dml --threads T -nvargs n=1000"
    echo "OPENBLAS_NUM_THREADS=T $PY bench/py_bench.py numpy matmul 1000 T"
    echo "OPENBLAS_NUM_THREADS=T Rscript bench/r_bench.R matmul 1000"
    echo "$PY bench/py_bench.py torch64|torch32 matmul 1000 T"
    echo "build/bench/blas_bench elementwise"
    echo "$DML run bench/dml/elementwise.dml --threads T   # DML_FUSE=0 for one operator at a time"
    echo "OPENBLAS_NUM_THREADS=1 $PY bench/py_bench.py numpy elementwise 1"
    echo "Rscript bench/r_bench.R elementwise"
    echo "$PY bench/py_bench.py torch64|torch32 elementwise 1"
    echo "$DML run bench/dml/conv2d.dml"
    echo "$DML run bench/dml/scalar_loop.dml | func_calls.dml | matrix_loop.dml   # Rscript the .R twins"
    echo '```'
    echo
    echo "## LeNet's DNN kernels per batch of 64 (issue #13)"
    echo
    echo "One worker's kernels for one batch, one BLAS thread (as each of paramserv's k=2 workers"
    echo "on 2 cores), thread CPU time, best of 7 (\`$B/lenet_kernels\`, built from"
    echo "bench/lenet_kernels.c, builtins/dnn_kernels.c and dnn_winograd.c):"
    echo
    echo '```'
    "$B/lenet_kernels"
    echo '```'
    if [ -f bench/paramserv.sh ] && [ -z "${BENCH_SKIP_PARAMSERV:-}" ]; then
        echo
        sh bench/paramserv.sh "$DML"
    fi
    if [ -f bench/mpi.sh ]; then
        echo
        sh bench/mpi.sh "$DML"
    fi
    if [ -f bench/ps_cluster.sh ] && [ -z "${BENCH_SKIP_CLUSTER:-}" ]; then
        echo
        sh bench/ps_cluster.sh "$DML" || echo "ps_cluster.sh failed" >&2
    fi
    if [ -s "$KEPT" ]; then
        echo
        cat "$KEPT"
    fi
} > "$OUT"
rm -f "$B"/*.$$
cat "$OUT"
