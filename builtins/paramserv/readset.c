/* SPDX-License-Identifier: Apache-2.0
 * Which entries of the model a worker's functions can read (ps.h,
 * ps_model_reads). Under Open MPI a pull then carries only those entries:
 * upstream's LeNet keeps 8 weights and 8 momentum buffers in its model, and
 * its gradients function reads only the weights, so half of every pull
 * would cross the network for nothing.
 *
 * The scan is deliberately simple so that it is plainly right: the model
 * parameter may appear only as the target of a list index whose index is
 * an integer literal (model[3]) or a range of two (model[1:8]); those
 * entries are read. Any other appearance (the bare name passed to a
 * function, returned, assigned, copied; an index computed at run time, a
 * string or a matrix-style [i, j] index; an assignment to the parameter or
 * to one of its entries) means "every entry", and so does a body deeper
 * than the scan goes. Each model[...] expression evaluates to a list of
 * exactly the entries its literal names, so whatever the function does
 * with that result, it sees no other entry. */
#include <stdlib.h>
#include <string.h>

#include "ps.h"

/* The resolver has already rejected trees deeper than the stack allows;
 * past this depth the scan gives up (every entry is needed). */
enum { READS_MAX_DEPTH = 4096 };

typedef struct Reads {
    int slot;                   /* the model parameter's slot */
    int64_t n;                  /* entries of the model */
    bool *need;
    bool all;                   /* cannot tell: every entry */
    int depth;
} Reads;

static void expr_reads(Reads *r, const Node *e);

/* An integer literal in 1..n: its 0-based entry, else -1. */
static int64_t literal_entry(const Reads *r, const Node *e)
{
    if (!e || e->kind != N_INT || e->lit.i < 1 || e->lit.i > r->n)
        return -1;
    return e->lit.i - 1;
}

/* model[...]: marks the entries a literal index names, else everything. */
static void model_index(Reads *r, const Node *e)
{
    const IndexPart *ip = &e->index.rows;
    if (e->index.has_cols) {
        r->all = true;
        return;
    }
    int64_t lo = literal_entry(r, ip->lo), hi = lo;
    if (ip->kind == IX_RANGE)
        hi = literal_entry(r, ip->hi);
    if (ip->kind == IX_ALL || lo < 0 || hi < lo) {
        r->all = true;
        return;
    }
    for (int64_t i = lo; i <= hi; i++)
        r->need[i] = true;
}

static void part_reads(Reads *r, const IndexPart *ip)
{
    expr_reads(r, ip->lo);
    expr_reads(r, ip->hi);
}

static void expr_reads(Reads *r, const Node *e)
{
    if (!e || r->all)
        return;
    if (++r->depth > READS_MAX_DEPTH) {
        r->all = true;
        r->depth--;
        return;
    }
    switch (e->kind) {
    case N_INT: case N_DOUBLE: case N_BOOL: case N_STRING: case N_CONST: case N_CMDARG:
        break;
    case N_IDENT:
        /* The bare model anywhere but as an index target. */
        if (e->ident.slot == r->slot)
            r->all = true;
        break;
    case N_BINARY:
        expr_reads(r, e->binary.lhs);
        expr_reads(r, e->binary.rhs);
        break;
    case N_UNARY:
        expr_reads(r, e->unary.operand);
        break;
    case N_INDEX:
        if (e->index.target && e->index.target->kind == N_IDENT && e->index.target->ident.slot == r->slot)
            model_index(r, e);
        else
            expr_reads(r, e->index.target);
        part_reads(r, &e->index.rows);
        part_reads(r, &e->index.cols);
        break;
    case N_EXPRLIST:
        for (int i = 0; i < e->list.n; i++)
            expr_reads(r, e->list.items[i]);
        break;
    case N_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            expr_reads(r, e->call.args[i]);
        break;
    default:        /* a kind this scan does not know */
        r->all = true;
        break;
    }
    r->depth--;
}

