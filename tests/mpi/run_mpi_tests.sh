#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# paramserv on Open MPI (issue 12): runs dml under mpirun with 2-9 ranks on
# this machine, over shared memory (btl vader) and TCP loopback (btl tcp).
# Worker ranks run in an empty folder, so nothing reaches them but what rank
# 0 ships. Checks: seeded BSP (every freq, modelAvg, every scheme) equals
# the local backend with the same k bit for bit, for N = 2, 3, 4 and both
# transports; the asynchronous utypes train; a worker's DML error, a killed
# rank, a stopped rank, different builds and bad modes end the job with the
# right message; upd's prints reach rank 0; progress lines; --stats;
# chunked messages; pulls carry only the model entries upd reads; several
# workers per rank and BSP's pushes summed up a tree of ranks (issue 25):
# the same bits with 1, 2 and 4 workers per rank, the tree on and off.
# Ends with "N passed, N failed". Skips (0 passed, 0 failed) only when
# mpirun is not installed (tools/install-deps.sh installs it), or under
# ThreadSanitizer, which does not instrument Open MPI.
#   DML=build/release/dml sh tests/mpi/run_mpi_tests.sh

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
cd "$(dirname "$0")" || exit 2

if ! command -v mpirun >/dev/null 2>&1; then
    echo "note: mpirun not found (apt-get install openmpi-bin libopenmpi-dev); MPI tests skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
