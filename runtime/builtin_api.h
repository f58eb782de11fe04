/* SPDX-License-Identifier: Apache-2.0
 * The builtin calling convention: what the runtime (resolver, evaluator,
 * fusion) knows of a builtin. The builtins themselves and their table live
 * in builtins/, above the runtime, which reaches them only through the
 * BuiltinTable below: builtins/ fills it in and every entry point installs
 * it at start-up (builtin_registry_install(), builtins/registry.h).
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
#ifndef DML_RUNTIME_BUILTIN_API_H
#define DML_RUNTIME_BUILTIN_API_H

#include <stddef.h>

#include "interp.h"

typedef struct Module Module;

typedef enum BindMode { BIND_POS, BIND_NAMED, BIND_VARIADIC } BindMode;

/* Flags */
enum {
    BF_STATEMENT = 1,       /* only valid as a statement: print, stop, assert, write */
    BF_MULTI = 2,           /* multi-return: only valid in [a, b] = f(...) */
    BF_NEEDS_LOC = 4,       /* wants the call location (assert) */
    BF_NAMED_ONLY = 8,      /* every argument must be named (paramserv) */
    BF_MULTI_OPT = 16,      /* one result in an expression, more in [a, b] = f(...)
                             * (paramserv's history); BArgs.nout says which */
    BF_STMT_FIRST = 32,     /* as a statement, the name means this builtin even where a
                             * user function has it (print, stop, assert, write) */
    BF_CONTROL = 64,        /* a control statement (stop, assert): a statement block of
                             * its own upstream, so no inlining, and not in a parfor body */
    BF_DIM_ONLY = 128,      /* reads only its argument's dimensions (nrow, ncol): parfor's
                             * dependency check does not count it as a read of the data */
    BF_READS_VARS = 256,    /* reads variables by name (exists, ls): liveness keeps them all */
    BF_NAME_ARG = 512,      /* f(X) with a bare variable X means f("X") (exists) */
    BF_ANY_CASE = 1024,     /* the name also matches in any letter case (upstream's rand) */
    BF_PURE = 2048,         /* the result depends on the arguments alone, with no other effect
                             * (no output, files, random numbers, clock or calls into DML):
                             * liveness may drop an assignment nobody reads */
    BF_SPARSE = 1u << 22,   /* takes sparse matrices as they are (arg_matrix_any, or reads no
                             * cells); without it the evaluator hands the builtin dense ones
                             * (builtin_densify_args), so no builtin meets a NULL m->data */
};


/* Result data type, where it does not depend on what the arguments hold
 * at run time (runtime/dtcheck.c); in bits 12-14 of flags: BF_RT(RT_SCALAR). */
typedef enum BuiltinRt {
    RT_UNKNOWN,     /* depends on the arguments' values, or not described */
    RT_SCALAR, RT_MATRIX, RT_FRAME, RT_LIST,
    RT_SAME,        /* elementwise: f(x) has the type of x (scalar or matrix) */
    RT_BIND,        /* cbind/rbind: a frame or matrix as the first argument */
} BuiltinRt;
#define BF_RT(rt) ((unsigned)(rt) << 12)
/* What a call becomes in a fused elementwise loop (runtime/fuse.c); in bits
 * 16-21 of flags: BF_FUSE_VM(VM_EXP) (one argument, vmath.h's kernel), or
 * BF_FUSE_MAX / BF_FUSE_MIN (two arguments), BF_FUSE_T (the transpose that
 * fusion of t(X) %*% y looks for). */
enum { BUILTIN_FUSE_NONE = -1, BUILTIN_FUSE_T = 60, BUILTIN_FUSE_MAX = 61, BUILTIN_FUSE_MIN = 62 };
#define BF_FUSE_VM(vm) ((unsigned)((vm) + 1) << 16)
#define BF_FUSE_T BF_FUSE_VM(BUILTIN_FUSE_T)
#define BF_FUSE_MAX BF_FUSE_VM(BUILTIN_FUSE_MAX)
#define BF_FUSE_MIN BF_FUSE_VM(BUILTIN_FUSE_MIN)

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

