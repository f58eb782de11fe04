#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Nothing lost, nothing hung (issue 28), from outside the interpreter:
# writes that are all or nothing (the old files untouched on failure, no
# temporary left), frame csv read back with and without its .mtd, Ctrl-C
# (SIGINT sent to the process) during long statements and plot(), and
# plot()'s temporaries. Ends with "N passed, N failed"; exits non-zero on
# failure.   DML=build/release/dml sh tests/robust/run_robust_tests.sh

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlrobust.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; [ -f "$tmp/out" ] && sed -n '1,20p' "$tmp/out" | sed 's/^/    /'; }

# run NAME STATUS REGEX DML-CODE: runs the code in $tmp/w; it exits with
# STATUS and a line of its output matches REGEX.
run() {
    name=$1 want=$2 re=$3
    (cd "$tmp/w" && "$DML" -s "$4") >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$name" "exit status $rc, expected $want"
        return 1
    elif ! grep -Eq -- "$re" "$tmp/out"; then
        bad "$name" "no line matching /$re/"
        return 1
    fi
    ok "$name"
}

# expect NAME CONDITION-COMMAND...: the command succeeds.
expect() {
    name=$1
    shift
    if "$@"; then ok "$name"; else bad "$name" "not so: $*"; fi
}

# no_temporaries NAME: nothing named *.tmp* or *.old* is left in $tmp/w.
no_temporaries() {
    left=$(find "$tmp/w" -name '*.tmp*' -o -name '*.old*' | head -n 3)
    if [ -z "$left" ]; then ok "$1: no temporary left"; else bad "$1: no temporary left" "$left"; fi
}

# ---- writes: all or nothing ------------------------------------------------
mkdir -p "$tmp/w"
printf '1,1\n' >"$tmp/w/a.csv"
mkdir "$tmp/w/a.csv.mtd"
run "write with a folder where its .mtd goes fails" 1 "cannot write 'a\.csv\.mtd'" \
    'write(matrix(7, rows=2, cols=2), "a.csv", format="csv")'
expect "the old data file is untouched" grep -qx '1,1' "$tmp/w/a.csv"
no_temporaries "failed matrix write"
printf '2,2\n' >"$tmp/w/target.csv"
ln -s target.csv "$tmp/w/s.csv"
mkdir "$tmp/w/s.csv.mtd"
run "the same through a symbolic link" 1 "cannot write 's\.csv\.mtd'" \
    'write(matrix(7, rows=2, cols=2), "s.csv", format="csv")'
expect "the link is kept" test -L "$tmp/w/s.csv"
expect "and what it points to is untouched" grep -qx '2,2' "$tmp/w/target.csv"
rmdir "$tmp/w/a.csv.mtd"
run "the same write then succeeds" 0 '^7\.0$' \
    'write(matrix(7, rows=2, cols=2), "a.csv", format="csv"); print(as.scalar(read("a.csv")[2, 2]))'
no_temporaries "matrix write"

run "a list with an unwritable element fails" 1 'not supported for frames' \
    'write(list(a=matrix(1, rows=2, cols=2), b=as.frame("x")), "L2", format="binary")'
expect "nothing of it is left" test ! -e "$tmp/w/L2" -a ! -e "$tmp/w/L2.mtd"
no_temporaries "failed list write"
run "a list is written" 0 '^done$' \
    'write(list(a=matrix(1, rows=2, cols=2), b=matrix(2, rows=2, cols=2)), "L", format="binary"); print("done")'
cp -R "$tmp/w/L" "$tmp/L.before"
cp "$tmp/w/L.mtd" "$tmp/L.mtd.before"
run "over it, a list failing on its second element fails" 1 'not supported for frames' \
    'write(list(a=matrix(5, rows=2, cols=2), b=as.frame("x")), "L", format="binary")'
expect "the old list folder is untouched" diff -r "$tmp/L.before" "$tmp/w/L"
expect "the old list .mtd is untouched" cmp -s "$tmp/L.mtd.before" "$tmp/w/L.mtd"
no_temporaries "failed list rewrite"
run "a shorter list replaces the folder whole" 0 '^done$' \
    'write(list(c=matrix(3, rows=1, cols=1)), "L", format="binary"); print("done")'
expect "only the new element is there" test -f "$tmp/w/L/0_c" -a ! -e "$tmp/w/L/1_b" -a ! -e "$tmp/w/L/0_a"
no_temporaries "list rewrite"
run "a nested list reads back" 0 '^3\.0$' \
    'write(list(x=list(y=matrix(3, rows=1, cols=1))), "N", format="binary"); print(as.scalar(read("N/0_x/0_y")))'