case "$DML" in
*/tsan/*)
    echo "note: MPI tests skipped under ThreadSanitizer (Open MPI's progress threads and shared memory are not instrumented)"
    echo "0 passed, 0 failed"
    exit 0 ;;
esac
if ! "$DML" --version >/dev/null 2>&1; then
    echo "mpi: no dml binary at $DML"
    echo "0 passed, 1 failed"
    exit 1
fi

# Open MPI keeps memory past MPI_Finalize: suppressed by library (never
# dml's own code); full unwinding so the suppressions see those frames.
LSAN_OPTIONS="suppressions=$PWD/lsan-openmpi.supp:fast_unwind_on_malloc=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS
MPIRUN="mpirun --oversubscribe"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
# Containers (CI) often forbid the cross-process memory access that the
# shared-memory transport uses for large messages; copying through the
# shared segment works everywhere.
OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OMPI_MCA_btl_vader_single_copy_mechanism
# A hang guard, not a timing assertion: a test that hangs fails.
GUARD=""
command -v timeout >/dev/null 2>&1 && GUARD="timeout 300"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlmpi.XXXXXX") || exit 2
mkdir "$tmp/empty"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$tmp/err" ] && sed -n '1,15p' "$tmp/err"; }

# mpi N BTL SCRIPT ARGS...: rank 0 here, ranks 1..N-1 in an empty folder.
mpi() {
    n=$1 btl=$2 script=$3
    shift 3
    $GUARD $MPIRUN --mca btl "$btl" -np 1 "$DML" run "$script" "$@" : \
        -np $((n - 1)) -wdir "$tmp/empty" "$DML" run "$script" "$@"
}

# ---- bit-identity of seeded BSP with the local backend --------------------
# bits N BTL FREQ SCHEME AVG UPD: local k=N-1 threads vs N-1 worker ranks.
bits() {
    n=$1 btl=$2 freq=$3 scheme=$4 avg=$5 upd=$6
    name="bits N=$n $btl $freq $scheme avg=$avg $upd"
    set -- utype=BSP freq="$freq" scheme="$scheme" k=$((n - 1)) avg="$avg" upd="$upd"
    if ! $GUARD "$DML" run "${BITS:-bits.dml}" -nvargs mode=LOCAL "$@" out="$tmp/local" >"$tmp/local.out" 2>"$tmp/err"; then
        bad "$name (local run)"
        return
    fi
    if ! mpi "$n" "$btl" "${BITS:-bits.dml}" -nvargs mode=REMOTE_MPI "$@" out="$tmp/mpi" >"$tmp/mpi.out" 2>"$tmp/err"; then
        bad "$name (mpirun)"
        return
    fi
    if cmp -s "$tmp/local.1" "$tmp/mpi.1" && cmp -s "$tmp/local.2" "$tmp/mpi.2" &&
        cmp -s "$tmp/local.out" "$tmp/mpi.out"; then
        ok "$name"
    else
        echo "local: $(cat "$tmp/local.out")"
        echo "mpi:   $(cat "$tmp/mpi.out")"
        bad "$name: models differ"
    fi
}
for btl in self,vader self,tcp; do
    for n in 2 3 4; do
        bits $n $btl BATCH DISJOINT_RANDOM FALSE gradients_dropout
    done
done
# Five workers: BSP's models go down a broadcast tree two levels deep.
bits 6 self,tcp BATCH DISJOINT_RANDOM FALSE gradients_dropout
bits 3 self,vader EPOCH OVERLAP_RESHUFFLE FALSE gradients_dropout
bits 3 self,tcp NBATCHES DISJOINT_ROUND_ROBIN FALSE gradients
bits 4 self,vader EPOCH DISJOINT_CONTIGUOUS TRUE gradients_dropout
bits 3 self,tcp BATCH DISJOINT_RANDOM TRUE gradients
# Chunked messages: 1000-byte chunks carry every model, push and partition.
DML_MPI_CHUNK=1000 bits 3 self,tcp BATCH DISJOINT_RANDOM FALSE gradients_dropout
# Single precision (products by sgemm) is bit-identical across ranks too.
BITS=bits_single.dml
export DML_PRECISION=single
bits 3 self,vader BATCH DISJOINT_RANDOM FALSE gradients
bits 3 self,tcp EPOCH DISJOINT_CONTIGUOUS TRUE gradients
unset BITS DML_PRECISION
# LeNet in single precision: the worker ranks take rank 0's precision from
# --precision or DML_PRECISION (they never run the script; they computed in
# double before), so the ranks give the local run's bits.
lenet_bits() {
    how=$1
    name="bits LeNet single precision ($how): local k=2 = 2 worker ranks"
    same=1
    if ! DML_PRECISION=single $GUARD "$DML" run lenet_single.dml -nvargs mode=LOCAL out="$tmp/lloc" \
        >/dev/null 2>"$tmp/err"; then
        bad "$name (local run)"
        return
    fi
    if [ "$how" = DML_PRECISION ]; then
        DML_PRECISION=single mpi 3 self,vader lenet_single.dml -nvargs mode=REMOTE_MPI out="$tmp/lmpi" \
            >/dev/null 2>"$tmp/err"
    else
        mpi 3 self,vader lenet_single.dml --precision single -nvargs mode=REMOTE_MPI out="$tmp/lmpi" \
            >/dev/null 2>"$tmp/err"
    fi || { bad "$name (mpirun)"; return; }
    for i in 1 2 3 4 5 6 7 8; do
        cmp -s "$tmp/lloc.$i" "$tmp/lmpi.$i" || same=0
    done
    if [ $same = 1 ]; then ok "$name"; else bad "$name: models differ"; fi
}
lenet_bits DML_PRECISION
lenet_bits --precision

# ---- several workers per rank, and BSP's pushes summed up a tree ---------
# (issue 25, tp_mpi_tree.h) gbits K "N..." [BTL]: seeded BSP with k=K local
# threads, against K workers on N-1 worker ranks for each N (groups of
# threads: N=K+1 is one worker per rank, N=K/2+1 two, N=K/4+1 four), with
# the tree and (DML_PS_TREE=0) without: the same bits every time.
gbits() {
    k=$1 ns=$2 btl=${3:-self,vader}
    set -- utype=BSP freq="${GFREQ:-BATCH}" scheme=DISJOINT_RANDOM k="$k" avg="${GAVG:-FALSE}" upd=gradients_dropout
    name="groups: BSP k=$k ${GFREQ:-BATCH} avg=${GAVG:-FALSE} on N = $ns ($btl), tree on and off = local threads"
    if ! $GUARD "$DML" run bits.dml -nvargs mode=LOCAL "$@" out="$tmp/local" >"$tmp/local.out" 2>"$tmp/err"; then
        bad "$name (local run)"
        return
    fi
    for n in $ns; do
        for tree in 1 0; do
            rm -f "$tmp/mpi.1" "$tmp/mpi.2"
            if ! DML_PS_TREE=$tree mpi "$n" "$btl" bits.dml -nvargs mode=REMOTE_MPI "$@" out="$tmp/mpi" \
                >"$tmp/mpi.out" 2>"$tmp/err"; then
                bad "$name (mpirun -np $n, DML_PS_TREE=$tree)"
                return
            fi
            if ! cmp -s "$tmp/local.1" "$tmp/mpi.1" || ! cmp -s "$tmp/local.2" "$tmp/mpi.2" ||
                ! cmp -s "$tmp/local.out" "$tmp/mpi.out"; then
                echo "local: $(cat "$tmp/local.out")"
                echo "mpi:   $(cat "$tmp/mpi.out")"
                bad "$name: -np $n, DML_PS_TREE=$tree differs"
                return
            fi
        done
    done
    ok "$name"
}
gbits 2 "3 2"
gbits 3 "4 3" self,tcp
gbits 4 "5 3 2"
gbits 5 "6 4 3"
gbits 6 "7 4 3" self,tcp
gbits 7 "8 5 3"
gbits 8 "9 5 3"
GFREQ=EPOCH GAVG=TRUE gbits 5 "3 2" self,tcp
GFREQ=NBATCHES gbits 6 "4 2"
# Rank 0 receives at most two gradient copies a round (the root's halves):
# k=8 on 4 worker ranks, 6 rounds: 12 pushes of 32 bytes; without the
# tree 48.
if mpi 5 self,vader bits.dml --stats -nvargs mode=REMOTE_MPI utype=BSP freq=BATCH scheme=DISJOINT_RANDOM k=8 \
    avg=FALSE upd=gradients out="$tmp/s" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Paramserv pushes into rank 0:	384 bytes in 12 messages (BSP summed up the tree of ranks)" "$tmp/out" &&
    grep -q "^Paramserv workers per rank:	2 (8 workers on 4 worker ranks" "$tmp/out" &&
    DML_PS_TREE=0 mpi 5 self,vader bits.dml --stats -nvargs mode=REMOTE_MPI utype=BSP freq=BATCH \
    scheme=DISJOINT_RANDOM k=8 avg=FALSE upd=gradients out="$tmp/s" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Paramserv pushes into rank 0:	1536 bytes in 48 messages (one per worker push)" "$tmp/out"; then
    ok "--stats: rank 0 receives 2 pushes a round with the tree (k=8, 4 worker ranks), 8 without"
else
    grep -e Paramserv "$tmp/out"
    bad "--stats: rank 0 receives 2 pushes a round with the tree (k=8, 4 worker ranks), 8 without"
fi

# ---- dispatch="DYNAMIC": the same bits on threads and ranks, slow or not --
# dynbits N BTL UTYPE FREQ AVG: seeded DYNAMIC on k=N-1 local threads, and
# on N-1 worker ranks with and without DML_PS_SLOW (rank 0 ships it with
# the call), give the same model (issue 26: a task's rows and random stream
# follow the task, not the worker; a backup's twin has the same bits).
dynbits() {
    n=$1 btl=$2 utype=$3 freq=$4 avg=$5
    name="DYNAMIC bits N=$n k=${DYN_K:-$((n - 1))} $btl $utype $freq avg=$avg: threads = ranks = ranks with DML_PS_SLOW=1:3"
    set -- utype="$utype" freq="$freq" avg="$avg" k="${DYN_K:-$((n - 1))}" dispatch=DYNAMIC
    script=../paramserv/dispatch_bits.dml
    if ! a=$($GUARD "$DML" run $script -nvargs mode=LOCAL "$@" 2>"$tmp/err"); then
        bad "$name (local run)"
        return
    fi
    if ! b=$(mpi "$n" "$btl" $script -nvargs mode=REMOTE_MPI "$@" 2>"$tmp/err") ||
        ! c=$(DML_PS_SLOW=1:3 mpi "$n" "$btl" $script -nvargs mode=REMOTE_MPI "$@" 2>"$tmp/err"); then
        bad "$name (mpirun)"
        return
    fi
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]; then
        ok "$name"
    else
        printf '     %s\n     %s\n     %s\n' "$a" "$b" "$c"
        bad "$name"
    fi
}
dynbits 3 self,vader BSP BATCH FALSE
dynbits 4 self,tcp BSP BATCH FALSE
dynbits 4 self,vader SBP NBATCHES FALSE
dynbits 3 self,tcp BSP EPOCH TRUE
# Two workers per rank: each thread takes its own tasks.
DYN_K=4 dynbits 3 self,vader BSP BATCH FALSE
# A rank keeps the rows of the tasks it ran (tp_mpi_rows.h): 3 epochs of 10
# tasks on 2 ranks; a task misses at most once per rank, so at least 10 of
# the 30 go without their rows, and the model is still the threads' (above).
if mpi 3 self,vader ../paramserv/dispatch_bits.dml --stats -nvargs mode=REMOTE_MPI utype=BSP freq=BATCH avg=FALSE k=2 \
    dispatch=DYNAMIC >"$tmp/out" 2>"$tmp/err" &&
    line=$(grep '^Paramserv task rows:' "$tmp/out") &&
    sent=$(echo "$line" | sed -n 's/^Paramserv task rows:[[:space:]]*\([0-9]*\) tasks sent with their rows, \([0-9]*\) without .*/\1/p') &&
    kept=$(echo "$line" | sed -n 's/^Paramserv task rows:[[:space:]]*\([0-9]*\) tasks sent with their rows, \([0-9]*\) without .*/\2/p') &&
    [ -n "$sent" ] && [ -n "$kept" ] && [ "$kept" -ge 10 ] && [ $((sent + kept)) -ge 30 ] &&
    [ "$(sed -n 1p "$tmp/out")" = "$($GUARD "$DML" run ../paramserv/dispatch_bits.dml -nvargs mode=LOCAL utype=BSP \
        freq=BATCH avg=FALSE k=2 dispatch=DYNAMIC 2>/dev/null | sed -n 1p)" ]; then
    ok "DYNAMIC on ranks: rows of a task go once to a rank ($line)"
