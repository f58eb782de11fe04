#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# paramserv with one slowed worker, STATIC vs DYNAMIC dispatch (issue 26),
# on threads and on Open MPI ranks: k=2 workers, worker 2 slowed to a third
# of its speed (DML_PS_SLOW=2:3), ASP and BSP, bench/dml/ps_dispatch.dml
# (each batch two 256x320x320 products). Prints a Markdown section on
# stdout (bench/paramserv.sh appends it to bench/RESULTS.md); standalone:
#   sh bench/ps_dispatch.sh build/release/dml
# Each figure is the best of PS_DISPATCH_REPS runs (default 3), the
# configurations in turn so background load hits all of them alike. The
# goals (issue 26): ASP DYNAMIC slowed <= 1.73x its undisturbed time (1.15x
# the ideal 1.5x: the speeds add up to 4/3 of one worker's, for 2 workers'
# worth of work); BSP DYNAMIC slowed <= 0.75x BSP STATIC slowed.
set -eu
DML=${1:-build/release/dml}
REPS=${PS_DISPATCH_REPS:-3}
ARGS=${PS_DISPATCH_ARGS:-"d=320 bs=256 nb=12 epochs=10"}
MPIRUN="mpirun --oversubscribe --mca btl self,vader"
[ "$(id -u)" -eq 0 ] && MPIRUN="$MPIRUN --allow-run-as-root"
HAVE_MPI=no
command -v mpirun >/dev/null 2>&1 && HAVE_MPI=yes

secs() { awk '$1 == "ps_dispatch" {print $2}'; }
# one BACKEND SLOW UTYPE DISPATCH: seconds of the paramserv call
one() {
    if [ "$1" = threads ]; then
        DML_PS_SLOW=$2 "$DML" run bench/dml/ps_dispatch.dml --threads 2 -nvargs $ARGS utype=$3 dispatch=$4 | secs
    else
        DML_PS_SLOW=$2 OMPI_MCA_btl_vader_single_copy_mechanism=none $MPIRUN -np 3 "$DML" run \
            bench/dml/ps_dispatch.dml -nvargs $ARGS mode=REMOTE_MPI utype=$3 dispatch=$4 | secs
    fi
}
min() { if [ -z "$1" ]; then echo "$2"; else awk "BEGIN{print ($2 < $1) ? $2 : $1}"; fi; }
div() { if [ -n "$1" ] && [ -n "$2" ]; then awk "BEGIN{printf \"%.2f\", $1 / $2}"; else echo NA; fi; }
f2() { if [ -n "$1" ]; then awk "BEGIN{printf \"%.2f\", $1}"; else echo NA; fi; }

BACKENDS=threads
[ "$HAVE_MPI" = yes ] && BACKENDS="threads ranks"
# PS_DISPATCH_BACKENDS=ranks (or threads) measures one backend alone.
case ${PS_DISPATCH_BACKENDS:-} in
threads) BACKENDS=threads ;;
ranks) [ "$HAVE_MPI" = yes ] && BACKENDS=ranks ;;
esac
CONFIGS=""
for b in $BACKENDS; do
    for u in ASP BSP; do
        for d in STATIC DYNAMIC; do
            CONFIGS="$CONFIGS $b:-:$u:$d $b:2:3:$u:$d"
        done
    done
done
for r in $(seq 1 "$REPS"); do
    for c in $CONFIGS; do
        b=${c%%:*}
        rest=${c#*:}
        case $rest in -:*) slow=""; rest=${rest#-:} ;; *) slow=${rest%%:*}:$(echo "$rest" | cut -d: -f2); rest=$(echo "$rest" | cut -d: -f3-) ;; esac
        u=${rest%%:*}
        d=${rest#*:}
        echo "ps_dispatch: round $r $b slow=${slow:-none} $u $d" >&2
        v=$(one "$b" "$slow" "$u" "$d" || true)
        key=$(echo "$c" | tr ':-' '__')
        eval "old=\${best_$key:-}"
        [ -n "$v" ] && eval "best_$key=\$(min \"\$old\" \"\$v\")"
    done
done
get() { eval "echo \${best_$(echo "$1" | tr ':-' '__'):-}"; }

echo "## paramserv: a straggler, STATIC vs DYNAMIC dispatch (issue 26)"
echo
echo "k=2 workers, worker 2 slowed to a third of its speed (\`DML_PS_SLOW=2:3\`: it sleeps twice each"
echo "batch's compute time), bench/dml/ps_dispatch.dml ($ARGS, freq=BATCH); seconds of the"
echo "paramserv call, best of $REPS, configurations in turn. Threads: \`--threads 2\`; ranks:"
echo "\`mpirun -np 3\` over shared memory. $(nproc) cores, shared with whatever else runs."
echo
echo "| backend | utype | dispatch | undisturbed s | slowed s | slowed / undisturbed | goal |"
echo "|---|---|---|---|---|---|---|"
for b in $BACKENDS; do
    for u in ASP BSP; do
        for d in STATIC DYNAMIC; do
            a=$(get "$b:-:$u:$d")
            s=$(get "$b:2:3:$u:$d")
            goal=""
            [ "$u:$d" = ASP:DYNAMIC ] && goal="<= 1.73 (ideal 1.50)"
            echo "| $b | $u | $d | $(f2 "$a") | $(f2 "$s") | $(div "$s" "$a") | $goal |"
        done
    done
done
echo
for b in $BACKENDS; do
    echo "BSP on $b, slowed: DYNAMIC / STATIC = **$(div "$(get "$b:2:3:BSP:DYNAMIC")" "$(get "$b:2:3:BSP:STATIC")")** (goal <= 0.75)."
    echo "ASP on $b, slowed: DYNAMIC / STATIC = $(div "$(get "$b:2:3:ASP:DYNAMIC")" "$(get "$b:2:3:ASP:STATIC")")."
done
echo
echo "Reproduce: \`sh bench/ps_dispatch.sh build/release/dml\` (PS_DISPATCH_REPS, PS_DISPATCH_ARGS, PS_DISPATCH_BACKENDS)."
