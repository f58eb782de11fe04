/* SPDX-License-Identifier: Apache-2.0
 * DML operators (doc/language.md, "operators") and scalar conversions (doc/language.md, "types").
 * Scalar op scalar never allocates (it runs once per operator node of the
 * tree walker). Cell-wise matrix loops are specialised per operator at
 * compile time (cell() is force-inlined with a constant op), so each loop is
 * a plain vectorisable loop with no call per cell.
 * Every result matrix is fresh or is an operand's storage reused when that
 * operand was unshared (count 1), which no other thread can see.
 * No state; callable from any thread with its own Interp. */
#include "ops.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/numparse.h"
#include "binops.h"
#include "fmt.h"
#include "matrix.h"
#include "sparse_eval.h"

/* ORDER BinOp (parser/ast.h) */
static const char *const OP_SYM[OP__COUNT] = {
    "+", "-", "*", "/", "^", "%/%", "%%", "%*%",
    "<", "<=", ">", ">=", "==", "!=",
    "&", "|", "&&", "||",
};

static const char *op_sym(BinOp op)
{
    return (unsigned)op < OP__COUNT ? OP_SYM[op] : "?";
}

/* + - * / ^ %/% %% : the operators that reject booleans and strings. */
static inline bool op_is_arith(BinOp op) { return op <= OP_MOD; }
static inline bool op_is_cmp(BinOp op) { return op >= OP_LT && op <= OP_NE; }

/* Upstream's value-type names, as its validation messages spell them. */
static const char *vt_name(ValKind k)
{
    switch (k) {
    case VAL_BOOL: return "BOOLEAN";
    case VAL_INT: return "INT64";
    case VAL_DOUBLE:
    case VAL_MATRIX: return "FP64";
    case VAL_STRING: return "STRING";
    default: return "UNKNOWN";
    }
}

static Status err_overflow(Interp *I)
{
    return err_set(I, "Integer operation created numerical result overflow");
}

static Status err_valuetypes(Interp *I, ValKind a, ValKind b)
{
    return err_set(I, "Invalid Valuetypes for operation %s %s", vt_name(a), vt_name(b));
}

static Status err_string_op(Interp *I, const char *sym)
{
    return err_set(I, "Arithmetic '%s' not supported over string inputs.", sym);
}

/* ==================================================================
 * cell kernels
 * ================================================================== */

/* Java's Math.pow differs from C's pow in two corners: a NaN exponent
 * always gives NaN (C: pow(1, NaN) = 1), and pow(+-1, +-Inf) is NaN
 * (C: 1). Everything else is the same IEEE function. */
static inline double java_pow(double x, double y)
{
    if (isnan(y) || (isinf(y) && fabs(x) == 1.0))
        return NAN;
    if (y == 2.0)   /* x*x is correctly rounded; pow may be an ulp off, and the */
        return x * x;   /* matrix kernels square by x*x: a scalar gets the same bits */
    return pow(x, y);
}

/* a %/% b: the double quotient truncated toward zero after adding 2^-53 to
 * its magnitude; NaN and +-Inf pass through. "+ 0.0" turns -0.0 into 0.0,
 * as upstream's round trip through a Java long does. */
static inline double intdiv_d(double x, double y)
{
    double q = x / y;
    if (!isfinite(q))
        return q;
    return copysign(floor(fabs(q) + 0x1p-53), q) + 0.0;
}

/* a %% b = a - (a %/% b) * b, so the sign follows a; b == 0 gives NaN. */
static inline double mod_d(double x, double y)
{
    if (y == 0)
        return NAN;
    return x - intdiv_d(x, y) * y;
}

/* One cell of a cell-wise operator. Always inlined with a constant 'op' by
 * the loops below, so the switch folds away. */
static inline __attribute__((always_inline)) double cell(BinOp op, double x, double y)
{
    const double Z = 0.0;
    switch (op) {
#define CELL_ARITH(OP, EXPR) case OP: return EXPR;
#define CELL_CALL CELL_ARITH
#define CELL_CMP(OP, EXPR) case OP: return (EXPR) ? 1.0 : 0.0;
#define CELL_CASE(OP, KIND, EXPR, FAST) CELL_##KIND(OP, EXPR)
    BINOPS(CELL_CASE)
#undef CELL_CASE
#undef CELL_CMP
#undef CELL_CALL
#undef CELL_ARITH
    default: return NAN;
    }
}

