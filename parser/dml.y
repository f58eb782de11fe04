/* SPDX-License-Identifier: Apache-2.0
 * The DML grammar (doc/language.md): a pure LALR(1) parser with locations
 * and no conflicts. Actions only build AST nodes in the ParseCtx's arena
 * (nothing is malloc'd, so nothing leaks when a parse is abandoned) and do
 * the few checks that need a position but no context (assignment to pi,
 * 'for' headers, parameter types). Tokens come from dml_yylex() in
 * parser/parse.c, which wraps the flex scanner (lexer/dml.l). */

%require "3.8"
%define api.pure full
%define api.prefix {dml_yy}
%define api.token.prefix {TOK_}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {ParseCtx *ctx}

%code requires {
#include <locale.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parser/ast.h"
#include "parser/parse.h"

typedef struct ParseCtx ParseCtx;

/* Growable arrays for the grammar's lists. They live in the arena: a grown
 * array abandons its old copy there, which costs at most twice the space
 * and never leaks. */
typedef struct NodeVec { Node **v; int n, cap; } NodeVec;
typedef struct ArgVec { Node **v; const char **names; int n, cap; bool named; } ArgVec;
typedef struct LhsVec { Lhs *v; int n, cap; } LhsVec;
typedef struct ParamVec { Param *v; int n, cap; } ParamVec;
typedef struct OptVec { LoopOpt *v; int n, cap; } OptVec;

typedef struct LexStr { const char *s; int64_t len; } LexStr;
typedef struct IndexSpec { IndexPart rows, cols; bool has_cols; } IndexSpec;
typedef struct TypeSpec { TypeKind type; ScalarType vtype; } TypeSpec;
/* Header of a for/parfor loop between 'in' and the options. */
typedef struct IterSpec { Node *from, *to, *by; bool seq_form; } IterSpec;
}

%union {
    int64_t ival;
    double dval;
    ScalarType vtype;
    const char *name;
    LexStr str;
    Node *node;
    NodeVec *nodes;
    ArgVec *args;
    LhsVec *lhss;
    ParamVec *params;
    OptVec *opts;
    Lhs lhs;
    Param param;
    IndexSpec index;
    IndexPart ipart;
    TypeSpec type;
    IterSpec iter;
    bool flag;
}

%code provides {
/* A token as delivered by the scanner, kept while parse.c looks ahead. */
typedef struct LexToken {
    int kind;
    DML_YYSTYPE val;
    DML_YYLTYPE loc;
    size_t off, len;        /* the token's bytes in the source text */
} LexToken;

/* Everything one parse needs; lives on parse_source's stack. */
struct ParseCtx {
    Arena *arena;
    const char *file;               /* arena copy, shared by every Loc */
    const char *text;
    size_t len;
    ParseMode mode;
    locale_t c_locale;              /* "C" locale for strtod_l */
    void *scanner;                  /* yyscan_t */

    /* scanner position (lexer/dml.l) */
    int line, col;
    size_t off;
    size_t tok_off, tok_len;        /* bytes of the token just matched */

    /* pending lexical error, reported when its token reaches the parser */
    DiagErr lex_err;
    bool lex_incomplete;

    /* token stream (parser/parse.c) */
    LexToken *buf;                  /* look-ahead queue, malloc'd */
    int head, nbuf, cap;
    bool started, scan_done;
    int prev1, prev2;               /* kinds of the last two tokens delivered */
    int depth;                      /* open '(' and '[' among delivered tokens */
    int end_line, end_col;          /* last character of the last token delivered */
    LexToken last;                  /* the token delivered last (the lookahead) */

    /* results */
    Node **stmts;
    int nstmts;
    Node *expr;

    /* out of memory: the arena failed, the token queue or bison's stack
     * could not grow; the parse stops at its next step */
    bool oom;
    /* flex's own allocations (lexer/dml.l), freed here if flex gives up */
    void *lex_allocs[8];
    jmp_buf lex_oom;

    /* the first error */
    bool failed, incomplete;
    const char *err_kind;           /* "syntax error" or "lexical error" */
    DiagErr err;                    /* its message and position (base/diag.h) */
};

int dml_yylex(DML_YYSTYPE *lval, DML_YYLTYPE *lloc, ParseCtx *ctx);
/* Records the first error (later ones are ignored). */
void parse_set_error(ParseCtx *ctx, const char *kind, int line, int col, bool incomplete,
                     const char *fmt, ...) __attribute__((format(printf, 6, 7)));
}