else
    grep -e '^W' -e '^Paramserv task rows' "$tmp/out"
    bad "DYNAMIC on ranks: rows of a task go once to a rank"
fi

# ---- sparse features cross the wire sparse (issue 31) ----------------------
# A sparse X's partitions (STATIC) and task rows (DYNAMIC) travel as CSR
# (wire.c): the model is the local threads', and rank 0 sends fewer bytes
# than when the same X is held dense (DML_SPARSE_MIN_CELLS past its size;
# that model differs in the last bits: BLAS sums the products in another
# order than the sparse kernels, doc/sparse.md).
spfeat() {
    d=$1 btl=$2
    name="sparse features $d BSP on 2 worker ranks ($btl): threads' bits, sent sparse"
    a=$($GUARD "$DML" run sparse_features.dml -nvargs u=BSP d="$d" mode=LOCAL 2>"$tmp/err" | sed -n 1p)
    mpi 3 "$btl" sparse_features.dml --stats -nvargs u=BSP d="$d" mode=REMOTE_MPI >"$tmp/out" 2>"$tmp/err"
    DML_SPARSE_MIN_CELLS=1000000000000 mpi 3 "$btl" sparse_features.dml --stats -nvargs u=BSP d="$d" \
        mode=REMOTE_MPI >"$tmp/out2" 2>"$tmp/err"
    b=$(sed -n 1p "$tmp/out")
    os=$(sed -n 's/^Rank 0 bytes per round: in [0-9]*, out \([0-9]*\)$/\1/p' "$tmp/out")
    od=$(sed -n 's/^Rank 0 bytes per round: in [0-9]*, out \([0-9]*\)$/\1/p' "$tmp/out2")
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ -n "$os" ] && [ -n "$od" ] && [ "$os" -lt "$od" ]; then
        ok "$name (rank 0 out per round $os bytes, $od dense)"
    else
        printf '     %s\n     %s\n     out %s vs %s\n' "$a" "$b" "$os" "$od"
        bad "$name"
    fi
}
spfeat STATIC self,vader
spfeat DYNAMIC self,tcp