double ops_apply_d(BinOp op, double x, double y)
{
    return cell(op, x, y);
}

/* Two doubles as one SIMD value (GCC vector extensions: SSE2 on any
 * x86-64, NEON on arm64). Explicit, because GCC 12 at -O2 vectorises no
 * loop whose trip count is unknown; this way the cheap operators run two
 * cells per instruction whatever the flags. */
typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16)));

static inline v2d v_load(const double *p)
{
    v2d v;
    memcpy(&v, p, sizeof v);    /* unaligned load (row slices are unaligned) */
    return v;
}

static inline void v_store(double *p, v2d v)
{
    memcpy(p, &v, sizeof v);
}

/* All-ones/zero lane masks to 1.0/0.0: AND with the bits of 1.0. */
static inline v2d v_bool(v2i m)
{
    const v2d one = {1.0, 1.0};
    return (v2d)(m & (v2i)one);
}


/* Two cells at once; same results as cell(), NaN rules included (ordered
 * compares are false on NaN, != is true). */
static inline __attribute__((always_inline)) v2d vcell(BinOp op, v2d x, v2d y)
{
    const v2d Z = {0.0, 0.0};
    switch (op) {
#define VCELL_CASE(OP, KIND, EXPR, FAST) BINOP_VEC_##KIND(OP, EXPR, v_bool)
    BINOPS(VCELL_CASE)
#undef VCELL_CASE
    default: {
        v2d r = {cell(op, x[0], y[0]), cell(op, x[1], y[1])};
        return r;
    }
    }
}

/* One loop for constant operator OPC: pairs through vcell(), the odd cell
 * (and the libm operators) through cell(). XV/YV are the operand pairs at
 * index i, XS/YS the single operands. */
#define CELL_LOOP(OPC, XV, YV, XS, YS) \
    do { \
        int64_t i = 0; \
        if (binop_has_simd(OPC)) \
            for (; i + 2 <= n; i += 2) \
                v_store(o + i, vcell(OPC, XV, YV)); \
        for (; i < n; i++) \
            o[i] = cell(OPC, XS, YS); \
    } while (0)

/* o[i] = a[i] op b[i]. 'o' may be exactly 'a' or 'b' (in-place reuse): each
 * step reads its cells before writing them, so that aliasing is harmless. */
static void k_mm(BinOp op, const double *a, const double *b, double *o, int64_t n)
{
    switch (op) {
#define CASE(OPC, KIND, EXPR, FAST) \
    case OPC: CELL_LOOP(OPC, v_load(a + i), v_load(b + i), a[i], b[i]); break;
        BINOPS(CASE)
#undef CASE
    default: break;
    }
}

/* o[i] = a[i] op s ('o' may be 'a'). */
static void k_ms(BinOp op, const double *a, double s, double *o, int64_t n)
{
    if (op == OP_POW && s == 2.0) {
        /* X^2 is everywhere in ML scripts; x*x is exact (pow(x, 2) rounds
         * the same product) and ~20x faster than calling pow. */
        CELL_LOOP(OP_MUL, v_load(a + i), v_load(a + i), a[i], a[i]);
        return;
    }
    const v2d sv = {s, s};
    switch (op) {
#define CASE(OPC, KIND, EXPR, FAST) \
    case OPC: CELL_LOOP(OPC, v_load(a + i), sv, a[i], s); break;
        BINOPS(CASE)
#undef CASE
    default: break;
    }
}

/* o[i] = s op b[i] ('o' may be 'b'). */
static void k_sm(BinOp op, double s, const double *b, double *o, int64_t n)
{
    const v2d sv = {s, s};
    switch (op) {
#define CASE(OPC, KIND, EXPR, FAST) \
    case OPC: CELL_LOOP(OPC, sv, v_load(b + i), s, b[i]); break;
        BINOPS(CASE)
#undef CASE
    default: break;
    }
}

/* ==================================================================
 * scalar op scalar
 * ================================================================== */

