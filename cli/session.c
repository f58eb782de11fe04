/* SPDX-License-Identifier: Apache-2.0
 * The interactive session shared by the REPL and the Jupyter kernel
 * (contracts in session.h). Main thread only. */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "../builtins/registry.h"
#include "../runtime/resolve.h"
#include "../runtime/tostring.h"
#include "cli.h"

bool session_init(Session *s, Program *prog, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->prog = prog;
    interp_init(&s->I, prog, seed);
    s->I.interrupt = &cli_interrupt_flag;
    s->I.sink = cli_stderr_sink();
    s->top.names = &prog->top;
    s->I.frame = &s->top;
    if (exec_sync_top(&s->I, &s->top) != ST_OK) {
        interp_destroy(&s->I);
        return false;
    }
    return true;
}

void session_destroy(Session *s)
{
    for (int i = 0; i < s->top.nslots; i++)
        val_release(s->top.slots[i]);
    free(s->top.slots);
    s->top.slots = NULL;
    s->top.nslots = 0;
    interp_destroy(&s->I);
}

/* ==== reading an input ==================================================== */

/* session_try_parse, also giving the number of top-level statements. */
static bool parse_count(const char *name, const char *text, size_t len, ParseMode mode, bool *incomplete,
                        DiagErr *err, int *nstmts)
{
    *incomplete = false;
    Arena *a = arena_new();
    if (!a)
        return diag_fail(err, "out of memory");
    ParseOut po = {0};
    bool ok = parse_source(a, name, text, len, mode, &po);
    arena_free(a);
    *incomplete = !ok && po.incomplete;
    if (nstmts)
        *nstmts = po.n;
    if (!ok) {
        *err = po.err;
        err->loc.file = name;   /* the arena's copy is gone */
    }
    return ok;
}

bool session_try_parse(const char *name, const char *text, size_t len, ParseMode mode, bool *incomplete,
                       DiagErr *err)
{
    return parse_count(name, text, len, mode, incomplete, err, NULL);
}

/* Where a parse error stands, to compare two; -1 when it has no position. */
static long diag_pos(const DiagErr *e)
{
    return e->has_loc ? (long)e->loc.line * 100000L + e->loc.col : -1;
}

const DiagErr *session_pick_error(const DiagErr *eerr, bool einc, const DiagErr *perr, bool pinc)
{
    /* "1 + * 2" is a bad expression, not a bad statement at 1:1 */
    return (einc != pinc ? einc : diag_pos(eerr) > diag_pos(perr)) ? eerr : perr;
}

static bool blank_tail(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '#') {      /* a comment runs to the end of its line */
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != ';')
            return false;
    }
    return true;
}

/* Split points tried, from the end of a cell back (each costs a parse that
 * mostly fails at its first token). */
#define CELL_MAX_SPLITS 4000

CellRead session_read_cell(const char *name, const char *text, size_t len, size_t *split, bool *has_expr,
                           DiagErr *err)
{
    bool einc = false, pinc = false, inc;
    DiagErr eerr, perr, scratch;
    *split = 0;
    *has_expr = false;
    if (session_try_parse(name, text, len, PARSE_EXPR, &einc, &eerr)) {
        *has_expr = true;
        return CELL_OK;
    }
    int nwhole = 0;
    bool prog_ok = parse_count(name, text, len, PARSE_PROGRAM, &pinc, &perr, &nwhole);
    /* Statements, then a bare expression after a line break or ';': the
     * expression must be the last statement of the whole (so "x = y\n-1",
     * one statement, stays one). */
    int tries = 0;
    for (size_t k = len; k-- > 0 && tries < CELL_MAX_SPLITS;) {
        if (text[k] != '\n' && text[k] != ';')
            continue;
        size_t at = k + 1;
        if (blank_tail(text + at, len - at))
            continue;
        tries++;
        if (!session_try_parse(name, text + at, len - at, PARSE_EXPR, &inc, &scratch))
            continue;
        int nprefix = 0;
        if (!parse_count(name, text, at, PARSE_PROGRAM, &inc, &scratch, &nprefix))
            continue;
        if (prog_ok && nprefix != nwhole - 1)
            continue;
        *split = at;
        *has_expr = true;
        return CELL_OK;
    }
    if (prog_ok)
        return CELL_OK;
    *err = *session_pick_error(&eerr, einc, &perr, pinc);
    if (einc || pinc)
        return CELL_INCOMPLETE;
    return CELL_INVALID;
}

