/* SPDX-License-Identifier: Apache-2.0
 * AST nodes: the builders the grammar calls, debug names generated from
 * node_kinds.def, and ast_dump() for `dml run --dump-ast`. Nodes live in the
 * arena they were built in; nothing here frees. Safe to call from any thread
 * on its own arena (the dump only reads). */
#include "ast.h"

#include <math.h>
#include <string.h>

Node *ast_node(Arena *a, NodeKind kind, Loc loc)
{
    Node *n = arena_alloc(a, sizeof *n);    /* zero-filled: every payload starts empty */
    n->kind = kind;
    n->loc = loc;
    return n;
}

Node *ast_binary(Arena *a, Loc loc, BinOp op, Node *lhs, Node *rhs)
{
    Node *n = ast_node(a, N_BINARY, loc);
    n->binary.op = op;
    n->binary.lhs = lhs;
    n->binary.rhs = rhs;
    return n;
}

Node *ast_unary(Arena *a, Loc loc, UnOp op, Node *operand)
{
    /* -<literal> is a negative literal, not x * -1 (so -0.0 stays -0.0). The
     * magnitude of an int literal is at most INT64_MAX, so this cannot overflow. */
    if (op == UOP_NEG && operand->kind == N_INT) {
        Node *n = ast_node(a, N_INT, loc);
        n->lit.i = -operand->lit.i;
        return n;
    }
    if (op == UOP_NEG && operand->kind == N_DOUBLE) {
        Node *n = ast_node(a, N_DOUBLE, loc);
        n->lit.d = -operand->lit.d;
        return n;
    }
    Node *n = ast_node(a, N_UNARY, loc);
    n->unary.op = op;
    n->unary.operand = operand;
    return n;
}

const char *ast_kind_name(NodeKind k)
{
    static const char *const names[] = {
#define NODE(name) #name,
#include "node_kinds.def"
#undef NODE
    };
    return (unsigned)k < N__COUNT ? names[k] : "?";
}

const char *ast_binop_name(BinOp op)
{
    /* ORDER BinOp */
    static const char *const names[] = {
        "+", "-", "*", "/", "^", "%/%", "%%", "%*%",
        "<", "<=", ">", ">=", "==", "!=",
        "&", "|", "&&", "||",
    };
    _Static_assert(sizeof names / sizeof names[0] == OP__COUNT, "BinOp names out of date");
    return (unsigned)op < OP__COUNT ? names[op] : "?";
}

/* ==== dump ====
 * One node per line, children indented by two spaces. Statements end with
 * their position (@line:col); child roles are labelled ("cond:", "rows:"). */

static void dump_expr(FILE *f, const Node *n, int ind, const char *label);
static void dump_stmts(FILE *f, Node *const *stmts, int n, int ind);

static void indent(FILE *f, int ind)
{
    fprintf(f, "%*s", ind * 2, "");
}

static void dump_double(FILE *f, double d)
{
    if (isnan(d))
        fputs("NaN", f);
    else if (isinf(d))
        fputs(d > 0 ? "Inf" : "-Inf", f);
    else
        fprintf(f, "%.17g", d);
}

/* A string literal, quoted, with C escapes for control characters. */
static void dump_string(FILE *f, const char *s, int64_t len)
{
    fputc('"', f);
    for (int64_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\b': fputs("\\b", f); break;
        case '\f': fputs("\\f", f); break;
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\x%02x", c);
            else
                fputc(c, f);
        }
    }
    fputc('"', f);
}

static void dump_loc(FILE *f, Loc l)
{
    fprintf(f, "  @%d:%d\n", l.line, l.col);
}

static const char *type_name(TypeKind t)
{
    switch (t) {
    case TY_MATRIX: return "matrix";
    case TY_FRAME: return "frame";
    case TY_LIST: return "list";
    case TY_SCALAR: break;
    }
    return "scalar";
}

static const char *vtype_name(ScalarType t)
{
    switch (t) {
    case SCALAR_INT: return "int";
    case SCALAR_DOUBLE: return "double";
    case SCALAR_BOOLEAN: return "boolean";
    case SCALAR_STRING: return "string";
    case SCALAR_UNKNOWN: break;
    }
    return "unknown";
}

static void dump_part(FILE *f, const IndexPart *p, int ind, const char *which)
{
    char label[16];
    switch (p->kind) {
    case IX_ALL:
        indent(f, ind);
        fprintf(f, "%s: all\n", which);
        break;
    case IX_ONE:
        snprintf(label, sizeof label, "%s:", which);
        dump_expr(f, p->lo, ind, label);
        break;
    case IX_RANGE:
        snprintf(label, sizeof label, "%s.from:", which);
        dump_expr(f, p->lo, ind, label);
        snprintf(label, sizeof label, "%s.to:", which);
        dump_expr(f, p->hi, ind, label);
        break;
    }
}

