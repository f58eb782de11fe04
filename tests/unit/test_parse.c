/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of the front end (lexer/dml.l, parser/dml.y, parser/parse.c,
 * parser/ast.c): precedence, statement and index forms, lexing details,
 * locations, diagnostics with caret, the incomplete flag, expression mode,
 * concurrent parsing, and a small random/truncation stress run that must
 * never crash or leak (run it under ASan). Trees are compared through a
 * compact S-expression rendering defined here. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/parse.h"

static int n_pass, n_fail;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            n_pass++;                                                                              \
        } else {                                                                                   \
            n_fail++;                                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (g_ && strcmp(g_, w_) == 0) {                                                           \
            n_pass++;                                                                              \
        } else {                                                                                   \
            n_fail++;                                                                              \
            fprintf(stderr, "%s:%d: got  [%s]\n%*s want [%s]\n", __FILE__, __LINE__,              \
                    g_ ? g_ : "(null)", (int)strlen(__FILE__) + 6, "", w_);                        \
        }                                                                                          \
    } while (0)

/* ==== S-expression rendering ==== */

typedef struct Sx {
    char buf[8192];
    size_t n;
} Sx;

static void sx_add(Sx *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sx_add(Sx *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(s->buf + s->n, sizeof s->buf - s->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        s->n += (size_t)k < sizeof s->buf - s->n ? (size_t)k : sizeof s->buf - s->n - 1;
}

static void sx_expr(Sx *s, const Node *n);
static void sx_stmts(Sx *s, Node *const *v, int n);

static void sx_part(Sx *s, const IndexPart *p)
{
    switch (p->kind) {
    case IX_ALL: sx_add(s, "_"); break;
    case IX_ONE: sx_expr(s, p->lo); break;
    case IX_RANGE:
        sx_expr(s, p->lo);
        sx_add(s, ":");
        sx_expr(s, p->hi);
        break;
    }
}

static void sx_index(Sx *s, const IndexPart *r, const IndexPart *c, bool has_cols)
{
    sx_add(s, "[");
    sx_part(s, r);
    if (has_cols) {
        sx_add(s, ",");
        sx_part(s, c);
    }
    sx_add(s, "]");
}

static void sx_lhs(Sx *s, const Lhs *l)
{
    sx_add(s, "%s", l->name);
    if (l->indexed)
        sx_index(s, &l->rows, &l->cols, l->has_cols);
}

static void sx_expr(Sx *s, const Node *n)
{
    if (!n) {
        sx_add(s, "NULL");
        return;
    }
    switch (n->kind) {
    case N_INT: sx_add(s, "%lld", (long long)n->lit.i); break;
    case N_DOUBLE: sx_add(s, "%gd", n->lit.d); break;
    case N_BOOL: sx_add(s, "%s", n->lit.b ? "TRUE" : "FALSE"); break;
    case N_STRING: sx_add(s, "\"%s\"", n->str.s); break;
    case N_IDENT: sx_add(s, "%s", n->ident.name); break;
    case N_CMDARG: sx_add(s, "$%s", n->cmdarg.name); break;
    case N_BINARY:
        sx_add(s, "(%s ", ast_binop_name(n->binary.op));
        sx_expr(s, n->binary.lhs);
        sx_add(s, " ");
        sx_expr(s, n->binary.rhs);
        sx_add(s, ")");
        break;
    case N_UNARY:
        sx_add(s, "(%s ", n->unary.op == UOP_NEG ? "neg" : n->unary.op == UOP_NOT ? "!" : "pos");
        sx_expr(s, n->unary.operand);
        sx_add(s, ")");
        break;
    case N_CALL:
        sx_add(s, "(call %s%s%s", n->call.ns ? n->call.ns : "", n->call.ns ? "::" : "",
               n->call.name);
        for (int i = 0; i < n->call.nargs; i++) {
            sx_add(s, " ");
            if (n->call.argnames[i])
                sx_add(s, "%s=", n->call.argnames[i]);
            sx_expr(s, n->call.args[i]);
        }
        sx_add(s, ")");
        break;
    case N_INDEX:
        sx_add(s, "(ix ");
        sx_expr(s, n->index.target);
        sx_index(s, &n->index.rows, &n->index.cols, n->index.has_cols);
        sx_add(s, ")");
        break;
    case N_EXPRLIST:
        sx_add(s, "(list");
        for (int i = 0; i < n->list.n; i++) {
            sx_add(s, " ");
            sx_expr(s, n->list.items[i]);
        }
        sx_add(s, ")");
        break;
    default:
        sx_add(s, "<%s>", ast_kind_name(n->kind));
        break;
    }
}

static void sx_block(Sx *s, Node *const *v, int n)
{
    sx_add(s, "{");
    sx_stmts(s, v, n);
    sx_add(s, "}");
}

static void sx_params(Sx *s, const Param *p, int n)
{
    static const char *const ty[] = {"scalar", "matrix", "frame", "list"};
    static const char *const vt[] = {"unknown", "int", "double", "boolean", "string"};
    sx_add(s, "(");
    for (int i = 0; i < n; i++) {
        sx_add(s, "%s%s[%s] %s", i ? " " : "", ty[p[i].type], vt[p[i].vtype], p[i].name);
        if (p[i].dflt) {
            sx_add(s, "=");
            sx_expr(s, p[i].dflt);
        }
    }
    sx_add(s, ")");
}

static void sx_stmt(Sx *s, const Node *n)
{
    switch (n->kind) {
    case N_ASSIGN:
        sx_add(s, "(%s ", n->assign.accum ? "+=" : "=");
        sx_lhs(s, &n->assign.target);
        sx_add(s, " ");
        sx_expr(s, n->assign.value);
        sx_add(s, ")");
        break;
    case N_MULTIASSIGN:
        sx_add(s, "(multi");
        for (int i = 0; i < n->multi.n; i++) {
            sx_add(s, " ");
            sx_lhs(s, &n->multi.targets[i]);
        }
        sx_add(s, " ");
        sx_expr(s, n->multi.call);
        sx_add(s, ")");
        break;
    case N_IFDEF:
        sx_add(s, "(ifdef ");
        sx_lhs(s, &n->ifdef.target);
        sx_add(s, " $%s ", n->ifdef.param);
        sx_expr(s, n->ifdef.dflt);
        sx_add(s, ")");
        break;
    case N_EXPRSTMT:
        sx_add(s, "(do ");
        sx_expr(s, n->expr.e);
        sx_add(s, ")");
        break;
    case N_IF:
        sx_add(s, "(if ");
        sx_expr(s, n->ifs.cond);
        sx_add(s, " ");
        sx_block(s, n->ifs.then_b, n->ifs.nthen);
        if (n->ifs.else_b) {
            sx_add(s, " else ");
            sx_block(s, n->ifs.else_b, n->ifs.nelse);
        }
        sx_add(s, ")");
        break;
    case N_FOR:
        sx_add(s, "(%s %s ", n->loop.parfor ? "parfor" : "for", n->loop.var);
        if (n->loop.seq_form)
            sx_add(s, "seq ");
        sx_expr(s, n->loop.from);
        sx_add(s, " ");
        sx_expr(s, n->loop.to);
        if (n->loop.by) {
            sx_add(s, " by ");
            sx_expr(s, n->loop.by);
        }
        for (int i = 0; i < n->loop.nopts; i++) {
            sx_add(s, " %s=", n->loop.opts[i].name);
            sx_expr(s, n->loop.opts[i].value);
        }
        sx_add(s, " ");
        sx_block(s, n->loop.body, n->loop.nbody);
        sx_add(s, ")");
        break;
    case N_WHILE:
        sx_add(s, "(while ");
        sx_expr(s, n->loop.cond);
        sx_add(s, " ");
        sx_block(s, n->loop.body, n->loop.nbody);
        sx_add(s, ")");
        break;
    case N_FUNCDEF:
        sx_add(s, "(%s %s ", n->func->external ? "extfunc" : "func", n->func->name);
        sx_params(s, n->func->params, n->func->nparams);
        sx_add(s, " -> ");
        sx_params(s, n->func->outs, n->func->nouts);
        sx_add(s, " ");
        sx_block(s, n->func->body, n->func->nbody);
        sx_add(s, ")");
        break;
    case N_SOURCE: sx_add(s, "(source \"%s\" %s)", n->source.path, n->source.alias); break;
    case N_SETWD: sx_add(s, "(setwd \"%s\")", n->source.path); break;
    default: sx_expr(s, n); break;
    }
}

static void sx_stmts(Sx *s, Node *const *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            sx_add(s, " ");
        sx_stmt(s, v[i]);
    }
}

/* ==== helpers ==== */

/* The failed parse's error as users see it (malloc'd), while the arena
 * holding its file name is alive. */
static char *shown(const ParseOut *out, const char *src)
{
    char *s = diag_render_err(&out->err, src, strlen(src), false);
    if (!s)
        abort();
    return s;
}

/* Parses a program and returns its S-expression (static buffer), or
 * "ERROR: <first line of the message>". */
static const char *prog(const char *src)
{
    static Sx s;
    s.n = 0;
    s.buf[0] = '\0';
    Arena *a = arena_new();
    ParseOut out;
    if (parse_source(a, "t.dml", src, strlen(src), PARSE_PROGRAM, &out)) {
        sx_stmts(&s, out.stmts, out.n);
    } else {
        char *e = shown(&out, src);
        const char *nl = strchr(e, '\n');
        sx_add(&s, "ERROR: %.*s", nl ? (int)(nl - e) : (int)strlen(e), e);
        free(e);
    }
    arena_free(a);
    return s.buf;
}

/* The S-expression of one expression (PARSE_EXPR mode). */
static const char *expr(const char *src)
{
    static Sx s;
    s.n = 0;
    s.buf[0] = '\0';
    Arena *a = arena_new();
    ParseOut out;
    if (parse_source(a, "t.dml", src, strlen(src), PARSE_EXPR, &out)) {
        sx_expr(&s, out.expr);
    } else {
        char *e = shown(&out, src);
        const char *nl = strchr(e, '\n');
        sx_add(&s, "ERROR: %.*s", nl ? (int)(nl - e) : (int)strlen(e), e);
        free(e);
    }
    arena_free(a);
    return s.buf;
}

/* Full error message (malloc'd copy, "" if the parse succeeded) and flag. */
static char *error_of(const char *src, ParseMode mode, bool *incomplete)
{
    Arena *a = arena_new();
    ParseOut out;
    bool ok = parse_source(a, "t.dml", src, strlen(src), mode, &out);
    char *e = ok ? strdup("") : shown(&out, src);
    arena_free(a);
    if (incomplete)
        *incomplete = out.incomplete;
    return e;
}

static bool incomplete(const char *src)
{
    bool inc = false;
    free(error_of(src, PARSE_PROGRAM, &inc));
    return inc;
}

/* ==== tests ==== */

static void test_precedence(void)
{
    CHECK_STR(expr("-2^2"), "(neg (^ 2 2))");
    CHECK_STR(expr("2^3^2"), "(^ 2 (^ 3 2))");
    CHECK_STR(expr("2^-1"), "(^ 2 -1)");
    CHECK_STR(expr("2^-x^2"), "(^ 2 (neg (^ x 2)))");
    CHECK_STR(expr("a < b < c"), "(< (< a b) c)");
    CHECK_STR(expr("!a == b"), "(! (== a b))");
    CHECK_STR(expr("!a & b"), "(& (! a) b)");
    CHECK_STR(expr("-x %*% y"), "(%*% (neg x) y)");
    CHECK_STR(expr("1 - -1"), "(- 1 -1)");
    CHECK_STR(expr("a %% b * c"), "(* (%% a b) c)");
    CHECK_STR(expr("a * b %/% c"), "(* a (%/% b c))");
    CHECK_STR(expr("a %/% b %*% c"), "(%/% a (%*% b c))");
    CHECK_STR(expr("a * -b"), "(* a (neg b))");
    CHECK_STR(expr("a + b * c - d / e"), "(- (+ a (* b c)) (/ d e))");
    CHECK_STR(expr("a - b - c"), "(- (- a b) c)");
    CHECK_STR(expr("a | b & c"), "(| a (& b c))");
    CHECK_STR(expr("a || b && c"), "(|| a (&& b c))");
    CHECK_STR(expr("a & b | c & d"), "(| (& a b) (& c d))");
    CHECK_STR(expr("a + b >= c * d"), "(>= (+ a b) (* c d))");
    CHECK_STR(expr("a != b == c"), "(== (!= a b) c)");
    CHECK_STR(expr("!!a"), "(! (! a))");
    CHECK_STR(expr("(a + b) * c"), "(* (+ a b) c)");
    CHECK_STR(expr("+a"), "(pos a)");
    CHECK_STR(expr("-(a)"), "(neg a)");
    CHECK_STR(expr("- -1"), "1");
    CHECK_STR(expr("-2.5"), "-2.5d");
    CHECK_STR(expr("-x^2 + 1"), "(+ (neg (^ x 2)) 1)");
    CHECK_STR(expr("x < -1"), "(< x -1)");
    CHECK_STR(expr("X %*% W + b"), "(+ (%*% X W) b)");
    CHECK_STR(expr("(X > 0) * dout"), "(* (> X 0) dout)");
}

static void test_literals(void)
{
    CHECK_STR(expr("5"), "5");
    CHECK_STR(expr("1e5"), "100000d");
    CHECK_STR(expr("1E-3"), "0.001d");
    CHECK_STR(expr(".5"), "0.5d");
    CHECK_STR(expr("1."), "1d");
    CHECK_STR(expr("3.0"), "3d");
    CHECK_STR(expr("5e-04"), "0.0005d");
    CHECK_STR(expr("1e400"), "infd");
    CHECK_STR(expr("9223372036854775807"), "9223372036854775807");
    CHECK_STR(expr("-9223372036854775807"), "-9223372036854775807");
    CHECK_STR(expr("TRUE & FALSE"), "(& TRUE FALSE)");
    CHECK_STR(expr("true"), "true");
    CHECK_STR(expr("pi"), "3.14159d");
    CHECK_STR(expr("Inf"), "infd");
    CHECK_STR(expr("-Inf"), "-infd");
    CHECK_STR(expr("NaN"), "nand");
    CHECK_STR(expr("$epochs + $1"), "(+ $epochs $1)");
    CHECK_STR(expr("[1, x, 3]"), "(list 1 x 3)");
}

static void test_strings(void)
{
    Arena *a = arena_new();
    ParseOut out;
    const char *src = "'a\\tb\\n\\\"\\'\\\\n\\b\\f\\r' + \"x\ny\"";
    CHECK(parse_source(a, "t.dml", src, strlen(src), PARSE_EXPR, &out));
    if (out.expr && out.expr->kind == N_BINARY) {
        const Node *s = out.expr->binary.lhs;
        CHECK(s->kind == N_STRING);
        CHECK(s->str.len == 11);
        CHECK(memcmp(s->str.s, "a\tb\n\"'\\n\b\f\r", 12) == 0);
        CHECK(s->str.v.kind == VAL_NONE);
        const Node *t = out.expr->binary.rhs;
        CHECK(t->str.len == 3 && strcmp(t->str.s, "x\ny") == 0);
        CHECK(t->loc.line == 1 && t->loc.end_line == 2 && t->loc.end_col == 2);
    }
    arena_free(a);
    CHECK_STR(expr("\"\""), "\"\"");
    CHECK_STR(expr("\"# not a comment\""), "\"# not a comment\"");
    CHECK_STR(expr("'say \"hi\"'"), "\"say \"hi\"\"");
    CHECK_STR(expr("\"a\\qb\""), "ERROR: t.dml:1:3: lexical error: invalid escape sequence '\\q' in string");
    CHECK_STR(expr("'x\\"),  "ERROR: t.dml:1:1: lexical error: unterminated string");
}

static void test_identifiers(void)
{
    CHECK_STR(expr("as.scalar(X[1,1])"), "(call as.scalar (ix X[1,1]))");
    CHECK_STR(expr("as.integer(as.scalar(h[\"C\"]))"), "(call as.integer (call as.scalar (ix h[\"C\"])))");
    CHECK_STR(expr("order(target=X, by=1, index.return=TRUE)"),
              "(call order target=X by=1 index.return=TRUE)");
    CHECK_STR(expr("is.na(x) | is.nan(y) | is.infinite(z)"),
              "(| (| (call is.na x) (call is.nan y)) (call is.infinite z))");
    CHECK_STR(expr("pnorm(x, lower.tail=FALSE)"), "(call pnorm x lower.tail=FALSE)");
    CHECK_STR(expr("read.csv(x)"),
              "ERROR: t.dml:1:1: lexical error: invalid identifier 'read.csv' (only as.scalar, "
              "as.matrix, is.na, ... and the other builtin names may contain a dot)");
    CHECK_STR(expr("ns::f(1)"), "(call ns::f 1)");
    CHECK_STR(expr("conv2d::forward(X, W, b, Hf=2)"), "(call conv2d::forward X W b Hf=2)");
    CHECK_STR(expr("x_1 + A2"), "(+ x_1 A2)");
    CHECK_STR(expr("matrix(0, rows=2, cols=2)"), "(call matrix 0 rows=2 cols=2)");
    CHECK_STR(expr("list()"), "(call list)");
    /* reserved words are not identifiers */
    CHECK_STR(prog("in = 3"), "ERROR: t.dml:1:1: syntax error: unexpected 'in'");
    CHECK_STR(prog("int = 3"), "ERROR: t.dml:1:1: syntax error: unexpected type name 'int'");
}

static void test_newlines_and_separators(void)
{
    CHECK_STR(prog("a = 1 b = 2"), "(= a 1) (= b 2)");
    CHECK_STR(prog("x = a\n-b"), "(= x (- a b))");
    CHECK_STR(prog("x = f\n(y)"), "(= x (call f y))");
    CHECK_STR(prog(";;x = 1;;; y = 2;"), "(= x 1) (= y 2)");
    CHECK_STR(prog(""), "");
    CHECK_STR(prog("# only a comment"), "");
    CHECK_STR(prog("x = 1 # comment at EOF"), "(= x 1)");
    CHECK_STR(prog("x = 1 /* block\n comment */ y = 2"), "(= x 1) (= y 2)");
    CHECK_STR(prog("x = 1 /**/ /***/ /* * / ** */"), "(= x 1)");
    CHECK_STR(prog("x = 1\r\ny = 2\r\n"), "(= x 1) (= y 2)");
    CHECK_STR(prog("x<-1"), "(= x 1)");
    CHECK_STR(prog("\xEF\xBB\xBFx = 1"), "(= x 1)");     /* a UTF-8 BOM is skipped */
    CHECK_STR(prog("x = y <- 1"), "ERROR: t.dml:1:7: syntax error: unexpected '<-'");
    /* a '[' after a finished statement starts a multi-assignment only when
     * the matching ']' is followed by '=' or '<-' */
    CHECK_STR(prog("x = y\n[a, b] = f(x)"), "(= x y) (multi a b (call f x))");
    CHECK_STR(prog("x = f(y)\n[a] <- g()"), "(= x (call f y)) (multi a (call g))");
    CHECK_STR(prog("x = Y[1,]\n[a, b] = ns::g()"), "(= x (ix Y[1,_])) (multi a b (call ns::g))");
    CHECK_STR(prog("x = y\nX[1, 2] = 3"), "(= x y) (= X[1,2] 3)");
    CHECK_STR(prog("x = y [1, 2]"), "(= x (ix y[1,2]))");
    CHECK_STR(prog("x = y[z[1]]"), "(= x (ix y[(ix z[1])]))");
    CHECK_STR(prog("if (c) [a, b] = f() else X[1] = 2"),
              "(if c {(multi a b (call f))} else {(= X[1] 2)})");
}

static void test_statements(void)
{
    CHECK_STR(prog("x = 1; y <- 2; z += 3"), "(= x 1) (= y 2) (+= z 3)");
    CHECK_STR(prog("X[i, j] = v; X[i, j] += v; X[i] = v"),
              "(= X[i,j] v) (+= X[i,j] v) (= X[i] v)");
    CHECK_STR(prog("[a, b, c] = f(1, x=2)"), "(multi a b c (call f 1 x=2))");
    CHECK_STR(prog("[W1, b1] <- conv2d::init(F1, C, Hf, Wf, -1)"),
              "(multi W1 b1 (call conv2d::init F1 C Hf Wf -1))");
    CHECK_STR(prog("[a, X[1,]] = f()"), "(multi a X[1,_] (call f))");
    CHECK_STR(prog("print(\"x\"); ns::f(1)"), "(do (call print \"x\")) (do (call ns::f 1))");
    CHECK_STR(prog("x = ifdef($n, 10); X[1] = ifdef($m, 2)"),
              "(ifdef x $n 10) (ifdef X[1] $m 2)");
    CHECK_STR(prog("if (a) x = 1"), "(if a {(= x 1)})");
    CHECK_STR(prog("if (a) x = 1 else x = 2"), "(if a {(= x 1)} else {(= x 2)})");
    CHECK_STR(prog("if (a) x = 1; else x = 2;"), "(if a {(= x 1)} else {(= x 2)})");
    CHECK_STR(prog("if (a) { x = 1; y = 2 } else if (b) { x = 3 } else {}"),
              "(if a {(= x 1) (= y 2)} else {(if b {(= x 3)})})");
    CHECK_STR(prog("if (a) if (b) x = 1 else x = 2"), "(if a {(if b {(= x 1)} else {(= x 2)})})");
    CHECK_STR(prog("for (i in 1:n) s = s + i"), "(for i 1 n {(= s (+ s i))})");
    CHECK_STR(prog("for (i in seq(1, n)) {}"), "(for i seq 1 n {})");
    CHECK_STR(prog("for (i in seq(10, 1, -2)) { x = i; }"), "(for i seq 10 1 by -2 {(= x i)})");
    CHECK_STR(prog("parfor (i in 1:iters, check=0) { x = i }"),
              "(parfor i 1 iters check=0 {(= x i)})");
    CHECK_STR(prog("parfor(i in 1:n, check = 0, par=4, mode=LOCAL) x = i"),
              "(parfor i 1 n check=0 par=4 mode=LOCAL {(= x i)})");
    CHECK_STR(prog("for (i in a+1:b*2) {}"), "(for i (+ a 1) (* b 2) {})");
    CHECK_STR(prog("while (x < 10) x = x + 1"), "(while (< x 10) {(= x (+ x 1))})");
    CHECK_STR(prog("while (FALSE) {}"), "(while FALSE {})");
    CHECK_STR(prog("source(\"nn/layers/affine.dml\") as affine"),
              "(source \"nn/layers/affine.dml\" affine)");
    CHECK_STR(prog("setwd(\"scripts\"); source('a.dml') as a;"),
              "(setwd \"scripts\") (source \"a.dml\" a)");
    CHECK_STR(prog("f = function(matrix[double] X, int k, double lr = 0.01, list[unknown] h)\n"
                   "    return (matrix[double] Y, double loss) {\n  Y = X; loss = 0\n}"),
              "(func f (matrix[double] X scalar[int] k scalar[double] lr=0.01d list[unknown] h)"
              " -> (matrix[double] Y scalar[double] loss) {(= Y X) (= loss 0)})");
    CHECK_STR(prog("g <- function(Matrix[Double] X, Integer n, String s, Boolean b, "
                   "scalar[int] t, frame[string] F) { x = 1 };;"),
              "(func g (matrix[double] X scalar[int] n scalar[string] s scalar[boolean] b "
              "scalar[int] t frame[string] F) -> () {(= x 1)})");
    CHECK_STR(prog("f = function() return () { x = 1 }"), "(func f () -> () {(= x 1)})");
    CHECK_STR(prog("f = externalFunction(int a) return (int b) implemented in "
                   "(classname=\"x.Y\", execlocation=\"master\")"),
              "(extfunc f (scalar[int] a) -> (scalar[int] b) {})");
    CHECK_STR(prog("x = f(1)\nf = function(int n) return (int m) { m = n }\ny = 2"),
              "(= x (call f 1)) (func f (scalar[int] n) -> (scalar[int] m) {(= m n)}) (= y 2)");
}

static void test_index_forms(void)
{
    CHECK_STR(expr("X[i,j]"), "(ix X[i,j])");
    CHECK_STR(expr("X[i,]"), "(ix X[i,_])");
    CHECK_STR(expr("X[,j]"), "(ix X[_,j])");
    CHECK_STR(expr("X[,]"), "(ix X[_,_])");
    CHECK_STR(expr("X[a:b, c:d]"), "(ix X[a:b,c:d])");
    CHECK_STR(expr("X[i]"), "(ix X[i])");
    CHECK_STR(expr("X[]"), "(ix X[_])");
    CHECK_STR(expr("X[padh+1:padh+Hin, ]"), "(ix X[(+ padh 1):(+ padh Hin),_])");
    CHECK_STR(expr("X[(val_size+1):n,]"), "(ix X[(+ val_size 1):n,_])");
    CHECK_STR(expr("f(x)[1]"), "(ix (call f x)[1])");
    CHECK_STR(expr("(A + B)[1, 2]"), "(ix (+ A B)[1,2])");
    CHECK_STR(expr("X[1,][1]"), "(ix (ix X[1,_])[1])");
    CHECK_STR(expr("-X[1,1]^2"), "(neg (^ (ix X[1,1]) 2))");
    CHECK_STR(expr("row[1, as.scalar(indices[1, i])]"),
              "(ix row[1,(call as.scalar (ix indices[1,i]))])");
    CHECK_STR(expr("X[1:, ]"), "ERROR: t.dml:1:5: syntax error: unexpected ','");
}

static void test_locations(void)
{
    Arena *a = arena_new();
    ParseOut out;
    const char *src = "x = 1\n  Y[i, 2] =  foo(a,\n b)\n";
    CHECK(parse_source(a, "dir/t.dml", src, strlen(src), PARSE_PROGRAM, &out));
    CHECK(out.n == 2);
    if (out.n == 2) {
        const Node *s0 = out.stmts[0], *s1 = out.stmts[1];
        CHECK(strcmp(s0->loc.file, "dir/t.dml") == 0);
        CHECK(s0->loc.line == 1 && s0->loc.col == 1 && s0->loc.end_line == 1 && s0->loc.end_col == 5);
        CHECK(s0->assign.target.loc.col == 1 && s0->assign.target.loc.end_col == 1);
        CHECK(s0->assign.value->loc.col == 5);
        CHECK(s1->loc.line == 2 && s1->loc.col == 3 && s1->loc.end_line == 3 && s1->loc.end_col == 3);
        CHECK(s1->assign.target.loc.col == 3 && s1->assign.target.loc.end_col == 9);
        CHECK(s1->assign.target.slot == -1);
        const Node *call = s1->assign.value;
        CHECK(call->kind == N_CALL && call->loc.line == 2 && call->loc.col == 14);
        CHECK(call->loc.end_line == 3 && call->loc.end_col == 3);
        CHECK(call->call.nargs == 2 && call->call.args[1]->loc.line == 3 &&
              call->call.args[1]->loc.col == 2);
        CHECK(s0->loc.file == s1->loc.file);   /* one copy of the name */
    }
    arena_free(a);

    a = arena_new();
    src = "y = -2 + -x";
    CHECK(parse_source(a, "t.dml", src, strlen(src), PARSE_PROGRAM, &out));
    if (out.n == 1) {
        const Node *b = out.stmts[0]->assign.value;
        CHECK(b->binary.lhs->kind == N_INT && b->binary.lhs->loc.col == 5 &&
              b->binary.lhs->loc.end_col == 6);
        CHECK(b->binary.rhs->kind == N_UNARY && b->binary.rhs->loc.col == 10);
    }
    arena_free(a);
}

static void test_errors(void)
{
    char *e;
    e = error_of("x = 1\ny = (2 +\n  3 * )\n", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:3:7: syntax error: unexpected ')'\n      3 * )\n          ^");
    free(e);
    e = error_of("if x", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:1:4: syntax error: unexpected identifier 'x', expecting '('\n"
                 "    if x\n       ^");
    free(e);
    e = error_of("\tx\t= ]", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:1:6: syntax error: unexpected ']'\n    \tx\t= ]\n    \t \t  ^");
    free(e);
    e = error_of("x = \"a\\qb\"", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:1:7: lexical error: invalid escape sequence '\\q' in string\n"
                 "    x = \"a\\qb\"\n          ^");
    free(e);
    e = error_of("f = function(int x) {\n", PARSE_PROGRAM, NULL);   /* just after the '{' */
    CHECK_STR(e, "t.dml:1:22: syntax error: unexpected end of input\n"
                 "    f = function(int x) {\n                         ^");
    free(e);
    e = error_of("x = é @", PARSE_PROGRAM, NULL);   /* caret counts characters, not bytes */
    CHECK_STR(e, "t.dml:1:5: lexical error: invalid character '\\xc3'\n    x = é @\n        ^");
    free(e);
    /* Columns count characters, in the message and under the caret alike
     * (regression: the byte count put them 1 column right per é). */
    e = error_of("x = \"h\xC3\xA9llo\" + )", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:1:15: syntax error: unexpected ')'\n    x = \"h\xC3\xA9llo\" + )\n"
                 "                  ^");
    free(e);
    e = error_of("x = \"\xC3\xA9\\q\"", PARSE_PROGRAM, NULL);   /* inside the string token */
    CHECK_STR(e, "t.dml:1:7: lexical error: invalid escape sequence '\\q' in string\n"
                 "    x = \"\xC3\xA9\\q\"\n          ^");
    free(e);
    e = error_of("x = \"a\x80" "b\" + )", PARSE_PROGRAM, NULL);  /* an invalid byte: one column, shown '?' */
    CHECK_STR(e, "t.dml:1:13: syntax error: unexpected ')'\n    x = \"a?b\" + )\n                ^");
    free(e);
    e = error_of("s = \"\xE6\x97\xA5\"\n\ty = \"\xE6\x97\xA5\" ]", PARSE_PROGRAM, NULL);
    CHECK_STR(e, "t.dml:2:10: syntax error: unexpected ']'\n    \ty = \"\xE6\x97\xA5\" ]\n"
                 "    \t         ^");
    free(e);

    CHECK_STR(prog("x = )"), "ERROR: t.dml:1:5: syntax error: unexpected ')'");
    CHECK_STR(prog("[a, b] = 3"), "ERROR: t.dml:1:10: syntax error: unexpected integer '3', "
                                  "expecting identifier or namespaced name");
    CHECK_STR(prog("source(x) as y"), "ERROR: t.dml:1:8: syntax error: unexpected identifier 'x', "
                                      "expecting string");
    CHECK_STR(prog("pi = 3"), "ERROR: t.dml:1:1: syntax error: Cannot assign a value to the "
                              "builtin constant pi");
    CHECK_STR(prog("Inf[1] = 3"), "ERROR: t.dml:1:1: syntax error: Cannot assign a value to the "
                                  "builtin constant Inf");
    CHECK_STR(prog("[a, NaN] = f()"), "ERROR: t.dml:1:5: syntax error: Cannot assign a value to "
                                      "the builtin constant NaN");
    CHECK_STR(prog("x = 99999999999999999999"),
              "ERROR: t.dml:1:5: lexical error: integer literal '99999999999999999999' is out of "
              "range (64-bit)");
    CHECK_STR(prog("x = 5L"), "ERROR: t.dml:1:5: lexical error: invalid number '5L'");
    CHECK_STR(prog("x = $"), "ERROR: t.dml:1:5: lexical error: '$' must be followed by a "
                             "parameter name or number");
    CHECK_STR(prog("x = 1 @ 2"), "ERROR: t.dml:1:7: lexical error: invalid character '@'");
    CHECK_STR(prog("x = 1\n/* open"), "ERROR: t.dml:2:1: lexical error: unterminated comment");
    CHECK_STR(prog("for (i in foo(1, 2)) x = 1"),
              "ERROR: t.dml:1:11: syntax error: incorrect function:'foo'. expected 'seq'");
    CHECK_STR(prog("for (i in x) x = 1"),
              "ERROR: t.dml:1:11: syntax error: invalid loop range: expected 'from:to' or "
              "'seq(from, to[, by])'");
    CHECK_STR(prog("for (i in seq(1)) x = 1"),
              "ERROR: t.dml:1:11: syntax error: seq in a loop header takes 2 or 3 positional "
              "arguments");
    CHECK_STR(prog("f = function(mat[double] X) { y = 1 }"),
              "ERROR: t.dml:1:14: syntax error: incorrect datatype (expected matrix, frame, "
              "list, or scalar)");
    CHECK_STR(prog("f = function(x) { y = 1 }"),
              "ERROR: t.dml:1:14: syntax error: missing type for 'x' (e.g. 'double x' or "
              "'matrix[double] x')");
    CHECK_STR(prog("if (x) { f = function(int a) { b = a } }"),
              "ERROR: t.dml:1:14: syntax error: function definitions are only allowed at top level");
    CHECK_STR(prog("f = function() {}"),
              "ERROR: t.dml:1:17: syntax error: functions with no statements are not allowed");
    /* Whether a positional argument may follow a named one depends on the
     * callee (list(a=1, 2) is fine), so it parses; the resolver decides. */
    CHECK(prog("x = f(a=1, 2)")[0] != 'E');
    CHECK_STR(prog("x = 1 + 2 = 3"), "ERROR: t.dml:1:11: syntax error: unexpected '='");
    CHECK_STR(prog("x"), "ERROR: t.dml:1:2: syntax error: unexpected end of input, "
                         "expecting '<-' or '+=' or '=' or '(' or '['");
    CHECK_STR(prog("x = a.b"), "ERROR: t.dml:1:5: lexical error: invalid identifier 'a.b' "
                               "(only as.scalar, as.matrix, is.na, ... and the other builtin "
                               "names may contain a dot)");
    CHECK_STR(prog("x = \"a\" \"\\z\""), "ERROR: t.dml:1:10: lexical error: invalid escape sequence "
                                        "'\\z' in string");
    CHECK_STR(prog("x = ) \"\\z\""), "ERROR: t.dml:1:5: syntax error: unexpected ')'");
    CHECK_STR(expr("x = 1"), "ERROR: t.dml:1:3: syntax error: unexpected '='");
    CHECK_STR(expr("1 2"), "ERROR: t.dml:1:3: syntax error: unexpected integer '2'");
}

static void test_incomplete(void)
{
    CHECK(incomplete("f = function(int x) {"));
    CHECK(incomplete("f = function(int x) {\n  y = x\n"));
    CHECK(incomplete("x = (1 +"));
    CHECK(incomplete("x = \"abc"));
    CHECK(incomplete("x = 'abc\ndef"));
    CHECK(incomplete("x = 1 /* comment"));
    CHECK(incomplete("if (x) {"));
    CHECK(incomplete("if (x)"));
    CHECK(incomplete("for (i in 1:"));
    CHECK(incomplete("x = f(1,"));
    CHECK(incomplete("[a, b"));
    CHECK(incomplete("x = y["));
    CHECK(incomplete("x ="));
    CHECK(!incomplete("x = )"));
    CHECK(!incomplete("x = 1"));
    CHECK(incomplete("x = \"a\\qb"));       /* unterminated wins over the bad escape */
    CHECK(!incomplete("x = 1 @"));
    CHECK(!incomplete("f = function(x) {"));  /* untyped parameter: an error now */
    bool inc = false;
    free(error_of("1 +", PARSE_EXPR, &inc));
    CHECK(inc);
    free(error_of("", PARSE_EXPR, &inc));
    CHECK(inc);
    free(error_of("1 )", PARSE_EXPR, &inc));
    CHECK(!inc);
}

static void test_expr_mode(void)
{
    CHECK_STR(expr("f(x) + 1;;"), "(+ (call f x) 1)");
    CHECK_STR(expr("  x  "), "x");
    CHECK_STR(expr("[1, 2]"), "(list 1 2)");
    CHECK_STR(expr("x; y"), "ERROR: t.dml:1:4: syntax error: unexpected identifier 'y', "
                            "expecting end of input or ';'");
}

/* ast_dump mentions every construct; check a few lines. */
static void test_dump(void)
{
    const char *src = "source(\"a.dml\") as a\nf = function(matrix[double] X, int k = 3) "
                      "return (double y) { y = sum(X) }\n"
                      "parfor (i in 1:10, check=0) { Z[i, ] = -X[i, ] %*% W }\n"
                      "[p, q] = a::g(\"s\\n\", n=TRUE)\nif (!(x > 2)) print(x) else while (FALSE) {}\n";
    Arena *a = arena_new();
    ParseOut out;
    CHECK(parse_source(a, "t.dml", src, strlen(src), PARSE_PROGRAM, &out));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ast_dump(out.stmts, out.n, f);
    fclose(f);
    CHECK(strstr(text, "SOURCE \"a.dml\" as a") != NULL);
    CHECK(strstr(text, "FUNCDEF f(matrix[double] X, int k = ...) -> (double y)") != NULL);
    CHECK(strstr(text, "FOR (parfor) i") != NULL);
    CHECK(strstr(text, "option check= INT 0") != NULL);
    CHECK(strstr(text, "BINARY %*%") != NULL);
    CHECK(strstr(text, "MULTIASSIGN [p, q]") != NULL);
    CHECK(strstr(text, "call: CALL a::g") != NULL);
    CHECK(strstr(text, "STRING \"s\\n\"") != NULL);
    CHECK(strstr(text, "n= BOOL TRUE") != NULL);
    CHECK(strstr(text, "UNARY !") != NULL);
    CHECK(strstr(text, "WHILE") != NULL);
    free(text);
    arena_free(a);
    CHECK_STR(ast_kind_name(N_BINARY), "BINARY");
    CHECK_STR(ast_kind_name(N_SETWD), "SETWD");
    CHECK_STR(ast_binop_name(OP_MATMUL), "%*%");
    CHECK_STR(ast_binop_name(OP_OROR), "||");
}

/* ==== threads: parsing is reentrant ==== */

static const char *const lenet_like =
    "source(\"nn/layers/affine.dml\") as affine\n"
    "train = function(matrix[double] X, matrix[double] Y, int epochs)\n"
    "    return (matrix[double] W1, matrix[double] b1) {\n"
    "  N = nrow(X)\n  [W1, b1] = affine::init(ncol(X), 10, -1)\n"
    "  for (e in 1:epochs) {\n    for (i in 1:ceil(N / 64)) {\n"
    "      beg = ((i-1) * 64) %% N + 1; end = min(N, beg + 64 - 1)\n"
    "      X_batch = X[beg:end,]\n      y_batch = Y[beg:end,]\n"
    "      [outc1, Houtc1, Woutc1] = affine::forward(X_batch, W1, b1)\n"
    "      W1 = W1 - 0.01 * t(X_batch) %*% (outc1 - y_batch) / nrow(X_batch)\n"
    "      if (i %% 100 == 0) print(\"Epoch: \" + e + \", Iter: \" + i)\n    }\n  }\n}\n";

static void *thread_main(void *arg)
{
    int *ok = arg;
    *ok = 1;
    for (int i = 0; i < 200; i++) {
        Arena *a = arena_new();
        ParseOut out;
        if (!parse_source(a, "t.dml", lenet_like, strlen(lenet_like), PARSE_PROGRAM, &out) ||
            out.n != 2 || out.stmts[1]->kind != N_FUNCDEF || out.stmts[1]->func->nbody != 3)
            *ok = 0;
        arena_free(a);
    }
    return NULL;
}

static void test_threads(void)
{
    enum { NT = 4 };
    pthread_t th[NT];
    int ok[NT];
    for (int i = 0; i < NT; i++)
        pthread_create(&th[i], NULL, thread_main, &ok[i]);
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        CHECK(ok[i]);
    }
}

