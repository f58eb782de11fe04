#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Tests of the dml command line itself: help (dml --help, dml run --help,
# dml help TOPIC), what dml test reports about files it skips, and an
# installed layout (bin/dml, share/dml/{stdlib,data}) running a script from
# another folder. Ends with "N passed, N failed"; exits non-zero on failure.
#   DML=build/release/dml sh tests/cli/run_cli_tests.sh

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlcli.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; [ -f "$tmp/out" ] && sed -n '1,20p' "$tmp/out" | sed 's/^/    /'; }

# check NAME STATUS REGEX CMD...: CMD exits with STATUS and a line of its
# output (stdout and stderr) matches REGEX.
check() {
    name=$1 want=$2 re=$3
    shift 3
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ]; then
        bad "$name" "exit status $rc, expected $want"
    elif ! grep -Eq -- "$re" "$tmp/out"; then
        bad "$name" "no line matching /$re/"
    else
        ok "$name"
    fi
}

# ---- help ------------------------------------------------------------------
check "dml --help" 0 '^usage: dml run FILE' "$DML" --help
check "dml run --help prints help" 0 '^usage: dml run FILE' "$DML" run --help
check "dml run -h prints help" 0 '^usage: dml run FILE' "$DML" run -h
# Every DML_* variable the sources read is listed by dml --help.
for v in $(cd "$root" && grep -rhoE '"DML_[A-Z0-9_]+"' base parser lexer runtime builtins cli | tr -d '"' | sort -u); do
    check "dml --help lists $v" 0 "[ ,]$v[,.]" "$DML" --help
done
check "dml help TOPIC" 0 '^  rowSums\(X\) -> matrix nrow\(X\) x 1$' "$DML" help rowSums
check "dml help of an nn layer" 0 '^  forward\(X, W, b\) -> out$' "$DML" help nn/layers/affine.dml
check "dml help of an unknown topic" 1 "^no help for 'rowsum' \(did you mean rowSums\?\)" "$DML" help rowsum

# ---- dml test: skipped files ----------------------------------------------------
mkdir -p "$tmp/t/sub"
printf 'print("hi")\n' >"$tmp/t/a.dml"
printf 'hi\n' >"$tmp/t/a.out"
printf 'f = function() return (double x) { x = 1 }\n' >"$tmp/t/helper.dml"
printf 'print(2)\n' >"$tmp/t/sub/forgot.dml"
check "dml test counts skipped files" 0 '^2 \.dml files skipped: no \.out, \.err or .# test. line \(-v lists them\)$' \
    "$DML" test "$tmp/t"
check "dml test keeps its last line" 0 '^1 passed, 0 failed$' "$DML" test "$tmp/t"
if [ "$(tail -n 1 "$tmp/out")" = "1 passed, 0 failed" ]; then ok "summary line is the last line"; else bad "summary line is the last line" "last line: $(tail -n 1 "$tmp/out")"; fi
check "dml test -v names skipped files" 0 "^skip $tmp/t/sub/forgot\.dml " "$DML" test -v "$tmp/t"
check "no skip line when nothing is skipped" 0 '^1 passed, 0 failed$' "$DML" test "$tmp/t/a.dml"
grep -q skipped "$tmp/out" && bad "no skip line when nothing is skipped" "a 'skipped' line" || ok "no skip count for an explicit file"

# ---- an installed layout: examples' data found from any folder ----------------
mkdir -p "$tmp/inst/bin" "$tmp/inst/share/dml/data" "$tmp/elsewhere"
cp "$DML" "$tmp/inst/bin/dml"
ln -s "$root/stdlib" "$tmp/inst/share/dml/stdlib"
ln -s "$root/data/mnist-test-labels-idx1-ubyte.gz" "$tmp/inst/share/dml/data/"
printf '1\n2\n3\n' >"$tmp/inst/share/dml/data/probe.csv"
cat >"$tmp/inst/share/dml/probe.dml" <<'DML'
source("nn/layers/relu.dml") as relu
y = read("data/mnist-test-labels-idx1-ubyte.gz", format="idx")
print(nrow(y) + " labels, relu " + sum(relu::forward(matrix("-1 2", rows=1, cols=2))))
DML
check "installed dml finds stdlib and data from another folder" 0 '^[0-9]+ labels, relu 2\.0$' \
    sh -c "cd '$tmp/elsewhere' && '$tmp/inst/bin/dml' run '$tmp/inst/share/dml/probe.dml'"
check "installed data/ file read when the folder has none" 0 '^3$' \
    sh -c "cd '$tmp/elsewhere' && '$tmp/inst/bin/dml' -s 'print(nrow(read(\"data/probe.csv\", format=\"csv\")))'"
