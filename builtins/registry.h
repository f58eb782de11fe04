/* SPDX-License-Identifier: Apache-2.0
 * The builtin registry: one table row per builtin. Adding a builtin is one
 * function and one row in its family's table (see construct.c for the shape).
 *
 * Binding. 'params' lists parameter names separated by commas, e.g.
 * "target,rows,cols,decimal". How call arguments bind depends on 'bind':
 *   BIND_POS    positional; argument names are ignored (upstream behaviour of
 *               plain builtins: log(x, base=2) is log(x, 2)).
 *   BIND_NAMED  positional arguments first, then named ones matched against
 *               'params' (an unknown name is an error naming it).
 *   BIND_VARIADIC  every argument is passed as written, in order, with its
 *               name (or NULL): cbind, rbind, list, min/max, ...
 * For POS/NAMED the builtin receives exactly nparams values in parameter
 * order; a parameter that was not supplied is VAL_NONE and the builtin
 * applies its own default. At least 'min_args' leading parameters must be
 * supplied, and no more than nparams.
 *
 * Arguments are borrowed. Results are owned: a builtin writes 'nout' values
 * to out[0..nout). On failure it returns ST_ERR with the message set by
 * err_set(); the evaluator adds the call's position. Builtins must be
 * thread-safe: all state comes from the Interp. */
#ifndef DML_BUILTINS_REGISTRY_H
#define DML_BUILTINS_REGISTRY_H

#include "../runtime/interp.h"

typedef enum BindMode { BIND_POS, BIND_NAMED, BIND_VARIADIC } BindMode;

/* Flags */
enum {
    BF_STATEMENT = 1,       /* only valid as a statement: print, stop, assert, write */
    BF_MULTI = 2,           /* multi-return: only valid in [a, b] = f(...) */
    BF_NEEDS_LOC = 4,       /* wants the call location (assert) */
    BF_NAMED_ONLY = 8,      /* every argument must be named (paramserv) */
    BF_MULTI_OPT = 16,      /* one result in an expression, more in [a, b] = f(...)
                             * (paramserv's history); BArgs.nout says which */
};

typedef struct BuiltinDef BuiltinDef;

typedef struct BArgs {
    const BuiltinDef *def;
    Value *v;               /* bound argument values */
    const char *const *names;   /* BIND_VARIADIC: name of each argument or NULL */
    int n;                  /* number of entries in v */
    const Loc *loc;         /* call location */
    int nout;               /* number of results requested (>= 1 for expressions) */
} BArgs;

typedef Status (*BuiltinFn)(Interp *I, const BArgs *a, Value *out);

struct BuiltinDef {
    const char *name;
    BuiltinFn fn;
    const char *params;     /* comma-separated parameter names ("" for none) */
    int min_args;
    BindMode bind;
    int nout;               /* results produced at most (1 for most; BF_MULTI/BF_MULTI_OPT ones more) */
    unsigned flags;
};

/* Find a builtin by DML name (aliases have rows of their own); NULL if none. */
const BuiltinDef *builtin_find(const char *name);
/* Number of parameters in def->params. */
int builtin_nparams(const BuiltinDef *def);
/* Name of parameter i (copied into buf). */
const char *builtin_param_name(const BuiltinDef *def, int i, char *buf, size_t cap);
/* Calls fn(name, ctx) for every builtin name (for REPL completion). */
void builtin_each(void (*fn)(const char *name, void *ctx), void *ctx);

/* ---- argument helpers: each sets an error naming the argument and the
 * builtin on a type mismatch. 'i' indexes a->v. ---- */
static inline bool arg_given(const BArgs *a, int i) { return i < a->n && a->v[i].kind != VAL_NONE; }
Status arg_matrix(Interp *I, const BArgs *a, int i, Matrix **out);      /* borrowed */
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

/* Family tables, each terminated by a row with name == NULL. */
extern const BuiltinDef bi_core_table[];        /* builtins/core.c: print, stop, assert, list, conversions, ... */
extern const BuiltinDef bi_construct_table[];   /* builtins/construct.c: matrix, rand, seq, sample, table, ... */
extern const BuiltinDef bi_elementwise_table[];
extern const BuiltinDef bi_aggregate_table[];
extern const BuiltinDef bi_reorg_table[];       /* builtins/reorg.c: t, rev, unique, cbind/rbind, removeEmpty, order */
extern const BuiltinDef bi_linalg_table[];
extern const BuiltinDef bi_io_table[];
extern const BuiltinDef bi_list_string_table[];
extern const BuiltinDef bi_dnn_table[];
extern const BuiltinDef bi_dnn_norm_table[];    /* builtins/dnn_norm.c: batch_norm2d, backward */
extern const BuiltinDef bi_dnn_lstm_table[];    /* builtins/dnn_lstm.c: lstm, lstm_backward */
extern const BuiltinDef bi_stats_table[];
extern const BuiltinDef bi_paramserv_table[];
extern const BuiltinDef bi_interp_table[];      /* builtins/interp_bi.c (lead): exists, eval */
extern const BuiltinDef bi_plot_table[];        /* builtins/plot.c: plot */
extern const BuiltinDef bi_help_table[];        /* builtins/help.c: help, ls, describe */

#endif