# ---- frames: quoted fields spanning lines, without the .mtd -----------------
run "a frame with line breaks in strings is written" 0 '^done$' \
    'F = rbind(cbind(as.frame("two\nlines"), as.frame("x")), cbind(as.frame("q\"\r\nz"), as.frame("y"))); write(F, "f.csv", format="csv"); print("done")'
rm -f "$tmp/w/f.csv.mtd"
run "read back without its .mtd: 2 rows, strings whole" 0 '^2 TRUE TRUE$' \
    'G = read("f.csv", data_type="frame", format="csv"); print(nrow(G) + " " + (as.scalar(G[1,1]) == "two\nlines") + " " + (as.scalar(G[2,1]) == "q\"\r\nz"))'
printf 'a,"never\nclosed\n' >"$tmp/w/open.csv"
run "a quoted field never closed is an error at its line" 1 'open\.csv:1: the quoted field opened here is never closed' \
    'G = read("open.csv", data_type="frame", format="csv")'

# ---- Ctrl-C (SIGINT) under dml run ------------------------------------------
# wait_exit PID SECONDS: waits for the process to end (true), or gives up.
wait_exit() {
    n=0
    while kill -0 "$1" 2>/dev/null; do
        [ "$n" -ge $(($2 * 20)) ] && return 1
        sleep 0.05
        n=$((n + 1))
    done
    return 0
}
# wait_line FILE REGEX: waits (10 s at most) for a line of FILE to match.
wait_line() {
    n=0
    until grep -Eq -- "$2" "$1" 2>/dev/null; do
        [ "$n" -ge 200 ] && return 1
        sleep 0.05
        n=$((n + 1))
    done
}
cat >"$tmp/w/chain.dml" <<'DML'
X = rand(rows=3000, cols=3000, seed=1)
print("ready")
Y = X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X
write(Y, "chain_out.csv", format="csv")
print("finished")
DML
(cd "$tmp/w" && exec "$DML" run chain.dml) >"$tmp/out" 2>&1 &
pid=$!
wait_line "$tmp/out" '^ready$'
sleep 0.5
kill -INT "$pid"
if wait_exit "$pid" 20; then
    wait "$pid"
    rc=$?
    if [ "$rc" -eq 130 ]; then ok "Ctrl-C in a chain of large %*% exits with 130"; else bad "Ctrl-C in a chain of large %*% exits with 130" "exit status $rc"; fi
    grep -Eq '^chain\.dml:3:[0-9]+: interrupted$' "$tmp/out" && ok "it says where it was interrupted" \
        || bad "it says where it was interrupted" "no 'chain.dml:3:...: interrupted'"
    grep -q finished "$tmp/out" && bad "the script stops there" "it went on" || ok "the script stops there"
    expect "no output file" test ! -e "$tmp/w/chain_out.csv"
    no_temporaries "interrupted run"
else
    kill -KILL "$pid" 2>/dev/null
    bad "Ctrl-C in a chain of large %*% exits with 130" "still running 20 s after SIGINT"
fi

# ---- plot: a writer killed half-way leaves a temporary the next one removes --
cat >"$tmp/w/slowplot.dml" <<'DML'
i = seq(1, 8000)
Z = sin(i %*% matrix(0.001, rows=1, cols=200)) + matrix(1, rows=8000, cols=1) %*% t(seq(1, 200))
print("ready")
plot(Z, x=sin(i * 7), file="slow.png")
DML
(cd "$tmp/w" && exec "$DML" run slowplot.dml) >"$tmp/out" 2>&1 &
pid=$!
wait_line "$tmp/out" '^ready$'
n=0
while [ -z "$(find "$tmp/w" -name 'slow.png.tmp*')" ] && [ "$n" -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
if [ -n "$(find "$tmp/w" -name 'slow.png.tmp*')" ]; then
    ok "a plot killed half-way leaves its temporary (nothing can remove it then)"
    run "the next plot to that path" 0 '^drawn$' 'plot(matrix("1 3 2", rows=3, cols=1), file="slow.png"); print("drawn")'
    expect "has removed the stale temporary" test -z "$(find "$tmp/w" -name 'slow.png.tmp*')"
    expect "and drawn its picture" test -s "$tmp/w/slow.png"
else
    bad "a plot killed half-way leaves its temporary" "no slow.png.tmp* seen while it ran"
fi
no_temporaries "plots"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