%code {
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void dml_yyerror(const DML_YYLTYPE *loc, ParseCtx *ctx, const char *msg);

/* Bison's default location rule, plus the out-of-memory stop: it runs
 * before every action, so once an action has met a failed arena (and
 * finished writing into the arena's scratch area) no later action runs. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                             \
    do {                                                                        \
        if (arena_failed(ctx->arena)) {                                         \
            ctx->oom = true;                                                    \
            YYNOMEM;                                                            \
        }                                                                       \
        if (N) {                                                                \
            (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;                     \
            (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;                 \
            (Cur).last_line = YYRHSLOC(Rhs, N).last_line;                       \
            (Cur).last_column = YYRHSLOC(Rhs, N).last_column;                   \
        } else {                                                                \
            (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;    \
            (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
        }                                                                       \
    } while (0)

static Loc L(const ParseCtx *c, DML_YYLTYPE l)
{
    return (Loc){c->file, l.first_line, l.first_column, l.last_line, l.last_column};
}

/* Location from the start of 'a' to the end of 'b'. */
static DML_YYLTYPE span(DML_YYLTYPE a, DML_YYLTYPE b)
{
    a.last_line = b.last_line;
    a.last_column = b.last_column;
    return a;
}

/* Makes room for one more element of size 'sz' in an arena array; false
 * when out of memory (the arena is then failed and the parse stops). */
static bool grow(Arena *a, void **v, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return true;
    if (*cap > INT_MAX / 2)
        return false;
    int ncap = *cap ? *cap * 2 : 4;
    void *nv = arena_alloc(a, (size_t)ncap * sz);
    if (!nv || arena_failed(a))
        return false;
    if (n)
        memcpy(nv, *v, (size_t)n * sz);
    *v = nv;
    *cap = ncap;
    return true;
}

static NodeVec *nodes_new(ParseCtx *c) { return arena_alloc(c->arena, sizeof(NodeVec)); }

static NodeVec *nodes_push(ParseCtx *c, NodeVec *nv, Node *n)
{
    if (grow(c->arena, (void **)&nv->v, nv->n, &nv->cap, sizeof *nv->v))
        nv->v[nv->n++] = n;
    return nv;
}

static NodeVec *nodes_one(ParseCtx *c, Node *n) { return nodes_push(c, nodes_new(c), n); }

/* Appends an argument. Whether a positional argument may follow a named one
 * depends on the callee (list(a=1, 2) is fine, f(x=1, 2) is not), so the
 * resolver decides. */
static ArgVec *args_push(ParseCtx *c, ArgVec *av, const char *name, Node *e, DML_YYLTYPE l)
{
    (void)l;
    if (!av)
        av = arena_alloc(c->arena, sizeof *av);
    int cap = av->cap;
    if (!grow(c->arena, (void **)&av->v, av->n, &cap, sizeof *av->v) ||
        !grow(c->arena, (void **)&av->names, av->n, &av->cap, sizeof *av->names))
        return av;
    av->v[av->n] = e;
    av->names[av->n] = name;
    av->n++;
    av->named |= name != NULL;
    return av;
}

static LhsVec *lhss_push(ParseCtx *c, LhsVec *lv, Lhs x)
{
    if (!lv)
        lv = arena_alloc(c->arena, sizeof *lv);
    if (grow(c->arena, (void **)&lv->v, lv->n, &lv->cap, sizeof *lv->v))
        lv->v[lv->n++] = x;
    return lv;
}

static ParamVec *params_push(ParseCtx *c, ParamVec *pv, Param p)
{
    if (!pv)
        pv = arena_alloc(c->arena, sizeof *pv);
    if (grow(c->arena, (void **)&pv->v, pv->n, &pv->cap, sizeof *pv->v))
        pv->v[pv->n++] = p;
    return pv;
}

static OptVec *opts_push(ParseCtx *c, OptVec *ov, const char *name, Node *value, DML_YYLTYPE l)
{
    if (!ov)
        ov = arena_alloc(c->arena, sizeof *ov);
    if (grow(c->arena, (void **)&ov->v, ov->n, &ov->cap, sizeof *ov->v))
        ov->v[ov->n++] = (LoopOpt){name, value, L(c, l)};
    return ov;
}

/* pi, Inf and NaN read as variables are constants (doc/language.md, "names"). */
static bool builtin_const(const char *name, double *d)
{
    if (strcmp(name, "pi") == 0)
        *d = M_PI;
    else if (strcmp(name, "Inf") == 0)
        *d = INFINITY;
    else if (strcmp(name, "NaN") == 0)
        *d = NAN;
    else
        return false;
    return true;
}

/* Assignment targets may not be builtin constants; false (error set) if so. */
static bool check_target(ParseCtx *c, const char *name, DML_YYLTYPE l)
{
    double d;
    if (!builtin_const(name, &d))
        return true;
    parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                    "Cannot assign a value to the builtin constant %s", name);
    return false;
}