/* ==== running ============================================================= */

/* False (error set) when the top frame cannot grow: nothing may run. */
static bool prepare_run(Session *s)
{
    s->I.frame = &s->top;
    s->I.depth = 0;
    err_clear(&s->I);
    if (exec_sync_top(&s->I, &s->top) != ST_OK)
        return false;
    /* A Ctrl-C typed before this input was sent must not abort it. */
    atomic_store(&cli_interrupt_flag, 0);
    return true;
}

static void finish_run(Session *s)
{
    s->I.frame = &s->top;
    /* A Ctrl-C that came after the evaluator's last check belongs to the
     * input that just ended, not to the next one. */
    atomic_store(&cli_interrupt_flag, 0);
}

Status session_run_expr(Session *s, const Node *e, SessionShowFn show, void *ctx)
{
    Interp *I = &s->I;
    Status st = ST_ERR;
    if (!prepare_run(s)) {
    } else if (e->kind == N_CALL && (e->call.fn || (e->call.bi && (e->call.bi->flags & (BF_STATEMENT | BF_MULTI))))) {
        int nout;
        if (e->call.fn)
            nout = e->call.fn->decl->nouts;
        else
            nout = (e->call.bi->flags & BF_STATEMENT) ? 0 : e->call.bi->nout;
        Value *outs = nout ? calloc((size_t)nout, sizeof *outs) : NULL;
        if (nout && !outs) {
            st = err_set(I, "out of memory");
        } else {
            st = eval_call(I, e, outs, nout);
            for (int i = 0; i < nout; i++) {
                if (st == ST_OK && outs[i].kind != VAL_NONE)
                    show(ctx, outs[i]);
                val_release(outs[i]);
            }
            free(outs);
        }
    } else {
        Value v = val_none();
        st = eval_expr(I, e, &v);
        if (st == ST_OK && v.kind != VAL_NONE)
            show(ctx, v);
        val_release(v);
    }
    finish_run(s);
    return st;
}

Status session_run_stmts(Session *s, Node **stmts, int n)
{
    Status st = prepare_run(s) ? exec_block(&s->I, stmts, n) : ST_ERR;
    finish_run(s);
    return st;
}

/* ==== showing a value ===================================================== */

/* 'path' is the label of v inside an enclosing list ("" at the top). */
static void show_sb(StrBuf *b, Value v, const char *path, int depth)
{
    if (v.kind == VAL_MATRIX) {
        tostring_matrix_display_sb(b, v.m, SESSION_SHOW_MAX, SESSION_SHOW_MAX);
        return;
    }
    if (v.kind != VAL_LIST) {
        ToStringOpts o;
        tostring_defaults(&o);
        tostring_value_sb(b, v, &o);
        sb_puts(b, "\n");
        return;
    }
    const List *l = v.l;
    if (l->n == 0) {
        sb_puts(b, "[empty list]\n");
        return;
    }
    if (depth >= 16) {      /* lists nest only as deep as a script built them */
        sb_printf(b, "[list of %lld]\n", (long long)l->n);
        return;
    }
    for (int64_t i = 0; i < l->n && !b->oom; i++) {
        char label[256];
        if (l->names && l->names[i])
            snprintf(label, sizeof label, "%s$%s", path, l->names[i]->s);
        else
            snprintf(label, sizeof label, "%s[[%lld]]", path, (long long)i + 1);
        sb_printf(b, "%s%s\n", i ? "\n" : "", label);
        show_sb(b, l->items[i], label, depth + 1);
    }
}

void session_show_sb(StrBuf *b, Value v)
{
    if (v.kind != VAL_NONE)
        show_sb(b, v, "", 0);
}

/* ==== help, quit ========================================================== */

