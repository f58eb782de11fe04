/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for builtins/paramserv/readset.c: which model entries a
 * worker's function can read, so that a pull under Open MPI carries only
 * those. Literal indexes (model[2], model[1:3], inside as.matrix or
 * as.scalar, in any statement) give their entries; everything else that
 * could see another entry gives "every entry": an index computed at run
 * time, a name or [i, j] index, the bare model passed to a function,
 * copied, returned or measured, a write to it, an index past the model.
 * Prints "N passed, N failed"; exits non-zero on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../builtins/paramserv/ps.h"
#include "check.h"
#include "runtime/program.h"
#include "builtins/registry.h"
#include "runtime/resolve.h"

#define N 6

/* Loads src, scans function f for a model of N entries. Returns 1 with
 * need filled when the scan tells, 0 when f may read any entry, -1 when the
 * program does not load. */
static int reads(const char *src, const char *f, bool need[N])
{
    Program *p = program_new();
    Node **stmts = NULL;
    int n = 0;
    DiagErr err;
    int r = -1;
    if (!program_load_main(p, "readset.dml", src, strlen(src), &stmts, &n, &err)) {
        char *msg = program_render_err(p, &err, false);
        fprintf(stderr, "%s\n", msg ? msg : err.msg);
        free(msg);
    } else {
        const FuncDef *fd = program_find_func(p, NULL, f);
        if (fd)
            r = ps_model_reads(fd, N, need) ? 1 : 0;
    }
    program_free(p);
    return r;
}

/* "101000": which entries the scan must report. */
static void expect_entries(const char *what, const char *src, const char *want)
{
    bool need[N];
    int r = reads(src, "f", need);
    char got[N + 1] = {0};
    for (int i = 0; r == 1 && i < N; i++)
        got[i] = need[i] ? '1' : '0';
    check_report_(r == 1 && strcmp(got, want) == 0, __FILE__, __LINE__, "%s: scan %d, entries %s, expected %s",
                  what, r, r == 1 ? got : "-", want);
}

static void expect_all(const char *what, const char *src)
{
    bool need[N];
    int r = reads(src, "f", need);
    check_report_(r == 0, __FILE__, __LINE__, "%s: scan %d, expected 0 (every entry)", what, r);
}

#define HEAD "f = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features, " \
             "matrix[double] labels) return (list[unknown] g) {\n"

static void test_literal_entries(void)
{
    /* upstream LeNet's gradients: weights and biases, not the velocities */
    expect_entries("as.matrix(model[i]) of literals",
                   HEAD "  W = as.matrix(model[1]); b = as.matrix(model[2])\n"
                   "  g = list(t(features) %*% (features %*% W + b - labels), b)\n}\n", "110000");
    expect_entries("as.scalar, a range, nested in expressions and branches",
                   HEAD "  s = as.scalar(as.matrix(model[6]))\n"
                   "  L = model[3:4]\n"
                   "  if (s > 0) { x = sum(as.matrix(model[1])) } else { x = 0 }\n"
                   "  g = list(as.matrix(L[1]) * x)\n}\n", "101101");
    expect_entries("an entry passed on to another function",
                   "h = function(list[unknown] m) return (double s) { s = sum(as.matrix(m[1])) }\n"
                   HEAD "  g = list(matrix(h(model[5]), rows=1, cols=1))\n}\n", "000010");
    expect_entries("a loop over other variables",
                   HEAD "  W = as.matrix(model[2])\n  for (i in 1:3) { W = W * i }\n  g = list(W)\n}\n", "010000");
    expect_entries("no use of the model", HEAD "  g = list(features)\n}\n", "000000");
    expect_entries("no model parameter at all",
                   "f = function(matrix[double] features, matrix[double] labels) return (list[unknown] g) {\n"
                   "  g = list(features)\n}\n", "000000");
}

static void test_every_entry(void)
{
    expect_all("an index computed at run time (model[i] in a loop)",
               HEAD "  g = list()\n  for (i in 1:2) { g = append(g, as.matrix(model[i])) }\n}\n");
    expect_all("the model passed to another function",
               "h = function(list[unknown] m) return (double s) { s = sum(as.matrix(m[1])) }\n"
               HEAD "  g = list(matrix(h(model), rows=1, cols=1))\n}\n");
    expect_all("the model copied", HEAD "  m2 = model\n  g = list(as.matrix(m2[1]))\n}\n");
    expect_all("the model's length", HEAD "  g = list(matrix(length(model), rows=1, cols=1))\n}\n");
    expect_all("an entry by name", HEAD "  g = list(as.matrix(model[\"W\"]))\n}\n");
    expect_all("an [i, j] index", HEAD "  g = list(as.matrix(model[1, ]))\n}\n");
    expect_all("an entry past the model", HEAD "  g = list(as.matrix(model[7]))\n}\n");
    expect_all("a range given backwards", HEAD "  g = model[3:2]\n}\n");
    expect_all("a write to an entry", HEAD "  model[1] = features\n  g = list(as.matrix(model[1]))\n}\n");
    expect_all("the model reassigned", HEAD "  model = list(features)\n  g = list(as.matrix(model[1]))\n}\n");
    expect_all("the model as a loop variable", HEAD "  g = list()\n  for (model in 1:2) { g = append(g, model) }\n}\n");
    expect_all("the model returned",
               "f = function(list[unknown] model, list[unknown] gradients) return (list[unknown] model) {\n"
               "  x = as.matrix(model[1])\n}\n");
    expect_all("the model as a result of [a, b] = ...",
               "h = function() return (list[unknown] a, double b) { a = list(); b = 1 }\n"
               HEAD "  [model, s] = h()\n  g = list(as.matrix(model[1]))\n}\n");
}

int main(void)
{
    builtin_registry_install();
    test_literal_entries();
    test_every_entry();
    return CHECK_DONE();
}
