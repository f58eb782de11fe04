/* SPDX-License-Identifier: Apache-2.0
 * Fused element-wise evaluation (contract in fuse.h).
 *
 * A fusion goes in four steps:
 *   1. collect: the tree under the root, in post-order, while its nodes are
 *      cell-wise operators or unary math builtins; everything else is a leaf;
 *   2. evaluate the leaves left to right (the order of the ordinary walk);
 *   3. type: each operator node is a scalar (computed right away by the
 *      ordinary operators) or a matrix of a known shape, checked with the
 *      broadcasting rules of ops.c's matrix_op_take; anything those rules reject
 *      or treat specially replays the tree through the ordinary operators;
 *   4. run: the output grid is cut into blocks of at most BLOCK cells; each
 *      operator computes a block into a small buffer, leaves are read in
 *      place, and the root writes the output.
 * Thread-safe: all state is on the stack or in the call's buffers. */
#include "fuse.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "binops.h"
#include "builtin_api.h"
#include "hitters.h"
#include "matrix.h"
#include "ops.h"
#include "pool.h"
#include "sparse_eval.h"
#include "vmath.h"

enum {
    FUSE_MAX = 48,      /* nodes in one fused tree */
    BLOCK = 128,        /* cells per block: a buffer is 1 KiB */
    PREFETCH = 2,       /* blocks ahead that the operands are asked for */
    PAR_MIN = 1 << 16,  /* cells below which one thread does it all */
    /* A lone operator (X * 2, exp(X)) takes the fused run only to use the
     * threads: from 2 MB, where the ordinary single-threaded kernel takes
     * ~0.5 ms against the pool's ~40 us of thread starts. */
    SOLO_PAR_MIN = 1 << 18,
    PARTS_PER_THREAD = 4,
    /* A tree whose largest matrix variable is smaller is not fused when
     * all its leaves are variables and literals. Measured on
     * `A = A * 0.999 + 0.001` in a loop (ns per iteration, fused against
     * DML_FUSE=0): 16x16 183 against 160, 32x32 395 against 412, 64x64
     * about even; the fused pass pays from where its set-up is covered. */
    FUSE_MIN_CELLS = 1024,
};

/* F_MM: max(a, b) or min(a, b) of two operands, cell-wise (the builtin's
 * two-argument form; FNode.is_max tells which). */
typedef enum FKind { F_LEAF, F_BIN, F_NEG, F_NOT, F_FN, F_MM } FKind;
/* How a matrix leaf maps onto the output grid. */
typedef enum FMode { FMODE_SCALAR, FMODE_FULL, FMODE_ROW, FMODE_COL } FMode;

typedef struct FNode {
    const Node *n;
    FKind kind;
    int a, b;           /* operand nodes (indexes), -1 if none */
    BinOp op;
    VmFn fn;
    bool is_max;        /* F_MM */
    Value v;            /* leaf value, or the value of a scalar operator node (owned) */
    bool is_mat;        /* the node's value is a matrix (leaf: v; operator: computed by the run) */
    int64_t rows, cols;
    bool pow2;          /* ^ whose exponent is a scalar or column (ops.c: x^2 is x*x) */
    FMode mode;         /* leaves and scalar nodes: how the run reads them */
    double s;           /* FMODE_SCALAR: the number */
    int reg;            /* operator nodes: the block buffer */
} FNode;

typedef struct Tree {
    FNode f[FUSE_MAX];
    int n, nops, nregs;
    bool seen_op;       /* an operator came before in post-order */
    bool maybe_mat;     /* some leaf may be a matrix */
} Tree;

/* ==================================================================
 * the fusable builtins
 * ================================================================== */

/* Is call 'n' f(x) with f a fusable builtin (its row's BF_FUSE_VM) and x
 * positional? */
static bool fusable_call(const Node *n, VmFn *fn)
{
    if (!n->call.bi || n->call.nargs != 1 || (n->call.argnames && n->call.argnames[0]))
        return false;
    int k = builtin_fuse(n->call.bi);
    if (k < 0 || k >= BUILTIN_FUSE_T)
        return false;
    *fn = (VmFn)k;
    return true;
}

/* max(a, b) / min(a, b) (and pmax, pmin: BF_FUSE_MAX/MIN) with two
 * unnamed arguments? */
static bool minmax_call(const Node *n, bool *is_max)
{
    if (!n->call.bi || n->call.nargs != 2 || (n->call.argnames && (n->call.argnames[0] || n->call.argnames[1])))
        return false;
    int k = builtin_fuse(n->call.bi);
    if (k != BUILTIN_FUSE_MAX && k != BUILTIN_FUSE_MIN)
        return false;
    *is_max = k == BUILTIN_FUSE_MAX;
    return true;
}

/* ==================================================================
 * 1. collect
 * ================================================================== */

/* Leaves that cannot fail (an undefined variable was ruled out by the
 * caller) and have no side effects. */
static bool pure_leaf(const Node *n)
{
    switch (n->kind) {
    case N_INT: case N_DOUBLE: case N_BOOL: case N_STRING: case N_CONST: case N_IDENT:
        return true;
    default:
        return false;
    }
}