static Status int_int(Interp *I, BinOp op, int64_t a, int64_t b, Value *out)
{
    int64_t r;
    switch (op) {
    case OP_ADD:
        if (__builtin_add_overflow(a, b, &r))
            return err_overflow(I);
        *out = val_int(r);
        return ST_OK;
    case OP_SUB:
        if (__builtin_sub_overflow(a, b, &r))
            return err_overflow(I);
        *out = val_int(r);
        return ST_OK;
    case OP_MUL:
        if (__builtin_mul_overflow(a, b, &r))
            return err_overflow(I);
        *out = val_int(r);
        return ST_OK;
    case OP_DIV:
        *out = val_double((double)a / (double)b);
        return ST_OK;
    case OP_POW:
        *out = val_double(java_pow((double)a, (double)b));
        return ST_OK;
    case OP_INTDIV:
        /* Upstream divides in double and casts the quotient to a Java long:
         * x/0 is +-Inf -> Long.MAX/MIN_VALUE, 0/0 is NaN -> 0. Exact integer
         * division gives the same answers below 2^53 and better ones above. */
        if (b == 0)
            r = a > 0 ? INT64_MAX : a < 0 ? INT64_MIN : 0;
        else if (a == INT64_MIN && b == -1)
            return err_overflow(I);
        else
            r = a / b;
        *out = val_int(r);
        return ST_OK;
    case OP_MOD:
        /* b == 0: NaN, cast to a long = 0 (upstream quirk). b == -1 would
         * trap in C for INT64_MIN; the remainder is 0 anyway. */
        *out = val_int(b == 0 || b == -1 ? 0 : a % b);
        return ST_OK;
    case OP_LT: *out = val_bool(a < b); return ST_OK;
    case OP_LE: *out = val_bool(a <= b); return ST_OK;
    case OP_GT: *out = val_bool(a > b); return ST_OK;
    case OP_GE: *out = val_bool(a >= b); return ST_OK;
    case OP_EQ: *out = val_bool(a == b); return ST_OK;
    case OP_NE: *out = val_bool(a != b); return ST_OK;
    case OP_AND: *out = val_bool(a != 0 && b != 0); return ST_OK;
    case OP_OR: *out = val_bool(a != 0 || b != 0); return ST_OK;
    default: break;
    }
    return ST_ERR;  /* not reached: callers filter %*%, && and || */
}

static Status err_bad_op(Interp *I, BinOp op, ValKind a, ValKind b)
{
    if (op == OP_MATMUL)
        return err_set(I, "Matrix multiplication requires matrix operands (got %s and %s)",
                       val_kind_name(a), val_kind_name(b));
    if (op == OP_ANDAND)
        return err_set(I, "Conditional AND (&&) not supported.");
    if (op == OP_OROR)
        return err_set(I, "Conditional OR (||) not supported.");
    return err_set(I, "operator '%s' is not defined for %s and %s", op_sym(op), val_kind_name(a),
                   val_kind_name(b));
}

/* a, b in {boolean, int, double}. */
static Status scalar_scalar(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    if (op == OP_MATMUL || op >= OP_ANDAND)
        return err_bad_op(I, op, a.kind, b.kind);
    if (a.kind == VAL_INT && b.kind == VAL_INT)
        return int_int(I, op, a.i, b.i, out);
    if (op_is_arith(op) && (a.kind == VAL_BOOL) != (b.kind == VAL_BOOL))
        return err_valuetypes(I, a.kind, b.kind);
    double x = val_num(a), y = val_num(b);
    if (op_is_arith(op))
        *out = val_double(cell(op, x, y));
    else
        *out = val_bool(ops_apply_d(op, x, y) != 0);
    return ST_OK;
}

/* ==================================================================
 * strings
 * ================================================================== */

/* The string form of scalar v (doc/language.md, "types") as a pointer and length; 'buf'
 * (32 bytes) holds it unless v is a string. */
static const char *scalar_form(Value v, char *buf, size_t *n)
{
    switch (v.kind) {
    case VAL_STRING:
        *n = (size_t)v.s->len;
        return v.s->s;
    case VAL_BOOL:
        *n = v.b ? 4 : 5;
        return v.b ? "TRUE" : "FALSE";
    case VAL_INT:
        *n = (size_t)snprintf(buf, 32, "%lld", (long long)v.i);
        return buf;
    case VAL_DOUBLE:
        *n = (size_t)fmt_double_java(v.d, buf);
        return buf;
    default:
        *n = 0;
        return "";
    }
}

