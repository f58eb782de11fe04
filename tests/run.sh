#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite of dml and ends with exactly one line
# "N passed, N failed" (the sum over all suites); exits non-zero if anything
# failed. Run from the repository root (make test does this):
#   DML=build/release/dml UNIT_DIR=build/release/unit sh tests/run.sh
# Environment:
#   DML           the dml binary (default build/release/dml)
#   UNIT_DIR      folder of the C unit-test binaries test_* (default build/release/unit)
#   RUNNER        wrapper for every run, e.g. "valgrind -q --error-exitcode=99"
#   JOBS          script tests run in parallel (default 1)
#   TEST_TIMEOUT  seconds per script test (default 60, 600 under RUNNER)
#   UNIT_TIMEOUT  seconds per unit-test binary (default 300, 1800 under RUNNER)
#   SKIP_MPI      set to skip the Open MPI tests (tests/mpi/run_mpi_tests.sh)
#   THREADED      set to run only the tests that start threads (make
#                 test-threads, for ThreadSanitizer): the unit tests in
#                 THREADED_UNITS, the script tests of paramserv and of every
#                 .dml that mentions parfor or paramserv, paramserv's suites
#                 and Open MPI's
# Unit binaries print "N passed, N failed"; one that exits non-zero without
# such a line counts as 1 failed. Script tests are run by `dml test tests/`.

DML=${DML:-build/release/dml}
UNIT_DIR=${UNIT_DIR:-build/release/unit}
JOBS=${JOBS:-1}
if [ -n "$RUNNER" ]; then
    TEST_TIMEOUT=${TEST_TIMEOUT:-600}
    UNIT_TIMEOUT=${UNIT_TIMEOUT:-1800}
else
    TEST_TIMEOUT=${TEST_TIMEOUT:-60}
    UNIT_TIMEOUT=${UNIT_TIMEOUT:-300}
fi

# Relative paths are taken from the caller's directory, then we move to the root.
case "$DML" in /*) ;; */*) DML="$PWD/$DML" ;; esac
case "$UNIT_DIR" in /*) ;; *) UNIT_DIR="$PWD/$UNIT_DIR" ;; esac
cd "$(dirname "$0")/.." || exit 2

if command -v timeout >/dev/null 2>&1; then
    TIMEOUT="timeout"
else
    TIMEOUT=""
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlrun.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

total_pass=0
total_fail=0

# add_counts LINE: adds "N passed, N failed" from LINE to the totals.
# Returns 1 when LINE has no such counts.
add_counts() {
    p=$(printf '%s\n' "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1/p')
    f=$(printf '%s\n' "$1" | sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\2/p')
    [ -n "$p" ] && [ -n "$f" ] || return 1
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    return 0
}

# The unit tests that start threads: kernels split by runtime/pool.c (fuse,
# sparse), OpenBLAS's thread count (ops), parsing and heavy hitters on
# several threads, paramserv's pieces.
THREADED_UNITS="test_fuse test_sparse test_ops test_parse test_hitters test_sink
test_ps_checkpoint test_ps_msg test_ps_readset test_ps_sum test_pool"

# in_threaded NAME: true when NAME is one of THREADED_UNITS.
in_threaded() {
    for u in $THREADED_UNITS; do
        [ "$u" = "$1" ] && return 0
    done
    return 1
}

# ---- C unit tests -------------------------------------------------------
if [ -d "$UNIT_DIR" ]; then
    for bin in "$UNIT_DIR"/test_*; do
        [ -f "$bin" ] && [ -x "$bin" ] || continue
        name=$(basename "$bin")
        [ -n "${THREADED:-}" ] && ! in_threaded "$name" && continue
        if [ -n "$TIMEOUT" ]; then
            $TIMEOUT "$UNIT_TIMEOUT" $RUNNER "$bin" >"$tmp/unit.out" 2>&1
        else
            $RUNNER "$bin" >"$tmp/unit.out" 2>&1
        fi
        rc=$?
        last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/unit.out" | tail -n 1)
        if [ -n "$last" ] && add_counts "$last"; then
            if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
                # counted nothing as failed but exited badly (leak, sanitizer)
                total_fail=$((total_fail + 1))
                echo "unit/$name: $last, but exit status $rc"
                sed -n '1,40p' "$tmp/unit.out"
            else
                [ "$f" -ne 0 ] && grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/unit.out" | sed -n '1,60p'
                echo "unit/$name: $last"
            fi
        else
            if [ "$rc" -ne 0 ]; then
                total_fail=$((total_fail + 1))
                [ "$rc" -eq 124 ] && why="timed out after $UNIT_TIMEOUT s" || why="exit status $rc"
                echo "unit/$name: FAILED ($why, no summary line)"
                sed -n '1,40p' "$tmp/unit.out"
            else
                total_fail=$((total_fail + 1))
                echo "unit/$name: FAILED (no 'N passed, N failed' line)"
            fi
        fi
    done
else
    echo "unit: no unit tests in $UNIT_DIR"
fi

# ---- script tests --------------------------------------------------------
if [ ! -x "$DML" ]; then
    echo "scripts: FAILED ($DML not found)"
    total_fail=$((total_fail + 1))
else
    set -- "$DML" test -j "$JOBS" --timeout "$TEST_TIMEOUT"
    [ -n "$RUNNER" ] && set -- "$@" --wrap "$RUNNER"
    if [ -n "${THREADED:-}" ]; then
        set -- "$@" tests/paramserv/ $(grep -l -E 'parfor|paramserv' tests/*/*.dml tests/*/*/*.dml \
            | grep -v -e '^tests/paramserv/' -e '^tests/mpi/')
    else
        set -- "$@" tests/
    fi
    # Stream the runner's report, keeping its final counts line aside.
    : >"$tmp/scripts.last"
    { "$@" 2>&1; echo "exit:$?" >"$tmp/scripts.rc"; } | while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
            *" passed, "*" failed")
                if printf '%s\n' "$line" | grep -q -E '^[0-9]+ passed, [0-9]+ failed$'; then
                    printf '%s\n' "$line" >"$tmp/scripts.last"
                    continue
                fi ;;
        esac
        printf '%s\n' "$line"
    done
    last=$(cat "$tmp/scripts.last")
    rc=$(sed -n 's/^exit://p' "$tmp/scripts.rc" 2>/dev/null)
    if [ -n "$last" ] && add_counts "$last"; then
        echo "scripts: $last"
    else
        total_fail=$((total_fail + 1))
        echo "scripts: FAILED (exit status ${rc:-?}, no summary line)"
    fi