/* The index parts of X[rows] / X[rows, cols]. */
static void dump_index(FILE *f, const IndexPart *rows, const IndexPart *cols, bool has_cols, int ind)
{
    dump_part(f, rows, ind, "rows");
    if (has_cols)
        dump_part(f, cols, ind, "cols");
}

static void dump_lhs(FILE *f, const Lhs *t, int ind)
{
    if (t->indexed)
        dump_index(f, &t->rows, &t->cols, t->has_cols, ind);
}

static void dump_lhs_name(FILE *f, const Lhs *t)
{
    fprintf(f, "%s%s", t->name, t->indexed ? (t->has_cols ? "[ , ]" : "[ ]") : "");
}

/* The dump recurses once per level and indents by the level: deeper trees
 * (a chain of 10^5 operators parses fine) are cut off, not walked. */
enum { DUMP_MAX_DEPTH = 1000 };

static void dump_expr(FILE *f, const Node *n, int ind, const char *label)
{
    indent(f, ind);
    if (label)
        fprintf(f, "%s ", label);
    if (!n) {
        fputs("(null)\n", f);
        return;
    }
    if (ind > DUMP_MAX_DEPTH) {
        fputs("... (nested too deeply to dump)\n", f);
        return;
    }
    fputs(ast_kind_name(n->kind), f);
    switch (n->kind) {
    case N_INT:
        fprintf(f, " %lld\n", (long long)n->lit.i);
        break;
    case N_DOUBLE:
        fputc(' ', f);
        dump_double(f, n->lit.d);
        fputc('\n', f);
        break;
    case N_BOOL:
        fputs(n->lit.b ? " TRUE\n" : " FALSE\n", f);
        break;
    case N_STRING:
        fputc(' ', f);
        dump_string(f, n->str.s, n->str.len);
        fputc('\n', f);
        break;
    case N_CONST:
        fputc('\n', f);
        break;
    case N_IDENT:
        fprintf(f, " %s\n", n->ident.name);
        break;
    case N_CMDARG:
        fprintf(f, " $%s\n", n->cmdarg.name);
        break;
    case N_BINARY:
        fprintf(f, " %s\n", ast_binop_name(n->binary.op));
        dump_expr(f, n->binary.lhs, ind + 1, NULL);
        dump_expr(f, n->binary.rhs, ind + 1, NULL);
        break;
    case N_UNARY:
        fprintf(f, " %s\n", n->unary.op == UOP_NEG ? "-" : n->unary.op == UOP_PLUS ? "+" : "!");
        dump_expr(f, n->unary.operand, ind + 1, NULL);
        break;
    case N_CALL:
        fprintf(f, " %s%s%s\n", n->call.ns ? n->call.ns : "", n->call.ns ? "::" : "", n->call.name);
        for (int i = 0; i < n->call.nargs; i++) {
            char lab[80];
            const char *name = n->call.argnames ? n->call.argnames[i] : NULL;
            if (name)
                snprintf(lab, sizeof lab, "%s=", name);
            dump_expr(f, n->call.args[i], ind + 1, name ? lab : NULL);
        }
        break;
    case N_INDEX:
        fputc('\n', f);
        dump_expr(f, n->index.target, ind + 1, "of:");
        dump_index(f, &n->index.rows, &n->index.cols, n->index.has_cols, ind + 1);
        break;
    case N_EXPRLIST:
        fprintf(f, " [%d]\n", n->list.n);
        for (int i = 0; i < n->list.n; i++)
            dump_expr(f, n->list.items[i], ind + 1, NULL);
        break;
    default:    /* a statement where an expression should be: dump it anyway */
        fputc('\n', f);
        dump_stmts(f, (Node *const *)&n, 1, ind + 1);
        break;
    }
}

static void dump_params(FILE *f, const Param *p, int n)
{
    for (int i = 0; i < n; i++) {
        if (p[i].type == TY_SCALAR)
            fprintf(f, "%s%s %s", i ? ", " : "", vtype_name(p[i].vtype), p[i].name);
        else
            fprintf(f, "%s%s[%s] %s", i ? ", " : "", type_name(p[i].type), vtype_name(p[i].vtype),
                    p[i].name);
        if (p[i].dflt)
            fputs(" = ...", f);
    }
}

static void dump_block(FILE *f, const char *label, Node *const *stmts, int n, int ind)
{
    indent(f, ind);
    fprintf(f, "%s\n", label);
    dump_stmts(f, stmts, n, ind + 1);
}