/* Appends n's subtree in post-order; returns n's index, or -1 when the tree
 * cannot be fused (too big, an impure leaf after an operator, an undefined
 * variable). */
static int collect(Interp *I, Tree *T, const Node *n, int depth)
{
    if (depth > FUSE_MAX)   /* bounds the recursion whatever the nesting */
        return -1;
    FKind k = F_LEAF;
    VmFn fn = VM_EXP;
    bool is_max = false;
    const Node *c0 = NULL, *c1 = NULL;
    if (n->kind == N_BINARY && n->binary.op != OP_MATMUL && n->binary.op < OP_ANDAND) {
        k = F_BIN;
        c0 = n->binary.lhs;
        c1 = n->binary.rhs;
    } else if (n->kind == N_UNARY && n->unary.op != UOP_PLUS) {
        k = n->unary.op == UOP_NEG ? F_NEG : F_NOT;
        c0 = n->unary.operand;
    } else if (n->kind == N_CALL && fusable_call(n, &fn)) {
        k = F_FN;
        c0 = n->call.args[0];
    } else if (n->kind == N_CALL && minmax_call(n, &is_max)) {
        k = F_MM;
        c0 = n->call.args[0];
        c1 = n->call.args[1];
    }
    int a = -1, b = -1;
    if (c0 && (a = collect(I, T, c0, depth + 1)) < 0)
        return -1;
    if (c1 && (b = collect(I, T, c1, depth + 1)) < 0)
        return -1;
    if (T->n >= FUSE_MAX)
        return -1;
    if (k == F_LEAF) {
        if (!pure_leaf(n)) {
            if (T->seen_op)
                return -1;
            T->maybe_mat = true;
        } else if (n->kind == N_IDENT) {
            int s = n->ident.slot;
            if (s >= I->frame->nslots || I->frame->slots[s].kind == VAL_NONE)
                return -1;
            if (I->frame->slots[s].kind == VAL_MATRIX)
                T->maybe_mat = true;
        }
    } else {
        T->seen_op = true;
        T->nops++;
    }
    FNode *f = &T->f[T->n];
    memset(f, 0, sizeof *f);
    f->n = n;
    f->kind = k;
    f->a = a;
    f->b = b;
    f->op = k == F_BIN ? n->binary.op : OP_ADD;
    f->fn = fn;
    f->is_max = is_max;
    f->v = val_none();
    return T->n++;
}

/* ==================================================================
 * the ordinary operators (scalar nodes, and the replay)
 * ================================================================== */

/* f(x) or f(x, y) (y NONE: one argument) as a call of the builtin, like
 * the evaluator's call_builtin. */
static Status call_fn_take(Interp *I, const Node *n, Value x, Value y, Value *out)
{
    const BuiltinDef *bi = n->call.bi;
    int np = n->call.nparams, nv = n->call.nargs;
    int p0 = n->call.argmap ? n->call.argmap[0] : 0, p1 = nv < 2 ? -1 : n->call.argmap ? n->call.argmap[1] : 1;
    Value argv[4];
    if (np > 4 || nv > 2 || p0 >= np || p1 >= np || p0 == p1) {
        val_release(x);
        val_release(y);
        return err_at(I, &n->loc, "internal error: unexpected builtin arity in fusion");
    }
    for (int i = 0; i < np; i++)
        argv[i] = val_none();
    argv[p0] = x;
    if (p1 >= 0)
        argv[p1] = y;
    else
        val_release(y);
    BArgs a = {.def = bi, .v = argv, .names = NULL, .n = np, .loc = &n->loc, .nout = 1};
    Value res = val_none();
    Status st = builtin_densify_args(I, bi, argv, np);
    if (st == ST_OK)
        st = HITTERS_TIMED(I, bi->name, bi->fn(I, &a, &res));
    for (int i = 0; i < np; i++)
        val_release(argv[i]);
    if (st != ST_OK)
        return err_stamp(I, &n->loc);
    *out = res;
    return ST_OK;
}

/* The evaluator's inline scalar paths (eval.c), which --stats does not
 * count: numbers on both sides of a binary operator, - of a number. */
static bool is_num(Value v) { return v.kind == VAL_INT || v.kind == VAL_DOUBLE; }

/* Node i's operator on owned operand values x (and y); *out owned. Counted
 * in --stats' heavy hitters where the plain walk counts it. */
