#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# paramserv's progress line (issue 15): on a terminal (a pseudo-terminal
# made by util-linux `script`), a line rewritten with \r that names the
# batches done, their rate and the ETA, cleared before each epoch line; not
# on a terminal (stderr a file), or with verbose=FALSE, plain epoch lines
# only. DML_PROGRESS_AFTER=0 shows the line from the first batch on, so no
# check depends on how fast the machine is.
# Ends with "N passed, N failed"; skips when `script` is not installed.
#   DML=build/release/dml sh tests/paramserv/progress.sh

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
cd "$(dirname "$0")" || exit 2
if ! script -qec true /dev/null >/dev/null 2>&1; then
    echo "note: util-linux script not found; progress-line tests skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlprog.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$tmp/out" ] && od -c "$tmp/out" | sed -n '1,12p'; }

cat >"$tmp/p.dml" <<'DML'
source("lib/linreg.dml") as lin
verbose = ifdef($verbose, TRUE)
utype = ifdef($utype, "BSP")
freq = ifdef($freq, "BATCH")
[X, y] = lin::make_data(600, 3)
[M, H] = paramserv(model=lin::init_model(), features=X, labels=y,
   upd="lin::gradients", agg="lin::aggregation", epochs=2, batchsize=10, k=2,
   utype=utype, freq=freq, hyperparams=list(lr=0.05), seed=4, verbose=verbose)
print("trained " + nrow(H) + " epochs")
DML
cp "$tmp/p.dml" ./.progress_tmp.dml || exit 2
trap 'rm -rf "$tmp" ./.progress_tmp.dml' EXIT

CR=$(printf '\r')
ESC=$(printf '\033')
# tty ARGS...: run on a pseudo-terminal; output (stdout and stderr) in $tmp/out.
tty() { DML_PROGRESS_AFTER=0 script -qec "\"$DML\" run .progress_tmp.dml $*" /dev/null >"$tmp/out" 2>&1 </dev/null; }

for f in BATCH EPOCH NBATCHES; do
    for u in BSP ASP; do
        name="terminal $u $f: progress line, then cleared by the epoch line"
        if tty -nvargs utype=$u freq=$f &&
            grep -q "^${CR}${ESC}\[K\[paramserv\] epoch [12]/2: [0-9]*/60 batches, [0-9.]* batches/s, ETA " "$tmp/out" &&
            grep -q "batches/s, ETA [0-9hms]*${CR}${ESC}\[K\[paramserv\] epoch [12]/2: [0-9.]* s, " "$tmp/out" &&
            [ "$(tail -n 1 "$tmp/out")" = "trained 2 epochs${CR}" ]; then
            ok "$name"
        else
            bad "$name"
        fi
    done
done

name="terminal, verbose=FALSE: no progress line"
if tty -nvargs verbose=FALSE && ! grep -q "batches/s" "$tmp/out" && ! grep -q "$ESC" "$tmp/out"; then
    ok "$name"
else
    bad "$name"
fi

name="stderr not a terminal: plain epoch lines only"
if DML_PROGRESS_AFTER=0 "$DML" run .progress_tmp.dml >"$tmp/stdout" 2>"$tmp/out" </dev/null &&
    ! grep -q "$CR" "$tmp/out" && ! grep -q "$ESC" "$tmp/out" && ! grep -q "batches/s" "$tmp/out" &&
    [ "$(grep -c '^\[paramserv\] epoch [12]/2: [0-9.]* s, 30 updates, ' "$tmp/out")" -eq 2 ]; then
    ok "$name"
else
    bad "$name"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
