/* SPDX-License-Identifier: Apache-2.0
 * Argument-name rules and messages that some builtins keep from upstream,
 * reached by the resolver through BuiltinTable.arg_names_error and
 * .unknown_param_error (runtime/builtin_api.h). Upstream's parser makes
 * seq, matrix and rand DataExpressions, with rules of their own for named
 * and unnamed arguments, checked in its order and worded its way; toString
 * and rand word an unknown parameter their own way (COMPAT.md 7). */
#include <stdio.h>
#include <string.h>

#include "registry.h"

static bool is_one_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(s, *names) == 0)
            return true;
    return false;
}

/* seq: from/to/incr bind by name, but only when every argument is named. */
static const char *seq_rule(int n, int unnamed, const char *const *names, int *at, char *buf, size_t cap)
{
    static const char *const legal[] = {"from", "to", "incr", NULL};
    int named = n - unnamed;
    if (n < 2)
        return "for seq statement, must specify at least from and to parameters";
    if (named && named < n)
        return "for seq statement, cannot mix named and unnamed parameters";
    if (n > 3)
        return "for seq statement, cannot specify more than 3 parameters";
    for (int i = 0; i < n; i++)
        if (names[i] && !is_one_of(names[i], legal)) {
            *at = i;
            snprintf(buf, cap, "unsupported parameter %s. Legal parameters for seq are from, to, incr", names[i]);
            return buf;
        }
    return NULL;
}

/* matrix: all positional (data, rows, cols[, byrow]), or data first
 * (unnamed or data=) and the rest named. */
static const char *matrix_rule(int n, int unnamed, const char *const *names)
{
    static const char mixed[] = "for matrix statement, cannot mix named and unnamed parameters, only data "
                                "parameter can be unnammed";
    if (n == 0)
        return NULL;
    if (unnamed > 1)
        return unnamed < n ? mixed
               : unnamed < 3 ? "for matrix statement, must specify at least 3 arguments: data, rows, cols"
                             : NULL;
    if (names[0] && strcmp(names[0], "data") != 0)
        return "matrix method must have data parameter as first parameter or unnamed parameter";
    if (unnamed == 1 && names[0])
        return mixed;
    return NULL;
}

const char *bi_arg_names_error(const BuiltinDef *bi, int n, const char *const *names, int *at, char *buf,
                               size_t cap)
{
    int unnamed = 0;
    for (int i = 0; i < n; i++)
        unnamed += names[i] == NULL;
    if (strcmp(bi->name, "seq") == 0)
        return seq_rule(n, unnamed, names, at, buf, cap);
    if (strcmp(bi->name, "matrix") == 0)
        return matrix_rule(n, unnamed, names);
    if (strcmp(bi->name, "rand") == 0 && unnamed > 0)
        return "for rand statement, all arguments must be named parameters";     /* COMPAT.md 7 */
    return NULL;
}

const char *bi_unknown_param_error(const BuiltinDef *bi, const char *an, char *buf, size_t cap)
{
    if (strcmp(bi->name, "toString") == 0)      /* upstream's validateCastAsString */
        snprintf(buf, cap, "Invalid parameter %s for toString, valid parameters are [target, rows, cols, "
                 "decimal, sparse, sep, linesep]", an);
    else if (strcmp(bi->name, "rand") == 0)     /* upstream's own wording for rand (COMPAT.md 7) */
        snprintf(buf, cap, "unexpected parameter \"%s\". Legal parameters for Rand statement are "
                 "(capitalization-sensitive): rows, cols, min, max, sparsity, seed, pdf, lambda", an);
    else
        return NULL;
    return buf;
}