/* Scalars only, at least one a string. Borrowed operands. */
static Status string_op(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    char ba[32], bb[32];
    size_t na, nb;
    const char *sa = scalar_form(a, ba, &na), *sb = scalar_form(b, bb, &nb);
    if (op == OP_ADD) {
        Str *s = str_concat(sa, na, sb, nb);
        if (!s)
            return err_set(I, "out of memory concatenating strings of %zu and %zu bytes", na, nb);
        *out = val_str_take(s);
        return ST_OK;
    }
    if (op_is_cmp(op)) {
        /* Java String.compareTo; strings hold no NULs, so strcmp orders
         * them by code point (UTF-8 byte order), as compareTo does on BMP text. */
        int c = strcmp(sa, sb);
        bool r = false;
        switch (op) {
        case OP_LT: r = c < 0; break;
        case OP_LE: r = c <= 0; break;
        case OP_GT: r = c > 0; break;
        case OP_GE: r = c >= 0; break;
        case OP_EQ: r = c == 0; break;
        case OP_NE: r = c != 0; break;
        default: break;
        }
        *out = val_bool(r);
        return ST_OK;
    }
    if (op == OP_MATMUL || op >= OP_ANDAND)
        return err_bad_op(I, op, a.kind, b.kind);
    return err_string_op(I, op_sym(op));
}

/* A string and a matrix: upstream's message, plus what the user most
 * likely meant ("v=" + X with X 1x1 wants the cell's value). */
static Status err_string_matrix(Interp *I, BinOp op, Value a, Value b)
{
    const Matrix *m = a.kind == VAL_MATRIX ? a.m : b.m;
    if (op == OP_ADD && m->rows == 1 && m->cols == 1)
        return err_set(I, "Arithmetic '+' not supported over string inputs. (The matrix is 1x1: "
                          "as.scalar(X) gives its value to concatenate.)");
    return err_string_op(I, op_sym(op));
}

/* ==================================================================
 * matrices
 * ================================================================== */

/* How the operands line up (doc/language.md, "operators"). */
typedef enum Shape {
    SH_MM,      /* same shape, cell by cell */
    SH_MS,      /* matrix op scalar (also an m x n op 1 x 1 matrix) */
    SH_SM,      /* scalar op matrix */
    SH_COL,     /* m x n op m x 1: b[i] applies to row i */
    SH_ROW,     /* m x n op 1 x n: b[j] applies to column j */
    SH_OUTER,   /* m x 1 op 1 x n -> m x n */
} Shape;

static void run_cells(BinOp op, Shape sh, const Matrix *A, const Matrix *B, double s, Matrix *O)
{
    int64_t n = mat_len(O);
    if (n == 0)
        return;
    switch (sh) {
    case SH_MM:
        k_mm(op, A->data, B->data, O->data, n);
        break;
    case SH_MS:
        k_ms(op, A->data, s, O->data, n);
        break;
    case SH_SM:
        k_sm(op, s, B->data, O->data, n);
        break;
    case SH_COL:
        for (int64_t i = 0; i < O->rows; i++)
            k_ms(op, A->data + i * A->cols, B->data[i], O->data + i * O->cols, O->cols);
        break;
    case SH_ROW:
        for (int64_t i = 0; i < O->rows; i++)
            k_mm(op, A->data + i * A->cols, B->data, O->data + i * O->cols, O->cols);
        break;
    case SH_OUTER:
        for (int64_t i = 0; i < O->rows; i++)
            k_sm(op, A->data[i], B->data, O->data + i * O->cols, O->cols);
        break;
    }
}

/* Can 'v' lend its storage to a rows x cols result? Only when we hold the
 * sole reference: then no other thread or variable can see the write. */
static bool reusable(Value v, int64_t rows, int64_t cols)
{
    return v.kind == VAL_MATRIX && v.m->rows == rows && v.m->cols == cols && obj_unique(&v.m->h);
}

/* At least one operand a matrix, the other a matrix or a number/boolean.
 * Consumes a and b. */
