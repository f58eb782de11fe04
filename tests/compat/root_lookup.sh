#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# DML builtins found through $SYSTEMDS_ROOT/scripts/builtin/ (after the
# working directory's scripts/builtin/). A shell test because it needs the
# environment variable. Prints "N passed, N failed". Run by tests/run.sh:
#   DML=/abs/path/to/dml RUNNER= sh tests/compat/root_lookup.sh
DML=${DML:-build/release/dml}
case "$DML" in /*) ;; */*) DML="$PWD/$DML" ;; esac
cd "$(dirname "$0")" || exit 2
out=$(SYSTEMDS_ROOT="$PWD/root" $RUNNER "$DML" run root_lookup.dml 2>&1)
if [ "$out" = "$(cat root_lookup.expected)" ]; then
    echo "1 passed, 0 failed"
else
    echo "compat/root_lookup.sh: FAILED"
    printf '%s\n' "$out" | sed -n '1,20p'
    echo "0 passed, 1 failed"
fi
