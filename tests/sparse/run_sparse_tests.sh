#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The sparse form under a memory cap (issue 31): an operation without a
# sparse kernel on a sparse matrix whose dense form does not fit is a clear
# error naming the operation and both sizes; the sparse kernels, the row
# iterator of toString and left indexing work without a dense copy.
# Ends with "N passed, N failed".   DML=build/release/dml sh tests/sparse/run_sparse_tests.sh

DML=${DML:-build/release/dml}
case "$DML" in /*) ;; *) DML="$PWD/$DML" ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlsparse.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' INT TERM

pass=0
fail=0
# run NAME STATUS REGEX DML-CODE: with matrices capped at 50 MB, the code
# exits with STATUS and a line of its output matches REGEX.
run() {
    DML_MAX_MATRIX_BYTES=50000000 "$DML" -s "$4" >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -ne "$2" ]; then
        fail=$((fail + 1)); echo "FAIL $1: exit status $rc, expected $2"; sed -n '1,10p' "$tmp/out"
    elif ! grep -Eq -- "$3" "$tmp/out"; then
        fail=$((fail + 1)); echo "FAIL $1: no line matching /$3/"; sed -n '1,10p' "$tmp/out"
    else
        pass=$((pass + 1)); echo "ok   $1"
    fi
}

X='X = rand(rows=100000, cols=10000, sparsity=0.0001, seed=1);'
run "kernels without a dense copy" 0 '^99713 ' "$X"'print(nnz(X) + " " + nrow(X) + " " + sum(rowSums(X)))'
run "products" 0 '^ok$' "$X"'v = matrix(1, rows=10000, cols=1); y = X %*% v; z = t(X) %*% y; if (abs(sum(y) - sum(X)) < 1e-6) print("ok")'
run "element-wise" 0 '^ok$' "$X"'Y = abs(X * -2); if (abs(sum(Y) - 2 * sum(X)) < 1e-6) print("ok")'
run "toString of a few rows" 0 '^0.000 0.000' "$X"'print(toString(X[1:2, 1:5]))'
run "left indexing" 0 '^99714$' "$X"'X[3, 3] = 123456; print(nnz(X))'
run "exp densifies: error" 1 '^<inline>:1:[0-9]+: exp: the sparse 100000x10000 matrix \(99,713 non-zeros\) needs 8\.0 GB as a dense matrix, over the 50\.0 MB allowed' "$X"'print(sum(exp(X)))'
run "X + 1 densifies: error" 1 '\+: the sparse 100000x10000 matrix \(99,713 non-zeros\) needs 8\.0 GB' "$X"'Y = X + 1'
run "a builtin without a sparse kernel: error" 1 'cumsum: the sparse 100000x10000 matrix' "$X"'Y = cumsum(X)'
# dummy coding 100,000 rows into ~1000 columns: 800 MB dense, 2 MB sparse
T='A = round(rand(rows=100000, cols=1, min=1, max=1000, seed=1)); F = as.frame(A); s = "{ids: true, recode: [1], dummycode: [1]}";'
run "transformencode one-hot, never dense" 0 '^matrix 100000x1000 \(sparse, 100000 non-zeros\)' "$T"'[X, M] = transformencode(target=F, spec=s); print(describe(X))'
run "transformapply one-hot, never dense" 0 '^matrix 100000x1000 \(sparse, 100000 non-zeros\)' "$T"'[X, M] = transformencode(target=F, spec=s); print(describe(transformapply(target=F, spec=s, meta=M)))'
# paramserv with checkpointing and record/replay on a sparse X whose dense
# form (8 GB) is over the cap: the data's fingerprint reads the non-zeros
# (checkpoint.c), and agrees between the sparse and the dense form
G='g = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features, matrix[double] labels) return (list[unknown] gradients) { gradients = list(t(features) %*% (features %*% as.matrix(model[1]) - labels) / nrow(features)) };'
A='a = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients) return (list[unknown] model_result) { model_result = list(as.matrix(model[1]) - 0.1 * as.matrix(gradients[1])) };'
STOP='a = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients) return (list[unknown] model_result) { stop("trained again") };'
PS='M = paramserv(model=list(matrix(0, rows=ncol(X), cols=1)), features=X, labels=y, upd="g", agg="a", k=2, utype="BSP", freq="EPOCH", epochs=1, batchsize=25000, hyperparams=list(), seed=1, checkpointing="EPOCH", checkpoint_path="'"$tmp/ck"'");'
run "paramserv checkpoints a sparse X too big to densify" 0 '^written$' "$G$A$X"'y = rowSums(X);'"$PS"'print("written")'
run "paramserv resumes that checkpoint (no epoch left to train)" 0 '^resumed$' "$G$STOP$X"'y = rowSums(X);'"$PS"'print("resumed")'
S='X = rand(rows=2000, cols=300, sparsity=0.01, seed=4); y = rowSums(X);'
PS2=$(printf '%s' "$PS" | sed "s|$tmp/ck|$tmp/ck2|")
run "a checkpoint of a sparse X" 0 '^matrix 2000x300 \(sparse.* written$' "$G$A$S$PS2"'print(describe(X) + " written")'
run "resumed with the dense form of that X" 0 '^matrix 2000x300, .* zeros resumed$' \
    "$G$STOP$S"'X = X + matrix(0, rows=nrow(X), cols=ncol(X));'"$PS2"'print(describe(X) + " resumed")'
run "but not with other values" 1 'checkpoint .* was written by another paramserv call on other data' \
    "$G$STOP$S"'X = X * 2;'"$PS2"'print("resumed")'
REC='upd="g", agg="a", k=2, utype="ASP", freq="BATCH", epochs=1, batchsize=10000, hyperparams=list(), seed=2'
run "paramserv records and replays on a sparse X too big to densify" 0 '^same$' "$G$A$X"'y = rowSums(X); M1 = paramserv(model=list(matrix(0, rows=ncol(X), cols=1)), features=X, labels=y, '"$REC"', record="'"$tmp/r.psrec"'"); M2 = paramserv(model=list(matrix(0, rows=ncol(X), cols=1)), features=X, labels=y, '"$REC"', replay="'"$tmp/r.psrec"'"); if (sum(abs(as.matrix(M1[1]) - as.matrix(M2[1]))) == 0) print("same")'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