static Lhs mk_lhs(ParseCtx *c, const char *name, DML_YYLTYPE l, const IndexSpec *ix)
{
    Lhs x = {.name = name, .loc = L(c, l), .slot = -1};
    if (ix) {
        x.indexed = true;
        x.has_cols = ix->has_cols;
        x.rows = ix->rows;
        x.cols = ix->cols;
    }
    return x;
}

static Node *mk_assign(ParseCtx *c, DML_YYLTYPE l, Lhs target, Node *value, bool accum)
{
    Node *n = ast_node(c->arena, N_ASSIGN, L(c, l));
    n->assign.target = target;
    n->assign.value = value;
    n->assign.accum = accum;
    return n;
}

static Node *mk_ifdef(ParseCtx *c, DML_YYLTYPE l, Lhs target, const char *param, Node *dflt)
{
    Node *n = ast_node(c->arena, N_IFDEF, L(c, l));
    n->ifdef.target = target;
    n->ifdef.param = param;
    n->ifdef.dflt = dflt;
    return n;
}

/* 'name' is "f" or "ns::f". */
static Node *mk_call(ParseCtx *c, DML_YYLTYPE l, const char *name, ArgVec *args)
{
    Node *n = ast_node(c->arena, N_CALL, L(c, l));
    const char *sep = strstr(name, "::");
    if (sep) {
        n->call.ns = arena_strndup(c->arena, name, (size_t)(sep - name));
        n->call.name = sep + 2;
    } else {
        n->call.name = name;
    }
    if (args && args->n) {
        n->call.args = args->v;
        n->call.argnames = args->names;
        n->call.nargs = args->n;
    }
    return n;
}

static Node *mk_index(ParseCtx *c, DML_YYLTYPE l, Node *target, IndexSpec ix)
{
    Node *n = ast_node(c->arena, N_INDEX, L(c, l));
    n->index.target = target;
    n->index.rows = ix.rows;
    n->index.cols = ix.cols;
    n->index.has_cols = ix.has_cols;
    return n;
}

static IndexPart mk_part(IxKind k, Node *lo, Node *hi) { return (IndexPart){k, lo, hi}; }

static Node *mk_if(ParseCtx *c, DML_YYLTYPE l, Node *cond, NodeVec *then_b, NodeVec *else_b)
{
    Node *n = ast_node(c->arena, N_IF, L(c, l));
    n->ifs.cond = cond;
    n->ifs.then_b = then_b->v;
    n->ifs.nthen = then_b->n;
    if (else_b) {
        n->ifs.else_b = else_b->v;
        n->ifs.nelse = else_b->n;
    }
    return n;
}

static Node *mk_for(ParseCtx *c, DML_YYLTYPE l, bool parfor, const char *var, IterSpec it,
                    OptVec *opts, NodeVec *body)
{
    Node *n = ast_node(c->arena, N_FOR, L(c, l));
    n->loop.var = var;
    n->loop.var_slot = -1;
    n->loop.from = it.from;
    n->loop.to = it.to;
    n->loop.by = it.by;
    n->loop.seq_form = it.seq_form;
    if (opts) {
        n->loop.opts = opts->v;
        n->loop.nopts = opts->n;
    }
    n->loop.body = body->v;
    n->loop.nbody = body->n;
    n->loop.parfor = parfor;
    return n;
}

/* for (i in seq(a, b[, c])): the header must be exactly such a call. */
static bool seq_header(ParseCtx *c, Node *e, DML_YYLTYPE l, IterSpec *it)
{
    if (e->kind != N_CALL) {
        parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                        "invalid loop range: expected 'from:to' or 'seq(from, to[, by])'");
        return false;
    }
    if (e->call.ns || strcmp(e->call.name, "seq") != 0) {
        parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                        "incorrect function:'%s%s%s'. expected 'seq'", e->call.ns ? e->call.ns : "",
                        e->call.ns ? "::" : "", e->call.name);
        return false;
    }
    bool named = false;
    for (int i = 0; i < e->call.nargs; i++)
        named |= e->call.argnames[i] != NULL;
    if (named || e->call.nargs < 2 || e->call.nargs > 3) {
        parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                        "seq in a loop header takes 2 or 3 positional arguments");
        return false;
    }
    *it = (IterSpec){e->call.args[0], e->call.args[1], e->call.nargs == 3 ? e->call.args[2] : NULL,
                     true};
    return true;
}