# ---- record= and replay= on ranks (issue 26) --------------------------------
# recplay N DISPATCH RUNS: RUNS seeded ASP runs on N-1 worker ranks, each
# recorded, then replayed: each replay gives back its run's model; with 10
# runs, at least two of them differ (the order of pushes varies).
recplay() {
    n=$1 dispatch=$2 runs=$3
    name="record/replay ASP $dispatch on $((n - 1)) worker ranks, $runs runs"
    script=../paramserv/record_call.dml
    set -- utype=ASP dispatch="$dispatch" k=$((n - 1)) mode=REMOTE_MPI
    : >"$tmp/models"
    i=1
    same=0
    while [ $i -le "$runs" ]; do
        if ! a=$(mpi "$n" self,vader $script -nvargs "$@" rec="$tmp/r$i.psrec" 2>"$tmp/err") ||
            ! b=$(mpi "$n" self,vader $script -nvargs "$@" rep="$tmp/r$i.psrec" 2>"$tmp/err"); then
            bad "$name (run $i failed)"
            return
        fi
        [ -n "$a" ] && [ "$a" = "$b" ] && same=$((same + 1))
        echo "$a" | tr '\n' ' ' >>"$tmp/models"
        echo >>"$tmp/models"
        i=$((i + 1))
    done
    distinct=$(sort -u "$tmp/models" | wc -l)
    if [ "$same" -eq "$runs" ] && { [ "$runs" -lt 10 ] || [ "$distinct" -ge 2 ]; }; then
        ok "$name: each replay gives back its run's model ($distinct different models)"
    else
        bad "$name: $same replays gave back their run's model, $distinct different models"
    fi
}
recplay 4 STATIC 10
recplay 4 DYNAMIC 3

# ---- --trace under mpirun: rank 0 writes every rank's events -------------
# 90 rows, k=2, batchsize 10, 3 epochs: 30 batches and pushes.
if mpi 3 self,vader ../paramserv/dispatch_bits.dml --trace "$tmp/t.json" -nvargs mode=REMOTE_MPI utype=ASP freq=BATCH \
    avg=FALSE k=2 dispatch=DYNAMIC >"$tmp/out" 2>"$tmp/err" &&
    grep -q '"tid":1,"args":{"name":"worker 1 (rank 1 on ' "$tmp/t.json" &&
    grep -q '"tid":2,"args":{"name":"worker 2 (rank 2 on ' "$tmp/t.json" &&
    [ "$(grep -c '"name":"compute","cat":"worker"' "$tmp/t.json")" -eq 30 ] &&
    [ "$(grep -c '"name":"apply","cat":"server"' "$tmp/t.json")" -eq 30 ] &&
    [ "$(tail -n 1 "$tmp/t.json")" = "]}" ]; then
    ok "--trace under mpirun: rank 0 writes the worker ranks' events (30 computes, 30 applies)"
else
    grep -c '"name":"compute"' "$tmp/t.json" 2>/dev/null
    bad "--trace under mpirun: rank 0 writes the worker ranks' events"
fi

# ---- pulls carry only the model entries the worker's functions read -------
# pulls BTL UPD AVG BYTES: readset.dml (a 4-entry model: W, b and their
# velocities) on 2 worker ranks is bit-identical to local threads, and a
# pull carries BYTES (32: W and b; 64: the whole model). A function that
# reads an entry any other way than by a literal index gets every entry;
# one that reads none gets an empty pull (BYTES 0).
pulls() {
    btl=$1 upd=$2 avg=$3 want=$4
    name="pulls $btl $upd avg=$avg carry $want bytes, bit-identical, local --stats agrees"
    set -- k=2 avg="$avg" upd="$upd"
    if ! $GUARD "$DML" run readset.dml --stats -nvargs mode=LOCAL "$@" out="$tmp/local" >"$tmp/local.out" 2>"$tmp/err"; then
        bad "$name (local run)"
        return
    fi
    if ! mpi 3 "$btl" readset.dml --stats -nvargs mode=REMOTE_MPI "$@" out="$tmp/mpi" >"$tmp/mpi.out" 2>"$tmp/err"; then
        bad "$name (mpirun)"
        return
    fi
    same=1
    for i in 1 2 3 4; do cmp -s "$tmp/local.$i" "$tmp/mpi.$i" || same=0; done
    # --stats says how many entries a pull carries when it is not all of them.
    entries=absent
    [ "$want" -lt 64 ] && entries="Paramserv pulled entries:	$((want / 16)) of the model's 4 (those the workers' functions read)."
    # A local run's --stats says what a distributed run would send: the same.
    if [ $same -eq 1 ] && [ "$(sed -n 1p "$tmp/local.out")" = "$(sed -n 1p "$tmp/mpi.out")" ] &&
        grep -q "^Paramserv bytes per update:	$want pulled + [0-9]* pushed (model: 64 bytes)" "$tmp/mpi.out" &&
        [ "$(grep "^Paramserv pulled entries:" "$tmp/mpi.out" || echo absent)" = "$entries" ] &&
        [ "$(grep -e "^Paramserv bytes per update:" -e "^Paramserv pulled entries:" "$tmp/local.out")" = \
          "$(grep -e "^Paramserv bytes per update:" -e "^Paramserv pulled entries:" "$tmp/mpi.out")" ]; then
        ok "$name"
    else
        sed -n 1p "$tmp/local.out"
        grep -e "^W" -e "bytes per update" -e "pulled entries" "$tmp/mpi.out"
        bad "$name"
    fi
}
pulls self,vader gradients FALSE 32
# An upd that never reads the model: a pull carries no entry, and still
# arrives (issue 26: it failed with "malformed model from rank 0").
pulls self,vader gradients_data FALSE 0
pulls self,tcp gradients_data FALSE 0
pulls self,tcp gradients FALSE 32
pulls self,vader gradients_loop FALSE 64
pulls self,vader gradients_helper FALSE 64
# modelAvg: the workers call agg too, which reads every entry.
pulls self,tcp gradients TRUE 64

