#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Interactive tests of the dml REPL, driven through a real terminal (tmux):
# prompts, printing of bare expressions, multi-line input, source(), errors,
# Ctrl-C at the prompt and while code runs, Tab completion, history across
# sessions, Ctrl-D. Ends with "N passed, N failed"; exits non-zero on failure.
# Skips (0 passed, 0 failed, exit 0) when tmux is not installed.
#   DML=build/release/dml sh tests/repl/run_repl_tests.sh
# Environment: DML (the binary), REPL_TIMEOUT (seconds to wait for each
# expected output, default 10; raise it under sanitizers or valgrind).

DML=${DML:-build/release/dml}
WAIT=${REPL_TIMEOUT:-10}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac

if ! command -v tmux >/dev/null 2>&1; then
    echo "note: tmux not found; REPL tests skipped"
    echo "0 passed, 0 failed"
    exit 0
fi
if [ ! -x "$DML" ]; then
    echo "repl: no dml binary at $DML" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlrepl.XXXXXX") || exit 2
# A private tmux server (-L) with no config (-f /dev/null): never touches the
# user's own sessions, and their settings cannot change what we see.
sock="dmlrepl$$"
tm() { tmux -L "$sock" -f /dev/null "$@"; }
cleanup() { tm kill-server >/dev/null 2>&1; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 2' INT TERM

pass=0
fail=0
S=""        # current session name

ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() {
    fail=$((fail + 1))
    echo "FAIL $1: $2"
    echo "---- screen ----"
    cap | sed -e '/^$/d' -e 's/^/    /' | tail -n 25
    echo "----------------"
}

# start NAME: a fresh REPL in its own session; its exit status is printed as
# "DML-EXIT:<n>" when it ends, and the pane stays up so we can read it.
start() {
    S=$1
    tm new-session -d -s "$S" -x 120 -y 40 \
        "cd '$tmp' && HOME='$tmp' INPUTRC=/dev/null DML_HISTFILE='$tmp/history' '$DML'; echo DML-EXIT:\$?; sleep 600"
}

# -J joins wrapped lines but keeps trailing blanks ("dml> "): strip them.
cap() { tm capture-pane -p -J -S -2000 -t "$S" 2>/dev/null | sed 's/[[:space:]]*$//'; }

# after TEXT: the screen lines after the last prompt line "dml> TEXT".
after() {
    cap | awk -v want="dml> $1" '$0 == want { buf = ""; found = 1; next }
                                  found { buf = buf $0 "\n" } END { printf "%s", buf }'
}

# poll CMD...: true as soon as CMD succeeds, false after $WAIT seconds.
poll() {
    n=0
    lim=$((WAIT * 20))
    while [ "$n" -lt "$lim" ]; do
        "$@" && return 0
        sleep 0.05
        n=$((n + 1))
    done
    return 1
}

has_line() { cap | grep -Eq -- "^($1)\$"; }                 # a whole screen line matches
has_after() { after "$1" | grep -Eq -- "^($2)\$"; }         # a line after input $1 matches
last_line_is() { [ "$(cap | sed -e '/^$/d' | tail -n 1)" = "$1" ]; }

# type_line TEXT: waits for a prompt, types TEXT literally, presses Enter.
# Waiting matters: text typed while a statement runs is echoed by the
# terminal before the prompt ("xdml> x"), as in any shell.
at_prompt() { l=$(cap | sed -e '/^$/d' | tail -n 1); [ "$l" = "dml>" ] || [ "$l" = "..." ]; }
type_line() { poll at_prompt || true; type_rest "$1"; poll typed "$1" || true; }
# typed TEXT: the screen shows TEXT typed at a prompt. tmux send-keys returns
# before the pane is redrawn, so without this wait the next type_line could
# still see the old prompt and type into a running statement.
typed() { cap | grep -Fqx -- "dml> $1" || cap | grep -Fqx -- "... $1"; }
# type_rest TEXT: finishes a line already begun (after a Tab completion).
type_rest() { tm send-keys -t "$S" -l -- "$1"; tm send-keys -t "$S" Enter; }
keys() { tm send-keys -t "$S" "$@"; }

# expect NAME INPUT REGEX: type INPUT, then a line after it must match REGEX.
expect() {
    type_line "$2"
    if poll has_after "$2" "$3"; then ok "$1"; else bad "$1" "after '$2' expected a line /$3/"; fi
}

# ---- session 1 ---------------------------------------------------------------
cat >"$tmp/lib.dml" <<'DML'
triple = function(double v) return (double w) {
  w = 3 * v
}
DML

start s1
if poll last_line_is "dml>"; then ok "banner and prompt"; else bad "banner and prompt" "no 'dml> ' prompt"; fi
has_line 'dml [^ ]+ .* DML interpreter\. Ctrl-D to exit, help\(\) for help' \
    && ok "banner line" || bad "banner line" "banner missing"

expect "bare expression" "1+2" "3"
expect "double printed Java-style" "7/2" "3\.5"
expect "string printed as-is" '"hello " + "world"' "hello world"
expect "boolean printed" "3 > 2" "TRUE"

type_line "x = 40 + 2"
expect "variable persists" "x" "42"
expect "variable in a later expression" "x * 2" "84"

type_line 'M = matrix("1 2 3 4", rows=2, cols=2)'
expect "matrix printed (row 1)" "M" "1\.000 2\.000"
has_after "M" "3\.000 4\.000" && ok "matrix printed (row 2)" || bad "matrix printed (row 2)" "second row missing"

# A function typed over three lines: continuation prompt, then a call.
type_line "squarex = function(double a) return (double b) {"
if poll last_line_is "..."; then ok "continuation prompt"; else bad "continuation prompt" "no '...' prompt"; fi
type_line "  b = a * a"
type_line "}"
expect "multi-line function then called" "squarex(7)" "49(\.0)?"

type_line "1 +"
if poll last_line_is "..."; then ok "unfinished expression continues"; else bad "unfinished expression continues" "no '...' prompt after '1 +'"; fi
type_line "2"
if poll has_after "1 +" "3"; then ok "continued expression evaluated"; else bad "continued expression evaluated" "no 3"; fi

type_line 'print("from print " + squarex(3))'
poll has_line "from print 9(\.0)?" && ok "print() as a statement" || bad "print() as a statement" "no output"

type_line 'source("lib.dml") as lib'
expect "source() as namespace" "lib::triple(2)" "6(\.0)?"

type_line "zz_undefined + 1"
if poll has_after "zz_undefined + 1" ".*undefined variable 'zz_undefined'.*"; then
    ok "error reported"
else
    bad "error reported" "no 'undefined variable' message"
fi
expect "session goes on after an error" "5*5" "25"

type_line "if (TRUE) {"
poll last_line_is "..." || true
keys C-c
if poll last_line_is "dml>"; then ok "Ctrl-C at continuation shows fresh prompt"; else bad "Ctrl-C at continuation shows fresh prompt" "no fresh prompt"; fi
expect "input after Ctrl-C is a new input" "100+1" "101"

# Ctrl-C only once the loop runs (its print shows): a Ctrl-C that arrives
# while the line is still being read would drop the line instead.
type_line 'print("looping"); while(TRUE){}'
poll has_line "looping" || true
keys C-c
if poll has_after 'print("looping"); while(TRUE){}' ".*interrupted.*"; then ok "Ctrl-C interrupts a loop"; else bad "Ctrl-C interrupts a loop" "no 'interrupted'"; fi
expect "session goes on after interrupt" "200+2" "202"
expect "variables survive an interrupt" "x + 1" "43"

# tab_completes NAME TYPED SHOWN: at a fresh prompt, TYPED then Tab leaves
# "dml> SHOWN(" on the line.
tab_completes() {
    poll at_prompt || true
    tm send-keys -t "$S" -l -- "$2"
    keys Tab
    if poll has_line "dml> $3\\("; then ok "$1"; else bad "$1" "no '$3(' on the line"; fi
}

tab_completes "Tab completes a builtin" "rowSu" "rowSums"
type_rest "matrix(1, rows=2, cols=3))"
poll has_after "rowSums(matrix(1, rows=2, cols=3))" "3\.000" \
    && ok "completed call runs" || bad "completed call runs" "no 3.000"

type_line "longvariablename = 5"
poll at_prompt || true
tm send-keys -t "$S" -l -- "longvar"
keys Tab
keys Enter
poll has_after "longvariablename" "5" && ok "Tab completes a variable" || bad "Tab completes a variable" "no value 5"

tab_completes "Tab completes a user function" "squ" "squarex"
type_rest "4)"
poll has_after "squarex(4)" "16(\.0)?" && ok "completed user call runs" || bad "completed user call runs" "no 16"

tab_completes "Tab completes ns::function" "lib::tri" "lib::triple"
type_rest "5)"
poll has_after "lib::triple(5)" "15(\.0)?" && ok "completed ns call runs" || bad "completed ns call runs" "no 15"

type_line "mlf = function(double a) return (double b) {"
type_line "  b = a + 100"
type_line "}"
type_line "hist_probe = 12345"
poll at_prompt || true
keys C-d
if poll has_line "DML-EXIT:0"; then ok "Ctrl-D exits with status 0"; else bad "Ctrl-D exits with status 0" "no DML-EXIT:0"; fi

# ---- session 2: history from session 1 ------------------------------------------
start s2
poll at_prompt || true
keys Up
if poll has_line "dml> hist_probe = 12345"; then ok "Up recalls the previous session's command"; else bad "Up recalls the previous session's command" "not recalled"; fi
keys Enter
expect "recalled command ran" "hist_probe" "12345"
# Up: "hist_probe", Up: "hist_probe = 12345" (repeat not stored twice), Up:
# the three-line definition of mlf, recalled as one entry.
poll at_prompt || true
keys Up Up Up
if poll has_line "dml> mlf = function\(double a\) return \(double b\) \{"; then
    ok "multi-line input recalled as one entry"
else
    bad "multi-line input recalled as one entry" "mlf definition not recalled"
fi
keys Enter
expect "recalled multi-line definition works" "mlf(1)" "101(\.0)?"
expect "variables are not carried over" "exists(\"x\")" "FALSE"
poll at_prompt || true
keys C-d
poll has_line "DML-EXIT:0" && ok "second session exits 0" || bad "second session exits 0" "no DML-EXIT:0"

# ---- session 3: help, ls(), describe(), did you mean, how values are shown ------
start s3
poll at_prompt || true
expect "help(name) with a bare name" "help(rowSums)" "  rowSums\(X\) -> matrix nrow\(X\) x 1"
has_after "help(rowSums)" "  Example:" && ok "help shows an example" || bad "help shows an example" "no 'Example:'"
expect "?name" "?colMeans" "  colMeans\(X\) -> matrix 1 x ncol\(X\)"
expect "help(\"name\") (the builtin)" 'help("affine")' "  forward\(X, W, b\) -> out"
expect "help of an nn function by ns::f" "?affine::backward" "  backward\(dout, X, W, b\) -> dX, dW, db"
expect "help() lists topics" "help()" "  Aggregates:"
poll at_prompt || true
tm send-keys -t "$S" -l -- "?rowIndexMa"
keys Tab
if poll has_line "dml> \\?rowIndexMax"; then ok "Tab completes after ?"; else bad "Tab completes after ?" "no '?rowIndexMax' on the line"; fi
keys Enter
poll has_after "?rowIndexMax" "  rowIndexMax\\(X\\) -> matrix nrow\\(X\\) x 1" \
    && ok "completed ?name shows help" || bad "completed ?name shows help" "no entry"
expect "help for a misspelt topic suggests" "?rowsum" "no help for 'rowsum' \(did you mean rowSums\?\).*"
type_line 'M = matrix("1 2 3 4", rows=2, cols=2)'
type_line 'lr = 0.01'
expect "ls() lists variables with shapes" "ls()" "M +matrix 2x2, min 1\.0, max 4\.0, mean 2\.5"
has_after "ls()" "lr +double 0\.01" && ok "ls() shows scalars" || bad "ls() shows scalars" "no 'lr  double 0.01'"
expect "describe() summary" "describe(M)" "matrix 2x2, min 1\.0, max 4\.0, mean 2\.5"
expect "did you mean: function" "rowsums(M)" ".*Function rowsums\(\) is undefined\. \(did you mean rowSums\?\)"
expect "did you mean: variable" "lrr * 2" ".*undefined variable 'lrr' \(did you mean 'lr'\?\)"
expect "string + 1x1 matrix hints as.scalar" '"v=" + M[1,1]' ".*as\.scalar\(X\) gives its value.*"
expect "matrix shown with its dimensions" "M" "\[2 x 2 matrix\]"
has_after "M" "1\.000 2\.000" && ok "matrix cells keep the 3-decimal form" || bad "matrix cells keep the 3-decimal form" "no 1.000 2.000"
expect "a large matrix says what is left out" "matrix(1, rows=150, cols=2)" \
    "\.\.\. showing 100 of 150 rows and 2 of 2 columns; X\[101:150, \] shows more"
expect "tiny values with significant digits" "matrix(0.00001, rows=1, cols=2)" "1e-05 1e-05"
expect "print() keeps upstream's format" "print(toString(matrix(0.00001, rows=1, cols=2)))" "0\.000 0\.000"
expect "named list keeps its names" "list(W=M, b=3)" "\\\$b"
has_after "list(W=M, b=3)" "\\\$W" && ok "named list shows each name" || bad "named list shows each name" "no \$W line"
expect "unnamed list entries numbered" 'list(1, "a")' "\[\[2\]\]"
poll at_prompt || true
keys C-d
poll has_line "DML-EXIT:0" && ok "third session exits 0" || bad "third session exits 0" "no DML-EXIT:0"

# ---- session 4: Ctrl-C in long statements, re-sourcing a changed file (issue 28) --
printf 'f = function(double a) return (double b) {\n  b = a + 1\n}\n' >"$tmp/relib.dml"
start s4
poll at_prompt || true
type_line 'source("relib.dml") as rl'
expect "sourced function" "rl::f(1)" "2\.0"
printf 'f = function(double a) return (double b) {\n  b = a + 100\n}\n' >"$tmp/relib.dml"
type_line 'source("relib.dml") as rl'
expect "re-sourcing a changed file reloads it" "rl::f(1)" "101\.0"
printf 'this is not dml (\n' >"$tmp/relib.dml"
type_line 'source("relib.dml") as rl'
poll has_after 'source("relib.dml") as rl' "relib\.dml:1:6: syntax error: .*" \
    && ok "re-sourcing a file that is no longer DML reports its error" \
    || bad "re-sourcing a file that is no longer DML reports its error" "no syntax error"
expect "the session goes on after it" "7*6" "42"
# A chain of large products: Ctrl-C stops it between two of them (or
# between the row panels of one); the variable is not assigned.
type_line 'X = rand(rows=3000, cols=3000, seed=1)'
type_line 'Y = X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X'
sleep 1
keys C-c
if poll has_after 'Y = X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X %*% X' "interrupted"; then
    ok "Ctrl-C interrupts a long %*%"
else
    bad "Ctrl-C interrupts a long %*%" "no 'interrupted'"
fi
expect "the product was not assigned" 'exists("Y")' "FALSE"
# A plot of 200 zigzag series (x not sorted: nothing to thin out), seconds
# of drawing: Ctrl-C stops it, and no picture or temporary is written.
type_line 'i = seq(1, 8000); Z = sin(i %*% matrix(0.001, rows=1, cols=200)) + matrix(1, rows=8000, cols=1) %*% t(seq(1, 200))'
type_line 'plot(Z, x=sin(i * 7), file="slow.png")'
sleep 1
keys C-c
if poll has_after 'plot(Z, x=sin(i * 7), file="slow.png")' "interrupted"; then
    ok "Ctrl-C interrupts plot()"
else
    bad "Ctrl-C interrupts plot()" "no 'interrupted'"
fi
expect "the session goes on after it" "6*7" "42"
if [ ! -e "$tmp/slow.png" ] && [ -z "$(find "$tmp" -name 'slow.png.tmp*')" ]; then
    ok "an interrupted plot leaves no picture and no temporary"
else
    bad "an interrupted plot leaves no picture and no temporary" "$(ls "$tmp")"
fi
poll at_prompt || true
keys C-d
poll has_line "DML-EXIT:0" && ok "fourth session exits 0" || bad "fourth session exits 0" "no DML-EXIT:0"

# ---- piped input (no terminal): no prompts, values still shown ----------------
out=$(printf 'x = 1 + 2\nx\nprint("hi")\nf = function(double a) return (double b) {\n  b = a + 1\n}\nf(1)\n' | "$DML" 2>&1)
exp=$(printf '3\nhi\n2.0')
if [ "$out" = "$exp" ]; then ok "piped input"; else fail=$((fail + 1)); echo "FAIL piped input: got:"; printf '%s\n' "$out" | sed 's/^/    /'; fi
printf 'y + 1\n' | "$DML" >/dev/null 2>&1
[ $? -eq 1 ] && ok "piped input with an error exits 1" || { fail=$((fail + 1)); echo "FAIL piped input with an error exits 1"; }

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