static Status apply_take(Interp *I, const FNode *f, Value x, Value y, Value *out)
{
    switch (f->kind) {
    case F_BIN: {
        bool inline_op = f->op <= OP_DIV || (f->op >= OP_LT && f->op <= OP_NE);
        Status st = is_num(x) && is_num(y) && inline_op
                        ? ops_binary_take(I, f->op, x, y, out)
                        : HITTERS_TIMED(I, hitters_binop_name(f->op), ops_binary_take(I, f->op, x, y, out));
        return st == ST_OK ? ST_OK : err_stamp(I, &f->n->loc);
    }
    case F_NEG:
    case F_NOT: {
        UnOp u = f->kind == F_NEG ? UOP_NEG : UOP_NOT;
        Status st = u == UOP_NEG && is_num(x) ? ops_unary_take(I, u, x, out)
                    : HITTERS_TIMED(I, hitters_unop_name(u), ops_unary_take(I, u, x, out));
        return st == ST_OK ? ST_OK : err_stamp(I, &f->n->loc);
    }
    case F_FN:
    case F_MM:
        return call_fn_take(I, f->n, x, y, out);
    default:
        val_release(x);
        val_release(y);
        return err_at(I, &f->n->loc, "internal error: fusion applied a leaf");
    }
}

/* The ordinary walk over the evaluated leaves: node i's value, owned. */
static Status replay(Interp *I, const Tree *T, int i, Value *out)
{
    const FNode *f = &T->f[i];
    if (f->kind == F_LEAF) {
        *out = val_ref(f->v);
        return ST_OK;
    }
    Value x, y = val_none();
    TRY(replay(I, T, f->a, &x));
    if (f->b >= 0 && replay(I, T, f->b, &y) != ST_OK) {
        val_release(x);
        return ST_ERR;
    }
    return apply_take(I, f, x, y, out);
}

/* ==================================================================
 * 3. type
 * ================================================================== */

/* Shape of a binary operator node with at least one matrix operand, by the
 * rules of matrix_op_take (ops.c). False for what the run does not do: string
 * or boolean-arithmetic operands (errors), the outer-product broadcast,
 * mismatched shapes (errors). */
static bool type_binary(FNode *f, const FNode *x, const FNode *y)
{
    bool arith = f->op <= OP_MOD;
    for (int k = 0; k < 2; k++) {
        const FNode *o = k ? y : x;
        if (o->is_mat)
            continue;
        if (o->v.kind != VAL_INT && o->v.kind != VAL_DOUBLE && !(o->v.kind == VAL_BOOL && !arith))
            return false;
    }
    bool scalar_rhs = false;
    if (!x->is_mat) {
        f->rows = y->rows, f->cols = y->cols;
    } else if (!y->is_mat) {
        f->rows = x->rows, f->cols = x->cols;
        scalar_rhs = true;
    } else {
        f->rows = x->rows, f->cols = x->cols;
        if (x->rows == y->rows && x->cols == y->cols)
            ;
        else if (y->rows == 1 && y->cols == 1)
            scalar_rhs = true;
        else if (y->cols == 1 && y->rows == x->rows)
            scalar_rhs = true;      /* a column: one exponent per row */
        else if (y->rows == 1 && y->cols == x->cols)
            ;
        else
            return false;
    }
    f->pow2 = f->op == OP_POW && scalar_rhs;
    return true;
}

/* Shape of max(x, y) / min(x, y) with at least one matrix operand: a
 * number (or boolean) against a matrix, or two matrices of one shape. The
 * builtin's vector broadcasting and its errors are left to the replay. */
static bool type_minmax(FNode *f, const FNode *x, const FNode *y)
{
    for (int k = 0; k < 2; k++) {
        const FNode *o = k ? y : x;
        if (!o->is_mat && o->v.kind != VAL_INT && o->v.kind != VAL_DOUBLE && o->v.kind != VAL_BOOL)
            return false;
    }
    const FNode *m = x->is_mat ? x : y;
    if (x->is_mat && y->is_mat && (x->rows != y->rows || x->cols != y->cols))
        return false;
    f->rows = m->rows, f->cols = m->cols;
    return true;
}

/* Types every operator node; scalar ones are computed. Returns false (with
 * no error pending) when the tree must be replayed instead. */
static bool type_tree(Interp *I, Tree *T)
{
    for (int i = 0; i < T->n; i++) {
        FNode *f = &T->f[i];
        if (f->kind == F_LEAF) {
            f->is_mat = f->v.kind == VAL_MATRIX;
            if (f->is_mat && f->v.m->sp)
                return false;   /* the ordinary operators, which have the sparse kernels */
            if (f->is_mat)
                f->rows = f->v.m->rows, f->cols = f->v.m->cols;
            continue;
        }
        const FNode *x = &T->f[f->a], *y = f->b >= 0 ? &T->f[f->b] : NULL;
        if (!x->is_mat && !(y && y->is_mat)) {
            /* All operands scalars: the ordinary operator, now. It has no
             * side effects; if it fails, the replay reports it in order. */
            if (apply_take(I, f, val_ref(x->v), y ? val_ref(y->v) : val_none(), &f->v) != ST_OK) {
                err_clear(I);
                return false;
            }
            if (f->v.kind == VAL_MATRIX) {      /* not expected of these operators */
                val_release(f->v);
                f->v = val_none();
                return false;
            }
            continue;
        }
        f->is_mat = true;
        if (f->kind == F_BIN) {
            if (!type_binary(f, x, y))
                return false;
        } else if (f->kind == F_MM) {
            if (!type_minmax(f, x, y))
                return false;
        } else {
            f->rows = x->rows, f->cols = x->cols;
        }
    }
    return true;
}