mkdir -p "$tmp/elsewhere/data"
printf '1\n2\n' >"$tmp/elsewhere/data/probe.csv"
check "a data/ file in the working directory wins" 0 '^2$' \
    sh -c "cd '$tmp/elsewhere' && '$tmp/inst/bin/dml' -s 'print(nrow(read(\"data/probe.csv\", format=\"csv\")))'"

# ---- left indexing that reads its own target updates in place -------------------
# An 8 MB matrix updated 50 times through A[nrow(A), ...] = A[1, 1] + i: the
# peak stays one matrix (a copy per update would make it 16 MB).
printf 'A = matrix(0, rows=1000, cols=1000)\nfor (i in 1:50) {\n  A[nrow(A), ncol(A) - i] = A[1, 1] + i\n}\nprint(sum(A))\n' \
    >"$tmp/inplace.dml"
check "left indexing reading its target updates in place" 0 '^Peak matrix memory:[[:space:]]+8\.000 MB' \
    "$DML" run "$tmp/inplace.dml" --stats

# ---- paramserv's server lends an update the threads of the workers waiting ----
# A BSP round keeps every worker waiting, so its update gets the whole budget;
# an ASP update keeps only its pusher waiting (1 of 2 threads at k=2).
cat >"$tmp/ps_threads.dml" <<'DML'
source("tests/paramserv/lib/linreg.dml") as lin
[X, y] = lin::make_data(200, 3)
utype = $utype
M = paramserv(model=lin::init_model(), features=X, labels=y, upd="./tests/paramserv/lib/linreg.dml::gradients",
              agg="./tests/paramserv/lib/linreg.dml::aggregation", epochs=1, batchsize=16, k=2,
              utype=utype, hyperparams=list(lr=0.05), verbose=FALSE)
print(length(M))
DML
check "paramserv BSP updates use the waiting workers' threads" 0 \
    '^Paramserv server updates:.*kernel threads per update: 2\.$' \
    sh -c "cd '$root' && '$DML' run '$tmp/ps_threads.dml' --threads 2 --stats -nvargs utype=BSP"
check "paramserv ASP updates use the pusher's threads" 0 \
    '^Paramserv server updates:.*kernel threads per update: 1\.$' \
    sh -c "cd '$root' && '$DML' run '$tmp/ps_threads.dml' --threads 2 --stats -nvargs utype=ASP"

# ---- a local run's --stats counts what a distributed pull would carry -----------
# Threads share the whole model, but over Open MPI a pull carries only the
# entries upd reads: W and b of momentum.dml's 4-entry model (32 of 64 bytes).
check "paramserv --stats: local pulls counted as a distributed run would send them" 0 \
    '^Paramserv bytes per update:[[:space:]]+32 pulled \+ 32 pushed \(model: 64 bytes\)\.$' \
    sh -c "cd '$root/tests/mpi' && '$DML' run readset.dml --stats -nvargs mode=LOCAL k=2 avg=FALSE upd=gradients out='$tmp/rs'"
check "paramserv --stats: the call's CPU time" 0 \
    '^Paramserv CPU time:[[:space:]]+[0-9.]+ secs \(server and 2 worker threads, user \+ system\)\.$' \
    sh -c "cd '$root/tests/mpi' && '$DML' run readset.dml --stats -nvargs mode=LOCAL k=2 avg=FALSE upd=gradients out='$tmp/rs'"

# ---- carets under errors ----------------------------------------------------------
# The whole message (position, source line, caret) of a parse error, a resolve
# error and a run-time error: one renderer (base/diag.c) draws all three, and
# the caret sits under the character the column counts, after UTF-8 text and
# tabs too. check_caret NAME SCRIPT EXPECTED: 'dml run SCRIPT' from $tmp fails
# with exactly EXPECTED on stderr.
check_caret() {
    name=$1
    printf '%s' "$3" >"$tmp/want"
    (cd "$tmp" && "$DML" run "$2" >/dev/null 2>"$tmp/out")
    rc=$?
    if [ "$rc" -ne 1 ]; then
        bad "$name" "exit status $rc, expected 1"
    elif ! cmp -s "$tmp/want" "$tmp/out"; then
        bad "$name" "stderr differs from: $(cat "$tmp/want")"
    else
        ok "$name"
    fi
}
printf 'x = "h\303\251llo w\303\266rld" + )\n' >"$tmp/c1.dml"
check_caret "caret of a syntax error after UTF-8 text" c1.dml "$(printf 'c1.dml:1:21: syntax error: unexpected '"')'"'\n    x = "h\303\251llo w\303\266rld" + )\n                        ^')
"
printf 'x = "h\303\251llo w\303\266rld" + y\n' >"$tmp/c2.dml"
check_caret "caret of an undefined variable after UTF-8 text" c2.dml "$(printf 'c2.dml:1:21: undefined variable '"'y'"'\n    x = "h\303\251llo w\303\266rld" + y\n                        ^')
"
printf 'x = "\346\227\245\346\234\254" + nrow(matrix(0, 2, 3) %%*%% matrix(0, 2, 3))\n' >"$tmp/c3.dml"
check_caret "caret of a run-time error after wide characters" c3.dml "$(printf 'c3.dml:1:17: invalid dimensions for matrix multiplication (k1=3, k2=2)\n    x = "\346\227\245\346\234\254" + nrow(matrix(0, 2, 3) %%*%% matrix(0, 2, 3))\n                      ^')
"
printf 'x = "h\303\251llo" + undefined_fn(1)\n' >"$tmp/c5.dml"
check_caret "caret of a resolve error after UTF-8 text" c5.dml "$(printf 'c5.dml:1:15: Function undefined_fn() is undefined.\n    x = "h\303\251llo" + undefined_fn(1)\n                  ^')
"
printf 'if (TRUE) {\n\tb =\t"\303\251" + zz\n}\n' >"$tmp/c4.dml"
check_caret "caret under a tab-indented line" c4.dml "$(printf 'c4.dml:2:12: undefined variable '"'zz'"'\n    \tb =\t"\303\251" + zz\n    \t   \t      ^')
"