# ---- scripts that check themselves under mpirun ---------------------------
# runs NAME N SCRIPT [ARGS]: exit 0 and the last stdout line EXPECT.
# Over shared memory, or over $RUNS_BTL when set.
runs() {
    name=$1 n=$2 expect=$3 script=$4
    shift 4
    if mpi "$n" "${RUNS_BTL:-self,vader}" "$script" "$@" >"$tmp/out" 2>"$tmp/err" &&
        [ "$(tail -n 1 "$tmp/out")" = "$expect" ]; then
        ok "$name"
    else
        sed -n '1,5p' "$tmp/out"
        bad "$name"
    fi
}
runs "ASP, SSP, SBP and modelAvg train on worker ranks" 3 "6 combinations trained" utypes.dml
# Several workers per rank (issue 25): threads sharing the rank's model.
runs "ASP, SSP, SBP and modelAvg train with 4 workers on 1 worker rank" 2 "6 combinations trained" utypes.dml \
    -nvargs k=4
RUNS_BTL=self,tcp runs "ASP, SSP, SBP and modelAvg train with 5 workers on 2 worker ranks over TCP" 3 \
    "6 combinations trained" utypes.dml -nvargs k=5
runs "k=3 on 2 worker ranks: groups of threads, the bits of 3 local threads" 3 "groups ok" k_groups.dml
RUNS_BTL=self,tcp runs "ASP, SSP, SBP and modelAvg train on worker ranks over TCP" 3 "6 combinations trained" utypes.dml
runs "DYNAMIC: every utype trains on 2 worker ranks" 3 "6 combinations trained" utypes_dynamic.dml -nvargs k=2
RUNS_BTL=self,tcp runs "DYNAMIC: every utype trains on 3 worker ranks over TCP" 4 "6 combinations trained" \
    utypes_dynamic.dml -nvargs k=3
runs "mode=LOCAL keeps threads under mpirun; REMOTE_SPARK runs on the ranks" 3 "ok" local_under_mpirun.dml
runs "[model, history] = paramserv(...) on worker ranks (rank 0 builds the history)" 3 "history ok" history.dml
mkdir "$tmp/ckpt"
runs "checkpoint and resume on worker ranks" 3 "checkpoints resumed" checkpoint_ranks.dml -nvargs dir="$tmp/ckpt"
# The --seed golden test of the local suite (k=3 and k=2 calls): the same bits.
if (cd ../paramserv && mpi 4 self,vader determinism_cli.dml --seed 7 >"$tmp/out" 2>"$tmp/err") &&
    cmp -s "$tmp/out" ../paramserv/determinism_cli.out; then
    ok "determinism_cli.out under mpirun -np 4"
else
    diff ../paramserv/determinism_cli.out "$tmp/out" | sed -n '1,10p'
    bad "determinism_cli.out under mpirun -np 4"
fi

if mpi 3 self,vader print_upd.dml >"$tmp/out" 2>"$tmp/err" && [ "$(grep -c '^upd sees 20 rows$' "$tmp/out")" -eq 4 ] &&
    [ "$(tail -n 1 "$tmp/out")" = "done" ]; then
    ok "upd's prints on worker ranks reach rank 0's stdout"
else
    bad "upd's prints on worker ranks reach rank 0's stdout"
fi
if [ "$(grep -c '^\[paramserv\] epoch [12]/2: loss [0-9.]*, accuracy' "$tmp/err")" -eq 2 ]; then
    ok "validation lines (val runs on rank 0)"
else
    bad "validation lines (val runs on rank 0)"
fi