/* dataType '[' valueType ']' (doc/language.md, "types"). */
static bool mk_type(ParseCtx *c, const char *dt, ScalarType vt, DML_YYLTYPE l, TypeSpec *t)
{
    static const struct { const char *name; TypeKind kind; } dts[] = {
        {"matrix", TY_MATRIX}, {"Matrix", TY_MATRIX}, {"frame", TY_FRAME}, {"Frame", TY_FRAME},
        {"list", TY_LIST},     {"List", TY_LIST},     {"scalar", TY_SCALAR}, {"Scalar", TY_SCALAR},
    };
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        if (strcmp(dts[i].name, dt) == 0) {
            *t = (TypeSpec){dts[i].kind, vt};
            return true;
        }
    }
    parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                    "incorrect datatype (expected matrix, frame, list, or scalar)");
    return false;
}

static Param mk_param(ParseCtx *c, DML_YYLTYPE l, TypeSpec t, const char *name, Node *dflt)
{
    return (Param){.name = name, .type = t.type, .vtype = t.vtype, .dflt = dflt, .loc = L(c, l)};
}

static Node *mk_func(ParseCtx *c, DML_YYLTYPE l, const char *name, ParamVec *params,
                     ParamVec *outs, NodeVec *body, bool external)
{
    FuncDecl *f = arena_alloc(c->arena, sizeof *f);
    f->name = name;
    if (params) {
        f->params = params->v;
        f->nparams = params->n;
    }
    if (outs) {
        f->outs = outs->v;
        f->nouts = outs->n;
    }
    if (body) {
        f->body = body->v;
        f->nbody = body->n;
    }
    f->external = external;
    f->loc = L(c, l);
    Node *n = ast_node(c->arena, N_FUNCDEF, f->loc);
    n->func = f;
    return n;
}

/* Parameters and outputs must be typed: 'function(x)' is an error. */
static void untyped(ParseCtx *c, const char *name, DML_YYLTYPE l)
{
    parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                    "missing type for '%s' (e.g. 'double %s' or 'matrix[double] %s')", name, name,
                    name);
}

/* Error for 'x = function' where only statements may stand. */
static void nested_function(ParseCtx *c, DML_YYLTYPE l)
{
    parse_set_error(c, "syntax error", l.first_line, l.first_column, false,
                    "function definitions are only allowed at top level");
}
}

/* ---- tokens; the aliases are what error messages show ---- */
%token END 0 "end of input"
%token START_PROGRAM "start of program" START_EXPR "start of expression"
%token <name> ID "identifier" NSID "namespaced name" CMDARG "command-line parameter"
%token <ival> INT "integer"
%token <dval> DOUBLE "number"
%token <str> STRING "string"
%token <vtype> VALUETYPE "type name"
%token SOURCE "source" AS "as" SETWD "setwd" IFDEF "ifdef" IF "if" ELSE "else"
%token FOR "for" IN "in" PARFOR "parfor" WHILE "while" FUNCTION "function"
%token RETURN "return" EXTERNALFUNCTION "externalFunction" IMPLEMENTED "implemented"
%token TRUE "TRUE" FALSE "FALSE"
%token MATMUL "%*%" INTDIV "%/%" MOD "%%" ARROW "<-" PLUSEQ "+=" EQ "==" NE "!="
%token LE "<=" GE ">=" ANDAND "&&" OROR "||"
/* '[' that starts a multi-assignment [a, b] = f(...); parse.c tells it from
 * an index bracket by looking ahead (see classify_bracket there). */
%token MLBRACKET "["

%type <nodes> top_list block_list body
%type <node> stmt funcdef expr postfix primary call
%type <nodes> exprs
%type <args> args_opt args
%type <lhss> lhs_list
%type <lhs> lhs ix_lhs
%type <params> params_opt params outs_opt outs
%type <param> param out
%type <type> type
%type <index> index
%type <ipart> ipart
%type <iter> iter
%type <opts> loop_opts
%type <flag> for_kw

/* Statement level: a body absorbs the ';' after it and an 'if' takes the
 * nearest 'else' (both shift, as in the upstream ANTLR grammar). */
%precedence THEN
%precedence ELSE
%precedence ';'
/* Expressions, loosest first (doc/language.md, "operators"). '!' sits below the comparisons:
 * !a == b is !(a == b). Unary minus binds tighter than %*% but looser than
 * '^', so -2^2 is -(2^2) and 2^-1 works. */