static Status matrix_op_take(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    Status st = ST_OK;
    if (op_is_arith(op) && (a.kind == VAL_BOOL || b.kind == VAL_BOOL)) {
        st = err_valuetypes(I, a.kind, b.kind);
        goto done;
    }
    Shape sh;
    double s = 0;
    int64_t rows, cols;
    if (a.kind != VAL_MATRIX) {
        sh = SH_SM;
        s = val_num(a);
        rows = b.m->rows;
        cols = b.m->cols;
    } else if (b.kind != VAL_MATRIX) {
        sh = SH_MS;
        s = val_num(b);
        rows = a.m->rows;
        cols = a.m->cols;
    } else {
        const Matrix *A = a.m, *B = b.m;
        rows = A->rows;
        cols = A->cols;
        if (A->rows == B->rows && A->cols == B->cols) {
            sh = SH_MM;
        } else if (B->rows == 1 && B->cols == 1) {
            sh = SH_MS;
            s = B->data[0];
        } else if (B->cols == 1 && B->rows == A->rows) {
            sh = SH_COL;
        } else if (B->rows == 1 && B->cols == A->cols) {
            sh = SH_ROW;
        } else if (A->cols == 1 && B->rows == 1) {
            /* Upstream's runtime computes an outer result here. */
            sh = SH_OUTER;
            cols = B->cols;
        } else {
            st = err_set(I, "Block sizes are not matched for binary cell operations: %lldx%lld vs %lldx%lld",
                         (long long)A->rows, (long long)A->cols, (long long)B->rows, (long long)B->cols);
            goto done;
        }
    }
    Matrix *O;
    if (reusable(a, rows, cols)) {
        O = a.m;
        a = val_none();     /* handed over to the result */
    } else if (reusable(b, rows, cols)) {
        O = b.m;
        b = val_none();
    } else {
        O = mat_alloc(I, rows, cols);
        if (!O) {
            st = ST_ERR;
            goto done;
        }
    }
    /* When O is an operand, the variable that named it above is now none:
     * read through O in that case. */
    const Matrix *A = a.kind == VAL_MATRIX ? a.m : O;
    const Matrix *B = b.kind == VAL_MATRIX ? b.m : O;
    run_cells(op, sh, A, B, s, O);
    *out = val_matrix_take(O);
done:
    val_release(a);
    val_release(b);
    return st;
}

/* A %*% B; consumes a and b. */
static Status matmul_take(Interp *I, Value a, Value b, Value *out)
{
    Status st = ST_OK;
    if (a.kind != VAL_MATRIX || b.kind != VAL_MATRIX) {
        st = err_bad_op(I, OP_MATMUL, a.kind, b.kind);
        goto done;
    }
    if (a.m->cols != b.m->rows) {
        st = err_set(I, "invalid dimensions for matrix multiplication (k1=%lld, k2=%lld)",
                     (long long)a.m->cols, (long long)b.m->rows);
        goto done;
    }
    Matrix *C = mat_alloc(I, a.m->rows, b.m->cols);
    if (!C) {
        st = ST_ERR;
        goto done;
    }
    if (!mat_matmul_stop(a.m, false, b.m, false, C, I->interrupt, 0)) {
        mat_release(C);
        st = err_set(I, "interrupted");
        I->err.interrupted = true;
        goto done;
    }
    *out = val_matrix_take(C);
done:
    val_release(a);
    val_release(b);
    return st;
}

/* ==================================================================
 * entry points
 * ================================================================== */

/* Everything but scalar op scalar. Kept out of line so that the scalar
 * path of ops_binary_take needs no big stack frame. */
static __attribute__((noinline)) Status binary_obj_take(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    Status st;
    if (a.kind == VAL_LIST || b.kind == VAL_LIST || a.kind == VAL_FRAME || b.kind == VAL_FRAME ||
        a.kind == VAL_NONE || b.kind == VAL_NONE) {
        st = err_bad_op(I, op, a.kind, b.kind);
    } else if (op == OP_MATMUL) {
        if (val_is_sparse(a) || val_is_sparse(b))
            return sparse_binary_take(I, op, a, b, out);
        return matmul_take(I, a, b, out);
    } else if (a.kind == VAL_STRING || b.kind == VAL_STRING) {
        if (a.kind == VAL_MATRIX || b.kind == VAL_MATRIX)
            st = op >= OP_ANDAND ? err_bad_op(I, op, a.kind, b.kind) : err_string_matrix(I, op, a, b);
        else
            st = string_op(I, op, a, b, out);
    } else if (op >= OP_ANDAND) {
        st = err_bad_op(I, op, a.kind, b.kind);
    } else {
        if (val_is_sparse(a) || val_is_sparse(b))
            return sparse_binary_take(I, op, a, b, out);
        return matrix_op_take(I, op, a, b, out);
    }
    val_release(a);
    val_release(b);
    return st;
}