/* ==================================================================
 * 4. run
 * ================================================================== */

/* A block operand: cells at p, or the number s when p is NULL. */
typedef struct Opnd {
    const double *p;
    double s;
} Opnd;

typedef struct Run {
    const Tree *T;
    int root;
    int64_t rows, cols;
    bool by_row;        /* broadcast leaves: blocks stay within a row */
    double *out;
} Run;

#pragma GCC diagnostic ignored "-Wpsabi"
/* Four doubles: one AVX register, two SSE ones. Wider GCC vectors than
 * the target's registers go through the stack, so the AVX-512 clone uses
 * these too (the cheap operators are bound by memory, not by width). */
typedef double v4d __attribute__((vector_size(32)));
typedef long long v4i __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) v4d ld4(const double *p) { v4d v; memcpy(&v, p, sizeof v); return v; }
static inline __attribute__((always_inline)) void st4(double *p, v4d v) { memcpy(p, &v, sizeof v); }
static inline __attribute__((always_inline)) v4d bool4(v4i m)
{
    const v4d one = {1, 1, 1, 1};
    return (v4d)(m & (v4i)one);
}

/* Scalar cell of op (the semantics of ops.c's cell(): ops_apply_d), with
 * pow2 as in k_ms. */
static inline double cell1(BinOp op, bool pow2, double x, double y)
{
    switch (op) {
#define CELL1_ARITH(OP, EXPR) case OP: return EXPR;
#define CELL1_CMP(OP, EXPR)
#define CELL1_CALL(OP, EXPR)
#define CELL1_CASE(OP, KIND, EXPR, FAST) CELL1_##KIND(OP, EXPR)
    BINOPS(CELL1_CASE)
#undef CELL1_CASE
#undef CELL1_CALL
#undef CELL1_CMP
#undef CELL1_ARITH
    case OP_POW: return pow2 && y == 2.0 ? x * x : ops_apply_d(op, x, y);
    default: return ops_apply_d(op, x, y);
    }
}

/* Four cells; xs/ys are the scalar forms for the operators without a
 * vector form. */
static inline __attribute__((always_inline)) v4d cell4(BinOp op, v4d x, v4d y)
{
    const v4d Z = {0};
    switch (op) {
#define CELL4_CASE(OP, KIND, EXPR, FAST) BINOP_VEC_##KIND(OP, EXPR, bool4)
    BINOPS(CELL4_CASE)
#undef CELL4_CASE
    default: return Z;
    }
}

/* o = x op y over L cells; at most one of x, y is a scalar (p NULL).
 * Compiled twice, for AVX2 and for the base ISA (bin_avx2, bin_base), one
 * picked at run time (not target_clones: ifunc resolvers run before the
 * sanitizers' runtimes and crash ThreadSanitizer builds). */
static inline __attribute__((always_inline)) void bin_body(BinOp op, bool pow2, Opnd x, Opnd y, double *o, int L)
{
    int i = 0;
    if (op == OP_POW && pow2 && !y.p && y.s == 2.0) {
        op = OP_MUL;
        y.p = x.p;
    }
    if (binop_has_simd(op)) {
        v4d xs = {x.s, x.s, x.s, x.s};
        v4d ys = {y.s, y.s, y.s, y.s};
#define LOOP_ARITH(OPC) LOOP(OPC)
#define LOOP_CMP(OPC) LOOP(OPC)
#define LOOP_CALL(OPC)
#define LOOP_CASE(OPC, KIND, EXPR, FAST) LOOP_##KIND(OPC)
#define LOOP(OPC) \
        case OPC: \
            if (x.p && y.p) for (; i + 4 <= L; i += 4) st4(o + i, cell4(OPC, ld4(x.p + i), ld4(y.p + i))); \
            else if (x.p) for (; i + 4 <= L; i += 4) st4(o + i, cell4(OPC, ld4(x.p + i), ys)); \
            else for (; i + 4 <= L; i += 4) st4(o + i, cell4(OPC, xs, ld4(y.p + i))); \
            break;
        switch (op) {
        BINOPS(LOOP_CASE)
        default: break;
        }
#undef LOOP
#undef LOOP_CASE
#undef LOOP_CALL
#undef LOOP_CMP
#undef LOOP_ARITH
    }
    for (; i < L; i++)
        o[i] = cell1(op, false, x.p ? x.p[i] : x.s, y.p ? y.p[i] : y.s);
}

static inline __attribute__((always_inline)) void neg_body(bool neg, const double *x, double *o, int L)
{
    if (neg)
        for (int i = 0; i < L; i++)
            o[i] = -x[i];
    else
        for (int i = 0; i < L; i++)
            o[i] = x[i] == 0 ? 1.0 : 0.0;
}

/* o = max(x, y) or min(x, y) over L cells; at most one of x, y is a
 * number (p NULL). */