%left '|' OROR
%left '&' ANDAND
%precedence '!'
%left '<' LE '>' GE EQ NE
%left '+' '-'
%left '*' '/'
%left INTDIV MOD
%left MATMUL
%precedence UNARY
%right '^'

%%

/* ==== entry: parse.c injects the first token to pick the mode ==== */
start
    : START_PROGRAM top_list            { ctx->stmts = $2->v; ctx->nstmts = $2->n; }
    | START_EXPR expr semis             { ctx->expr = $2; }
    ;

semis
    : %empty
    | semis ';'
    ;

/* ==== statement lists; ';' may stand anywhere between statements ==== */
top_list
    : %empty                            { $$ = nodes_new(ctx); }
    | top_list stmt                     { $$ = nodes_push(ctx, $1, $2); }
    | top_list funcdef                  { $$ = nodes_push(ctx, $1, $2); }
    | top_list ';'                      { $$ = $1; }
    ;

block_list
    : %empty                            { $$ = nodes_new(ctx); }
    | block_list stmt                   { $$ = nodes_push(ctx, $1, $2); }
    | block_list nested_funcdef         { $$ = $1; }
    | block_list ';'                    { $$ = $1; }
    ;

/* Body of if/else/for/while: one statement or a block. */
body
    : stmt                              { $$ = nodes_one(ctx, $1); }
    | nested_funcdef                    { $$ = nodes_new(ctx); }
    | '{' block_list '}'                { $$ = $2; }
    | body ';'                          { $$ = $1; }
    ;

/* A function definition where only statements may stand. */
nested_funcdef
    : ID asg FUNCTION                   { nested_function(ctx, @3); YYABORT; }
    | ID asg EXTERNALFUNCTION           { nested_function(ctx, @3); YYABORT; }
    ;

asg
    : '='
    | ARROW
    ;

/* ==== statements (doc/language.md, "Control flow") ==== */
stmt
    : ID asg expr                       { if (!check_target(ctx, $1, @1)) YYABORT;
                                          $$ = mk_assign(ctx, @$, mk_lhs(ctx, $1, @1, NULL), $3, false); }
    | ID PLUSEQ expr                    { if (!check_target(ctx, $1, @1)) YYABORT;
                                          $$ = mk_assign(ctx, @$, mk_lhs(ctx, $1, @1, NULL), $3, true); }
    | ix_lhs asg expr                   { $$ = mk_assign(ctx, @$, $1, $3, false); }
    | ix_lhs PLUSEQ expr                { $$ = mk_assign(ctx, @$, $1, $3, true); }
    | ID asg IFDEF '(' CMDARG ',' expr ')'
                                        { if (!check_target(ctx, $1, @1)) YYABORT;
                                          $$ = mk_ifdef(ctx, @$, mk_lhs(ctx, $1, @1, NULL), $5, $7); }
    | ix_lhs asg IFDEF '(' CMDARG ',' expr ')'
                                        { $$ = mk_ifdef(ctx, @$, $1, $5, $7); }
    | MLBRACKET lhs_list ']' asg call   { $$ = ast_node(ctx->arena, N_MULTIASSIGN, L(ctx, @$));
                                          $$->multi.targets = $2->v;
                                          $$->multi.n = $2->n;
                                          $$->multi.call = $5; }
    | call                              { $$ = ast_node(ctx->arena, N_EXPRSTMT, L(ctx, @$));
                                          $$->expr.e = $1; }
    | SOURCE '(' STRING ')' AS ID       { $$ = ast_node(ctx->arena, N_SOURCE, L(ctx, @$));
                                          $$->source.path = $3.s;
                                          $$->source.alias = $6; }
    | SETWD '(' STRING ')'              { $$ = ast_node(ctx->arena, N_SETWD, L(ctx, @$));
                                          $$->source.path = $3.s; }
    | IF '(' expr ')' body %prec THEN   { $$ = mk_if(ctx, @$, $3, $5, NULL); }
    | IF '(' expr ')' body ELSE body %prec THEN
                                        { $$ = mk_if(ctx, @$, $3, $5, $7); }
    | for_kw '(' ID IN iter loop_opts ')' body %prec THEN
                                        { if (!check_target(ctx, $3, @3)) YYABORT;
                                          $$ = mk_for(ctx, @$, $1, $3, $5, $6, $8); }
    | WHILE '(' expr ')' body %prec THEN
                                        { $$ = ast_node(ctx->arena, N_WHILE, L(ctx, @$));
                                          $$->loop.cond = $3;
                                          $$->loop.body = $5->v;
                                          $$->loop.nbody = $5->n; }
    ;

