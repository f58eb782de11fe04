# SPDX-License-Identifier: Apache-2.0
# servers=S (issue 25): sourced by run_mpi_tests.sh (its mpi, ok, bad,
# fails, runs and rank_pid, its $tmp). Server ranks are 1..S-1, worker ranks
# from S on. Checks: seeded BSP (and modelAvg) with S = 2, 3 servers gives
# the bits of S = 1, over shared memory and TCP; with S = 2, several
# workers per rank and the reduction tree on and off give the bits of
# local threads; ASP and SSP train on shards, with groups too; SBP
# trains and record/replay repeats a run (the servers follow rank 0's
# order); DYNAMIC is refused;
# validation, checkpoints and resume give what S = 1 gives; an agg that
# mixes cells is refused; too few ranks; k's default; --stats shows
# each server rank's bytes per round; a worker's or agg's error, a killed
# server rank, a killed worker rank and a stopped server rank end the job
# naming them.

# shardbits NAME K BTL UTYPE FREQ AVG AGG S...: S=1 and each S give the same bits.
shardbits() {
    # (mpi sets n, btl and script: other names here)
    name=$1 k=$2 link=$3 utype=$4 freq=$5 avg=$6 agg=$7
    shift 7
    servers="$*"
    args="k=$k utype=$utype freq=$freq avg=$avg agg=$agg"
    # shellcheck disable=SC2086
    if ! mpi $((k + 1)) "$link" shard_bits.dml -nvargs $args servers=1 out="$tmp/s1" >"$tmp/s1.out" 2>"$tmp/err"; then
        bad "$name (servers=1)"
        return
    fi
    for s in $servers; do
        # shellcheck disable=SC2086
        if ! mpi $((k + s)) "$link" shard_bits.dml -nvargs $args servers="$s" out="$tmp/s$s" >"$tmp/s$s.out" \
            2>"$tmp/err"; then
            bad "$name (servers=$s)"
            return
        fi
        for i in 1 2 3 4 5 6; do
            if ! cmp -s "$tmp/s1.$i" "$tmp/s$s.$i"; then
                echo "     servers=1: $(cat "$tmp/s1.out")"
                echo "     servers=$s: $(cat "$tmp/s$s.out")"
                bad "$name: entry $i differs with servers=$s"
                return
            fi
        done
    done
    if cmp -s "$tmp/s1.out" "$tmp/s$s.out"; then ok "$name"; else bad "$name: output differs"; fi
}
shardbits "servers=2,3: seeded BSP with momentum buffers, the bits of servers=1" 2 self,vader BSP BATCH FALSE \
    momentum 2 3
shardbits "servers=2 over TCP: seeded BSP, Adam, k=3, the bits of servers=1" 3 self,tcp BSP NBATCHES FALSE with_adam 2
shardbits "servers=2: seeded BSP with modelAvg, the bits of servers=1" 2 self,vader BSP EPOCH TRUE nesterov 2

# Worker groups and the reduction tree with servers=2 (tp_mpi_tree.h,
# tp_mpi_shard.c): sgbits K "G..." BTL FREQ AVG AGG: seeded BSP with K
# local threads (servers= changes nothing there) against K workers on G
# worker ranks (ranks 2..G+1; K/G workers a rank, as even as the tree
# allows) for each G, tree on and (DML_PS_TREE=0) off: the same bits.
# The tree's two root halves reach the servers cut into their ranges;
# without it every worker's push is cut. servers=1 is gbits' part.
sgbits() {
    k=$1 gs=$2 link=$3
    args="k=$k utype=BSP freq=$4 avg=$5 agg=$6"
    name="servers=2 with groups: BSP k=$k $4 avg=$5 $6 on G = $gs worker ranks ($link), tree on and off = local threads"
    # shellcheck disable=SC2086
    if ! $GUARD "$DML" run shard_bits.dml -nvargs $args servers=1 out="$tmp/gl" >"$tmp/gl.out" 2>"$tmp/err"; then
        bad "$name (local run)"
        return
    fi
    for g in $gs; do
        for tree in 1 0; do
            rm -f "$tmp"/gm.*
            # shellcheck disable=SC2086
            if ! DML_PS_TREE=$tree mpi $((g + 2)) "$link" shard_bits.dml -nvargs $args servers=2 out="$tmp/gm" \
                >"$tmp/gm.out" 2>"$tmp/err"; then
                bad "$name (-np $((g + 2)), DML_PS_TREE=$tree)"
                return
            fi
            for i in 1 2 3 4 5 6; do
                if ! cmp -s "$tmp/gl.$i" "$tmp/gm.$i" || ! cmp -s "$tmp/gl.out" "$tmp/gm.out"; then
                    echo "     local: $(cat "$tmp/gl.out")"
                    echo "     mpi:   $(cat "$tmp/gm.out")"
                    bad "$name: -np $((g + 2)), DML_PS_TREE=$tree differs"
                    return
                fi
            done
        done
    done
    ok "$name"
}
sgbits 2 "2 1" self,vader BATCH FALSE momentum
sgbits 4 "4 2 1" self,vader BATCH FALSE momentum
sgbits 8 "4 2" self,vader BATCH FALSE with_adam
sgbits 6 "3 2" self,tcp NBATCHES FALSE momentum
sgbits 5 "3" self,vader EPOCH TRUE nesterov

