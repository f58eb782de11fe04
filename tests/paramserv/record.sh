#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Record and replay of asynchronous paramserv runs on threads (issue 26; the
# Open MPI cases are in tests/mpi/run_mpi_tests.sh): ten seeded runs of one
# ASP call (and of SSP, STATIC and DYNAMIC) give at least two different
# models, and the replay of each gives back exactly that run's model; a
# record that does not fit the call (other data, k, epochs, utype), or is
# missing, damaged or truncated, is refused before training naming what is
# wrong; record= and replay= together, record= with BSP, an unwritable
# record path: refused before training; a failed run leaves no record.
# Ends with "N passed, N failed".
#   DML=build/release/dml sh tests/paramserv/record.sh

. "$(dirname "$0")/harness.sh" dmlrec

call() { "$DML" run record_call.dml -nvargs mode=LOCAL "$@" 2>"$tmp/err"; }

# ten runs, each recorded; then each replayed
tenfold() {
    utype=$1 dispatch=$2 k=$3
    name="$utype $dispatch k=$k: 10 recorded runs"
    : >"$tmp/models"
    i=1
    while [ $i -le 10 ]; do
        m=$(call utype=$utype dispatch=$dispatch k=$k rec="$tmp/r$i.psrec") || { bad "$name (run $i failed)"; return; }
        echo "$m" >"$tmp/m$i"
        echo "$m" | tr '\n' ' ' >>"$tmp/models"
        echo >>"$tmp/models"
        i=$((i + 1))
    done
    distinct=$(sort -u "$tmp/models" | wc -l)
    same=0
    i=1
    while [ $i -le 10 ]; do
        m=$(call utype=$utype dispatch=$dispatch k=$k rep="$tmp/r$i.psrec") || { bad "$name (replay $i failed)"; return; }
        [ "$m" = "$(cat "$tmp/m$i")" ] && same=$((same + 1))
        i=$((i + 1))
    done
    if [ "$same" -eq 10 ]; then
        ok "$name: each replay gives back its run's model ($distinct different models)"
    else
        bad "$name: only $same of 10 replays give back their run's model"
    fi
    # At least two different models: the order varies, so the check bites.
    if [ "$distinct" -ge 2 ]; then
        ok "$name: at least two different models ($distinct)"
    else
        bad "$name: all 10 runs gave the same model"
    fi
}
tenfold ASP STATIC 4
tenfold ASP DYNAMIC 4
tenfold SSP STATIC 4
tenfold SSP DYNAMIC 3
tenfold SBP STATIC 4

# ---- records that do not fit, and bad arguments -----------------------------
call utype=ASP dispatch=STATIC k=4 rec="$tmp/good.psrec" >/dev/null || bad "recording the reference run"
refused() {
    name=$1 pattern=$2
    shift 2
    out=$(call "$@")
    rc=$?
    if [ $rc -ne 0 ] && [ -z "$out" ] && head -n 1 "$tmp/err" | grep -q -E "$pattern"; then
        ok "$name"
    else
        echo "  exit status $rc, stdout '$out'"
        bad "$name"
    fi
}
E='^record_call.dml:[0-9]+:[0-9]+: paramserv: '
refused "replay with another k names k" "${E}replay='.*good.psrec' was recorded by another paramserv call: it has k=4, this call has k=3" \
    utype=ASP dispatch=STATIC k=3 rep="$tmp/good.psrec"
refused "replay on other data names the features" "${E}replay='.*' was recorded by another paramserv call on other data: features=200x3:.* there, features=150x3:.* here" \
    utype=ASP dispatch=STATIC k=4 n=150 rep="$tmp/good.psrec"
refused "replay with other epochs names epochs" "${E}replay='.*' was recorded by another paramserv call: it has epochs=3, this call has epochs=2" \
    utype=ASP dispatch=STATIC k=4 epochs=2 rep="$tmp/good.psrec"
refused "replay with another utype names utype" "${E}replay='.*' was recorded by another paramserv call: it has utype=ASP, this call has utype=SSP" \
    utype=SSP dispatch=STATIC k=4 rep="$tmp/good.psrec"
refused "replay with another dispatch names dispatch" "${E}replay='.*' was recorded by another paramserv call: it has dispatch=STATIC, this call has dispatch=DYNAMIC" \
    utype=ASP dispatch=DYNAMIC k=4 rep="$tmp/good.psrec"
refused "a missing replay file" "${E}cannot read replay='.*nothere.psrec': No such file or directory" \
    utype=ASP dispatch=STATIC k=4 rep="$tmp/nothere.psrec"
head -c 300 "$tmp/good.psrec" >"$tmp/trunc.psrec"
refused "a truncated record" "${E}replay='.*' cannot be used: it is truncated \(no end line\)" \
    utype=ASP dispatch=STATIC k=4 rep="$tmp/trunc.psrec"
sed 's/^2 1 /3 1 /' "$tmp/good.psrec" >"$tmp/damaged.psrec"
refused "a damaged record (a push changed)" "${E}replay='.*' cannot be used: it is damaged \(its checksum does not match\)" \
    utype=ASP dispatch=STATIC k=4 rep="$tmp/damaged.psrec"
sed '1s/^DMLPSREC2$/DMLPSREC1/' "$tmp/good.psrec" >"$tmp/old.psrec"
refused "a record of an older dml" "${E}replay='.*' cannot be used: it was recorded by an older dml, which fingerprinted the data another way" \
    utype=ASP dispatch=STATIC k=4 rep="$tmp/old.psrec"
printf 'hello\n' >"$tmp/other.psrec"
refused "a file that is not a record" "${E}replay='.*' cannot be used: it is not a paramserv record" \
    utype=ASP dispatch=STATIC k=4 rep="$tmp/other.psrec"
refused "record= with BSP" "${E}record= is for asynchronous runs \(ASP, SSP, SBP with STATIC dispatch\); a seeded BSP run" \
    utype=BSP dispatch=STATIC k=4 rec="$tmp/bsp.psrec"
mkdir "$tmp/adir"
refused "record= naming a folder, before training" "${E}cannot write record='.*adir': Is a directory" \
    utype=ASP dispatch=STATIC k=4 rec="$tmp/adir"
refused "record= in a missing folder, before training" "${E}cannot write record='.*/no/such/dir/r.psrec': No such file or directory" \
    utype=ASP dispatch=STATIC k=4 rec="$tmp/no/such/dir/r.psrec"
# No record is left by a run that failed (here: before training).
if [ ! -e "$tmp/bsp.psrec" ] && [ -z "$(ls "$tmp" | grep -e '\.tmp')" ]; then
    ok "no record or temporary left behind by refused runs"
else
    ls "$tmp"
    bad "no record or temporary left behind by refused runs"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
