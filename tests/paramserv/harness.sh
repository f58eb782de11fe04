# SPDX-License-Identifier: Apache-2.0
# What the paramserv shell suites (dispatch.sh, record.sh, trace.sh) share,
# sourced as `. "$(dirname "$0")/harness.sh" PREFIX`: $DML made absolute,
# the working folder tests/paramserv, a scratch folder $tmp (named PREFIX.*,
# removed on exit), and the counters with ok NAME / bad NAME (which shows the
# first lines of $tmp/err). The suite ends with
# `echo "$pass passed, $fail failed"`.
DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
cd "$(dirname "$0")" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -f "$tmp/err" ] && sed -n '1,8p' "$tmp/err"; }