/* A write to the model or one of its entries: the function then holds a
 * model of its own making, which the scan does not follow. */
static void lhs_reads(Reads *r, const Lhs *l)
{
    if (l->slot == r->slot) {
        r->all = true;
        return;
    }
    if (l->indexed) {
        part_reads(r, &l->rows);
        part_reads(r, &l->cols);
    }
}

static void block_reads(Reads *r, Node *const *s, int n);

static void stmt_reads(Reads *r, const Node *s)
{
    switch (s->kind) {
    case N_ASSIGN:
        lhs_reads(r, &s->assign.target);
        expr_reads(r, s->assign.value);
        break;
    case N_MULTIASSIGN:
        for (int i = 0; i < s->multi.n; i++)
            lhs_reads(r, &s->multi.targets[i]);
        expr_reads(r, s->multi.call);
        break;
    case N_IFDEF:
        lhs_reads(r, &s->ifdef.target);
        expr_reads(r, s->ifdef.dflt);
        break;
    case N_EXPRSTMT:
        expr_reads(r, s->expr.e);
        break;
    case N_IF:
        expr_reads(r, s->ifs.cond);
        block_reads(r, s->ifs.then_b, s->ifs.nthen);
        block_reads(r, s->ifs.else_b, s->ifs.nelse);
        break;
    case N_FOR:
        if (s->loop.var_slot == r->slot)
            r->all = true;
        expr_reads(r, s->loop.from);
        expr_reads(r, s->loop.to);
        expr_reads(r, s->loop.by);
        for (int i = 0; i < s->loop.nopts; i++)
            expr_reads(r, s->loop.opts[i].value);
        block_reads(r, s->loop.body, s->loop.nbody);
        break;
    case N_WHILE:
        expr_reads(r, s->loop.cond);
        block_reads(r, s->loop.body, s->loop.nbody);
        break;
    case N_FUNCDEF: case N_SOURCE: case N_SETWD:
        break;
    default:        /* an expression as a statement, or a kind this scan does not know */
        r->all = true;
        break;
    }
}

static void block_reads(Reads *r, Node *const *s, int n)
{
    if (++r->depth > READS_MAX_DEPTH)
        r->all = true;
    for (int i = 0; i < n && !r->all; i++)
        stmt_reads(r, s[i]);
    r->depth--;
}

bool ps_model_reads(const FuncDef *f, int64_t n, bool *need)
{
    for (int64_t i = 0; i < n; i++)
        need[i] = false;
    const FuncDecl *d = f->decl;
    int slot = -1;
    for (int i = 0; i < d->nparams; i++)
        if (strcmp(d->params[i].name, "model") == 0)
            slot = i;       /* parameters take the first slots, in order */
    if (slot < 0)
        return true;        /* not declared: paramserv never passes it */
    Reads r = {.slot = slot, .n = n, .need = need};
    for (int i = 0; i < d->nouts; i++)
        if (f->out_slots[i] == slot)
            r.all = true;   /* returns the model it was given */
    for (int i = 0; i < d->nparams && !r.all; i++)
        expr_reads(&r, d->params[i].dflt);
    block_reads(&r, d->body, d->nbody);
    return !r.all;
}

bool *ps_pull_entries(const PsConfig *c, int64_t n)
{
    bool *need = calloc((size_t)n + 1, sizeof *need), *agg = calloc((size_t)n + 1, sizeof *agg);
    bool some = need && agg && ps_model_reads(c->upd, n, need);
    if (some && (c->model_avg || c->freq != PS_FREQ_BATCH)) {
        some = ps_model_reads(c->agg, n, agg);
        for (int64_t i = 0; some && i < n; i++)
            need[i] = need[i] || agg[i];
    }
    for (int64_t i = 0; some && i < n; i++)
        if (!need[i])
            break;
        else if (i == n - 1)
            some = false;   /* reads every entry */
    free(agg);
    if (!some) {
        free(need);
        return NULL;
    }
    return need;
}