static inline __attribute__((always_inline)) void mm_body(bool is_max, Opnd x, Opnd y, double *o, int L)
{
#define MM_LOOPS(F)                                                             \
    if (x.p && y.p) for (int i = 0; i < L; i++) o[i] = F(x.p[i], y.p[i]);       \
    else if (x.p) for (int i = 0; i < L; i++) o[i] = F(x.p[i], y.s);            \
    else for (int i = 0; i < L; i++) o[i] = F(x.s, y.p[i]);
    if (is_max) {
        MM_LOOPS(ops_max2)
    } else {
        MM_LOOPS(ops_min2)
    }
#undef MM_LOOPS
}

static void bin_base(BinOp op, bool pow2, Opnd x, Opnd y, double *o, int L) { bin_body(op, pow2, x, y, o, L); }
static void mm_base(bool is_max, Opnd x, Opnd y, double *o, int L) { mm_body(is_max, x, y, o, L); }
static void neg_base(bool neg, const double *x, double *o, int L) { neg_body(neg, x, o, L); }
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2")))
static void bin_avx2(BinOp op, bool pow2, Opnd x, Opnd y, double *o, int L) { bin_body(op, pow2, x, y, o, L); }
__attribute__((target("avx2")))
static void neg_avx2(bool neg, const double *x, double *o, int L) { neg_body(neg, x, o, L); }
__attribute__((target("avx2")))
static void mm_avx2(bool is_max, Opnd x, Opnd y, double *o, int L) { mm_body(is_max, x, y, o, L); }
#endif

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static void (*bin_block)(BinOp, bool, Opnd, Opnd, double *, int) = bin_base;
static void (*neg_block)(bool, const double *, double *, int) = neg_base;
static void (*mm_block)(bool, Opnd, Opnd, double *, int) = mm_base;

static void isa_init(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        bin_block = bin_avx2;
        neg_block = neg_avx2;
        mm_block = mm_avx2;
    }
#endif
}

/* One block: cells [j0, j0+L) of row 'row' when by_row, else cells
 * [j0, j0+L) of the flattened grid. 'bufs' holds the operator buffers. */
static void run_block(const Run *R, int64_t row, int64_t j0, int L, double *bufs, Opnd *v)
{
    const Tree *T = R->T;
    int64_t base = R->by_row ? row * R->cols + j0 : j0;
    /* The operators run one after the other over a block, so the loads of
     * the memory-bound ones (x * y) would not overlap the compute-bound ones
     * (exp) without asking for the cells some blocks ahead. Measured on
     * exp(X) * Y + X: 128-cell blocks with this, 2.0 ms; 256 without, 2.3;
     * 512 without, 2.6 (AVX2, one thread; the plain loop: 1.5). */
    int64_t next = base + PREFETCH * BLOCK, total = R->rows * R->cols;
    int64_t pf = total - next < BLOCK ? total - next : BLOCK;
    for (int i = 0; i < T->n && pf > 0; i++) {
        const FNode *f = &T->f[i];
        if (f->kind == F_LEAF && f->is_mat && f->mode == FMODE_FULL)
            for (int64_t k = 0; k < pf; k += 8)
                __builtin_prefetch(f->v.m->data + next + k, 0, 3);
    }
    for (int64_t k = 0; k < pf; k += 8)
        __builtin_prefetch(R->out + next + k, 1, 3);
    for (int i = 0; i < T->n; i++) {
        const FNode *f = &T->f[i];
        if (!f->is_mat) {               /* a scalar leaf or node */
            v[i].p = NULL;
            v[i].s = f->s;
            continue;
        }
        if (f->kind == F_LEAF) {
            const double *d = f->v.m->data;
            switch (f->mode) {
            case FMODE_FULL: v[i].p = d + base; break;
            case FMODE_ROW: v[i].p = d + j0; break;
            case FMODE_COL: v[i].p = NULL; v[i].s = d[row]; break;
            case FMODE_SCALAR: v[i].p = NULL; v[i].s = d[0]; break;
            }
            continue;
        }
        Opnd x = v[f->a], y = f->b >= 0 ? v[f->b] : (Opnd){NULL, 0};
        if (!x.p && !y.p) {             /* constant over the block */
            v[i].p = NULL;
            switch (f->kind) {
            case F_BIN: v[i].s = cell1(f->op, f->pow2, x.s, y.s); break;
            case F_NEG: v[i].s = -x.s; break;
            case F_NOT: v[i].s = x.s == 0 ? 1.0 : 0.0; break;
            case F_MM: v[i].s = f->is_max ? ops_max2(x.s, y.s) : ops_min2(x.s, y.s); break;
            default: v[i].s = vm_unary1(f->fn, x.s); break;
            }
            continue;
        }
        double *o = i == R->root ? R->out + base : bufs + (size_t)f->reg * BLOCK;
        switch (f->kind) {
        case F_BIN: bin_block(f->op, f->pow2, x, y, o, L); break;
        case F_NEG: neg_block(true, x.p, o, L); break;
        case F_NOT: neg_block(false, x.p, o, L); break;
        case F_MM: mm_block(f->is_max, x, y, o, L); break;
        default: vm_unary(f->fn, x.p, o, L); break;
        }
        v[i].p = o;
    }
    const Opnd *r = &v[R->root];
    double *o = R->out + base;
    if (!r->p)
        for (int k = 0; k < L; k++)
            o[k] = r->s;
}

