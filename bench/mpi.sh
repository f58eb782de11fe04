#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# paramserv on Open MPI (issue 12); called by bench/run.sh as
#   sh bench/mpi.sh path/to/dml
# from the repository root; prints a Markdown section on stdout (progress on
# stderr):
#   (a) LeNet one epoch on PS_N images, BSP freq=BATCH, k=2: two worker
#       threads in one process vs two worker ranks (mpirun -np 3) on this
#       machine, over shared memory and TCP loopback: the transport overhead
#   (b) bytes per update vs model size, from --stats, for LeNet and a
#       3-weight linear model
#   (c) the transport alone: ms per step moving a 12.8 MB model and
#       gradient (bench/dml/ps_transport.dml), threads vs one worker rank
# PS_REPS runs of each, configurations interleaved (the machine may be
# shared: min and median are reported, with the load average before and
# after). Skipped when mpirun is absent.
set -eu
DML=${1:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
N=${PS_N:-4096}
REPS=${PS_REPS:-3}
if ! command -v mpirun >/dev/null 2>&1; then
    echo "## paramserv on Open MPI (issue 12)"
    echo
    echo "Not measured: mpirun is not installed (tools/install-deps.sh installs openmpi-bin)."
    exit 0
fi
FASHION=/usr/share/datasets/fashion-mnist
if [ -f "$FASHION/train-images-idx3-ubyte.gz" ]; then
    IMAGES=$FASHION/train-images-idx3-ubyte.gz
    LABELS=$FASHION/train-labels-idx1-ubyte.gz
    DATA="Fashion-MNIST ($FASHION)"
else
    IMAGES=data/mnist-train-images-idx3-ubyte.gz
    LABELS=data/mnist-train-labels-idx1-ubyte.gz
    DATA="the embedded MNIST digits (Fashion-MNIST is not installed: tools/install-deps.sh --bench)"
    [ "$N" -gt 8000 ] && N=8000
fi
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
ARGS="images=$IMAGES labels=$LABELS n=$N k=2 utype=BSP freq=BATCH"

# stat "v1 v2 ...": "min median"
stat() { echo "$1" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.2f %.2f", v[1], m }'; }
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
# "SECONDS CPU": the call's wall time (time() in the script) and its CPU
# time from --stats (every thread; under MPI every rank, from its CALL on).
secs() { awk '$1 == "lenet_ps" { s = $2 } /^Paramserv CPU time:/ { c = $4 } END { if (s != "") print s, c }'; }
local_run() { "$DML" run bench/dml/lenet_ps.dml --stats -nvargs $ARGS mode=LOCAL 2>/dev/null | secs; }
mpi_run() { $MPIRUN --mca btl "$1" -np 3 "$DML" run bench/dml/lenet_ps.dml --stats -nvargs $ARGS mode=REMOTE_MPI 2>/dev/null | secs; }

# CPU seconds (user + system) of every process this shell has waited for:
# a run's is the difference before and after it (mpirun waits for its
# ranks, so theirs count). `times` must run in this shell and write to a
# file: in $(...) it would report the subshell's. After 'cpu', $CPU holds it.
TIMES=$(mktemp "${TMPDIR:-/tmp}/dml-bench-times.XXXXXX")
trap 'rm -f "$TIMES"' EXIT
cpu() {
    times >"$TIMES"
    CPU=$(sed -n 2p "$TIMES" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]);
        t += a[1] * 60 + a[2] } printf "%.2f", t }')
}
lo=""; sm=""; tc=""; lo_c=""; sm_c=""; tc_c=""; lo_k=""; sm_k=""; tc_k=""
load0=$(load)
r=1
while [ $r -le "$REPS" ]; do
    echo "bench: paramserv LeNet local vs MPI ranks, round $r/$REPS" >&2
    cpu; c0=$CPU
    v=$(local_run); [ -n "$v" ] || { echo "mpi.sh: local run failed" >&2; exit 1; }
    cpu; c1=$CPU
    set -- $v; v=$1; lo_k="$lo_k $2"
    lo="$lo $v"; lo_c="$lo_c $(awk "BEGIN{print $c1 - $c0}")"
    v=$(mpi_run self,vader); [ -n "$v" ] || { echo "mpi.sh: mpirun (vader) failed" >&2; exit 1; }
    cpu; c0=$CPU
    set -- $v; v=$1; sm_k="$sm_k $2"
    sm="$sm $v"; sm_c="$sm_c $(awk "BEGIN{print $c0 - $c1}")"
    v=$(mpi_run self,tcp); [ -n "$v" ] || { echo "mpi.sh: mpirun (tcp) failed" >&2; exit 1; }
    cpu; c1=$CPU
    set -- $v; v=$1; tc_k="$tc_k $2"
    tc="$tc $v"; tc_c="$tc_c $(awk "BEGIN{print $c1 - $c0}")"
    r=$((r + 1))
