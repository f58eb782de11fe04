/* SPDX-License-Identifier: Apache-2.0
 * The DML grammar (doc/language.md): a pure LALR(1) parser with locations
 * and no conflicts. Actions only call the builders and checks of
 * parser/build.c, which allocate in the ParseCtx's arena (nothing is
 * malloc'd, so nothing leaks when a parse is abandoned). Tokens come from
 * dml_yylex() in parser/parse.c, which wraps the flex scanner (lexer/dml.l).
 * What stays here is what needs bison's own types: locations and the
 * syntax error messages. */

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
#include "parser/build.h"
#include "parser/parse.h"
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
    /* stray '.' characters the lexer skipped (COMPAT.md 11), in the arena */
    Loc *skipped;
    int nskipped, capskipped;

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
    DiagErr err;                    /* "kind: message" and position (base/diag.h) */
};

int dml_yylex(DML_YYSTYPE *lval, DML_YYLTYPE *lloc, ParseCtx *ctx);
}

%code {
#include <errno.h>
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

/* The Loc of a bison location, for the builders. */
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
    : %empty                            { $$ = build_nodes_new(ctx); }
    | top_list stmt                     { $$ = build_nodes_push(ctx, $1, $2); }
    | top_list funcdef                  { $$ = build_nodes_push(ctx, $1, $2); }
    | top_list ';'                      { $$ = $1; }
    ;

block_list
    : %empty                            { $$ = build_nodes_new(ctx); }
    | block_list stmt                   { $$ = build_nodes_push(ctx, $1, $2); }
    | block_list nested_funcdef         { $$ = $1; }
    | block_list ';'                    { $$ = $1; }
    ;

/* Body of if/else/for/while: one statement or a block. */
body
    : stmt                              { $$ = build_nodes_one(ctx, $1); }
    | nested_funcdef                    { $$ = build_nodes_new(ctx); }
    | '{' block_list '}'                { $$ = $2; }
    | body ';'                          { $$ = $1; }
    ;

/* A function definition where only statements may stand. */
nested_funcdef
    : ID asg FUNCTION                   { build_nested_function(ctx, L(ctx, @3)); YYABORT; }
    | ID asg EXTERNALFUNCTION           { build_nested_function(ctx, L(ctx, @3)); YYABORT; }
    ;

asg
    : '='
    | ARROW
    ;

/* ==== statements (doc/language.md, "Control flow") ==== */
stmt
    : ID asg expr                       { if (!build_check_target(ctx, $1, L(ctx, @1))) YYABORT;
                                          $$ = build_assign(ctx, L(ctx, @$), build_lhs($1, L(ctx, @1), NULL), $3, false); }
    | ID PLUSEQ expr                    { if (!build_check_target(ctx, $1, L(ctx, @1))) YYABORT;
                                          $$ = build_assign(ctx, L(ctx, @$), build_lhs($1, L(ctx, @1), NULL), $3, true); }
    | ix_lhs asg expr                   { $$ = build_assign(ctx, L(ctx, @$), $1, $3, false); }
    | ix_lhs PLUSEQ expr                { $$ = build_assign(ctx, L(ctx, @$), $1, $3, true); }
    | ID asg IFDEF '(' CMDARG ',' expr ')'
                                        { if (!build_check_target(ctx, $1, L(ctx, @1))) YYABORT;
                                          $$ = build_ifdef(ctx, L(ctx, @$), build_lhs($1, L(ctx, @1), NULL), $5, $7); }
    | ix_lhs asg IFDEF '(' CMDARG ',' expr ')'
                                        { $$ = build_ifdef(ctx, L(ctx, @$), $1, $5, $7); }
    | MLBRACKET lhs_list ']' asg call   { $$ = build_multiassign(ctx, L(ctx, @$), $2, $5); }
    | call                              { $$ = build_exprstmt(ctx, L(ctx, @$), $1); }
    | SOURCE '(' STRING ')' AS ID       { $$ = build_source(ctx, L(ctx, @$), $3.s, $6); }
    | SETWD '(' STRING ')'              { $$ = build_setwd(ctx, L(ctx, @$), $3.s); }
    | IF '(' expr ')' body %prec THEN   { $$ = build_if(ctx, L(ctx, @$), $3, $5, NULL); }
    | IF '(' expr ')' body ELSE body %prec THEN
                                        { $$ = build_if(ctx, L(ctx, @$), $3, $5, $7); }
    | for_kw '(' ID IN iter loop_opts ')' body %prec THEN
                                        { if (!build_check_target(ctx, $3, L(ctx, @3))) YYABORT;
                                          $$ = build_for(ctx, L(ctx, @$), $1, $3, $5, $6, $8); }
    | WHILE '(' expr ')' body %prec THEN
                                        { $$ = build_while(ctx, L(ctx, @$), $3, $5); }
    ;

/* X[rows, cols] as the start of a statement. */
ix_lhs
    : ID '[' index ']'                  { if (!build_check_target(ctx, $1, L(ctx, @1))) YYABORT;
                                          $$ = build_lhs($1, L(ctx, @$), &$3); }
    ;

/* Targets of a multi-assignment. */
lhs_list
    : lhs                               { $$ = build_lhss_push(ctx, NULL, $1); }
    | lhs_list ',' lhs                  { $$ = build_lhss_push(ctx, $1, $3); }
    ;

lhs
    : ID                                { if (!build_check_target(ctx, $1, L(ctx, @1))) YYABORT;
                                          $$ = build_lhs($1, L(ctx, @1), NULL); }
    | ix_lhs                            { $$ = $1; }
    ;

/* ==== for / parfor headers ==== */
for_kw
    : FOR                               { $$ = false; }
    | PARFOR                            { $$ = true; }
    ;

iter
    : expr ':' expr                     { $$ = (IterSpec){$1, $3, NULL, false}; }
    | expr                              { if (!build_seq_header(ctx, $1, L(ctx, @1), &$$)) YYABORT; }
    ;

loop_opts
    : %empty                            { $$ = NULL; }
    | loop_opts ',' ID '=' expr         { $$ = build_opts_push(ctx, $1, $3, $5, L(ctx, span(@3, @5))); }
    ;

/* ==== function definitions (top level only, doc/language.md, "function") ==== */
funcdef
    : ID asg FUNCTION '(' params_opt ')' outs_opt '{' block_list '}'
                                        { if (!build_check_func_body(ctx, $9, L(ctx, @10))) YYABORT;
                                          $$ = build_func(ctx, L(ctx, @$), $1, $5, $7, $9, false); }
    | ID asg EXTERNALFUNCTION '(' params_opt ')' outs_opt IMPLEMENTED IN '(' impl_opt ')'
                                        { $$ = build_func(ctx, L(ctx, @$), $1, $5, $7, NULL, true); }
    ;

params_opt
    : %empty                            { $$ = NULL; }
    | params                            { $$ = $1; }
    ;

params
    : param                             { $$ = build_params_push(ctx, NULL, $1); }
    | params ',' param                  { $$ = build_params_push(ctx, $1, $3); }
    ;

param
    : type ID                           { $$ = build_param(L(ctx, @$), $1, $2, NULL); }
    | type ID '=' expr                  { $$ = build_param(L(ctx, @$), $1, $2, $4); }
    | ID                                { build_untyped(ctx, $1, L(ctx, @1)); YYABORT; }
    | ID '=' expr                       { build_untyped(ctx, $1, L(ctx, @1)); YYABORT; }
    ;

outs_opt
    : %empty                            { $$ = NULL; }
    | RETURN '(' ')'                    { $$ = NULL; }
    | RETURN '(' outs ')'               { $$ = $3; }
    ;

outs
    : out                               { $$ = build_params_push(ctx, NULL, $1); }
    | outs ',' out                      { $$ = build_params_push(ctx, $1, $3); }
    ;

out
    : type ID                           { $$ = build_param(L(ctx, @$), $1, $2, NULL); }
    | ID                                { build_untyped(ctx, $1, L(ctx, @1)); YYABORT; }
    ;

type
    : VALUETYPE                         { $$ = (TypeSpec){TY_SCALAR, $1}; }
    | ID '[' VALUETYPE ']'              { if (!build_type(ctx, $1, $3, L(ctx, @1), &$$)) YYABORT; }
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
    | postfix '[' index ']'             { $$ = build_index(ctx, L(ctx, @$), $1, $3); }
    ;

primary
    : INT                               { $$ = build_int(ctx, L(ctx, @$), $1); }
    | DOUBLE                            { $$ = build_double(ctx, L(ctx, @$), $1); }
    | TRUE                              { $$ = build_bool(ctx, L(ctx, @$), true); }
    | FALSE                             { $$ = build_bool(ctx, L(ctx, @$), false); }
    | STRING                            { $$ = build_string(ctx, L(ctx, @$), $1); }
    | ID                                { $$ = build_ident(ctx, L(ctx, @$), $1); }
    | CMDARG                            { $$ = build_cmdarg(ctx, L(ctx, @$), $1); }
    | call                              { $$ = $1; }
    | '(' expr ')'                      { $$ = $2; }
    | '[' exprs ']'                     { $$ = build_exprlist(ctx, L(ctx, @$), $2); }
    ;

/* [e1, e2, ...]: only valid as a named argument; resolve checks that. */
exprs
    : expr                              { $$ = build_nodes_one(ctx, $1); }
    | exprs ',' expr                    { $$ = build_nodes_push(ctx, $1, $3); }
    ;

call
    : ID '(' args_opt ')'               { $$ = build_call(ctx, L(ctx, @$), $1, $3); }
    | NSID '(' args_opt ')'             { $$ = build_call(ctx, L(ctx, @$), $1, $3); }
    ;

args_opt
    : %empty                            { $$ = NULL; }
    | args                              { $$ = $1; }
    ;

/* Positional arguments first, then name=value ones. */
args
    : expr                              { $$ = build_args_push(ctx, NULL, NULL, $1); }
    | ID '=' expr                       { $$ = build_args_push(ctx, NULL, $1, $3); }
    | args ',' expr                     { if (!($$ = build_args_push(ctx, $1, NULL, $3))) YYABORT; }
    | args ',' ID '=' expr              { $$ = build_args_push(ctx, $1, $3, $5); }
    ;

/* ==== index parts: X[r], X[r, c], X[, c], X[a:b, ]; ':' binds loosest ==== */
index
    : ipart                             { $$ = (IndexSpec){$1, {IX_ALL, NULL, NULL}, false}; }
    | ipart ',' ipart                   { $$ = (IndexSpec){$1, $3, true}; }
    ;

ipart
    : %empty                            { $$ = build_part(IX_ALL, NULL, NULL); }
    | expr                              { $$ = build_part(IX_ONE, $1, NULL); }
    | expr ':' expr                     { $$ = build_part(IX_RANGE, $1, $3); }
    ;

%%

/* ==== error reporting ==== */

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
