#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# dispatch="DYNAMIC" and DML_PS_SLOW on threads (issue 26; the Open MPI
# cases are in tests/mpi/run_mpi_tests.sh): a seeded DYNAMIC BSP or SBP run
# gives the same model bits with and without a slowed worker (which changes
# who runs which batch, and which backup wins), for every freq and with
# modelAvg; an ASP run processes every batch exactly once per epoch, however
# the slow worker shifts the work; DML_PS_SLOW that is malformed or names a
# worker beyond k is an error naming the variable, before training.
# Ends with "N passed, N failed".
#   DML=build/release/dml sh tests/paramserv/dispatch.sh

. "$(dirname "$0")/harness.sh" dmldisp

run() {
    "$DML" run dispatch_bits.dml -nvargs mode=LOCAL "$@" 2>"$tmp/err"
}

# ---- bits with and without a slowed worker -------------------------------
for utype in BSP SBP; do
    for freq in BATCH EPOCH NBATCHES; do
        for avg in FALSE TRUE; do
            name="DYNAMIC $utype freq=$freq modelAvg=$avg k=3: the same bits with DML_PS_SLOW=1:4, 3:4 and without"
            set -- utype=$utype freq=$freq avg=$avg k=3 dispatch=DYNAMIC
            a=$(run "$@") && b=$(DML_PS_SLOW=1:4 run "$@") && c=$(DML_PS_SLOW=3:4 run "$@") || {
                bad "$name (a run failed)"
                continue
            }
            if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" = "$c" ]; then
                ok "$name"
            else
                printf '  %s\n  %s\n  %s\n' "$a" "$b" "$c"
                bad "$name"
            fi
        done
    done
done
# STATIC keeps its own bits (the default), and a slowed worker does not
# change them either.
a=$(run utype=BSP freq=BATCH avg=FALSE k=2 dispatch=STATIC)
b=$(DML_PS_SLOW=2:3 run utype=BSP freq=BATCH avg=FALSE k=2 dispatch=STATIC)
if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "STATIC BSP: the same bits with DML_PS_SLOW=2:3"; else bad "STATIC BSP with DML_PS_SLOW"; fi

# ---- ASP: every batch exactly once per epoch ------------------------------
# 90 rows, k=3, batchsize 10: 9 batches an epoch, 3 epochs: 27 in all,
# whoever runs them.
for slow in "" 1:5 2:5; do
    if DML_PS_SLOW=$slow "$DML" run dispatch_bits.dml --stats -nvargs mode=LOCAL utype=ASP freq=BATCH avg=FALSE k=3 \
        dispatch=DYNAMIC >"$tmp/out" 2>"$tmp/err"; then
        total=$(sed -n 's/^  worker [0-9]*: \([0-9]*\) batches.*/\1/p' "$tmp/out" | awk '{s += $1} END {print s}')
        if [ "$total" = 27 ] && grep -q "^Paramserv dispatch:		DYNAMIC, 9 tasks per epoch." "$tmp/out"; then
            ok "DYNAMIC ASP DML_PS_SLOW=$slow: 27 batches run, each once"
        else
            grep -e "^  worker" -e "dispatch" "$tmp/out"
            bad "DYNAMIC ASP DML_PS_SLOW=$slow: $total batches run, expected 27"
        fi
    else
        bad "DYNAMIC ASP DML_PS_SLOW=$slow (run failed)"
    fi
done

# ---- checkpoint and resume under DYNAMIC ------------------------------------
# 2 epochs with a checkpoint, then 4 resuming from it, against 4 straight:
# BSP gives the same bits; SSP with staleness=0 and ASP resume (and end:
# the rounds of a resumed run are counted from its first epoch).
cat >"$tmp/ck.dml" <<'DML'
source("lib/linreg.dml") as lin
[X, y] = lin::make_data(60, 21)
p = $dir + "/c.ckpt"
for (u in 1:3) {
  ut = as.scalar(list("BSP", "SSP", "ASP")[u])
  A = paramserv(model=lin::init_model(), features=X, labels=y, upd="lin::gradients", agg="lin::aggregation",
                epochs=2, batchsize=15, k=2, utype=ut, freq="BATCH", hyperparams=list(lr=0.1), seed=5,
                checkpointing="EPOCH", checkpoint_path=p + ut, dispatch="DYNAMIC", verbose=FALSE, staleness=0)
  B = paramserv(model=lin::init_model(), features=X, labels=y, upd="lin::gradients", agg="lin::aggregation",
                epochs=4, batchsize=15, k=2, utype=ut, freq="BATCH", hyperparams=list(lr=0.1), seed=5,
                checkpointing="EPOCH", checkpoint_path=p + ut, dispatch="DYNAMIC", verbose=FALSE, staleness=0)
  C = paramserv(model=lin::init_model(), features=X, labels=y, upd="lin::gradients", agg="lin::aggregation",
                epochs=4, batchsize=15, k=2, utype=ut, freq="BATCH", hyperparams=list(lr=0.1), seed=5,
                dispatch="DYNAMIC", verbose=FALSE, staleness=0)
  if (ut == "BSP" & lin::model_diff(B, C) != 0) {
    stop("DYNAMIC BSP resumed from a checkpoint differs from a straight run")
  }
}
print("resumed")
DML
cp "$tmp/ck.dml" ./.dispatch_ck_tmp.dml || exit 2
trap 'rm -rf "$tmp" ./.dispatch_ck_tmp.dml' EXIT
mkdir "$tmp/ck"
if [ "$("$DML" run .dispatch_ck_tmp.dml -nvargs dir="$tmp/ck" 2>"$tmp/err")" = resumed ]; then
    ok "DYNAMIC: BSP resumed from a checkpoint = straight; SSP (staleness 0) and ASP resume and end"
else
    bad "DYNAMIC: checkpoint and resume"
fi
rm -f ./.dispatch_ck_tmp.dml

# ---- bad DML_PS_SLOW -------------------------------------------------------
slow_err() {
    value=$1 pattern=$2
    DML_PS_SLOW=$value "$DML" run dispatch_bits.dml -nvargs mode=LOCAL utype=BSP freq=BATCH avg=FALSE k=2 \
        dispatch=DYNAMIC >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 1 ] && head -n 1 "$tmp/err" | grep -q -E "$pattern" && ! grep -q "^W " "$tmp/out"; then
        ok "DML_PS_SLOW='$value' is refused before training"
    else
        echo "  exit status $rc"
        bad "DML_PS_SLOW='$value' is refused before training"
    fi
}
for v in x 2 2: :3 2:x 2:0.5 0:2 -1:2 2:3x " 2:3" 2:inf; do
    slow_err "$v" "^dispatch_bits.dml:[0-9]+:[0-9]+: DML_PS_SLOW='$v': expected W:F, a worker number W \(1 to k\) and a factor F >= 1"
done
slow_err 3:2 "^dispatch_bits.dml:[0-9]+:[0-9]+: DML_PS_SLOW='3:2' names worker 3, but this paramserv call has only k=2 workers"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