/* X[rows, cols] as the start of a statement. */
ix_lhs
    : ID '[' index ']'                  { if (!check_target(ctx, $1, @1)) YYABORT;
                                          $$ = mk_lhs(ctx, $1, @$, &$3); }
    ;

/* Targets of a multi-assignment. */
lhs_list
    : lhs                               { $$ = lhss_push(ctx, NULL, $1); }
    | lhs_list ',' lhs                  { $$ = lhss_push(ctx, $1, $3); }
    ;

lhs
    : ID                                { if (!check_target(ctx, $1, @1)) YYABORT;
                                          $$ = mk_lhs(ctx, $1, @1, NULL); }
    | ix_lhs                            { $$ = $1; }
    ;

/* ==== for / parfor headers ==== */
for_kw
    : FOR                               { $$ = false; }
    | PARFOR                            { $$ = true; }
    ;

iter
    : expr ':' expr                     { $$ = (IterSpec){$1, $3, NULL, false}; }
    | expr                              { if (!seq_header(ctx, $1, @1, &$$)) YYABORT; }
    ;

loop_opts
    : %empty                            { $$ = NULL; }
    | loop_opts ',' ID '=' expr         { $$ = opts_push(ctx, $1, $3, $5, span(@3, @5)); }
    ;

/* ==== function definitions (top level only, doc/language.md, "function") ==== */
funcdef
    : ID asg FUNCTION '(' params_opt ')' outs_opt '{' block_list '}'
                                        { if ($9->n == 0) {
                                              parse_set_error(ctx, "syntax error", @10.first_line,
                                                              @10.first_column, false,
                                                              "functions with no statements are not allowed");
                                              YYABORT;
                                          }
                                          $$ = mk_func(ctx, @$, $1, $5, $7, $9, false); }
    | ID asg EXTERNALFUNCTION '(' params_opt ')' outs_opt IMPLEMENTED IN '(' impl_opt ')'
                                        { $$ = mk_func(ctx, @$, $1, $5, $7, NULL, true); }
    ;

params_opt
    : %empty                            { $$ = NULL; }
    | params                            { $$ = $1; }
    ;

params
    : param                             { $$ = params_push(ctx, NULL, $1); }
    | params ',' param                  { $$ = params_push(ctx, $1, $3); }
    ;

param
    : type ID                           { $$ = mk_param(ctx, @$, $1, $2, NULL); }
    | type ID '=' expr                  { $$ = mk_param(ctx, @$, $1, $2, $4); }
    | ID                                { untyped(ctx, $1, @1); YYABORT; }
    | ID '=' expr                       { untyped(ctx, $1, @1); YYABORT; }
    ;

outs_opt
    : %empty                            { $$ = NULL; }
    | RETURN '(' ')'                    { $$ = NULL; }
    | RETURN '(' outs ')'               { $$ = $3; }
    ;

outs
    : out                               { $$ = params_push(ctx, NULL, $1); }
    | outs ',' out                      { $$ = params_push(ctx, $1, $3); }
    ;

out
    : type ID                           { $$ = mk_param(ctx, @$, $1, $2, NULL); }
    | ID                                { untyped(ctx, $1, @1); YYABORT; }
    ;

type
    : VALUETYPE                         { $$ = (TypeSpec){TY_SCALAR, $1}; }
    | ID '[' VALUETYPE ']'              { if (!mk_type(ctx, $1, $3, @1, &$$)) YYABORT; }
    ;

/* implemented in (classname="...", execlocation="...", ...): ignored. */
impl_opt
    : %empty
    | impl
    ;

impl
    : ID '=' STRING
    | impl ',' ID '=' STRING
    ;

/* ==== expressions (doc/language.md, "operators") ==== */
expr
    : expr '|' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_OR, $1, $3); }
    | expr OROR expr                    { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_OROR, $1, $3); }
    | expr '&' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_AND, $1, $3); }
    | expr ANDAND expr                  { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_ANDAND, $1, $3); }
    | '!' expr                          { $$ = ast_unary(ctx->arena, L(ctx, @$), UOP_NOT, $2); }
    | expr '<' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_LT, $1, $3); }
    | expr LE expr                      { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_LE, $1, $3); }
    | expr '>' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_GT, $1, $3); }
    | expr GE expr                      { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_GE, $1, $3); }
    | expr EQ expr                      { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_EQ, $1, $3); }
    | expr NE expr                      { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_NE, $1, $3); }
    | expr '+' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_ADD, $1, $3); }
    | expr '-' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_SUB, $1, $3); }
    | expr '*' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_MUL, $1, $3); }
    | expr '/' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_DIV, $1, $3); }
    | expr INTDIV expr                  { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_INTDIV, $1, $3); }
    | expr MOD expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_MOD, $1, $3); }
    | expr MATMUL expr                  { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_MATMUL, $1, $3); }
    | '-' expr %prec UNARY              { $$ = ast_unary(ctx->arena, L(ctx, @$), UOP_NEG, $2); }
    | '+' expr %prec UNARY              { $$ = ast_unary(ctx->arena, L(ctx, @$), UOP_PLUS, $2); }
    | expr '^' expr                     { $$ = ast_binary(ctx->arena, L(ctx, @$), OP_POW, $1, $3); }
    | postfix                           { $$ = $1; }
    ;

