/* SPDX-License-Identifier: Apache-2.0
 * Builtins written in DML (stdlib/builtin/) reject bad arguments with a
 * clear message that names the builtin. A unit test rather than X.err
 * script tests because the message's position is the stdlib file's path,
 * which depends on where dml is installed; here DML_STDLIB points at the
 * tree's stdlib/ (run from the repository root, as tests/run.sh does) and
 * only the message text is checked. */
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
    /* frameSort */
    {"F = as.frame(matrix(1, rows=2, cols=2))\n"
     "G = frameSort(F, matrix(0, rows=1, cols=3))\n",
     "frameSort: mask must be 1 x 2, got 1x3"},
    {"G = frameSort(matrix(1, rows=2, cols=2), matrix(0, rows=1, cols=2))\n",
     "argument 'F' of frameSort() must be a frame"},
    /* frequencyEncode, frequencyEncodeApply */
    {"[Y, f] = frequencyEncode(matrix(1, rows=2, cols=2), matrix(1, rows=2, cols=1))\n",
     "frequencyEncode: mask must be 1 x 2, got 2x1"},
    {"[Y, f] = frequencyEncode(matrix(\"1 NaN\", rows=2, cols=1), matrix(1, rows=1, cols=1))\n",
     "frequencyEncode: column 1 has missing values (NaN); impute them first"},
    {"[Y, f] = frequencyEncode(matrix(\"1 0 5 5\", rows=2, cols=2), matrix(\"0 1\", rows=1, cols=2))\n",
     "frequencyEncode: column 2 must hold category codes 1, 2, ..., found 0"},
    {"Y = frequencyEncodeApply(matrix(1, rows=2, cols=2), matrix(1, rows=3, cols=2))\n",
     "frequencyEncodeApply: freqCount must have one row per column of X (2), got 3x2"},
    {"Y = frequencyEncodeApply(matrix(\"1 -1\", rows=2, cols=1), matrix(1, rows=1, cols=2))\n",
     "frequencyEncodeApply: column 1 must hold category codes 1, 2, ..., found -1"},
    /* xgboostPredict */
    {"P = xgboostPredict(matrix(1, rows=2, cols=1), matrix(0, rows=3, cols=3))\n",
     "xgboostPredict: M must be an xgboost model (6 rows, at least 2 columns), got 3x3"},
    /* sliceLineDebug */
    {"[X, M] = transformencode(target=as.frame(list(\"a\", \"b\")), spec=\"{recode: [C1]}\")\n"
     "S = sliceLineDebug(matrix(1, rows=1, cols=2), matrix(1, rows=1, cols=4), M, \"{recode: [C1]}\")\n",
     "sliceLineDebug: tfmeta has 1 columns but TK has 2"},
    {"[X, M] = transformencode(target=as.frame(list(\"a\", \"b\")), spec=\"{recode: [C1]}\")\n"
     "S = sliceLineDebug(matrix(1, rows=1, cols=1), matrix(1, rows=1, cols=3), M, \"{recode: [C1]}\")\n",
     "sliceLineDebug: TKC must be 1 x 4 (score, error sum, max error, size), got 1x3"},
    /* incSliceLine */
    {"[TK, TKC, D, L, M, S, Xo, eo, p] = incSliceLine(addedX=matrix(1, rows=3, cols=2), addedE=matrix(1, rows=2, cols=1))\n",
     "incSliceLine: addedE must be 3 x 1, got 2x1"},
    {"[TK, TKC, D, L, M, S, Xo, eo, p] = incSliceLine(addedX=matrix(1, rows=3, cols=2), addedE=matrix(1, rows=3, cols=1),\n"
     "  indicesRemoved=matrix(4, rows=1, cols=1))\n",
     "incSliceLine: indicesRemoved must hold row numbers 1..3"},
    {"[TK, TKC, D, L, M, S, Xo, eo, p] = incSliceLine(addedX=matrix(1, rows=3, cols=2), addedE=matrix(1, rows=3, cols=1),\n"
     "  oldX=matrix(1, rows=2, cols=3), oldE=matrix(1, rows=2, cols=1))\n",
     "incSliceLine: oldX has 3 columns but addedX has 2"},
    /* denialConstraints */
    {"D = as.frame(matrix(\"3 5\", rows=2, cols=1))\n"
     "W = denialConstraints(D, as.frame(matrix(1, rows=1, cols=7)))\n",
     "denialConstraints: constraintsFrame must have 8 columns (idx, constraint.type, group.by, "
     "group.variable, group.option, variable1, relation, variable2), got 7"},
    {"D = as.frame(matrix(\"3 5\", rows=2, cols=1))\n"
     "C = cbind(as.frame(list(\"1\")), as.frame(list(\"valueCompare\")), as.frame(list(\"FALSE\")), as.frame(list(\"\")),\n"
     "  as.frame(list(\"\")), as.frame(list(\"salary\")), as.frame(list(\"<\")), as.frame(list(\"4\")))\n"
     "W = denialConstraints(D, C)\n",
     "denialConstraints: constraint 1: 'salary' is no column of dataFrame"},
    /* gridSearch */
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, o] = gridSearch(X=X, y=X[, 1], train=\"lm\", predict=\"lm\", params=list(\"reg\", \"tol\"),\n"
     "  paramValues=list(seq(1, 2)), verbose=FALSE)\n",
     "gridSearch: 2 params but 1 paramValues"},
    {"X = matrix(1, rows=4, cols=2)\n"
     "[B, o] = gridSearch(X=X, y=X[, 1], train=\"lm\", predict=\"lm\", params=list(),\n"
     "  paramValues=list(), verbose=FALSE)\n",
     "gridSearch: params is empty"},
    {"X = matrix(1, rows=2, cols=2)\n"
     "[B, o] = gridSearch(X=X, y=X[, 1], train=\"lm\", predict=\"lm\", params=list(\"reg\"),\n"
     "  paramValues=list(seq(1, 2)), cv=TRUE, cvk=3, verbose=FALSE)\n",
     "gridSearch: 2 rows are too few for 3 folds of 1"},
    /* skewness */
    {"y = skewness(matrix(1, rows=1, cols=1))\n",
     "skewness: X must hold at least 2 values, got 1"},
    /* bivar */
    {"[a, b, c, d] = bivar(matrix(1, rows=3, cols=2), as.matrix(3), as.matrix(1), as.matrix(1), as.matrix(1), FALSE)\n",
     "bivar: S1 must hold column numbers 1..2"},
    {"[a, b, c, d] = bivar(matrix(1, rows=3, cols=2), as.matrix(1), as.matrix(1), matrix(1, rows=1, cols=2),\n"
     "  as.matrix(1), FALSE)\n",
     "bivar: T1 must be 1 x 1 like S1, got 1x2"},
    {"[a, b, c, d] = bivar(matrix(1, rows=3, cols=2), as.matrix(1), as.matrix(2), as.matrix(1), as.matrix(4), FALSE)\n",
     "bivar: T2 must hold kinds 1 (scale), 2 (nominal) or 3 (ordinal)"},
    {"[a, b, c, d] = bivar(matrix(0.5, rows=3, cols=2), as.matrix(1), as.matrix(2), as.matrix(2), as.matrix(1), FALSE)\n",
     "bivar: categorical column 1 must hold category codes 1, 2, ..."},
    {"[a, b, c, d] = bivar(matrix(1, rows=1, cols=2), as.matrix(1), as.matrix(2), as.matrix(1), as.matrix(1), FALSE)\n",
     "bivar: X must have at least 2 rows, got 1"},
    /* WoE, WoEApply */
    {"[F, E] = WoE(matrix(1, rows=2, cols=2), matrix(\"1 2\", rows=2, cols=1), matrix(1, rows=1, cols=3))\n",
     "WoE: mask must be 1 x 2, got 1x3"},
    {"[F, E] = WoE(matrix(1, rows=2, cols=2), matrix(1, rows=3, cols=1), matrix(1, rows=1, cols=2))\n",
     "WoE: Y must be 2 x 1, got 3x1"},
    {"[F, E] = WoE(matrix(1, rows=2, cols=2), matrix(\"0 1\", rows=2, cols=1), matrix(1, rows=1, cols=2))\n",
     "WoE: Y must hold the labels 1 and 2"},
    {"[F, E] = WoE(matrix(\"1 0\", rows=2, cols=1), matrix(\"1 2\", rows=2, cols=1), matrix(1, rows=1, cols=1))\n",
     "WoE: column 1 must hold category codes 1, 2, ..."},
    {"[F, E] = WoE(matrix(\"1 NaN\", rows=2, cols=1), matrix(\"1 2\", rows=2, cols=1), matrix(1, rows=1, cols=1))\n",
     "WoE: the rows of column 1 that hold a code must have both labels"},
    {"F = WoEApply(matrix(1, rows=2, cols=2), matrix(1, rows=2, cols=1), matrix(1, rows=3, cols=2))\n",
     "WoEApply: entropyMatrix must have one row per column of X (2), got 3x2"},
    {"F = WoEApply(matrix(\"1 2.5\", rows=2, cols=1), matrix(1, rows=2, cols=1), matrix(1, rows=1, cols=2))\n",
     "WoEApply: column 1 must hold category codes 1, 2, ..."},
    /* imputeByFD, imputeByFDApply, discoverFD */
    {"[Y, M] = imputeByFD(matrix(1, rows=2, cols=1), matrix(1, rows=2, cols=1), 1.5)\n",
     "Stopping due to invalid input, threshold required in interval [0, 1] found 1.5"},
    {"[Y, M] = imputeByFD(matrix(1, rows=2, cols=1), matrix(1, rows=3, cols=1), 0.5)\n",
     "imputeByFD: X and Y must be columns of one length, got 2x1 and 3x1"},
    {"[Y, M] = imputeByFD(matrix(1, rows=2, cols=1), matrix(\"1 0\", rows=2, cols=1), 0.5)\n",
     "imputeByFD: Y must hold codes 1, 2, ... (NaN for missing values)"},
    {"[Y, M] = imputeByFD(matrix(NaN, rows=2, cols=1), matrix(1, rows=2, cols=1), 0.5)\n",
     "imputeByFD: X holds no code"},
    {"Y = imputeByFDApply(matrix(1, rows=2, cols=2), matrix(1, rows=2, cols=1))\n",
     "imputeByFDApply: X must be a column, got 2x2"},
    {"Y = imputeByFDApply(matrix(1, rows=2, cols=1), matrix(NaN, rows=2, cols=1))\n",
     "imputeByFDApply: Y_imp must hold target codes or 0, found NaN"},
    {"Y = imputeByFDApply(matrix(-1, rows=2, cols=1), matrix(1, rows=2, cols=1))\n",
     "imputeByFDApply: X must hold codes 1, 2, ... (NaN for missing values)"},
    {"FD = discoverFD(matrix(1, rows=2, cols=2), matrix(1, rows=1, cols=2), -0.5)\n",
     "Stopping due to invalid input, threshold required in interval [0, 1] found -0.5"},
    {"FD = discoverFD(matrix(1, rows=2, cols=2), matrix(1, rows=1, cols=3), 0.5)\n",
     "Stopping due to dimension mismatch in Matrix and Mask"},
    {"FD = discoverFD(matrix(0.5, rows=2, cols=2), matrix(1, rows=1, cols=2), 0.5)\n",
     "discoverFD: X must hold codes 1, 2, ... (NaN for missing values)"},
    /* mice, miceApply */
    {"[a, b, c, d, e] = mice(matrix(1, rows=3, cols=1), matrix(0, rows=1, cols=1))\n",
     "MICE can not be applied on single vectors. expected number of columns > 1 found: 1"},
    {"[a, b, c, d, e] = mice(matrix(1, rows=3, cols=2), matrix(0, rows=1, cols=3))\n",
     "mice: cMask must be 1 x 2, got 1x3"},
    {"[a, b, c, d, e] = mice(matrix(1, rows=3, cols=2), matrix(2, rows=1, cols=2))\n",
     "mice: cMask must hold 0 (numeric) and 1 (categorical)"},
    {"[a, b, c, d, e] = mice(matrix(1, rows=3, cols=2), matrix(0, rows=1, cols=2), iter=0)\n",
     "mice: iter must be at least 1, got 0"},
    {"[a, b, c, d, e] = mice(matrix(1, rows=3, cols=2), matrix(0, rows=1, cols=2), threshold=2)\n",
     "mice: threshold must lie in [0, 1], got 2.0"},
    {"[a, b, c, d, e] = mice(matrix(NaN, rows=3, cols=2), matrix(0, rows=1, cols=2))\n",
     "mice: column 1 has no observed value"},
    {"[a, b, c, d, e] = mice(matrix(0.5, rows=3, cols=2), matrix(1, rows=1, cols=2))\n",
     "mice: categorical column 1 must hold codes 1, 2, ..."},
    {"o = miceApply(matrix(1, rows=3, cols=2), matrix(0, rows=2, cols=2), 0.5, as.frame(matrix(0, rows=1, cols=2)),\n"
     "  list(1, 2))\n",
     "miceApply: meta must be 3 x 2 (from mice), got 2x2"},
    {"o = miceApply(matrix(1, rows=3, cols=2), matrix(0, rows=3, cols=2), 0.5, as.frame(matrix(0, rows=1, cols=2)),\n"
     "  list(1))\n",
     "miceApply: dM and betaList must have one entry per column of X (2), got 2 and 1"},
    {"o = miceApply(matrix(\"NaN 1\", rows=1, cols=2), matrix(0, rows=3, cols=2), 0.5,\n"
     "  as.frame(matrix(0, rows=1, cols=2)), list(matrix(1, rows=3, cols=1), matrix(1, rows=3, cols=1)))\n",
     "miceApply: a model has 3 rows, expected 2"},
    /* wer */
    {"W = wer(as.frame(list(\"a\", \"b\")), as.frame(\"a\"))\n",
     "wer: R and H must be n x 1 frames of one length, got 2x1 and 1x1"},
    {"W = wer(matrix(1, rows=1, cols=1), as.frame(\"a\"))\n",
     "argument 'R' of wer() must be a frame"},
    {"s = \"\"\n"
     "for (i in 1:201) s = s + \" w\"\n"
     "W = wer(as.frame(\"a\"), as.frame(s))\n",
     "wer: H[1] has 201 words; at most 200 are supported"},
    /* fixInvalidLengths, fixInvalidLengthsApply */
    {"[o, M, l, h] = fixInvalidLengths(as.frame(\"a\"), matrix(1, rows=1, cols=1), 0.9, 0.1)\n",
     "fixInvalidLengths: need 0 <= ql <= qu <= 1, got ql=0.9 and qu=0.1"},
    {"[o, M, l, h] = fixInvalidLengths(as.frame(\"a\"), matrix(1, rows=1, cols=2))\n",
     "fixInvalidLengths: mask must be 1 x 1, got 1x2"},
    {"[o, M, l, h] = fixInvalidLengths(as.frame(matrix(1, rows=2, cols=1)), matrix(1, rows=1, cols=1))\n",
     "fixInvalidLengths: column 1 is checked but holds FP64, not STRING"},
    {"[o, M] = fixInvalidLengthsApply(as.frame(\"a\"), matrix(1, rows=1, cols=1), matrix(0, rows=1, cols=2),\n"
     "  matrix(0, rows=1, cols=1))\n",
     "fixInvalidLengthsApply: qLow and qUp must be 1 x 1, got 1x2 and 1x1"},
    /* ema */
    {"M = ema(as.frame(matrix(1, rows=3, cols=1)), 1, \"quadruple\", 1, 0.5, 0.5, 0.5)\n",
     "ema: mode must be \"single\", \"double\" or \"triple\", got \"quadruple\""},
    {"M = ema(as.frame(matrix(1, rows=3, cols=1)), 1, \"triple\", 0, 0.5, 0.5, 0.5)\n",
     "ema: mode \"triple\" needs a season length freq >= 1, got 0"},
    {"M = ema(as.frame(matrix(1, rows=3, cols=1)), 0, \"single\", 1, 0.5, 0.5, 0.5)\n",
     "ema: search_iterations must be at least 1, got 0"},
    /* ses */
    {"Y = ses(matrix(1, rows=3, cols=1), 1.5)\n",
     "ses: alpha must lie in [0, 1], got 1.5"},
    {"Y = ses(matrix(\"1 NaN\", rows=2, cols=1), 0.5)\n",
     "ses: X has missing values (NaN); impute them first"},
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