bool session_help_request(const Session *s, const char *text, char *topic, size_t cap)
{
    const char *p = text;
    while (*p == ' ' || *p == '\t')
        p++;
    bool call = false;
    if (*p == '?') {
        p++;
    } else if (strncmp(p, "help", 4) == 0 && !program_find_func(s->prog, NULL, "help")) {
        p += 4;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '(')
            return false;
        p++;
        call = true;
    } else {
        return false;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    bool quoted = *p == '"' || *p == '\'';
    char q = *p;
    if (quoted)
        p++;
    const char *start = p;
    while (*p && (strchr("._:/", *p) || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9')))
        p++;
    size_t n = (size_t)(p - start);
    if (quoted) {
        if (*p != q)
            return false;
        p++;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (call) {
        if (*p != ')' || (n == 0 && !quoted) || quoted)
            return false;       /* help(), help("x"): the builtin */
        p++;
    }
    while (*p == ' ' || *p == '\t' || *p == ';' || *p == '\n' || *p == '\r')
        p++;
    if (*p || n == 0 || n >= cap)
        return false;
    memcpy(topic, start, n);
    topic[n] = '\0';
    return true;
}

bool session_is_quit(const Session *s, const char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    const char *name = NULL;
    if (strncmp(text, "quit()", 6) == 0)
        name = "quit";
    else if (strncmp(text, "q()", 3) == 0)
        name = "q";
    if (!name)
        return false;
    const char *rest = text + strlen(name) + 2;
    while (*rest == ' ' || *rest == '\t' || *rest == ';')
        rest++;
    return *rest == '\0' && !program_find_func(s->prog, NULL, name);
}

/* ==== completion ========================================================== */

static const char *const dml_keywords[] = {
    "if", "else", "for", "parfor", "while", "in", "function", "return", "externalFunction",
    "implemented", "source", "setwd", "ifdef", "as", "TRUE", "FALSE",
    "Matrix", "Frame", "List", "Scalar", "Double", "Integer", "Boolean", "String",
    "double", "integer", "int", "boolean", "string", NULL,
};

bool session_is_keyword(const char *name)
{
    for (int i = 0; dml_keywords[i]; i++)
        if (strcmp(name, dml_keywords[i]) == 0)
            return true;
    return false;
}

typedef struct NameWalk {
    const char *prefix;
    size_t plen;
    void (*fn)(void *ctx, const char *name, SessionNameKind kind);
    void *ctx;
} NameWalk;

static void offer(NameWalk *w, const char *name, SessionNameKind kind)
{
    if (strncmp(name, w->prefix, w->plen) == 0)
        w->fn(w->ctx, name, kind);
}

static void offer_builtin(const char *name, void *ctx)
{
    offer(ctx, name, SN_FUNCTION);
}

void session_each_name(const Session *s, const char *prefix,
                       void (*fn)(void *ctx, const char *name, SessionNameKind kind), void *ctx)
{
    NameWalk w = {prefix, strlen(prefix), fn, ctx};
    const Program *p = s->prog;
    builtin_each(offer_builtin, &w);
    const Module *m = p->main;
    for (int i = 0; i < m->nfuncs; i++)
        offer(&w, m->funcs[i]->name, SN_FUNCTION);
    /* "ns::f" for every function of every namespace alias of the main
     * module; the name is built only when the alias part could match. */
    for (int a = 0; a < m->naliases; a++) {
        const NsAlias *al = &m->aliases[a];
        size_t alen = strlen(al->alias);
        if (strncmp(al->alias, prefix, alen < w.plen ? alen : w.plen) != 0)
            continue;
        for (int i = 0; i < al->mod->nfuncs; i++) {
            const char *f = al->mod->funcs[i]->name;
            size_t need = alen + 2 + strlen(f) + 1;
            char *q = malloc(need);
            if (!q)
                continue;
            snprintf(q, need, "%s::%s", al->alias, f);
            offer(&w, q, SN_FUNCTION);
            free(q);
        }
    }
    /* Only variables that hold a value: a failed input may have declared a
     * slot that was never assigned. */
    for (int i = 0; i < p->top.n && i < s->top.nslots; i++)
        if (s->top.slots[i].kind != VAL_NONE)
            offer(&w, p->top.names[i], SN_VARIABLE);
    for (int i = 0; dml_keywords[i]; i++)
        offer(&w, dml_keywords[i], SN_KEYWORD);
}
