/* SPDX-License-Identifier: Apache-2.0
 * The builtin registry: one table row per builtin. Adding a builtin is one
 * function and one row in its family's table (see construct.c for the shape).
 *
 * The calling convention (BuiltinDef, BArgs, binding modes, lookup) is
 * the runtime's: runtime/builtin_api.h. */
#ifndef DML_BUILTINS_REGISTRY_H
#define DML_BUILTINS_REGISTRY_H

#include "../runtime/builtin_api.h"
#include "families.h"

/* Installs this layer's lookup (and "did you mean") as the runtime's
 * BuiltinTable. Every entry point calls it first thing: main(), each unit
 * test that loads a program, the fuzz targets. */
void builtin_registry_install(void);
/* Calls fn(name, ctx) for every builtin name (REPL completion, suggestions). */
void builtin_each(void (*fn)(const char *name, void *ctx), void *ctx);

/* ---- argument helpers: each sets an error naming the argument and the
 * builtin on a type mismatch. 'i' indexes a->v. ---- */
static inline bool arg_given(const BArgs *a, int i) { return i < a->n && a->v[i].kind != VAL_NONE; }
/* A matrix argument, dense: a sparse one through the gate (mat_dense_m,
 * runtime/matrix.h), the error naming the builtin when it does not fit. */
Status arg_matrix(Interp *I, const BArgs *a, int i, Matrix **out);      /* borrowed */
/* A matrix argument in the form it has (m->sp set when sparse): for the
 * builtins with a sparse branch (flag BF_SPARSE). */
Status arg_matrix_any(Interp *I, const BArgs *a, int i, Matrix **out);  /* borrowed */
/* For a BF_SPARSE builtin's paths without a sparse branch: *d is a copy of
 * a whose values are dense (val_densify); free it with bargs_dense_free
 * (also done here on failure). */
Status bargs_densify(Interp *I, const BArgs *a, BArgs *d);
void bargs_dense_free(BArgs *d);
/* Matrix, or a numeric scalar seen as 1x1 (allocated; caller releases *owned). */
Status arg_matrix_or_scalar(Interp *I, const BArgs *a, int i, Matrix **out, Value *owned);
Status arg_double(Interp *I, const BArgs *a, int i, double dflt, double *out);
Status arg_int(Interp *I, const BArgs *a, int i, int64_t dflt, int64_t *out);
Status arg_bool(Interp *I, const BArgs *a, int i, bool dflt, bool *out);
Status arg_string(Interp *I, const BArgs *a, int i, const char *dflt, const char **out); /* borrowed */
Status arg_list(Interp *I, const BArgs *a, int i, List **out);            /* borrowed */
/* Name of parameter i for messages ("rows"); for variadic, "#i". */
const char *arg_name(const BArgs *a, int i, char *buf, size_t cap);

/* ---- helpers shared by the builtin families (args.c) ---- */
/* Sets "f(): argument 'x' must be <expected>, got <kind>" and returns ST_ERR. */
Status arg_type_error(Interp *I, const BArgs *a, int i, const char *expected);
/* Hands the 'nres' owned results in res[] to the caller: all of them go to
 * out[0..nres) (the evaluator's result array holds def->nout values and
 * releases those the call site does not bind). Used by multi-return builtins. */
void bi_set_outs_take(const BArgs *a, Value *out, Value *res, int nres);
/* Arguments first .. first+n-1 as matrices, borrowed into *out[k], checked
 * in order (arg_matrix's error for the first that is not one). */
Status arg_matrices(Interp *I, const BArgs *a, int first, int n, Matrix **const out[]);
/* Shape of one result of a multi-return builtin (bi_alloc_outs). */
typedef struct OutShape { int64_t rows, cols; bool zero; } OutShape;
/* Allocates the n result matrices in order, res[k] owning m[k] (zero-filled
 * where shape[k].zero). On the first failure (error set) every one already
 * made is released and ST_ERR returned. */
Status bi_alloc_outs(Interp *I, const OutShape *shape, int n, Value *res, Matrix **m);

/* The family tables (families.h lists them), each terminated by a row with
 * name == NULL; one per file, named after it. */
#define BI_DECLARE_FAMILY(f) extern const BuiltinDef bi_##f##_table[];
BUILTIN_FAMILIES(BI_DECLARE_FAMILY)
#undef BI_DECLARE_FAMILY

/* The argument-name rules some builtins keep from upstream (arg_rules.c):
 * the runtime's BuiltinTable.arg_names_error and .unknown_param_error,
 * installed by builtin_registry_install. */
const char *bi_arg_names_error(const BuiltinDef *bi, int n, const char *const *names, int *at, char *buf,
                               size_t cap);
const char *bi_unknown_param_error(const BuiltinDef *bi, const char *an, char *buf, size_t cap);

#endif
