#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Jupyter kernel (doc/jupyter.md): installed into a temporary prefix,
# then tested as Jupyter tests kernels (test_kernel.py, on Debian's
# python3-jupyter-kernel-test) and by running the example notebook headless
# with nbclient (run_notebook.py). A sanitizer report from the kernel
# process (it writes to our stderr) fails the suite. Ends with
# "N passed, N failed".
#   DML=build/release/dml sh tests/jupyter/run_jupyter_tests.sh
# KERNEL_TIMEOUT (default TEST_TIMEOUT, else 60) bounds each reply.

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
PYTHON=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmljup.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

if ! "$PYTHON" -c 'import jupyter_client, jupyter_kernel_test, nbclient, nbformat' 2>"$tmp/imp"; then
    bad "python3 Jupyter packages" "$(tail -n 1 "$tmp/imp") (sh tools/install-deps.sh installs them)"
    echo "$pass passed, $fail failed"
    exit 1
fi

# ---- the command line ----------------------------------------------------------
if "$DML" kernel install --prefix "$tmp/prefix" >"$tmp/out" 2>&1 &&
   grep -q '"{connection_file}"' "$tmp/prefix/share/jupyter/kernels/dml/kernel.json" &&
   grep -q '"interrupt_mode": "signal"' "$tmp/prefix/share/jupyter/kernels/dml/kernel.json" &&
   grep -q '"display_name": "DML"' "$tmp/prefix/share/jupyter/kernels/dml/kernel.json"; then
    ok "dml kernel install --prefix"
else
    bad "dml kernel install --prefix" "$(cat "$tmp/out")"
fi
if HOME="$tmp/home" JUPYTER_DATA_DIR= XDG_DATA_HOME= "$DML" kernel install --user >/dev/null 2>&1 &&
   [ -f "$tmp/home/.local/share/jupyter/kernels/dml/kernel.json" ]; then
    ok "dml kernel install --user"
else
    bad "dml kernel install --user" "no kernel.json under HOME"
fi
OMPI_COMM_WORLD_SIZE=2 "$DML" kernel -f "$tmp/none.json" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'does not run under mpirun' "$tmp/out"; then
    ok "refused under mpirun"
else
    bad "refused under mpirun" "exit $rc: $(cat "$tmp/out")"
fi
"$DML" kernel -f "$tmp/none.json" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "none.json" "$tmp/out"; then ok "missing connection file"; else bad "missing connection file" "exit $rc"; fi

# ---- the kernel under Jupyter's tests and the notebook --------------------------
export JUPYTER_PATH="$tmp/prefix/share/jupyter" JUPYTER_RUNTIME_DIR="$tmp/runtime" JUPYTER_DATA_DIR="$tmp/data"
export KERNEL_TIMEOUT="${KERNEL_TIMEOUT:-${TEST_TIMEOUT:-60}}"
for t in "test_kernel.py" "run_notebook.py $root/doc/paramserv_notebook.ipynb"; do
    # shellcheck disable=SC2086
    (cd "$tmp" && "$PYTHON" -u "$here"/$t) >"$tmp/py.out" 2>"$tmp/py.err"
    grep -E '^(ok|FAIL) ' "$tmp/py.out"
    grep -A 30 '^FAIL ' "$tmp/py.out" | grep -v -E '^(ok|FAIL) ' | sed -n '1,40p'
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$tmp/py.out" | tail -n 1)
    if [ -n "$last" ]; then
        pass=$((pass + ${last%% passed*}))
        f=${last#*passed, }
        fail=$((fail + ${f%% failed}))
    else
        bad "$t" "no summary line"
        sed -n '1,30p' "$tmp/py.err"
    fi
    case $t in test_kernel.py)
        # test_dml_bad_messages_dropped: each one dropped with a log line
        for why in "shell: wrong signature" "shell: no <IDS|MSG> delimiter"; do
            if grep -q "^dml kernel: dropped a message on $why" "$tmp/py.err"; then ok "log line: $why"; else bad "log line: $why" "not in the kernel's stderr"; fi
        done ;;
    esac
    if grep -E -q '(ERROR|WARNING): (Address|Leak|Thread)Sanitizer|runtime error:' "$tmp/py.err"; then
        bad "$t: the kernel's sanitizer report" "$(grep -E -m 3 'Sanitizer|runtime error:' "$tmp/py.err")"
        sed -n '1,60p' "$tmp/py.err"
    fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