/* Blocks [b0, b1) of the grid. */
static void run_range(const Run *R, int64_t b0, int64_t b1, double *bufs)
{
    Opnd v[FUSE_MAX];
    if (R->by_row) {
        int64_t per = (R->cols + BLOCK - 1) / BLOCK;
        for (int64_t b = b0; b < b1; b++) {
            int64_t row = b / per, j0 = (b % per) * BLOCK;
            int64_t L = R->cols - j0 < BLOCK ? R->cols - j0 : BLOCK;
            run_block(R, row, j0, (int)L, bufs, v);
        }
    } else {
        int64_t n = R->rows * R->cols;
        for (int64_t b = b0; b < b1; b++) {
            int64_t j0 = b * BLOCK, L = n - j0 < BLOCK ? n - j0 : BLOCK;
            run_block(R, 0, j0, (int)L, bufs, v);
        }
    }
}

static int64_t nblocks(const Run *R)
{
    if (R->by_row)
        return R->rows * ((R->cols + BLOCK - 1) / BLOCK);
    return (R->rows * R->cols + BLOCK - 1) / BLOCK;
}

/* Buffer index of each operator node: its depth in the operand stack, so a
 * tree needs as many buffers as it is deep, not as it is big. */
static void assign_regs(Tree *T, int i, int d)
{
    FNode *f = &T->f[i];
    if (f->kind == F_LEAF)
        return;
    assign_regs(T, f->a, d);
    if (f->b >= 0)
        assign_regs(T, f->b, d + 1);
    f->reg = d;
    if (d + 1 > T->nregs)
        T->nregs = d + 1;
}

typedef struct Part {
    const Run *R;
    int64_t nb;
    int parts;
    double *bufs;       /* parts x nregs x BLOCK */
} Part;

static void run_part(void *ctx, int part)
{
    const Part *P = ctx;
    int64_t b0 = P->nb * part / P->parts, b1 = P->nb * (part + 1) / P->parts;
    run_range(P->R, b0, b1, P->bufs + (size_t)part * (size_t)P->R->T->nregs * BLOCK);
}

/* Step 4 for a typed tree whose root is a matrix. */
static Status run_tree(Interp *I, Tree *T, int root, Value *out)
{
    FNode *r = &T->f[root];
    Run R = {.T = T, .root = root, .rows = r->rows, .cols = r->cols};
    Matrix *O = NULL;
    for (int i = 0; i < T->n; i++) {
        FNode *f = &T->f[i];
        if (!f->is_mat) {
            f->s = f->v.kind == VAL_NONE ? 0 : val_num(f->v);
            continue;
        }
        if (f->kind != F_LEAF)
            continue;
        const Matrix *m = f->v.m;
        if (m->rows == R.rows && m->cols == R.cols)
            f->mode = FMODE_FULL;
        else if (m->rows == 1 && m->cols == 1)
            f->mode = FMODE_SCALAR;
        else if (m->rows == R.rows && m->cols == 1)
            f->mode = FMODE_COL;
        else if (m->rows == 1 && m->cols == R.cols)
            f->mode = FMODE_ROW;
        else
            return err_at(I, &T->f[root].n->loc, "internal error: fused operand of unexpected shape");
        if (f->mode == FMODE_ROW || f->mode == FMODE_COL)
            R.by_row = true;
        /* An unshared full-size temporary lends its storage to the result:
         * each block reads its cells before the root writes them. */
        if (f->mode == FMODE_FULL && !O && obj_unique(&f->v.m->h))
            O = f->v.m;
    }
    if (O)
        obj_retain(&O->h);
    else if (!(O = mat_alloc(I, R.rows, R.cols)))
        return ST_ERR;
    R.out = O->data;
    assign_regs(T, root, 0);
    pthread_once(&isa_once, isa_init);
    Part P = {.R = &R, .nb = nblocks(&R), .parts = 1};
    if (P.nb > 0) {
        int threads = pool_threads(I);
        if (R.rows * R.cols >= PAR_MIN && threads > 1) {
            /* A few parts per thread: a helper the scheduler starts late
             * then leaves its share to the others (pool.h). */
            int64_t want = (int64_t)threads * PARTS_PER_THREAD;
            P.parts = want < P.nb ? (int)want : (int)P.nb;
        }
        P.bufs = malloc((size_t)P.parts * (size_t)T->nregs * BLOCK * sizeof(double));
        if (!P.bufs) {
            mat_release(O);
            return err_set(I, "out of memory");
        }
        if (P.parts > 1)
            pool_run(I, run_part, &P, P.parts);
        else
            run_part(&P, 0);
        free(P.bufs);
    }
    *out = val_matrix_take(O);
    return ST_OK;
}

/* ==================================================================
 * entry
 * ================================================================== */

