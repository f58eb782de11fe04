#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A run killed while it trains, or while it writes its record (record=) or
# its timeline (--trace), leaves no half-written file at either path (issue
# 26): each is absent or complete (a record with its header and checksum
# line, a trace that parses as JSON), whatever the signal (SIGKILL, SIGTERM,
# SIGINT) and whenever it lands. kill_outputs.dml makes several calls in a
# row, each writing both files again, and the kills land at spread-out
# moments, before the first write and between and during later ones. A
# temporary may outlive SIGKILL or SIGTERM (nothing can remove it then), but
# never under the final name, and the next run removes it; Ctrl-C leaves
# none. Ends with "N passed, N failed".
#   DML=build/release/dml sh tests/paramserv/kill_outputs.sh

. "$(dirname "$0")/harness.sh" dmlkill

PY=""
command -v python3 >/dev/null 2>&1 && PY=python3
rec="$tmp/k.psrec"
tr="$tmp/k.json"

# complete: both paths absent or whole. Prints what is wrong.
complete() {
    if [ -e "$rec" ]; then
        [ "$(head -n 1 "$rec")" = "DMLPSREC2" ] || { echo "the record has no header"; return 1; }
        tail -n 1 "$rec" | grep -q -E '^end [0-9a-f]{16}$' || { echo "the record has no end line"; return 1; }
    fi
    if [ -e "$tr" ]; then
        if [ -n "$PY" ]; then
            "$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tr" 2>/dev/null ||
                { echo "the trace is not JSON"; return 1; }
        fi
        [ "$(tail -n 1 "$tr")" = "]}" ] || { echo "the trace does not end"; return 1; }
    fi
    return 0
}

# kills SIG DELAYS...: one run per delay (seconds after the run started),
# killed then with SIG; after each, complete() must hold.
kills() {
    sig=$1
    shift
    n=0 wrote=0 left=0
    for d in "$@"; do
        rm -f "$rec" "$tr" "$tmp"/k.*.tmp*
        "$DML" run --trace "$tr" kill_outputs.dml -nvargs rec="$rec" calls=40 >"$tmp/out" 2>"$tmp/err" &
        pid=$!
        sleep "$d"
        kill "-$sig" "$pid" 2>/dev/null
        { wait "$pid"; } 2>/dev/null
        rc=$?
        if [ "$rc" -eq 0 ]; then
            # It finished first, or the signal came before dml set its
            # handler (a background job starts with SIGINT ignored).
            echo "     (SIG$sig at ${d} s did not stop the run: it ended normally)"
        fi
        if ! why=$(complete); then
            bad "SIG$sig at ${d} s: $why"
            return
        fi
        [ -e "$rec" ] && wrote=$((wrote + 1))
        for f in "$tmp"/k.psrec.tmp* "$tmp"/k.json.tmp*; do [ -e "$f" ] && left=$((left + 1)); done
        n=$((n + 1))
    done
    if [ "$sig" = INT ] && [ "$left" -gt 0 ]; then
        bad "SIGINT: $left temporaries left behind"
        return
    fi
    ok "SIG$sig at $n moments: record and trace absent or complete ($wrote of $n runs had written them; $left temporaries left)"
}
DELAYS="0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.5 0.6"
kills KILL $DELAYS
kills TERM $DELAYS
kills INT $DELAYS

# A temporary of a killed writer (its process gone) under either name: the
# next run removes it and writes both files whole.
rm -f "$rec" "$tr"
sh -c 'exit 0' &
gone=$!
wait $gone
printf 'DMLPSREC2\nsig half' >"$rec.tmp$gone.AbCdEf"
printf '{"displayTimeUnit":"ms","traceEvents":[\n{"na' >"$tr.tmp$gone.AbCdEf"
if "$DML" run --trace "$tr" kill_outputs.dml -nvargs rec="$rec" calls=1 >"$tmp/out" 2>"$tmp/err" &&
    [ -e "$rec" ] && [ -e "$tr" ] && why=$(complete) && ! ls "$tmp"/k.*.tmp* >/dev/null 2>&1; then
    ok "the next run removes a killed writer's temporaries and writes both files whole"
else
    ls "$tmp"
    bad "the next run removes a killed writer's temporaries and writes both files whole ${why:-}"
fi
# The record left by a completed run replays.
if "$DML" run record_call.dml -nvargs mode=LOCAL utype=ASP dispatch=STATIC k=2 rec="$tmp/r.psrec" >"$tmp/a" 2>"$tmp/err" &&
    "$DML" run record_call.dml -nvargs mode=LOCAL utype=ASP dispatch=STATIC k=2 rep="$tmp/r.psrec" >"$tmp/b" 2>"$tmp/err" &&
    cmp -s "$tmp/a" "$tmp/b"; then
    ok "a record written whole replays"
else
    bad "a record written whole replays"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