/* Indexing applies to any atom: X[i, j], f(x)[1], (A + B)[, 2]. */
postfix
    : primary                           { $$ = $1; }
    | postfix '[' index ']'             { $$ = mk_index(ctx, @$, $1, $3); }
    ;

primary
    : INT                               { $$ = ast_node(ctx->arena, N_INT, L(ctx, @$)); $$->lit.i = $1; }
    | DOUBLE                            { $$ = ast_node(ctx->arena, N_DOUBLE, L(ctx, @$)); $$->lit.d = $1; }
    | TRUE                              { $$ = ast_node(ctx->arena, N_BOOL, L(ctx, @$)); $$->lit.b = true; }
    | FALSE                             { $$ = ast_node(ctx->arena, N_BOOL, L(ctx, @$)); $$->lit.b = false; }
    | STRING                            { $$ = ast_node(ctx->arena, N_STRING, L(ctx, @$));
                                          $$->str.s = $1.s;
                                          $$->str.len = $1.len; }
    | ID                                { double d;
                                          if (builtin_const($1, &d)) {
                                              $$ = ast_node(ctx->arena, N_DOUBLE, L(ctx, @$));
                                              $$->lit.d = d;
                                          } else {
                                              $$ = ast_node(ctx->arena, N_IDENT, L(ctx, @$));
                                              $$->ident.name = $1;
                                              $$->ident.slot = -1;
                                          } }
    | CMDARG                            { $$ = ast_node(ctx->arena, N_CMDARG, L(ctx, @$));
                                          $$->cmdarg.name = $1; }
    | call                              { $$ = $1; }
    | '(' expr ')'                      { $$ = $2; }
    | '[' exprs ']'                     { $$ = ast_node(ctx->arena, N_EXPRLIST, L(ctx, @$));
                                          $$->list.items = $2->v;
                                          $$->list.n = $2->n; }
    ;

/* [e1, e2, ...]: only valid as a named argument; resolve checks that. */
exprs
    : expr                              { $$ = nodes_one(ctx, $1); }
    | exprs ',' expr                    { $$ = nodes_push(ctx, $1, $3); }
    ;

call
    : ID '(' args_opt ')'               { $$ = mk_call(ctx, @$, $1, $3); }
    | NSID '(' args_opt ')'             { $$ = mk_call(ctx, @$, $1, $3); }
    ;

args_opt
    : %empty                            { $$ = NULL; }
    | args                              { $$ = $1; }
    ;

/* Positional arguments first, then name=value ones. */
args
    : expr                              { $$ = args_push(ctx, NULL, NULL, $1, @1); }
    | ID '=' expr                       { $$ = args_push(ctx, NULL, $1, $3, @1); }
    | args ',' expr                     { if (!($$ = args_push(ctx, $1, NULL, $3, @3))) YYABORT; }
    | args ',' ID '=' expr              { $$ = args_push(ctx, $1, $3, $5, @3); }
    ;

/* ==== index parts: X[r], X[r, c], X[, c], X[a:b, ]; ':' binds loosest ==== */
index
    : ipart                             { $$ = (IndexSpec){$1, {IX_ALL, NULL, NULL}, false}; }
    | ipart ',' ipart                   { $$ = (IndexSpec){$1, $3, true}; }
    ;

ipart
    : %empty                            { $$ = mk_part(IX_ALL, NULL, NULL); }
    | expr                              { $$ = mk_part(IX_ONE, $1, NULL); }
    | expr ':' expr                     { $$ = mk_part(IX_RANGE, $1, $3); }
    ;

%%

/* ==== error reporting ==== */