# Rank 0's stderr is a pipe to mpirun: progress goes as whole lines (no \r
# or escapes); DML_PROGRESS_AFTER=0 shows the first at once.
CR=$(printf '\r')
ESC=$(printf '\033')
if DML_PROGRESS_AFTER=0 mpi 3 self,vader print_upd.dml >"$tmp/out" 2>"$tmp/err" &&
    grep -q '^\[paramserv\] epoch 1/2: [0-9]*/2 batches, [0-9.]* batches/s, ETA [0-9hms?]*$' "$tmp/err" &&
    [ "$(grep -c '^\[paramserv\] epoch [12]/2: loss [0-9.]*, accuracy' "$tmp/err")" -eq 2 ] &&
    ! grep -q "$CR" "$tmp/err" && ! grep -q "$ESC" "$tmp/err"; then
    ok "progress under mpirun: plain lines on rank 0's piped stderr"
else
    bad "progress under mpirun: plain lines on rank 0's piped stderr"
fi

if mpi 3 self,vader bits.dml --stats -nvargs mode=REMOTE_MPI utype=BSP freq=BATCH scheme=DISJOINT_RANDOM k=2 avg=FALSE \
    upd=gradients out="$tmp/s" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Paramserv network bytes:.*(Open MPI, 2 worker ranks)" "$tmp/out" &&
    grep -q "^Paramserv bytes per update:	32 pulled + 32 pushed (model: 32 bytes)" "$tmp/out" &&
    grep -q "^Paramserv CPU time:		[0-9.]* secs (rank 0 [0-9.]* + worker ranks [0-9.]*, user + system)" "$tmp/out" &&
    grep -q "^  worker 2 rank 2 on .*: 21 batches" "$tmp/out"; then
    ok "--stats: bytes per update, CPU time and per-rank workers"
else
    grep -e Paramserv -e "  worker" "$tmp/out"
    bad "--stats: bytes per update, CPU time and per-rank workers"
fi

# --stats' "Rank 0 bytes per round: in N, out N" (issue 25): every byte rank
# 0 moves for the call over its model updates. k=2: under BSP a round is k
# pushes in and k pulls out, one model copy each; under ASP one of each.
# The model's size comes from its shapes (traffic.dml prints it); headers,
# heartbeats, the program and the partitions add at most 5% here.
traffic() {
    utype=$1 per=$2
    name="--stats under mpirun: Rank 0 bytes per round for $utype k=2 is $per model copies in and out"
    if mpi 3 self,vader traffic.dml --stats -nvargs utype="$utype" k=2 >"$tmp/out" 2>"$tmp/err"; then
        m=$(sed -n 's/^model bytes \([0-9]*\)$/\1/p' "$tmp/out")
        line=$(grep '^Rank 0 bytes per round: ' "$tmp/out")
        in=$(echo "$line" | sed -n 's/^Rank 0 bytes per round: in \([0-9]*\), out \([0-9]*\)$/\1/p')
        out=$(echo "$line" | sed -n 's/^Rank 0 bytes per round: in \([0-9]*\), out \([0-9]*\)$/\2/p')
        if [ -n "$m" ] && [ -n "$in" ] && [ -n "$out" ] && [ "$(grep -c '^Rank 0 bytes per round: ' "$tmp/out")" -eq 1 ] &&
            [ "$in" -ge $((per * m)) ] && [ "$in" -le $((per * m * 105 / 100)) ] &&
            [ "$out" -ge $((per * m)) ] && [ "$out" -le $((per * m * 105 / 100)) ]; then
            ok "$name"
            return
        fi
        echo "     model bytes: ${m:-?}; $line"
    fi
    bad "$name"
}
traffic BSP 2
traffic ASP 1
if "$DML" run traffic.dml --stats -nvargs utype=BSP k=2 >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Paramserv pulls/pushes:" "$tmp/out" && ! grep -q "^Rank 0 bytes per round" "$tmp/out"; then
    ok "--stats without mpirun: no Rank 0 line (local threads move no bytes)"
else
    bad "--stats without mpirun: no Rank 0 line (local threads move no bytes)"
fi

# ---- errors ---------------------------------------------------------------
# fails NAME N PATTERN SCRIPT [ARGS]: the job exits with status 1 (rank 0's,
# which every rank exits with), first stderr line matches.
fails() {
    name=$1 n=$2 pattern=$3 script=$4
    shift 4
    mpi "$n" self,vader "$script" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    first=$(sed -n '1p' "$tmp/err")
    if [ "$rc" -eq 1 ] && printf '%s\n' "$first" | grep -q -E "$pattern"; then
        ok "$name"
    else
        echo "exit status $rc"
        bad "$name"
    fi
}
fails "a worker's stop() names worker, rank, host, epoch, batch" 3 \
    '^fail_worker.dml:10:5: paramserv: worker 2 \(rank 2 on .*\) failed in epoch 2, batch 1: lib/failing.dml:41:5: upd stopped on purpose at row 16$' \
    fail_worker.dml
if grep -q "^  in gradients()" "$tmp/err"; then ok "the worker's DML stack comes along"; else bad "the worker's DML stack comes along"; fi
DML_PS_TREE=2 fails "DML_PS_TREE=2 is an error naming the variable" 3 \
    "^k_groups.dml:7:5: DML_PS_TREE='2': expected 1" k_groups.dml
# Two workers on one rank: the failing one is named with its rank.
fails "a worker's stop() with 2 workers on a rank names worker 2 on rank 1" 2 \
    '^fail_worker.dml:10:5: paramserv: worker 2 \(rank 1 on .*\) failed in epoch 2, batch 1: lib/failing.dml:41:5: upd stopped on purpose at row 16$' \
    fail_worker.dml