# ---- argument errors of builtins written in DML ----------------------------------
# Their first stderr line names the stdlib file by its absolute path, which a
# script test's .err cannot hold; the message is matched here.
printf 'X = matrix("1 2 1 2", rows=4, cols=1)\n[TK, TKC, D] = slicefinder(X, matrix(1, rows=3, cols=1))\n' >"$tmp/sf.dml"
check "slicefinder: e of the wrong length" 1 'sliceLine\.dml:[0-9]+:[0-9]+: sliceLine: e must be 4 x 1, got 3x1$' \
    "$DML" run "$tmp/sf.dml"
check "slicefinder: the error's call stack names slicefinder" 1 '^  in slicefinder\(\) called at .*sf\.dml:2:' \
    "$DML" run "$tmp/sf.dml"
printf 'f = function(Matrix[Double] X, Matrix[Double] y, Double a) return (Matrix[Double] B) { B = as.matrix(a) }\n' >"$tmp/gs.dml"
printf 'g = function(Matrix[Double] X, Matrix[Double] y, Matrix[Double] B) return (Matrix[Double] l) { l = B }\n' >>"$tmp/gs.dml"
printf '[B, o] = gridSearch(X=matrix(1, 4, 2), y=matrix(1, 4, 1), train="f", predict="g", params=list("a"),\n' >>"$tmp/gs.dml"
printf '  paramValues=list(matrix(0, 0, 1)), trainArgs=list(X=matrix(1, 4, 2), y=matrix(1, 4, 1), a=0), verbose=FALSE)\n' >>"$tmp/gs.dml"
check "gridSearch: a parameter without values is named (was an invalid column range 1:0)" 1 \
    'gridSearch\.dml:[0-9]+:[0-9]+: gridSearch: paramValues\[1\] \(for a\) holds no value$' "$DML" run "$tmp/gs.dml"
sed -i 's/paramValues=list(matrix(0, 0, 1))/paramValues=list(seq(1, 2))/; s/verbose=FALSE)/cv=TRUE, cvk=9, verbose=FALSE)/' "$tmp/gs.dml"
check "gridSearch: too many folds, the fold size an integer" 1 \
    'gridSearch: 4 rows are too few for 9 folds of 1$' "$DML" run "$tmp/gs.dml"

# ---- a stray '.' is skipped with upstream's warning (COMPAT.md 11) ---------------
printf 'x = 2;.\nprint(x + 1).\n' > "$tmp/dot.dml"
check "a stray '.' warns on stderr" 0 "dot\.dml:1:7: warning: token recognition error at: '\.'" "$DML" run "$tmp/dot.dml"
check "a stray '.' is skipped and the script runs on" 0 '^3$' "$DML" run "$tmp/dot.dml"