void parse_set_error(ParseCtx *ctx, const char *kind, int line, int col, bool incomplete,
                     const char *fmt, ...)
{
    if (ctx->failed)
        return;
    ctx->failed = true;
    ctx->err_kind = kind;
    ctx->incomplete = incomplete;
    Loc loc = {.file = ctx->file, .line = line, .col = col, .end_line = line, .end_col = col};
    va_list ap;
    va_start(ap, fmt);
    diag_vfail(&ctx->err, &loc, fmt, ap);
    va_end(ap);
}

/* Bison calls this only for "memory exhausted": the parse stack deeper
 * than YYMAXDEPTH, or out of memory (ours, or its stack's allocation, which
 * leaves ENOMEM in errno); syntax errors go through yyreport_syntax_error. */
static void dml_yyerror(const DML_YYLTYPE *loc, ParseCtx *ctx, const char *msg)
{
    if (ctx->oom || arena_failed(ctx->arena) || errno == ENOMEM)
        parse_set_error(ctx, "error", loc->first_line, loc->first_column, false, "out of memory");
    else
        parse_set_error(ctx, "syntax error", loc->first_line, loc->first_column, false,
                        "program nested too deeply (%s)", msg);
}

/* True for token classes shown as a word ("identifier") rather than quoted. */
static bool is_class_token(yysymbol_kind_t k)
{
    switch (k) {
    case YYSYMBOL_YYEOF: case YYSYMBOL_YYUNDEF: case YYSYMBOL_ID: case YYSYMBOL_NSID:
    case YYSYMBOL_CMDARG: case YYSYMBOL_INT: case YYSYMBOL_DOUBLE: case YYSYMBOL_STRING:
    case YYSYMBOL_VALUETYPE:
        return true;
    default:
        return false;
    }
}

/* How a token kind reads in a message: identifier, '%*%', '(', 'else'. */
static void token_desc(yysymbol_kind_t k, char *buf, size_t size)
{
    const char *name = yysymbol_name(k);
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '"' && name[n - 1] == '"') {  /* "alias" -> alias */
        name++;
        n -= 2;
    }
    if (is_class_token(k) || name[0] == '\'')   /* char tokens already read '(' */
        snprintf(buf, size, "%.*s", (int)n, name);
    else
        snprintf(buf, size, "'%.*s'", (int)n, name);
}

/* The unexpected token, with its text when that helps: identifier 'foo'. */
static void unexpected_desc(const ParseCtx *ctx, yysymbol_kind_t k, char *buf, size_t size)
{
    char d[64];
    token_desc(k, d, sizeof d);
    const LexToken *t = &ctx->last;
    if ((k == YYSYMBOL_ID || k == YYSYMBOL_NSID || k == YYSYMBOL_CMDARG || k == YYSYMBOL_INT ||
         k == YYSYMBOL_DOUBLE || k == YYSYMBOL_VALUETYPE) && t->len > 0 && t->len <= 40 &&
        t->off + t->len <= ctx->len)
        snprintf(buf, size, "%s '%.*s'", d, (int)t->len, ctx->text + t->off);
    else
        snprintf(buf, size, "%s", d);
}

/* file:line:col: syntax error: unexpected X, expecting A or B or C. Lists
 * the expected tokens only when there are at most five (as bison's detailed
 * mode does); the LAC option makes that list exact. */
static int yyreport_syntax_error(const yypcontext_t *yc, ParseCtx *ctx)
{
    enum { MAX_EXPECTED = 5 };
    const DML_YYLTYPE *loc = yypcontext_location(yc);
    yysymbol_kind_t tok = yypcontext_token(yc);
    if (tok == YYSYMBOL_YYEMPTY) {
        parse_set_error(ctx, "syntax error", loc->first_line, loc->first_column, false,
                        "unexpected input");
        return 0;
    }
    char msg[512], d[96];
    unexpected_desc(ctx, tok, d, sizeof d);
    size_t len = (size_t)snprintf(msg, sizeof msg, "unexpected %s", d);

    yysymbol_kind_t exp[MAX_EXPECTED];
    int n = yypcontext_expected_tokens(yc, exp, MAX_EXPECTED);
    char seen[MAX_EXPECTED][64];
    int nseen = 0;
    for (int i = 0; i < n && len < sizeof msg; i++) {
        char e[64];
        token_desc(exp[i], e, sizeof e);
        bool dup = false;       /* MLBRACKET and '[' both read '[' */
        for (int j = 0; j < nseen; j++)
            dup |= strcmp(seen[j], e) == 0;
        if (dup)
            continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", e);
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s",
                                nseen == 1 ? ", expecting " : " or ", e);
    }
    parse_set_error(ctx, "syntax error", loc->first_line, loc->first_column,
                    tok == YYSYMBOL_YYEOF, "%s", msg);
    return 0;
}