done
load1=$(load)
set -- $(stat "$lo") $(stat "$sm") $(stat "$tc")
lo=$1 lo_med=$2 sm=$3 sm_med=$4 tc=$5 tc_med=$6
set -- $(stat "$lo_c") $(stat "$sm_c") $(stat "$tc_c")
lo_c=$2 sm_c=$4 tc_c=$6
set -- $(stat "$lo_k") $(stat "$sm_k") $(stat "$tc_k")
lo_k=$2 sm_k=$4 tc_k=$6
pct() { awk "BEGIN{printf \"%+.1f%%\", ($1 / $2 - 1) * 100}"; }

# (c) the transport alone: bench/dml/ps_transport.dml moves a 12.8 MB model
# and gradient per step with next to no computing; ms per step, medians.
tstep() { awk '$1 == "ps_transport" { printf "%.1f", $2 * 1000 }'; }
tr_lo=""; tr_sm=""; tr_nc=""; tr_tc=""
TARGS="steps=${PS_TSTEPS:-40} k=1"
r=1
while [ $r -le "$REPS" ]; do
    echo "bench: paramserv transport (12.8 MB model), round $r/$REPS" >&2
    tr_lo="$tr_lo $("$DML" run bench/dml/ps_transport.dml -nvargs $TARGS mode=LOCAL 2>/dev/null | tstep)"
    tr_sm="$tr_sm $($MPIRUN --mca btl self,vader -np 2 "$DML" run bench/dml/ps_transport.dml -nvargs $TARGS \
        mode=REMOTE_MPI 2>/dev/null | tstep)"
    tr_nc="$tr_nc $($MPIRUN --mca btl self,vader --mca btl_vader_single_copy_mechanism none -np 2 "$DML" run \
        bench/dml/ps_transport.dml -nvargs $TARGS mode=REMOTE_MPI 2>/dev/null | tstep)"
    tr_tc="$tr_tc $($MPIRUN --mca btl self,tcp -np 2 "$DML" run bench/dml/ps_transport.dml -nvargs $TARGS \
        mode=REMOTE_MPI 2>/dev/null | tstep)"
    r=$((r + 1))
done
med() { set -- $(stat "$1"); echo "$2"; }

# (b) bytes per update, from --stats of one remote run each
bpu() { # bpu SCRIPT ARGS...: "pulled pushed model" bytes
    $MPIRUN -np 3 "$DML" run "$@" 2>/dev/null |
        sed -n 's/^Paramserv bytes per update:[^0-9]*\([0-9]*\) pulled + \([0-9]*\) pushed (model: \([0-9]*\) bytes).*/\1 \2 \3/p'
}
lenet=$(bpu bench/dml/lenet_ps.dml --stats -nvargs images="$IMAGES" labels="$LABELS" n=512 k=2 utype=BSP \
    freq=BATCH mode=REMOTE_MPI)
lin=$(cd tests/mpi && bpu bits.dml --stats -nvargs mode=REMOTE_MPI utype=BSP freq=BATCH scheme=DISJOINT_RANDOM \
    k=2 avg=FALSE upd=gradients out=/tmp/dml-bench-mpi)
rm -f /tmp/dml-bench-mpi.*
row() { # row NAME "pulled pushed model"
    set -- "$1" $2
    echo "| $1 | $4 | $2 | $3 |"
}