fi

# ---- DML builtins through $SYSTEMDS_ROOT (needs the environment) --------
if [ -x "$DML" ] && [ -f tests/compat/root_lookup.sh ] && [ -z "${THREADED:-}" ]; then
    last=$(DML="$DML" RUNNER="$RUNNER" sh tests/compat/root_lookup.sh 2>&1 | tee "$tmp/root.out" | tail -n 1)
    if add_counts "$last"; then
        [ "$f" -ne 0 ] && sed -n '1,30p' "$tmp/root.out"
        echo "compat/root_lookup: $last"
    else
        total_fail=$((total_fail + 1))
        echo "compat/root_lookup: FAILED (no summary line)"
    fi
fi

# run_suite NAME SCRIPT [LINES]: runs the suite script SCRIPT with sh and
# DML set, and adds its last "N passed, N failed" line to the totals, shown
# as NAME. Passes on its "note:" lines; when something failed, shows the
# first LINES (default 60) lines of its output other than the "ok" ones.
run_suite() {
    DML="$DML" sh "$2" >"$tmp/suite.out" 2>&1
    rc=$?
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/suite.out" | tail -n 1)
    grep '^note:' "$tmp/suite.out"
    if [ -n "$last" ] && add_counts "$last"; then
        [ "$f" -ne 0 ] && grep -v '^ok ' "$tmp/suite.out" | sed -n "1,${3:-60}p"
        echo "$1: $last"
    else
        total_fail=$((total_fail + 1))
        echo "$1: FAILED (exit status $rc, no summary line)"
        sed -n '1,40p' "$tmp/suite.out"
    fi
}

if [ -x "$DML" ]; then
    # the REPL in a real terminal (tmux)
    [ -f tests/repl/run_repl_tests.sh ] && [ -z "${SKIP_REPL:-}${THREADED:-}" ] && run_suite repl tests/repl/run_repl_tests.sh
    # paramserv's progress line on a pseudo-terminal (script)
    [ -f tests/paramserv/progress.sh ] && run_suite paramserv/progress tests/paramserv/progress.sh
    # paramserv's dispatch="DYNAMIC" and DML_PS_SLOW on threads
    [ -f tests/paramserv/dispatch.sh ] && run_suite paramserv/dispatch tests/paramserv/dispatch.sh
    # paramserv's record= and replay= on threads
    [ -f tests/paramserv/record.sh ] && run_suite paramserv/record tests/paramserv/record.sh
    # paramserv's --trace timeline
    [ -f tests/paramserv/trace.sh ] && run_suite paramserv/trace tests/paramserv/trace.sh
    # a run killed while it writes its record or trace leaves no half-written file
    [ -f tests/paramserv/kill_outputs.sh ] && run_suite paramserv/kill_outputs tests/paramserv/kill_outputs.sh
    # paramserv on Open MPI (mpirun with 2-4 ranks)
    [ -f tests/mpi/run_mpi_tests.sh ] && [ -z "${SKIP_MPI:-}" ] && run_suite mpi tests/mpi/run_mpi_tests.sh 80
    # the Jupyter kernel (jupyter_kernel_test, the example notebook under nbclient)
    [ -f tests/jupyter/run_jupyter_tests.sh ] && [ -z "${THREADED:-}" ] && run_suite jupyter tests/jupyter/run_jupyter_tests.sh 80
    # the command line itself (help, dml test, an installed layout)
    [ -f tests/cli/run_cli_tests.sh ] && [ -z "${THREADED:-}" ] && run_suite cli tests/cli/run_cli_tests.sh
    # sparse matrices under a memory cap (issue 31)
    [ -f tests/sparse/run_sparse_tests.sh ] && [ -z "${THREADED:-}" ] && run_suite sparse tests/sparse/run_sparse_tests.sh
    # all-or-nothing writes, Ctrl-C, plot temporaries (issue 28)
    [ -f tests/robust/run_robust_tests.sh ] && [ -z "${THREADED:-}" ] && run_suite robust tests/robust/run_robust_tests.sh
fi

echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
