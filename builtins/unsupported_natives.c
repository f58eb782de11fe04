/* SPDX-License-Identifier: Apache-2.0
 * Upstream native builtins that dml refuses, each with its reason
 * (doc/builtins.md, "Upstream natives dml refuses"). Their names are known
 * to dml so that a call says why it cannot run, instead of "is undefined";
 * a user function of the same name defined in the calling file still wins
 * (doc/language.md). Either dml lacks the machinery (lineage tracing,
 * compressed matrices) or upstream's exact results are not pinned down
 * well enough to reproduce: a guess would be a wrong answer, which is worse
 * than an error. Thread-safe: the table is const. */
#include "registry.h"

#include <string.h>

typedef struct Refusal {
    const char *name, *why;
} Refusal;

static const Refusal refusals[] = {
    {"getCategoricalMask", "which encoded columns upstream marks as categorical (recoded, binned, dummycoded, "
     "hashed) is not pinned down for dml, and a guessed mask would be a wrong answer; transformcolmap(target=M, "
     "spec=s) gives each column's output range"},
    {"transformmeta", "it reads the transform metadata directory of legacy SystemML (column.names, Recode/*.map, "
     "Bin/*.bin), whose file format dml does not reproduce; save transformencode's meta frame with write(M, f, "
     "format=\"csv\") and read it back with read(f, data_type=\"frame\", format=\"csv\")"},
    {"freplicate", "upstream's frame replication is not pinned down for dml (rbind and indexing replicate rows)"},
    {"valueSwap", "upstream's rule for moving values between columns whose types do not match the schema is not "
     "pinned down for dml"},
    {"range", "upstream's native range is not pinned down for dml; max(X) - min(X) is the spread of X"},
    {"interQuantile", "upstream's range pick between quantiles (its boundary cells and weights) is not pinned down "
     "for dml; quantile(X, p) and interQuartileMean(X) are supported"},
    {"fdr", "upstream's false discovery rate builtin is not pinned down for dml"},
    {"rowClassMeet", "upstream's per-row class meet is not pinned down for dml"},
    {"autoDiff", "it differentiates a lineage trace, and dml records no lineage"},
    {"lineage", "it returns the lineage trace of a value, and dml records no lineage (upstream's -lineage option)"},
    {"quantize_compress", "it builds upstream's quantized compressed matrix, and dml has no compressed matrices "
     "(compress(X) is the identity)"},
};

/* Every name above: the call's error. */
static Status bi_refused(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    const char *name = a->def ? a->def->name : "";
    for (size_t k = 0; k < sizeof refusals / sizeof refusals[0]; k++)
        if (!strcmp(refusals[k].name, name))
            return err_set(I, "%s(): not supported by dml: %s", name, refusals[k].why);
    return err_set(I, "%s(): not supported by dml", name);
}

const BuiltinDef bi_unsupported_natives_table[] = {
    {"getCategoricalMask", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"transformmeta", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"freplicate", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"valueSwap", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"range", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"interQuantile", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"fdr", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"rowClassMeet", bi_refused, "", 0, BIND_VARIADIC, 2, BF_MULTI_OPT},
    {"autoDiff", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"lineage", bi_refused, "", 0, BIND_VARIADIC, 1, 0},
    {"quantize_compress", bi_refused, "", 0, BIND_VARIADIC, 2, BF_MULTI_OPT},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
