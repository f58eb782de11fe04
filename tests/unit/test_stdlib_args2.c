/* SPDX-License-Identifier: Apache-2.0
 * Argument errors of more builtins written in DML (stdlib/builtin/): as
 * test_stdlib_args.c, a program that must fail and the text its message
 * must contain (the position names the stdlib file, whose path depends on
 * the installation). Run from the repository root, as tests/run.sh does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/registry.h"
#include "check.h"
#include "run_src.h"

typedef struct Case {
    const char *src;            /* a program that must fail */
    const char *msg;            /* text the error message must contain */
} Case;

static const Case cases[] = {
    /* ampute */
    {"A = ampute(X=matrix(1, rows=3, cols=2), prop=0)\n",
     "ampute: prop must be in (0, 1], got 0.0"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), mech=\"mar\")\n",
     "ampute: mech must be \"MAR\", \"MNAR\" or \"MCAR\", got \"mar\""},
    {"A = ampute(X=matrix(\"1 NaN\", rows=1, cols=2))\n",
     "ampute: X already holds missing values (NaN)"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), patterns=matrix(0, rows=1, cols=3))\n",
     "ampute: patterns must be k x 2, got 1x3"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), patterns=matrix(\"0 2\", rows=1, cols=2))\n",
     "ampute: patterns may only hold 0 and 1"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), patterns=matrix(\"0 1 1 1\", rows=2, cols=2))\n",
     "ampute: every pattern must mark at least one variable 0 (missing)"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), freq=matrix(0.5, rows=3, cols=1))\n",
     "ampute: freq must hold 2 values (one per pattern), got 3x1"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), freq=matrix(0.6, rows=2, cols=1))\n",
     "ampute: freq must be non-negative and sum to 1, sums to 1.2"},
    {"A = ampute(X=matrix(1, rows=3, cols=2), mech=\"MNAR\", weights=matrix(1, rows=1, cols=2))\n",
     "ampute: weights must be 2 x 2, got 1x2"},
    /* hyperband */
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, H] = hyperband(X, X[, 1], X, X[1:3, 1], list(\"reg\"), matrix(\"0 1\", rows=1, cols=2))\n",
     "hyperband: y_val must be 4 x 1, got 3x1"},
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, H] = hyperband(X, X[, 1], X, X[, 1], list(\"reg\", \"tol\"), matrix(\"0 1\", rows=1, cols=2))\n",
     "hyperband: paramRanges must be 2 x 2 (min, max per parameter), got 1x2"},
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, H] = hyperband(X, X[, 1], X, X[, 1], list(\"maxi\"), matrix(\"0 1\", rows=1, cols=2))\n",
     "hyperband: cannot tune 'maxi'; lmCG's tunable arguments are reg, tol and icpt"},
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, H] = hyperband(X, X[, 1], X, X[, 1], list(\"reg\"), matrix(\"2 1\", rows=1, cols=2))\n",
     "hyperband: a parameter's min exceeds its max in paramRanges"},
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, H] = hyperband(X, X[, 1], X, X[, 1], list(\"reg\"), matrix(\"0 1\", rows=1, cols=2), eta=1)\n",
     "hyperband: eta must be at least 2, got 1"},
    /* shapExplainer */
    {"f = function(Matrix[Double] X) return (Matrix[Double] y) { y = rowSums(X) }\n"
     "[P, e] = shapExplainer(\"f\", list(), matrix(1, rows=1, cols=2), matrix(1, rows=3, cols=3))\n",
     "shapExplainer: X_bg must have 2 columns like x_instances, got 3"},
    {"f = function(Matrix[Double] X) return (Matrix[Double] y) { y = rowSums(X) }\n"
     "[P, e] = shapExplainer(\"f\", list(), matrix(1, rows=1, cols=2), matrix(1, rows=3, cols=2), n_permutations=0)\n",
     "shapExplainer: n_permutations must be at least 1, got 0"},
    {"f = function(Matrix[Double] X) return (Matrix[Double] y) { y = rowSums(X) }\n"
     "[P, e] = shapExplainer(\"f\", list(), matrix(1, rows=1, cols=2), matrix(1, rows=3, cols=2),\n"
     "  partitions=matrix(\"1 2\", rows=1, cols=2))\n",
     "shapExplainer: partitions are not supported; pass the default as.matrix(-1)"},
    {"f = function(Matrix[Double] X) return (Matrix[Double] y) { y = X }\n"
     "[P, e] = shapExplainer(\"f\", list(), matrix(1, rows=1, cols=2), matrix(1, rows=3, cols=2))\n",
     "shapExplainer: the model must return 3 x 1 predictions, got 3x2"},
    /* deepWalk */
    {"P = deepWalk(matrix(0, rows=3, cols=2), 2, 4, 1, 5)\n",
     "deepWalk: Graph must be a square adjacency matrix, got 3x2"},
    {"P = deepWalk(matrix(0, rows=3, cols=3), 2, 4, 1, 1)\n",
     "deepWalk: need w >= 1, d >= 1, gamma >= 1 and t >= 2, got w=2, d=4, gamma=1, t=1"},
    {"P = deepWalk(matrix(0, rows=3, cols=3), 2, 4, 1, 5, alpha=0)\n",
     "deepWalk: alpha must be positive, got 0.0"},
    {"f = function(Matrix[Double] X) return (Matrix[Double] y) { y = rowSums(X) }\n"
     "[P, e] = shapExplainer(\"f\", list(), matrix(1, rows=0, cols=2), matrix(1, rows=3, cols=2))\n",
     "shapExplainer: x_instances and X_bg need rows and columns, got 0x2 and 3x2"},
};

int main(void)
{
    builtin_registry_install();
    setenv("DML_STDLIB", "stdlib", 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *msg = NULL;
        RunResult rc = run_src(&(RunOpts){.name = "args.dml"}, cases[i].src, strlen(cases[i].src), &msg);
        bool ok = rc == RUN_ERROR && msg && strstr(msg, cases[i].msg);
        check_report_(ok, __FILE__, __LINE__, "case %zu: want an error containing \"%s\", got %s", i, cases[i].msg,
                      msg ? msg : "(no error)");
        free(msg);
    }
    return CHECK_DONE();
}
