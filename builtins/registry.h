/* SPDX-License-Identifier: Apache-2.0
 * The builtin registry: one table row per builtin. Adding a builtin is one
 * function and one row in its family's table (see construct.c for the shape).
 *
 * The calling convention (BuiltinDef, BArgs, binding modes, lookup) is
 * the runtime's: runtime/builtin_api.h. */
#ifndef DML_BUILTINS_REGISTRY_H
#define DML_BUILTINS_REGISTRY_H

#include "../runtime/builtin_api.h"

/* Installs this layer's lookup (and "did you mean") as the runtime's
 * BuiltinTable. Every entry point calls it first thing: main(), each unit
 * test that loads a program, the fuzz targets. */
void builtin_registry_install(void);
/* Calls fn(name, ctx) for every builtin name (REPL completion, suggestions). */
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
/* Arguments first .. first+n-1 as matrices, borrowed into *out[k], checked
 * in order (arg_matrix's error for the first that is not one). */
Status arg_matrices(Interp *I, const BArgs *a, int first, int n, Matrix **const out[]);
/* Shape of one result of a multi-return builtin (bi_alloc_outs). */
typedef struct OutShape { int64_t rows, cols; bool zero; } OutShape;
/* Allocates the n result matrices in order, res[k] owning m[k] (zero-filled
 * where shape[k].zero). On the first failure (error set) every one already
 * made is released and ST_ERR returned. */
Status bi_alloc_outs(Interp *I, const OutShape *shape, int n, Value *res, Matrix **m);

/* Family tables, each terminated by a row with name == NULL; one per file,
 * named after it. */
extern const BuiltinDef bi_core_table[];        /* core.c: print, stop, assert, toString, as.*, nrow/ncol/length, ifelse, time, is.na, ... */
extern const BuiltinDef bi_construct_table[];   /* construct.c: matrix, rand, seq, sample, diag, table, toOneHot, outer, replace, lower.tri */
extern const BuiltinDef bi_elementwise_table[]; /* elementwise.c: exp, log, round, trig, sigmoid, min/max, pmin/pmax, xor, bitw* */
extern const BuiltinDef bi_aggregate_table[];   /* aggregate.c: sum, mean, var, sd, prod, trace, row and column aggregates, cum* */
extern const BuiltinDef bi_reorg_table[];       /* reorg.c: t, rev, unique, cbind/append/rbind, removeEmpty, order */
extern const BuiltinDef bi_linalg_table[];      /* linalg.c: solve, inv, det, cholesky, eigen, lu, qr, svd */
extern const BuiltinDef bi_io_table[];          /* readwrite.c: read, readMM, write (the formats: io/) */
extern const BuiltinDef bi_list_table[];        /* list.c: list, remove */
extern const BuiltinDef bi_dnn_table[];         /* dnn.c: conv2d and backward, max/avg pooling and backward, bias_add, bias_multiply */
extern const BuiltinDef bi_dnn_norm_table[];    /* dnn_norm.c: batch_norm2d, backward */
extern const BuiltinDef bi_dnn_lstm_table[];    /* dnn_lstm.c: lstm, lstm_backward */
extern const BuiltinDef bi_stats_table[];       /* statistics.c: moment, cov, median, quantile, cdf/icdf, pnorm ... qt, aggregate, contains */
extern const BuiltinDef bi_paramserv_table[];   /* paramserv/paramserv.c: paramserv */
extern const BuiltinDef bi_interp_table[];      /* interp_bi.c: exists, eval, evalList */
extern const BuiltinDef bi_plot_table[];        /* plot.c: plot */
extern const BuiltinDef bi_help_table[];        /* help.c: help, ls, describe */
extern const BuiltinDef bi_distinct_table[];    /* distinct.c: countDistinct and its variants */
extern const BuiltinDef bi_fft_table[];         /* fft.c: fft, ifft, *_linearized, stft */
extern const BuiltinDef bi_misc_natives_table[]; /* misc_natives.c: roll, ppred, compress, decompress, local */
extern const BuiltinDef bi_sqrtm_table[];       /* sqrtm.c: sqrtMatrixJava */
extern const BuiltinDef bi_frame_table[];       /* frame.c: as.frame, typeof, colnames, applySchema */
extern const BuiltinDef bi_frame_clean_table[]; /* frame_clean.c: detectSchema, dropInvalidType, dropInvalidLength, map */
extern const BuiltinDef bi_transform_table[];   /* transform.c: transformencode, transformapply, transformdecode, transformcolmap */
extern const BuiltinDef bi_tokenize_table[];    /* tokenize.c: tokenize */
extern const BuiltinDef bi_einsum_table[];      /* einsum.c: einsum */
extern const BuiltinDef bi_unsupported_natives_table[]; /* unsupported_natives.c: upstream natives dml refuses, with why */
extern const BuiltinDef bi_compat_ctor_table[]; /* compat_ctor.c: frame, tensor; federated and sql refused */
extern const BuiltinDef bi_frame_text_table[];  /* frame_text.c: correctTypos, dmv, cooccurrenceMatrix, mdedup */

#endif