# An upd (or agg) calling paramserv without mode= trains on its own rank's
# threads (issue 28: it hung the job); asking for the ranks there fails
# (in both workers: whichever is heard first is named).
DML_MPI_TIMEOUT=5 runs "paramserv inside upd and agg runs on that rank's threads" 3 "nested ok 2" nested.dml
DML_MPI_TIMEOUT=5 fails "REMOTE_MPI inside upd names worker, epoch and batch" 3 \
    '^nested_remote.dml:16:5: paramserv: worker ([12]) \(rank \1 on .*\) failed in epoch 1, batch 1: nested_remote.dml:9:7: Paramserv function: mode .REMOTE_MPI. inside a running REMOTE_MPI call' \
    nested_remote.dml
# Without k=, one worker per worker rank (README: k defaults to N-1).
if mpi 4 self,vader default_k.dml --stats >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Paramserv total num workers:	3\.$" "$tmp/out" && grep -q "^  worker 3 rank 3 on " "$tmp/out" &&
    [ "$(grep -c "^  worker [0-9]* rank" "$tmp/out")" -eq 3 ]; then
    ok "k defaults to the N-1 worker ranks"
else
    grep Paramserv "$tmp/out"
    bad "k defaults to the N-1 worker ranks"
fi
# A malformed DML_MPI_TIMEOUT stops the job at start-up.
for v in 5s 0 abc nan -1 inf; do
    DML_MPI_TIMEOUT=$v fails "DML_MPI_TIMEOUT=$v is an error at start-up" 3 \
        "^dml: DML_MPI_TIMEOUT='$v' is not a positive number of seconds" default_k.dml
done

cp "$DML" "$tmp/dml-other" && printf 'x' >>"$tmp/dml-other"
$GUARD $MPIRUN -np 2 "$DML" run bits.dml : -np 1 "$tmp/dml-other" run bits.dml >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
    grep -q "^dml: rank 2 on .* runs another dml build than rank 0" "$tmp/err"; then
    ok "ranks running different dml builds refuse to start"
else
    bad "ranks running different dml builds refuse to start"
fi

# ---- out of memory on a worker rank ---------------------------------------
# DML_FAIL_ALLOC=N (base/failalloc.h) on rank 1 only: its Nth allocation
# fails. N = 1..12 fail in the start-up handshake, the receipt of the CALL
# and its decoding (one thread, so the same allocations every run); larger
# N in the program's load and in training. Every run must end, never hang
# (DML_MPI_TIMEOUT is set far beyond the guard, so only a message ends a
# call): with status 1 and a message from the rank or from rank 0 naming
# the worker, or with status 0 and the model bit-identical to local threads
# (some allocations have a fallback). Guards the bugs where a failed
# allocation was taken for success (remote_setup), where a worker rank that
# could not receive its CALL left the job waiting on it, and where a
# failure without memory for its message sent rank 0 nothing.
oom_worker() {
    set -- utype=BSP freq=BATCH scheme=DISJOINT_RANDOM k=1 avg=FALSE upd=gradients
    if ! $GUARD "$DML" run bits.dml -nvargs mode=LOCAL "$@" out="$tmp/local" >"$tmp/local.out" 2>"$tmp/err"; then
        bad "out of memory on a worker rank (local run)"
        return
    fi
    bad_n=""
    for n in 1 2 3 4 5 6 7 8 9 10 11 12 40 90 300 700 1200; do
        rm -f "$tmp/mpi.1" "$tmp/mpi.2"
        DML_MPI_TIMEOUT=100000 $GUARD $MPIRUN --mca btl self,vader -np 1 "$DML" run bits.dml -nvargs mode=REMOTE_MPI \
            "$@" out="$tmp/mpi" : -np 1 -wdir "$tmp/empty" env DML_FAIL_ALLOC=$n "$DML" run bits.dml \
            >"$tmp/mpi.out" 2>"$tmp/err"
        rc=$?
        if [ "$rc" -eq 0 ]; then
            cmp -s "$tmp/local.1" "$tmp/mpi.1" && cmp -s "$tmp/local.2" "$tmp/mpi.2" &&
                cmp -s "$tmp/local.out" "$tmp/mpi.out" && continue
        elif [ "$rc" -eq 1 ] && grep -q -E -e '^dml: rank 1 on .*: .*out of memory' \
            -e '^bits.dml:7:5: paramserv: (worker 1 \(rank 1 on .*\) .*)?out of memory' "$tmp/err"; then
            continue
        fi
        echo "     DML_FAIL_ALLOC=$n on rank 1: exit status $rc"
        sed -n '1,6p' "$tmp/err" | sed 's/^/     | /'
        bad_n="$bad_n $n"
    done
    : >"$tmp/err"
    if [ -z "$bad_n" ]; then
        ok "out of memory on a worker rank ends the job with a message (or is survived), never a hang"
    else
        bad "out of memory on a worker rank: N =$bad_n"
    fi
}
oom_worker