/* Contract in ops.h. Both operands are consumed, on error too. */
Status ops_binary_take(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    /* The hot case first: two unboxed scalars, nothing to release. */
    if (a.kind >= VAL_BOOL && a.kind <= VAL_DOUBLE && b.kind >= VAL_BOOL && b.kind <= VAL_DOUBLE)
        return scalar_scalar(I, op, a, b, out);
    return binary_obj_take(I, op, a, b, out);
}

/* Borrowed operands: the extra references keep them from being reused. */
Status ops_binary(Interp *I, BinOp op, Value a, Value b, Value *out)
{
    if (!val_is_obj(a) && !val_is_obj(b))
        return ops_binary_take(I, op, a, b, out);
    return ops_binary_take(I, op, val_ref(a), val_ref(b), out);
}

/* -a, +a, !a; consumes a. -M is M * -1 cell-wise (so 0 becomes -0.0). */
Status ops_unary_take(Interp *I, UnOp op, Value a, Value *out)
{
    Status st = ST_OK;
    switch (a.kind) {
    case VAL_INT:
        if (op == UOP_NEG) {
            if (a.i == INT64_MIN)
                return err_overflow(I);
            *out = val_int(-a.i);
        } else {
            *out = op == UOP_NOT ? val_bool(a.i == 0) : a;
        }
        return ST_OK;
    case VAL_DOUBLE:
        *out = op == UOP_NEG ? val_double(-a.d) : op == UOP_NOT ? val_bool(a.d == 0) : a;
        return ST_OK;
    case VAL_BOOL:
        if (op == UOP_NEG)   /* -x is x * -1: boolean times int */
            return err_valuetypes(I, VAL_BOOL, VAL_INT);
        *out = op == UOP_NOT ? val_bool(!a.b) : a;
        return ST_OK;
    case VAL_STRING:
        if (op == UOP_PLUS) {
            *out = a;
            return ST_OK;
        }
        /* Upstream parses -x as x * -1, hence the '*'. */
        st = err_string_op(I, op == UOP_NEG ? "*" : "!");
        break;
    case VAL_MATRIX: {
        if (op == UOP_PLUS) {
            *out = a;
            return ST_OK;
        }
        if (a.m->sp)
            return sparse_unary_take(I, op, a, out);
        Matrix *M = a.m, *O;
        if (obj_unique(&M->h)) {
            O = M;
            a = val_none();
        } else if (!(O = mat_alloc(I, M->rows, M->cols))) {
            st = ST_ERR;
            break;
        }
        const double *x = M->data;
        double *o = O->data;
        int64_t n = mat_len(O);
        if (op == UOP_NEG)
            for (int64_t i = 0; i < n; i++)
                o[i] = -x[i];
        else
            for (int64_t i = 0; i < n; i++)
                o[i] = x[i] == 0 ? 1.0 : 0.0;
        *out = val_matrix_take(O);
        break;
    }
    default:
        st = err_set(I, "unary '%s' is not defined for a %s", op == UOP_NEG ? "-" : op == UOP_NOT ? "!" : "+",
                     val_kind_name(a.kind));
        break;
    }
    val_release(a);
    return st;
}

/* ==================================================================
 * conversions (doc/language.md, "types")
 * ================================================================== */

/* Java's (long) cast of sign(d)*floor(|d| + 2^-53): saturating, NaN -> 0. */
int64_t ops_d2i(double d)
{
    if (isnan(d))
        return 0;
    double t = copysign(floor(fabs(d) + 0x1p-53), d);
    if (t >= 0x1p63)
        return INT64_MAX;
    if (t <= -0x1p63)
        return INT64_MIN;
    return (int64_t)t;
}

/* Java's Double.parseDouble (numparse.h: one grammar for every reader). */
bool ops_parse_java_double(const char *s, double *out)
{
    return num_parse_double(s, strlen(s), out);
}