static void release_tree(Tree *T)
{
    for (int i = 0; i < T->n; i++)
        val_release(T->f[i].v);
}

/* DML_FUSE=0 turns fusion off (to compare against the operator-at-a-time
 * walk); read once. */
static pthread_once_t off_once = PTHREAD_ONCE_INIT;
static bool fuse_off;

static void off_init(void)
{
    const char *e = getenv("DML_FUSE");
    fuse_off = e && strcmp(e, "0") == 0;
}

/* The most cells of a matrix variable under n, walking operators and
 * building nothing: 0 when no leaf is a matrix (scalar code, `s + i * 0.5`),
 * -1 when some leaf is not known without evaluating it (a call, an index,
 * an operator fusion does not take) or the tree is deeper than a fused one. */
static int64_t tree_cells(const Interp *I, const Node *n, int budget)
{
    if (budget <= 0)
        return -1;
    switch (n->kind) {
    case N_INT: case N_DOUBLE: case N_BOOL: case N_STRING: case N_CONST:
        return 0;
    case N_IDENT: {
        int s = n->ident.slot;
        if (s >= I->frame->nslots || I->frame->slots[s].kind != VAL_MATRIX)
            return 0;
        const Matrix *m = I->frame->slots[s].m;
        return m->rows * m->cols;
    }
    case N_BINARY: {
        if (n->binary.op == OP_MATMUL || n->binary.op >= OP_ANDAND)
            return -1;
        int64_t a = tree_cells(I, n->binary.lhs, budget - 1);
        if (a < 0)
            return -1;
        int64_t b = tree_cells(I, n->binary.rhs, budget - 1);
        return b < 0 ? -1 : a > b ? a : b;
    }
    case N_UNARY:
        return tree_cells(I, n->unary.operand, budget - 1);
    default:
        return -1;
    }
}

/* The --stats name of a lone operator node: what the ordinary walk counts
 * it under. */
static const char *solo_name(const FNode *f)
{
    switch (f->kind) {
    case F_BIN: return hitters_binop_name(f->op);
    case F_NEG: return hitters_unop_name(UOP_NEG);
    case F_NOT: return hitters_unop_name(UOP_NOT);
    default: return f->n->call.bi->name;
    }
}

/* Could collect() take n as an operator node? */
static bool fuse_op(const Node *n)
{
    VmFn fn;
    bool is_max;
    return fuse_candidate(n) &&
           (n->kind != N_CALL || fusable_call(n, &fn) || minmax_call(n, &is_max));
}

/* Is n an operator over another operator (a tree worth fusing)? */
static bool fuse_nested(const Node *n)
{
    switch (n->kind) {
    case N_BINARY: return fuse_op(n->binary.lhs) || fuse_op(n->binary.rhs);
    case N_UNARY: return fuse_op(n->unary.operand);
    case N_CALL: return fuse_op(n->call.args[0]) || (n->call.nargs == 2 && fuse_op(n->call.args[1]));
    default: return false;
    }
}

/* A lone operator is fused only to split its cells over threads: its
 * operands must be variables or literals (nothing to evaluate before the
 * size is known), one of them a matrix of SOLO_PAR_MIN cells or more. */
static bool solo_worth(const Interp *I, const Node *n)
{
    const Node *c[2] = {NULL, NULL};
    switch (n->kind) {
    case N_BINARY: c[0] = n->binary.lhs, c[1] = n->binary.rhs; break;
    case N_UNARY: c[0] = n->unary.operand; break;
    case N_CALL: c[0] = n->call.args[0], c[1] = n->call.nargs == 2 ? n->call.args[1] : NULL; break;
    default: return false;
    }
    bool big = false;
    for (int i = 0; i < 2 && c[i]; i++) {
        if (!pure_leaf(c[i]))
            return false;
        int s = c[i]->kind == N_IDENT ? c[i]->ident.slot : -1;
        if (s >= 0 && s < I->frame->nslots && I->frame->slots[s].kind == VAL_MATRIX) {
            const Matrix *m = I->frame->slots[s].m;
            big = big || m->rows * m->cols >= SOLO_PAR_MIN;
        }
    }
    return big && pool_threads(I) >= 2;
}