# rank_pid TAG RANK: pid of that rank of the job whose environment has
# DML_MPI_TEST_TAG=TAG (only this script's job has that value).
rank_pid() {
    for e in /proc/[0-9]*/environ; do
        env=$(tr '\0' '\n' 2>/dev/null <"$e") || continue
        if printf '%s\n' "$env" | grep -qx "DML_MPI_TEST_TAG=$1" &&
            printf '%s\n' "$env" | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
            e=${e#/proc/}
            echo "${e%/environ}"
            return
        fi
    done
}

# signal_rank NAME SIG PATTERN: start long.dml, signal rank 2 once training
# runs, and expect the whole job to end with a message matching PATTERN.
signal_rank() {
    name=$1 sig=$2 pattern=$3
    tag="$tmp/$sig$SIG_K"
    DML_MPI_TEST_TAG=$tag mpi 3 self,vader long.dml -nvargs k="${SIG_K:-2}" >"$tmp/out" 2>"$tmp/err" &
    job=$!
    i=0
    until grep -q "epoch 1/" "$tmp/err" 2>/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
    # On a loaded machine the scan of /proc can miss a rank that is still
    # starting: look again for up to 10 s before giving up.
    victim=$(rank_pid "$tag" 2)
    i=0
    while [ -z "$victim" ] && [ $i -lt 20 ] && kill -0 "$job" 2>/dev/null; do
        sleep 0.5
        i=$((i + 1))
        victim=$(rank_pid "$tag" 2)
    done
    if [ -z "$victim" ]; then
        kill "$job" 2>/dev/null
        wait "$job"
        bad "$name (rank 2 not found; the job's stderr ends:)"
        tail -n 5 "$tmp/err" | sed 's/^/     | /'
        : >"$tmp/err"
        return
    fi
    t0=$(date +%s)
    kill "-$sig" "$victim"
    wait "$job"
    rc=$?
    t1=$(date +%s)
    kill -CONT "$victim" 2>/dev/null; kill -KILL "$victim" 2>/dev/null
    echo "     ($name: the job ended $((t1 - t0)) s after the signal, exit status $rc)"
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -E "$pattern" "$tmp/err"; then
        ok "$name"
    else
        bad "$name"
    fi
}
signal_rank "a SIGKILLed worker rank ends the job, naming the rank" KILL \
    "process rank 2 with PID .* exited on signal 9"
DML_MPI_TIMEOUT=3 signal_rank "a stopped worker rank is found by DML_MPI_TIMEOUT" STOP \
    "paramserv: worker 2 \(rank 2 on .*\) sent nothing for 3 s \(DML_MPI_TIMEOUT\)"
# Four workers on two ranks (rank 2 runs workers 3 and 4, and sends rank 0
# the sum of the tree's right half).
SIG_K=4 signal_rank "a SIGKILLed rank of 2 workers ends the job, naming the rank" KILL \
    "process rank 2 with PID .* exited on signal 9"
SIG_K=4 DML_MPI_TIMEOUT=3 signal_rank "a stopped rank of 2 workers is found by DML_MPI_TIMEOUT" STOP \
    "paramserv: worker 3 \(rank 2 on .*\) sent nothing for 3 s \(DML_MPI_TIMEOUT\)"

# suspend NAME SECS RANKS...: stop those ranks of long.dml (DML_MPI_TIMEOUT=5)
# for SECS, continue them, and expect the job to train on, blaming no rank
# (issue 28: rank 0 judged the silence before reading the heartbeats queued
# while it was stopped). long.dml never ends: the job is killed after 8 s
# more of training, more than the timeout.
suspend() {
    name=$1 secs=$2
    shift 2
    tag="$tmp/suspend$secs"
    DML_MPI_TIMEOUT=5 DML_MPI_TEST_TAG=$tag mpi 3 self,vader long.dml >"$tmp/out" 2>"$tmp/err" &
    job=$!
    i=0
    until grep -q "epoch 1/" "$tmp/err" 2>/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
    pids=""
    for r in 0 1 2; do
        p=""
        i=0
        while [ -z "$p" ] && [ $i -lt 20 ] && kill -0 "$job" 2>/dev/null; do
            p=$(rank_pid "$tag" "$r")
            [ -n "$p" ] || sleep 0.5
            i=$((i + 1))
        done
        pids="$pids $p"
    done
    stop=""
    for r in "$@"; do stop="$stop $(echo $pids | cut -d' ' -f$((r + 1)))"; done
    if [ "$(echo $pids | wc -w)" -ne 3 ]; then
        kill "$job" 2>/dev/null
        for p in $pids; do kill -KILL "$p" 2>/dev/null; done
        wait "$job"
        bad "$name (ranks not found)"
        return
    fi
    kill -STOP $stop
    sleep "$secs"
    kill -CONT $stop
    sleep 8
    alive=no
    kill -0 "$job" 2>/dev/null && alive=yes
    kill "$job" 2>/dev/null
    for p in $pids; do kill -KILL "$p" 2>/dev/null; done
    wait "$job"
    if [ $alive = yes ] && ! grep -q "sent nothing" "$tmp/err"; then
        ok "$name"
    else
        echo "     (the job was alive 8 s after SIGCONT: $alive)"
        bad "$name"
    fi
    : >"$tmp/err"
}
suspend "every rank stopped for 10 s and continued: no rank blamed" 10 0 1 2
suspend "rank 0 stopped for 15 s and continued: no worker blamed" 15 0

# ---- servers=S: the model sharded over server ranks (issue 25) ------------
. ./shard_tests.sh

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