/* ==== stress: nothing may crash or leak ==== */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Parses data; the result must be either a tree or a well-formed message. */
static void stress_one(const char *data, size_t len, ParseMode mode, int *bad)
{
    Arena *a = arena_new();
    ParseOut out;
    bool ok = parse_source(a, "s.dml", data, len, mode, &out);
    if (!ok) {      /* the message must be drawn, caret and all, whatever the input */
        char *e = diag_render_err(&out.err, data, len, false);
        if (!e || !out.err.has_loc || strncmp(e, "s.dml:", 6) != 0 || !out.err.msg[0])
            (*bad)++;
        free(e);
    }
    if (ok && mode == PARSE_PROGRAM) {  /* the dump must walk any tree */
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            ast_dump(out.stmts, out.n, f);
            fclose(f);
        }
    }
    arena_free(a);
}

static void test_stress(void)
{
    static const char alphabet[] = "abxyz019._:;,=<-+*/^%!&|()[]{}\"'\\#$ \n\tifelsforwhilefunctionreturnTRUE";
    static const char *const words[] = {
        "x", "X", "f", "ns::g", "1", "2.5", "\"s\"", "$n", "=", "<-", "+=", "(", ")", "[", "]", "{",
        "}", ",", ";", ":", "+", "-", "*", "^", "%*%", "%%", "!", "&", "|", "==", "if", "else",
        "for", "in", "parfor", "while", "function", "return", "matrix[double]", "int", "seq",
        "ifdef", "source", "as", "setwd", "TRUE", "\n", " ", "#c\n", "/*c*/", "pi", "[a, b]",
    };
    char buf[512];
    int bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = rnd() % sizeof buf;
        int style = iter % 3;
        size_t k = 0;
        while (k < len) {
            if (style == 0) {
                buf[k++] = (char)(rnd() & 0xff);
            } else if (style == 1) {
                buf[k++] = alphabet[rnd() % (sizeof alphabet - 1)];
            } else {
                const char *w = words[rnd() % (sizeof words / sizeof words[0])];
                size_t wl = strlen(w);
                if (k + wl + 1 > len)
                    break;
                memcpy(buf + k, w, wl);
                k += wl;
                buf[k++] = ' ';
            }
        }
        stress_one(buf, k, iter % 4 == 0 ? PARSE_EXPR : PARSE_PROGRAM, &bad);
    }
    /* every prefix of a valid program */
    size_t n = strlen(lenet_like);
    for (size_t i = 0; i <= n; i++)
        stress_one(lenet_like, i, PARSE_PROGRAM, &bad);
    /* deep nesting fails cleanly instead of overflowing anything */
    size_t deep = 30000;
    char *d = malloc(2 * deep + 8);
    memcpy(d, "x = ", 4);
    memset(d + 4, '(', deep);
    d[4 + deep] = '1';
    memset(d + 5 + deep, ')', deep);
    stress_one(d, 5 + 2 * deep, PARSE_PROGRAM, &bad);
    memset(d + 4, '-', deep);
    stress_one(d, 5 + deep, PARSE_PROGRAM, &bad);
    free(d);
    stress_one(NULL, 0, PARSE_PROGRAM, &bad);
    CHECK(bad == 0);
}

/* A stray '.' is skipped and its position reported (COMPAT.md 11); a
 * number or a dotted name is not one. */
static void test_stray_dot(void)
{
    const char *src = "x = 1.;.\nprint(x).\ny = .5 + as.scalar(1)";
    Arena *a = arena_new();
    ParseOut out;
    CHECK(parse_source(a, "t.dml", src, strlen(src), PARSE_PROGRAM, &out));
    CHECK(out.n == 3);
    CHECK(out.nskipped == 2);
    if (out.nskipped == 2) {
        CHECK(out.skipped[0].line == 1 && out.skipped[0].col == 8);
        CHECK(out.skipped[1].line == 2 && out.skipped[1].col == 9);
    }
    arena_free(a);
    CHECK_STR(prog("x = 1 . 2"), "ERROR: t.dml:1:9: syntax error: unexpected integer '2'");
}

int main(void)
{
    test_stray_dot();
    test_precedence();
    test_literals();
    test_strings();
    test_identifiers();
    test_newlines_and_separators();
    test_statements();
    test_index_forms();
    test_locations();
    test_errors();
    test_incomplete();
    test_expr_mode();
    test_dump();
    test_threads();
    test_stress();
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