bool fuse_eval(Interp *I, const Node *n, Value *out, Status *st)
{
    bool solo = !fuse_nested(n);
    if (solo) {
        if (!solo_worth(I, n))
            return false;
    } else {
        /* Over small matrices the fused run's set-up costs more than the
         * passes it saves (a 10x10 update in a loop). */
        int64_t cells = tree_cells(I, n, FUSE_MAX);
        if (cells >= 0 && cells < FUSE_MIN_CELLS)
            return false;
    }
    pthread_once(&off_once, off_init);
    if (fuse_off)
        return false;
    Tree T;
    T.n = T.nops = T.nregs = 0;
    T.seen_op = T.maybe_mat = false;
    int root = collect(I, &T, n, 0);
    if (root < 0 || T.nops < 1 || !T.maybe_mat)
        return false;
    if (interp_stack_low(I)) {
        *st = err_at(I, &n->loc, "expression nested too deeply");
        return true;
    }
    for (int i = 0; i < T.n; i++) {
        if (T.f[i].kind != F_LEAF)
            continue;
        if (eval_expr(I, T.f[i].n, &T.f[i].v) != ST_OK) {
            /* Only a leaf before every operator can fail: the ordinary
             * walk fails here too, with nothing else done. */
            release_tree(&T);
            *st = ST_ERR;
            return true;
        }
    }
    if (!type_tree(I, &T))
        *st = replay(I, &T, root, out);
    else if (!T.f[root].is_mat)
        *st = (*out = val_ref(T.f[root].v), ST_OK);
    else /* named after SystemDS's generated cell-wise operators; a lone
          * operator keeps its own name, as in the ordinary walk */
        *st = HITTERS_TIMED(I, solo ? solo_name(&T.f[root]) : "spoofCell", run_tree(I, &T, root, out));
    release_tree(&T);
    return true;
}

/* ==================================================================
 * products with transposed operands
 * ================================================================== */

static bool is_t_call(const Node *n)
{
    if (n->kind != N_CALL || !n->call.bi || n->call.nargs != 1 || (n->call.argnames && n->call.argnames[0]))
        return false;
    return builtin_fuse(n->call.bi) == BUILTIN_FUSE_T;
}

/* One operand of the product: the value of x, or of t(x)'s argument with
 * *trans set when that argument is a matrix (t() of anything else is called
 * as usual, and fails or not as usual). */
static Status operand(Interp *I, const Node *x, Value *v, bool *trans)
{
    *trans = false;
    if (!is_t_call(x))
        return eval_expr(I, x, v);
    Value a;
    TRY(eval_expr(I, x->call.args[0], &a));
    if (a.kind == VAL_MATRIX) {
        *v = a;
        *trans = true;
        return ST_OK;
    }
    return call_fn_take(I, x, a, val_none(), v);
}

bool fuse_matmul(Interp *I, const Node *n, Value *out, Status *st)
{
    const Node *l = n->binary.lhs, *r = n->binary.rhs;
    if (!is_t_call(l) && !is_t_call(r))
        return false;
    pthread_once(&off_once, off_init);
    if (fuse_off)
        return false;
    Value a, b;
    bool ta, tb;
    /* Left to right, as the plain walk: t(a) cannot fail on a matrix, so
     * deferring it past the evaluation of the right side changes nothing. */
    if ((*st = operand(I, l, &a, &ta)) != ST_OK)
        return true;
    if ((*st = operand(I, r, &b, &tb)) != ST_OK) {
        val_release(a);
        return true;
    }
    if (a.kind != VAL_MATRIX || b.kind != VAL_MATRIX) {
        /* An error or an odd case for ops.c; materialise the transposes. */
        if (ta && (*st = call_fn_take(I, l, a, val_none(), &a)) != ST_OK) {
            val_release(b);
            return true;
        }
        if (tb && (*st = call_fn_take(I, r, b, val_none(), &b)) != ST_OK) {
            val_release(a);
            return true;
        }
        *st = HITTERS_TIMED(I, hitters_binop_name(OP_MATMUL), ops_binary_take(I, OP_MATMUL, a, b, out)) == ST_OK
                  ? ST_OK : err_stamp(I, &n->loc);
        return true;
    }
    if (a.m->sp || b.m->sp) {
        uint64_t t0 = I->hh ? hitters_now_ns() : 0;
        *st = sparse_matmul(I, a.m, ta, b.m, tb, out);
        if (I->hh)
            hitters_add(I->hh, hitters_binop_name(OP_MATMUL), hitters_now_ns() - t0);
        if (*st != ST_OK)
            err_stamp(I, &n->loc);
        val_release(a);
        val_release(b);
        return true;
    }
    int64_t m = ta ? a.m->cols : a.m->rows, k1 = ta ? a.m->rows : a.m->cols;
    int64_t k2 = tb ? b.m->cols : b.m->rows, nn = tb ? b.m->rows : b.m->cols;
    Matrix *C = NULL;
    if (k1 != k2)
        *st = err_at(I, &n->loc, "invalid dimensions for matrix multiplication (k1=%lld, k2=%lld)",
                     (long long)k1, (long long)k2);
    else if (!(C = mat_alloc(I, m, nn)))
        *st = err_stamp(I, &n->loc);
    else {
        uint64_t t0 = I->hh ? hitters_now_ns() : 0;
        bool done = mat_matmul_stop(a.m, ta, b.m, tb, C, I->interrupt, 0);
        if (I->hh)
            hitters_add(I->hh, hitters_binop_name(OP_MATMUL), hitters_now_ns() - t0);
        if (done) {
            *out = val_matrix_take(C);
            *st = ST_OK;
        } else {
            mat_release(C);     /* Ctrl-C between two row panels */
            *st = eval_raise_interrupt(I, &n->loc);
        }
    }
    val_release(a);
    val_release(b);
    return true;
}