static void dump_stmt(FILE *f, const Node *n, int ind)
{
    indent(f, ind);
    if (ind > DUMP_MAX_DEPTH) {
        fputs("... (nested too deeply to dump)\n", f);
        return;
    }
    fputs(ast_kind_name(n->kind), f);
    switch (n->kind) {
    case N_ASSIGN:
        fputc(' ', f);
        dump_lhs_name(f, &n->assign.target);
        fputs(n->assign.accum ? " +=" : " =", f);
        dump_loc(f, n->loc);
        dump_lhs(f, &n->assign.target, ind + 1);
        dump_expr(f, n->assign.value, ind + 1, "value:");
        break;
    case N_MULTIASSIGN:
        fputs(" [", f);
        for (int i = 0; i < n->multi.n; i++) {
            fputs(i ? ", " : "", f);
            dump_lhs_name(f, &n->multi.targets[i]);
        }
        fputc(']', f);
        dump_loc(f, n->loc);
        for (int i = 0; i < n->multi.n; i++)
            dump_lhs(f, &n->multi.targets[i], ind + 1);
        dump_expr(f, n->multi.call, ind + 1, "call:");
        break;
    case N_IFDEF:
        fputc(' ', f);
        dump_lhs_name(f, &n->ifdef.target);
        fprintf(f, " = $%s", n->ifdef.param);
        dump_loc(f, n->loc);
        dump_lhs(f, &n->ifdef.target, ind + 1);
        dump_expr(f, n->ifdef.dflt, ind + 1, "default:");
        break;
    case N_EXPRSTMT:
        dump_loc(f, n->loc);
        dump_expr(f, n->expr.e, ind + 1, NULL);
        break;
    case N_IF:
        dump_loc(f, n->loc);
        dump_expr(f, n->ifs.cond, ind + 1, "cond:");
        dump_block(f, "then:", n->ifs.then_b, n->ifs.nthen, ind + 1);
        if (n->ifs.nelse)
            dump_block(f, "else:", n->ifs.else_b, n->ifs.nelse, ind + 1);
        break;
    case N_FOR:
        fprintf(f, "%s %s%s", n->loop.parfor ? " (parfor)" : "", n->loop.var,
                n->loop.seq_form ? " in seq" : "");
        dump_loc(f, n->loc);
        dump_expr(f, n->loop.from, ind + 1, "from:");
        dump_expr(f, n->loop.to, ind + 1, "to:");
        if (n->loop.by)
            dump_expr(f, n->loop.by, ind + 1, "by:");
        for (int i = 0; i < n->loop.nopts; i++) {
            char lab[80];
            snprintf(lab, sizeof lab, "option %s=", n->loop.opts[i].name);
            dump_expr(f, n->loop.opts[i].value, ind + 1, lab);
        }
        dump_block(f, "body:", n->loop.body, n->loop.nbody, ind + 1);
        break;
    case N_WHILE:
        dump_loc(f, n->loc);
        dump_expr(f, n->loop.cond, ind + 1, "cond:");
        dump_block(f, "body:", n->loop.body, n->loop.nbody, ind + 1);
        break;
    case N_FUNCDEF: {
        const FuncDecl *fd = n->func;
        fprintf(f, " %s%s(", fd->external ? "(external) " : "", fd->name);
        dump_params(f, fd->params, fd->nparams);
        fputs(") -> (", f);
        dump_params(f, fd->outs, fd->nouts);
        fputc(')', f);
        dump_loc(f, n->loc);
        for (int i = 0; i < fd->nparams; i++) {
            if (fd->params[i].dflt) {
                char lab[80];
                snprintf(lab, sizeof lab, "default %s:", fd->params[i].name);
                dump_expr(f, fd->params[i].dflt, ind + 1, lab);
            }
        }
        dump_block(f, "body:", fd->body, fd->nbody, ind + 1);
        break;
    }
    case N_SOURCE:
        fputc(' ', f);
        dump_string(f, n->source.path, (int64_t)strlen(n->source.path));
        fprintf(f, " as %s", n->source.alias);
        dump_loc(f, n->loc);
        break;
    case N_SETWD:
        fputc(' ', f);
        dump_string(f, n->source.path, (int64_t)strlen(n->source.path));
        dump_loc(f, n->loc);
        break;
    default:    /* an expression where a statement should be */
        dump_loc(f, n->loc);
        dump_expr(f, n, ind + 1, NULL);
        break;
    }
}

static void dump_stmts(FILE *f, Node *const *stmts, int n, int ind)
{
    for (int i = 0; i < n; i++)
        dump_stmt(f, stmts[i], ind);
}

void ast_dump(Node **stmts, int n, FILE *f)
{
    dump_stmts(f, stmts, n, 0);
}