/* An exact int64 when s is (whitespace-trimmed) [+-]digits within range. */
static bool parse_exact_int(const char *s, int64_t *out)
{
    const char *p = s;
    while (*p && (unsigned char)*p <= ' ')
        p++;
    const char *q = p;
    if (*q == '+' || *q == '-')
        q++;
    if (!isdigit((unsigned char)*q))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (errno == ERANGE)
        return false;
    while (*end && (unsigned char)*end <= ' ')
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

static Status err_convert(Interp *I, Value v, const char *to)
{
    if (v.kind == VAL_STRING)
        return err_set(I, "cannot convert '%s' to a number", v.s->s);
    return err_set(I, "cannot convert %s to %s", val_kind_name(v.kind), to);
}

Status ops_to_bool(Interp *I, Value v, bool *out)
{
    switch (v.kind) {
    case VAL_BOOL: *out = v.b; return ST_OK;
    case VAL_INT: *out = v.i != 0; return ST_OK;
    case VAL_DOUBLE: *out = v.d != 0; return ST_OK;
    case VAL_STRING: *out = strcmp(v.s->s, "TRUE") == 0 || strcmp(v.s->s, "true") == 0; return ST_OK;
    default: return err_set(I, "cannot convert %s to boolean", val_kind_name(v.kind));
    }
}

Status ops_to_int(Interp *I, Value v, int64_t *out)
{
    double d;
    switch (v.kind) {
    case VAL_BOOL: *out = v.b; return ST_OK;
    case VAL_INT: *out = v.i; return ST_OK;
    case VAL_DOUBLE: *out = ops_d2i(v.d); return ST_OK;
    case VAL_STRING:
        if (parse_exact_int(v.s->s, out))
            return ST_OK;
        if (!ops_parse_java_double(v.s->s, &d))
            return err_convert(I, v, "int");
        *out = ops_d2i(d);
        return ST_OK;
    default: return err_convert(I, v, "int");
    }
}

Status ops_to_double(Interp *I, Value v, double *out)
{
    switch (v.kind) {
    case VAL_BOOL: *out = v.b ? 1.0 : 0.0; return ST_OK;
    case VAL_INT: *out = (double)v.i; return ST_OK;
    case VAL_DOUBLE: *out = v.d; return ST_OK;
    case VAL_STRING:
        if (!ops_parse_java_double(v.s->s, out))
            return err_convert(I, v, "double");
        return ST_OK;
    default: return err_convert(I, v, "double");
    }
}

/* A new Str, or NULL with a DML error set. */
static Str *new_str(Interp *I, const char *s, size_t n)
{
    Str *r = str_new(s, n);
    if (!r)
        err_set(I, "out of memory allocating a string of %zu bytes", n);
    return r;
}

/* For a string, returns a new reference to the same Str. */
Status ops_to_str(Interp *I, Value v, Str **out)
{
    if (v.kind == VAL_STRING) {
        obj_retain(&v.s->h);
        *out = v.s;
        return ST_OK;
    }
    if (!val_is_scalar(v))
        return err_set(I, "cannot convert %s to string", val_kind_name(v.kind));
    char buf[32];
    size_t n;
    const char *s = scalar_form(v, buf, &n);
    *out = new_str(I, s, n);
    return *out ? ST_OK : ST_ERR;
}

/* Contract in ops.h. v is consumed on error too. SCALAR_UNKNOWN keeps v as is. */
Status ops_convert_take(Interp *I, Value v, ScalarType vt, Value *out)
{
    Status st = ST_OK;
    switch (vt) {
    case SCALAR_INT:
        if (v.kind == VAL_INT)
            break;
        {
            int64_t i = 0;
            st = ops_to_int(I, v, &i);
            val_release(v);
            v = val_int(i);
        }
        break;
    case SCALAR_DOUBLE:
        if (v.kind == VAL_DOUBLE)
            break;
        {
            double d = 0;
            st = ops_to_double(I, v, &d);
            val_release(v);
            v = val_double(d);
        }
        break;
    case SCALAR_BOOLEAN:
        if (v.kind == VAL_BOOL)
            break;
        {
            bool b = false;
            st = ops_to_bool(I, v, &b);
            val_release(v);
            v = val_bool(b);
        }
        break;
    case SCALAR_STRING:
        if (v.kind == VAL_STRING)
            break;
        {
            Str *s = NULL;
            st = ops_to_str(I, v, &s);
            val_release(v);
            v = s ? val_str_take(s) : val_none();
        }
        break;
    default:
        break;
    }
    if (st != ST_OK) {
        val_release(v);
        return st;
    }
    *out = v;
    return ST_OK;
}