runs "servers=2: ASP and SSP train on shards (k=2)" 4 "3 combinations trained" shard_train.dml \
    -nvargs servers=2 k=2
runs "servers=2: ASP and SSP train with 4 workers on 2 worker ranks" 4 "3 combinations trained" shard_train.dml \
    -nvargs servers=2 k=4 lr=0.1
RUNS_BTL=self,tcp runs "servers=2 over TCP: ASP and SSP train with 4 workers on 1 worker rank" 3 \
    "3 combinations trained" shard_train.dml -nvargs servers=2 k=4 lr=0.1
RUNS_BTL=self,tcp runs "servers=3 over TCP: ASP and SSP train on shards (k=2)" 5 "3 combinations trained" \
    shard_train.dml -nvargs servers=3 k=2

fails "servers=2 with an agg that mixes cells is refused, naming agg" 4 \
    "^shard_mixing.dml:7:5: paramserv: servers=2 needs an agg that works cell by cell, but agg '../paramserv/lib/shard_aggs.dml::counter' cannot be shown to: as.scalar\(\) reads model cells as a scalar" \
    shard_mixing.dml
fails "servers=2 on 2 ranks names the ranks it needs" 2 \
    "^shard_too_many.dml:6:5: paramserv: servers=2 needs mpirun -np 3 at least \\(rank 0, 1 more server rank, then the worker ranks\\), but this job has 2 ranks" \
    shard_too_many.dml

# DYNAMIC is refused, naming the combination and why.
fails "servers=2 with dispatch DYNAMIC is refused, saying why" 4 \
    "^shard_refused.dml:6:5: paramserv: servers=2 with dispatch DYNAMIC is not supported: rank 0 hands out the tasks" \
    shard_refused.dml

# SBP, record= and replay=: the server ranks follow rank 0's order of the
# pushes (MM_SHARD_ORDER), so SBP trains and a recorded ASP or SBP run
# replays to its bits.
mkdir -p "$tmp/rec"
runs "servers=2: SBP trains, recorded ASP and SBP runs replay to their bits (k=2)" 4 "ordered ok" \
    shard_ordered.dml -nvargs servers=2 k=2 dir="$tmp/rec"
RUNS_BTL=self,tcp runs "servers=2 over TCP, 4 workers on 2 worker ranks: SBP trains, records replay" 4 \
    "ordered ok" shard_ordered.dml -nvargs servers=2 k=4 dir="$tmp/rec"
RUNS_BTL=self,tcp runs "servers=3 over TCP: SBP trains, records replay (k=3)" 5 "ordered ok" \
    shard_ordered.dml -nvargs servers=3 k=3 dir="$tmp/rec"

# Without k=, the worker ranks left after the server ranks; --stats gives a
# line per server rank (rank 0's is the transport's). The two server ranks
# share this host: a BSP update takes half of its 4 threads on each.
if mpi 5 self,vader shard_bits.dml --stats --threads 4 -nvargs servers=2 k=3 utype=BSP freq=BATCH avg=FALSE \
    agg=momentum out="$tmp/st" >"$tmp/out" 2>"$tmp/err" &&
    grep -q "^Rank 0 bytes per round: in [0-9][0-9]*, out [0-9][0-9]*$" "$tmp/out" &&
    grep -q "^Rank 1 bytes per round: in [0-9][0-9]*, out [0-9][0-9]*$" "$tmp/out" &&
    ! grep -q "^Rank 2 bytes per round" "$tmp/out" && grep -q "^  worker 3 rank 4 on " "$tmp/out" &&
    grep -q "kernel threads per update: 2\.$" "$tmp/out"; then
    ok "servers=2 --stats: bytes per round of ranks 0 and 1; workers on ranks 2..4; 2 of 4 threads an update"
else
    grep -e "^Rank" -e "^  worker" -e "threads per update" "$tmp/out"
    bad "servers=2 --stats: bytes per round of ranks 0 and 1; workers on ranks 2..4; 2 of 4 threads an update"
fi
if mpi 3 self,vader shard_bits.dml --stats --threads 4 -nvargs servers=1 k=2 utype=BSP freq=BATCH avg=FALSE \
    agg=momentum out="$tmp/st1" >"$tmp/out" 2>"$tmp/err" && grep -q "kernel threads per update: 4\.$" "$tmp/out"; then
    ok "servers=1 --stats: a BSP update takes the host's 4 threads"