echo "## paramserv on Open MPI (issue 12)"
echo
echo "LeNet (scripts/mnist_lenet.dml) one epoch on the first $N images of $DATA, BSP, freq=BATCH,"
echo "batch 64, k=2: two worker threads in one dml process vs two worker ranks under"
echo "\`mpirun -np 3\` (rank 0 is the server) on this $(nproc)-core machine. Seconds of the paramserv"
echo "call (time() in the script), min and median of $REPS runs, configurations interleaved;"
echo "load average $load0 before, $load1 after. Medians of CPU seconds (user + system): of the"
echo "call (\`--stats\`: every thread, and under MPI every rank from the call's start), and of the"
echo "whole job (every process: data loading, and for MPI mpirun, start-up and the worker ranks)."
echo "On a loaded machine the wall times measure scheduler shares more than the transport."
echo
echo "| backend | min s | median s | overhead (min) | overhead (median) | call CPU s | call CPU overhead | job CPU s | job CPU overhead | target |"
echo "|---|---|---|---|---|---|---|---|---|---|"
echo "| k=2 threads (mode=LOCAL) | $lo | $lo_med | | | $lo_k | | $lo_c | | |"
echo "| 2 worker ranks, shared memory (\`--mca btl self,vader\`) | $sm | $sm_med | $(pct "$sm" "$lo") | $(pct "$sm_med" "$lo_med") | $sm_k | $(pct "$sm_k" "$lo_k") | $sm_c | $(pct "$sm_c" "$lo_c") | <= +10% |"
echo "| 2 worker ranks, TCP loopback (\`--mca btl self,tcp\`) | $tc | $tc_med | $(pct "$tc" "$lo") | $(pct "$tc_med" "$lo_med") | $tc_k | $(pct "$tc_k" "$lo_k") | $tc_c | $(pct "$tc_c" "$lo_c") | <= +10% |"
echo
echo "Bytes per update (from \`--stats\`: one pull and one push per update and worker; a pull carries"
echo "one copy of the model entries the workers' functions read, a push one copy of the gradients,"
echo "each plus a 48-byte header and the list's layout):"
echo
echo "| model | model bytes | bytes pulled per update | bytes pushed per update |"
echo "|---|---|---|---|"
row "LeNet (17 entries: 8 weights, 8 momentum buffers, a step counter; upd reads the 8 weights; 8 gradients pushed)" "$lenet"
row "linear model (3x1 + 1x1)" "$lin"
echo
echo "The transport alone (\`bench/dml/ps_transport.dml\`: a 12.8 MB model pulled and a 12.8 MB"
echo "gradient pushed per step, k=1, next to no computing; milliseconds per step, medians of $REPS):"
echo
echo "| k=1 threads | 1 worker rank, shared memory | shared memory without single copy (\`btl_vader_single_copy_mechanism none\`, as in containers that bar CMA) | TCP loopback |"
echo "|---|---|---|---|"
echo "| $(med "$tr_lo") | $(med "$tr_sm") | $(med "$tr_nc") | $(med "$tr_tc") |"
echo
echo "Scaling over k = 1, 2, 4, 8 ranks needs more cores than this machine's $(nproc): \`sh bench/mpi_scaling.sh\`"
echo "on a 16-core machine (see the hand-written section on it below)."
echo
echo "Commands:"
echo
echo '```'
echo "$DML run bench/dml/lenet_ps.dml --stats -nvargs $ARGS mode=LOCAL"
echo "$MPIRUN --mca btl self,vader -np 3 $DML run bench/dml/lenet_ps.dml --stats -nvargs $ARGS mode=REMOTE_MPI"
echo "$MPIRUN --mca btl self,tcp -np 3 $DML run bench/dml/lenet_ps.dml --stats -nvargs $ARGS mode=REMOTE_MPI"
echo "$DML run bench/dml/ps_transport.dml -nvargs $TARGS mode=LOCAL"
echo "$MPIRUN --mca btl self,vader [--mca btl_vader_single_copy_mechanism none] -np 2 $DML run bench/dml/ps_transport.dml -nvargs $TARGS mode=REMOTE_MPI"
echo '```'

# A straggler, STATIC vs DYNAMIC dispatch, threads and ranks (issue 26).
if [ -f bench/ps_dispatch.sh ]; then
    echo
    sh bench/ps_dispatch.sh "$DML"
fi
