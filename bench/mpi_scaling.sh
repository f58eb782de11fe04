#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# How paramserv scales with worker ranks (issue 12), for a machine with
# enough cores (16 or more for k = 8):
#   sh bench/mpi_scaling.sh path/to/dml
# from the repository root; prints a Markdown section on stdout (progress
# on stderr).
#
# LeNet (bench/dml/lenet_ps.dml) on SCALE_N images for SCALE_EPOCHS epochs,
# BSP, freq=BATCH, batch 64 per worker, for k in SCALE_KS:
#   - k worker ranks: mpirun -np k+1 (rank 0 is the server), over shared
#     memory (btl self,vader) and over TCP loopback (btl self,tcp);
#   - k worker threads in one process (mode=LOCAL), for comparison.
# Each worker gets one BLAS thread (DML_THREADS is the host's thread
# budget, shared by the processes of a host: k+1 for the ranks, k for the
# threads), so the k = 1 run is one core's work and the efficiency
# T(1) / (k T(k)) measures the parallel training alone. With batch 64
# per worker the global batch grows with k, as in upstream paramserv: an
# epoch is the same images, in N/(64k) steps of k gradients each.
# SCALE_REPS runs of each, interleaved; the median is reported.
set -eu
DML=${1:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
N=${SCALE_N:-8000}
EPOCHS=${SCALE_EPOCHS:-1}
KS=${SCALE_KS:-1 2 4 8}
REPS=${SCALE_REPS:-3}
BTLS=${SCALE_BTLS:-self,vader self,tcp}
IMAGES=${SCALE_IMAGES:-data/mnist-train-images-idx3-ubyte.gz}
LABELS=${SCALE_LABELS:-data/mnist-train-labels-idx1-ubyte.gz}
command -v mpirun >/dev/null 2>&1 || { echo "mpi_scaling.sh: mpirun is not installed" >&2; exit 1; }
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
ARGS="images=$IMAGES labels=$LABELS n=$N epochs=$EPOCHS utype=BSP freq=BATCH"

secs() { awk '$1 == "lenet_ps" { print $2 }'; }
med() { echo "$1" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {
    printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
key() { echo "$1" | tr -c 'a-z0-9\n' '_'; }

r=1
while [ "$r" -le "$REPS" ]; do
    for k in $KS; do
        echo "bench: scaling round $r/$REPS, k=$k" >&2
        v=$(DML_THREADS=$k "$DML" run bench/dml/lenet_ps.dml -nvargs $ARGS k=$k mode=LOCAL 2>&2 | secs)
        [ -n "$v" ] || { echo "mpi_scaling.sh: local k=$k failed" >&2; exit 1; }
        eval "T_local_$k=\"\${T_local_$k:-} $v\""
        for btl in $BTLS; do
            v=$(DML_THREADS=$((k + 1)) $MPIRUN --mca btl "$btl" -np $((k + 1)) \
                "$DML" run bench/dml/lenet_ps.dml -nvargs $ARGS k=$k mode=REMOTE_MPI 2>&2 | secs)
            [ -n "$v" ] || { echo "mpi_scaling.sh: mpirun btl=$btl k=$k failed" >&2; exit 1; }
            b=$(key "$btl")
            eval "T_${b}_$k=\"\${T_${b}_$k:-} $v\""
        done
    done
    r=$((r + 1))
done

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
echo "## paramserv scaling over worker ranks (issue 12)"
echo
echo "LeNet (bench/dml/lenet_ps.dml) on $N images, $EPOCHS epoch(s), BSP, freq=BATCH, batch 64 per"
echo "worker, one BLAS thread per worker; $(nproc) cores of $cpu; $("$DML" --version | head -1)."
echo "Seconds of the paramserv call (partition and code shipping included), median of $REPS;"
echo "efficiency = T(1) / (k T(k)) within each backend."
echo
echo "| k | threads s | eff. | ranks, shared memory s | eff. | ranks, TCP s | eff. |"
echo "|---|---|---|---|---|---|---|"
for k in $KS; do
    line="| $k"
    for b in local self_vader self_tcp; do
        eval "t=\${T_${b}_$k:-}"
        eval "t1=\${T_${b}_1:-}"
        if [ -z "$t" ]; then line="$line | | "; continue; fi
        m=$(med "$t")
        if [ -n "$t1" ]; then
            e=$(awk "BEGIN{printf \"%.0f%%\", $(med "$t1") / ($k * $m) * 100}")
        else
            e=""
        fi
        line="$line | $m | $e"
    done
    echo "$line |"
done
echo
echo "Commands (k = 1, 2, 4, 8):"
echo
echo '```'
echo "DML_THREADS=k $DML run bench/dml/lenet_ps.dml -nvargs $ARGS k=k mode=LOCAL"
echo "DML_THREADS=k+1 $MPIRUN --mca btl self,vader -np k+1 $DML run bench/dml/lenet_ps.dml -nvargs $ARGS k=k mode=REMOTE_MPI"
echo '```'