/* An owned value, in place: a sparse matrix becomes its dense copy
 * (mat_dense_m), a list holding sparse matrices (at any depth) a copy
 * holding dense ones; other values are left as they are. The error names
 * op. For code that reads the cells of matrices inside values. */
Status val_densify(Interp *I, Value *v, const char *op);
/* The evaluator's gate before a builtin call: unless bi has BF_SPARSE, the
 * owned values argv[0..n) that are or hold sparse matrices are replaced by
 * dense ones (val_densify), the error naming the builtin. */
Status builtin_densify_args(Interp *I, const BuiltinDef *bi, Value *argv, int n);
static inline BuiltinRt builtin_rt(const BuiltinDef *d) { return (BuiltinRt)((d->flags >> 12) & 7); }
/* The fusion kernel: BUILTIN_FUSE_NONE, a VmFn, or BUILTIN_FUSE_T/MAX/MIN. */
static inline int builtin_fuse(const BuiltinDef *d) { return (int)((d->flags >> 16) & 63) - 1; }

/* What the runtime asks of the builtins layer. Both functions must be
 * thread-safe. */
typedef struct BuiltinTable {
    /* The builtin named 'name' (aliases have rows of their own); NULL if none. */
    const BuiltinDef *(*find)(const char *name);
    /* The BF_ANY_CASE builtin whose name equals 'name' but for letter case; NULL if none. */
    const BuiltinDef *(*find_any_case)(const char *name);
    /* " (did you mean rowSums?)" for an undefined function 'name' called in
     * module 'm', or "" when nothing is close; written into buf. */
    const char *(*suggest_function)(const Module *m, const char *name, char *buf, size_t cap);
    /* A builtin's own rules for its arguments' names, beyond binding them
     * to its parameters (upstream's parser makes seq, matrix and rand
     * DataExpressions, with rules and messages of their own): NULL when
     * names[0..n) (NULL for an unnamed argument) follow them, else the
     * message, written into buf; *at is the argument it is about, or -1
     * for the whole call. May be NULL: no such rules. */
    const char *(*arg_names_error)(const BuiltinDef *bi, int n, const char *const *names, int *at, char *buf,
                                   size_t cap);
    /* The message for an argument named 'an' that is no parameter of bi,
     * where the builtin has a wording of its own; NULL: the generic one.
     * May be NULL. */
    const char *(*unknown_param_error)(const BuiltinDef *bi, const char *an, char *buf, size_t cap);
} BuiltinTable;

/* Installs the table for the whole process ('t' must outlive it). Called
 * once at start-up, before any program is loaded or thread started, by
 * builtin_registry_install(). Until then the two lookups below abort with a
 * message naming the missing call: a program cannot be resolved without
 * its builtins, and a silent NULL would read as "no such function". */
void builtin_table_install(const BuiltinTable *t);
/* The installed table's find(); NULL for a NULL name or no such builtin. */
const BuiltinDef *builtin_find(const char *name);
/* The installed table's find_any_case(); NULL for a NULL name or none. */
const BuiltinDef *builtin_find_any_case(const char *name);
/* The installed table's suggest_function(). */
const char *builtin_suggest_function(const Module *m, const char *name, char *buf, size_t cap);
/* The installed table's arg_names_error() (NULL when it has none). */
const char *builtin_arg_names_error(const BuiltinDef *bi, int n, const char *const *names, int *at, char *buf, size_t cap);
/* The installed table's unknown_param_error() (NULL when it has none). */
const char *builtin_unknown_param_error(const BuiltinDef *bi, const char *an, char *buf, size_t cap);

/* Number of parameters in def->params. */
int builtin_nparams(const BuiltinDef *def);
/* Name of parameter i (copied into buf). */
const char *builtin_param_name(const BuiltinDef *def, int i, char *buf, size_t cap);

#endif