else
    grep -e "threads per update" "$tmp/out"
    bad "servers=1 --stats: a BSP update takes the host's 4 threads"
fi

# shard_signal NAME SIG PATTERN [RANK [K]]: long_shard.dml on 4 ranks (k=K,
# default 2); once it trains, signal rank RANK (default 1, a server) and
# expect the job to end with PATTERN in stderr.
shard_signal() {
    name=$1 sig=$2 pattern=$3 vrank=${4:-1} kk=${5:-2}
    tag="$tmp/shard$sig$vrank"
    DML_MPI_TEST_TAG=$tag mpi 4 self,vader long_shard.dml -nvargs k="$kk" >"$tmp/out" 2>"$tmp/err" &
    job=$!
    i=0
    until grep -q "epoch 1/" "$tmp/err" 2>/dev/null || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done
    victim=$(rank_pid "$tag" "$vrank")
    i=0
    while [ -z "$victim" ] && [ $i -lt 20 ] && kill -0 "$job" 2>/dev/null; do
        sleep 0.5
        i=$((i + 1))
        victim=$(rank_pid "$tag" "$vrank")
    done
    if [ -z "$victim" ]; then
        kill "$job" 2>/dev/null
        wait "$job"
        bad "$name (rank $vrank not found)"
        return
    fi
    kill "-$sig" "$victim"
    wait "$job"
    rc=$?
    kill -CONT "$victim" 2>/dev/null; kill -KILL "$victim" 2>/dev/null
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q -E "$pattern" "$tmp/err"; then
        ok "$name"
    else
        echo "     exit status $rc"
        sed -n '1,8p' "$tmp/err"
        bad "$name"
    fi
    : >"$tmp/err"
}
shard_signal "a SIGKILLed server rank ends the job, naming the rank" KILL \
    "process rank 1 with PID .* exited on signal 9"
DML_MPI_TIMEOUT=3 shard_signal "a stopped server rank is found by DML_MPI_TIMEOUT" STOP \
    "paramserv: server shard 2 \(rank 1 on .*\) sent nothing for 3 s \(DML_MPI_TIMEOUT\)"
shard_signal "servers=2, k=4 on 2 worker ranks (the tree): a SIGKILLed worker rank ends the job, naming it" KILL \
    "process rank 3 with PID .* exited on signal 9" 3 4

# A worker's or agg's stop() ends the call on every rank, servers included.
fails "servers=2: upd's stop() names the worker and ends the job" 4 \
    "^shard_fail.dml:21:5: paramserv: worker [12] \(rank [23] on .*\) failed in epoch 1, batch 1: .*upd stopped on purpose" \
    shard_fail.dml -nvargs what=upd
fails "servers=2, 2 workers on a rank: upd's stop() names the worker and its rank" 3 \
    "^shard_fail.dml:21:5: paramserv: worker [12] \(rank 2 on .*\) failed in epoch 1, batch 1: .*upd stopped on purpose" \
    shard_fail.dml -nvargs what=upd
fails "servers=2: agg's stop() on the servers ends the job" 4 \
    "^shard_fail.dml:21:5: paramserv: (server shard 2 \(rank 1 on .*\): )?aggregation failed .*agg stopped on purpose" \
    shard_fail.dml -nvargs what=agg

# Validation and checkpoints: rank 0 joins the shards at each epoch's end.
shardval() {
    # (mpi sets n, btl and script: other names here)
    name=$1 ranks1=$2 ranks=$3 link=$4 s=$5
    mkdir -p "$tmp/v1" "$tmp/v$s"
    rm -f "$tmp/v1"/* "$tmp/v$s"/*
    if mpi "$ranks1" "$link" shard_val.dml -nvargs servers=1 dir="$tmp/v1" >"$tmp/v1.out" 2>"$tmp/err" &&
        mpi "$ranks" "$link" shard_val.dml -nvargs servers="$s" dir="$tmp/v$s" >"$tmp/v$s.out" 2>"$tmp/err" &&
        grep -q "^resumed = uninterrupted: TRUE$" "$tmp/v$s.out" && cmp -s "$tmp/v1.out" "$tmp/v$s.out" &&
        cmp -s "$tmp/v1/a.ckpt" "$tmp/v$s/a.ckpt"; then
        ok "$name"
    else
        cat "$tmp/v1.out" "$tmp/v$s.out" 2>/dev/null | sed 's/^/     /'
        bad "$name"
    fi
}
shardval "servers=2: validation, checkpoint and resume as with servers=1" 3 4 self,vader 2
shardval "servers=3 over TCP: validation, checkpoint and resume as with servers=1" 3 5 self,tcp 3