# ---- every example in the reference runs -----------------------------------------
# The indented example of each doc entry, fed to the REPL (stdin) in an empty
# folder, must run without an error. Entries whose example needs a file or a
# model it does not build (read, paramserv's arguments) are listed here.
skip_examples='stop|map|read|readMM|paramserv|batch_norm2d_backward|lstm_backward|hyperparams|utype, BSP, ASP, SBP, SSP|freq, BATCH, EPOCH, NBATCHES|modelAvg|dispatch, STATIC, DYNAMIC|record, replay|timeline, --trace|scheme, DISJOINT_CONTIGUOUS, DISJOINT_ROUND_ROBIN, DISJOINT_RANDOM, OVERLAP_RESHUFFLE|epochs, batchsize, k|servers|checkpointing, checkpoint_path|verbose|history|repl, quit, q'
mkdir -p "$tmp/ex"
for md in "$root"/doc/language.md "$root"/doc/builtins.md "$root"/doc/paramserv.md "$root"/doc/nn.md; do
    rm -f "$tmp/ex"/*.dml "$tmp/ex/names"
    awk -v dir="$tmp/ex" '
        /^#/ { name = ""; if ($0 ~ /^### /) { name = substr($0, 5); n++; print name > (dir "/names") } next }
        name != "" && /^    / { print substr($0, 5) > (dir "/" n ".dml") }' "$md"
    i=0
    while IFS= read -r name; do
        i=$((i + 1))
        [ -f "$tmp/ex/$i.dml" ] || { bad "$(basename "$md"): $name" "no example"; continue; }
        if printf '%s\n' "$name" | grep -Eqx -- "$skip_examples"; then continue; fi
        if (cd "$tmp/ex" && "$DML" <"$i.dml" >"$tmp/out" 2>&1); then
            ok "example of $(basename "$md"): $name"
        else
            bad "example of $(basename "$md"): $name" "failed"
        fi
    done <"$tmp/ex/names"
done

# ---- the OpenBLAS kernel, chosen by measurement and cached (runtime/blas.c) ----
echo 'print(sum(matrix(1, rows=2, cols=2) %*% matrix(1, rows=2, cols=2)))' >"$tmp/mm.dml"
check "--stats: the BLAS kernel, measured" 0 '^BLAS kernel:.*\((fastest measured;|OpenBLAS.s own pick)' \
    env -u OPENBLAS_CORETYPE XDG_CACHE_HOME="$tmp/cache" DML_BLAS_CORETYPE=measure "$DML" run "$tmp/mm.dml" --stats
check "--stats: the BLAS kernel, from the cache" 0 '^BLAS kernel:.*\((fastest measured, cached;|OpenBLAS.s own pick)' \
    env -u OPENBLAS_CORETYPE -u DML_BLAS_CORETYPE XDG_CACHE_HOME="$tmp/cache" "$DML" run "$tmp/mm.dml" --stats
check "--stats: OPENBLAS_CORETYPE is left alone" 0 '^BLAS kernel:.*\(OPENBLAS_CORETYPE\)' \
    env -u DML_BLAS_CORETYPE OPENBLAS_CORETYPE=Prescott "$DML" run "$tmp/mm.dml" --stats
check "--stats: DML_BLAS_CORETYPE=library keeps OpenBLAS's pick" 0 '^BLAS kernel:.*\(OpenBLAS.s own pick\)' \
    env -u OPENBLAS_CORETYPE DML_BLAS_CORETYPE=library "$DML" run "$tmp/mm.dml" --stats

# ---- run's options before or after FILE --------------------------------------
printf 'print("r=" + as.scalar(rand(rows=1, cols=1, seed=-1)))\nprint("a=" + $1)\n' >"$tmp/opt.dml"
"$DML" run "$tmp/opt.dml" --seed 3 -args x >"$tmp/seed_after" 2>&1
check "run --seed N FILE" 0 '^r=' "$DML" run --seed 3 "$tmp/opt.dml" -args x
if cmp -s "$tmp/out" "$tmp/seed_after"; then ok "--seed before FILE = --seed after FILE"; else bad "--seed before FILE = --seed after FILE" "outputs differ"; fi
check "run --stats FILE" 0 '^SystemDS Statistics:$' "$DML" run --stats "$tmp/opt.dml" -args x
check "run --stats N FILE --seed N" 0 '^a=y$' "$DML" run --stats 2 "$tmp/opt.dml" --seed 1 -args y
check "-f --seed N FILE -args" 0 '^a=z$' "$DML" -f --seed 3 "$tmp/opt.dml" -args z
printf 'print("three")\n' >"$tmp/3.dml"
check "run --stats 3.dml: a file, not a count" 0 '^three$' sh -c "cd '$tmp' && '$DML' run --stats 3.dml"
check "-args takes the rest (options there are arguments)" 0 '^a=--seed$' "$DML" run "$tmp/opt.dml" -args --seed 4
check "unknown option before FILE" 2 "^dml: unknown option '--bogus'$" "$DML" run --bogus "$tmp/opt.dml"
check "unknown option after FILE" 2 "^dml: unknown option '--bogus'$" "$DML" run "$tmp/opt.dml" --bogus
check "a second FILE is an unknown option" 2 "^dml: unknown option 'extra'$" "$DML" run "$tmp/opt.dml" extra
check "options but no FILE" 2 '^dml: run: missing script file$' "$DML" run --seed 3
check "--seed before FILE needs its number" 2 "^dml: --seed: '$tmp/opt.dml' is not an integer$" "$DML" run --seed "$tmp/opt.dml"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
