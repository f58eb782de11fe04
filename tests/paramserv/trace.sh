#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# dml run --trace FILE (issue 26): paramserv's timeline as Chrome
# trace-event JSON, read back and checked: one track per worker and one for
# the server; a compute event per batch and an apply event per push, each
# with its epoch and batch, applies with version and staleness, validation
# at each epoch's end, backups under DYNAMIC BSP; two calls in one script
# both land in the file; an unwritable path fails before training and
# leaves nothing; --stats names the slowest worker and each one's waiting
# share. (Open MPI: tests/mpi/run_mpi_tests.sh.) When python3 is there,
# the file must also parse as JSON.
# Ends with "N passed, N failed".
#   DML=build/release/dml sh tests/paramserv/trace.sh

. "$(dirname "$0")/harness.sh" dmltrace
count() { grep -c -- "$1" "$2"; }

# ASP, 90 rows, k=3, batchsize 10, 3 epochs: 27 batches, 27 pushes.
if "$DML" run dispatch_bits.dml --trace "$tmp/t.json" --stats -nvargs mode=LOCAL utype=ASP freq=BATCH avg=FALSE k=3 \
    dispatch=STATIC >"$tmp/out" 2>"$tmp/err"; then
    f=$tmp/t.json
    if head -n 1 "$f" | grep -q '^{"displayTimeUnit":"ms","traceEvents":\[' && [ "$(tail -n 1 "$f")" = "]}" ] &&
        [ "$(count '"name":"thread_name"' "$f")" -eq 4 ] &&
        grep -q '"tid":0,"args":{"name":"server"}' "$f" && grep -q '"tid":3,"args":{"name":"worker 3"}' "$f" &&
        [ "$(count '"name":"compute","cat":"worker","ph":"X"' "$f")" -eq 27 ] &&
        [ "$(count '"name":"apply","cat":"server","ph":"X"' "$f")" -eq 27 ] &&
        [ "$(count '"name":"wait for model"' "$f")" -eq 27 ] &&
        [ "$(grep '"name":"compute"' "$f" | grep -c '"args":{"epoch":[123],"batch":[1-3]}}')" -eq 27 ] &&
        [ "$(grep '"name":"apply"' "$f" | grep -c '"worker":[123],"version":[0-9]*,"staleness":[0-9]*}}')" -eq 27 ] &&
        grep '"name":"apply"' "$f" | grep -q '"version":27,'; then
        ok "--trace: tracks, 27 computes and 27 applies with epoch, batch, version, staleness"
    else
        sed -n '1,6p' "$f"
        bad "--trace: the events of an ASP run"
    fi
    if command -v python3 >/dev/null 2>&1; then
        if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['traceEvents']) > 27" "$f"; then
            ok "--trace: the file is JSON"
        else
            bad "--trace: the file is JSON"
        fi
    fi
    if grep -q "^Paramserv slowest worker:	worker [123] by compute time ([0-9.]* s; the fastest, worker [123]: [0-9.]* s)." \
        "$tmp/out" && grep -q "^Paramserv time spent waiting:	worker 1 [0-9]*%, worker 2 [0-9]*%, worker 3 [0-9]*% (of the call's time, waiting for the model).$" "$tmp/out"; then
        ok "--stats: the slowest worker and each worker's waiting share"
    else
        grep "^Paramserv" "$tmp/out"
        bad "--stats: the slowest worker and each worker's waiting share"
    fi
else
    bad "--trace: an ASP run"
fi

# DYNAMIC BSP with a slowed worker: backups show on the server's track;
# validation and two calls: history.dml-like script of our own.
cat >"$tmp/two.dml" <<'DML'
source("lib/linreg.dml") as lin
[X, y] = lin::make_data(60, 2)
for (c in 1:2) {
  M = paramserv(model=lin::init_model(), features=X, labels=y, upd="lin::gradients", agg="lin::aggregation",
                val="lin::validate", val_features=X, val_labels=y, epochs=2, batchsize=10, k=2, utype="BSP",
                freq="BATCH", dispatch="DYNAMIC", hyperparams=list(lr=0.05), seed=1, verbose=FALSE)
}
print("done")
DML
cp "$tmp/two.dml" ./.trace_tmp.dml || exit 2
trap 'rm -rf "$tmp" ./.trace_tmp.dml' EXIT
if DML_PS_SLOW=2:20 "$DML" run .trace_tmp.dml --trace "$tmp/two.json" --stats >"$tmp/out" 2>"$tmp/err"; then
    f=$tmp/two.json
    if [ "$(count '"name":"process_name"' "$f")" -eq 2 ] && grep -q '"pid":2,"args":{"name":"paramserv call 2 (BSP, DYNAMIC, threads)"}' "$f" &&
        [ "$(count '"name":"validation"' "$f")" -eq 4 ] &&
        [ "$(grep '"name":"validation"' "$f" | grep -c '"args":{"epoch":[12],"batch":0,"version":[0-9]*}}')" -eq 4 ]; then
        ok "--trace: two calls in one file, validation at each epoch's end"
    else
        grep -e process_name -e validation "$f" | sed -n '1,6p'
        bad "--trace: two calls in one file, validation at each epoch's end"
    fi
    # Worker 2 takes 20 times as long, so worker 1 may run backups of its
    # tasks: as many backup events as --stats counts backup runs.
    stats=$(sed -n 's/^Paramserv dispatch:.*; \([0-9]*\) backup runs.*/\1/p' "$tmp/out" | awk '{s += $1} END {print s + 0}')
    if [ "$(count '"name":"backup","cat":"server","ph":"i"' "$f")" -eq "$stats" ]; then
        ok "--trace: DYNAMIC BSP's backups are on the server's track ($stats)"
    else
        bad "--trace: DYNAMIC BSP's backups are on the server's track ($stats in --stats)"
    fi
else
    bad "--trace: two DYNAMIC BSP calls"
fi

# An unwritable path: refused before training, nothing left.
mkdir "$tmp/adir"
for p in "$tmp/adir" "$tmp/no/such/t.json"; do
    "$DML" run dispatch_bits.dml --trace "$p" -nvargs mode=LOCAL utype=ASP freq=BATCH avg=FALSE k=2 dispatch=STATIC \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && head -n 1 "$tmp/err" | grep -q "paramserv: cannot write --trace '$p': " &&
        [ -z "$(ls "$tmp/adir")" ]; then
        ok "--trace '$p' is refused before training"
    else
        echo "  exit status $rc"
        bad "--trace '$p' is refused before training"
    fi
done
"$DML" run dispatch_bits.dml --trace >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 0 ] && grep -q -- "--trace needs a file name" "$tmp/err"; then
    ok "--trace without a file name"
else
    bad "--trace without a file name"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
