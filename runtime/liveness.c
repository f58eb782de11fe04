/* SPDX-License-Identifier: Apache-2.0
 * Dead outputs of user-function calls (see liveness.h). One scan of a
 * function body records, per slot, whether it is read anywhere and whether
 * any write to it is other than a top-level out = <pure expression>; the
 * flags follow from that. The scan is deliberately coarse (a read anywhere,
 * before or after, in any branch, keeps a variable live) so that it is
 * plainly right; it is only meant to catch values nobody looks at. */
#include "liveness.h"

#include <stdlib.h>
#include <string.h>

#include "builtin_api.h"

/* The resolver has already rejected trees deeper than the stack allows;
 * past this depth the scan gives up all the same (nothing is skipped). */
enum { SCAN_MAX_DEPTH = 4096 };

typedef struct Scan {
    int nslots;
    bool *read;             /* read somewhere in the body */
    bool *bad_write;        /* written other than by a top-level pure assignment */
    bool *written;          /* written by a top-level pure assignment */
    bool dynamic;           /* exists()/ls() name variables at run time, or too deep */
    int depth;
} Scan;

static void mark(bool *flags, const Scan *sc, int slot)
{
    if (slot >= 0 && slot < sc->nslots)
        flags[slot] = true;
}

static bool expr_scan(Scan *sc, const Node *e);

static bool part_scan(Scan *sc, const IndexPart *ip)
{
    bool lo = expr_scan(sc, ip->lo), hi = expr_scan(sc, ip->hi);
    return lo && hi;
}

/* Records the reads of expression e; returns whether e is pure. */
static bool expr_scan(Scan *sc, const Node *e)
{
    if (!e)
        return true;
    if (++sc->depth > SCAN_MAX_DEPTH) {
        sc->dynamic = true;
        sc->depth--;
        return false;
    }
    bool pure = true;
    switch (e->kind) {
    case N_IDENT:
        mark(sc->read, sc, e->ident.slot);
        break;
    case N_BINARY: {
        bool l = expr_scan(sc, e->binary.lhs), r = expr_scan(sc, e->binary.rhs);
        pure = l && r;
        break;
    }
    case N_UNARY:
        pure = expr_scan(sc, e->unary.operand);
        break;
    case N_INDEX: {
        bool t = expr_scan(sc, e->index.target), r = part_scan(sc, &e->index.rows),
             c = part_scan(sc, &e->index.cols);
        pure = t && r && c;
        break;
    }
    case N_EXPRLIST:
        for (int i = 0; i < e->list.n; i++)
            pure &= expr_scan(sc, e->list.items[i]);
        break;
    case N_CALL:
        for (int i = 0; i < e->call.nargs; i++)
            pure &= expr_scan(sc, e->call.args[i]);
        if (e->call.bi && (e->call.bi->flags & BF_READS_VARS))
            sc->dynamic = true;
        pure &= e->call.bi != NULL && !e->call.fn && !e->call.variants && (e->call.bi->flags & BF_PURE);
        break;
    default:    /* literals, constants */
        break;
    }
    sc->depth--;
    return pure;
}

static void lhs_scan(Scan *sc, const Lhs *l)
{
    if (l->indexed) {   /* X[i, j] = v reads X */
        mark(sc->read, sc, l->slot);
        part_scan(sc, &l->rows);
        part_scan(sc, &l->cols);
    }
    mark(sc->bad_write, sc, l->slot);
}

static void block_scan(Scan *sc, Node *const *s, int n, bool top);

static void stmt_scan(Scan *sc, const Node *s, bool top)
{
    switch (s->kind) {
    case N_ASSIGN: {
        const Lhs *l = &s->assign.target;
        bool pure = expr_scan(sc, s->assign.value);
        if (s->assign.accum)
            mark(sc->read, sc, l->slot);
        if (top && pure && !l->indexed && !s->assign.accum)
            mark(sc->written, sc, l->slot);
        else
            lhs_scan(sc, l);
        break;
    }
    case N_MULTIASSIGN:
        expr_scan(sc, s->multi.call);
        for (int i = 0; i < s->multi.n; i++)
            lhs_scan(sc, &s->multi.targets[i]);
        break;
    case N_IFDEF:
        expr_scan(sc, s->ifdef.dflt);
        lhs_scan(sc, &s->ifdef.target);
        break;
    case N_EXPRSTMT:
        expr_scan(sc, s->expr.e);
        break;
    case N_IF:
        expr_scan(sc, s->ifs.cond);
        block_scan(sc, s->ifs.then_b, s->ifs.nthen, false);
        block_scan(sc, s->ifs.else_b, s->ifs.nelse, false);
        break;
    case N_FOR:
        expr_scan(sc, s->loop.from);
        expr_scan(sc, s->loop.to);
        expr_scan(sc, s->loop.by);
        for (int i = 0; i < s->loop.nopts; i++)
            expr_scan(sc, s->loop.opts[i].value);
        mark(sc->bad_write, sc, s->loop.var_slot);
        block_scan(sc, s->loop.body, s->loop.nbody, false);
        break;
    case N_WHILE:
        expr_scan(sc, s->loop.cond);
        block_scan(sc, s->loop.body, s->loop.nbody, false);
        break;
    default:    /* function definitions, source(), setwd() */
        break;
    }
}

static void block_scan(Scan *sc, Node *const *s, int n, bool top)
{
    if (++sc->depth > SCAN_MAX_DEPTH) {
        sc->dynamic = true;
    } else {
        for (int i = 0; i < n; i++)
            stmt_scan(sc, s[i], top);
    }
    sc->depth--;
}

static bool is_out_slot(const FuncDef *f, int slot)
{
    for (int i = 0; i < f->decl->nouts; i++)
        if (f->out_slots[i] == slot)
            return true;
    return false;
}

/* Marks the dead targets of every [a, b, ...] = user_f(...) in the block,
 * not descending into parfor bodies (their results are merged by slot). */
static void mark_calls(const Scan *sc, const FuncDef *f, Node *const *s, int n, int depth)
{
    if (depth > SCAN_MAX_DEPTH)
        return;
    for (int i = 0; i < n; i++) {
        Node *st = s[i];
        switch (st->kind) {
        case N_MULTIASSIGN: {
            Node *call = st->multi.call;
            if (call->kind != N_CALL || (!call->call.fn && !call->call.variants))
                break;
            int nt = st->multi.n;
            uint64_t dead = nt < 64 ? ~(uint64_t)0 << nt : 0;    /* outputs past the targets */
            for (int t = 0; t < nt && t < 64; t++) {
                const Lhs *l = &st->multi.targets[t];
                if (!l->indexed && l->slot >= 0 && l->slot < sc->nslots && !sc->read[l->slot] &&
                    !is_out_slot(f, l->slot))
                    dead |= (uint64_t)1 << t;
            }
            call->call.dead_outs = dead;
            break;
        }
        case N_IF:
            mark_calls(sc, f, st->ifs.then_b, st->ifs.nthen, depth + 1);
            mark_calls(sc, f, st->ifs.else_b, st->ifs.nelse, depth + 1);
            break;
        case N_FOR:
            if (!st->loop.parfor)
                mark_calls(sc, f, st->loop.body, st->loop.nbody, depth + 1);
            break;
        case N_WHILE:
            mark_calls(sc, f, st->loop.body, st->loop.nbody, depth + 1);
            break;
        default:
            break;
        }
    }
}

void liveness_func(FuncDef *f)
{
    const FuncDecl *d = f->decl;
    f->skip_outs = 0;
    int ns = f->slots.n;
    Scan sc = {.nslots = ns};
    sc.read = calloc((size_t)ns + 1, sizeof(bool));
    sc.bad_write = calloc((size_t)ns + 1, sizeof(bool));
    sc.written = calloc((size_t)ns + 1, sizeof(bool));
    if (!sc.read || !sc.bad_write || !sc.written)
        goto done;  /* out of memory: nothing is skipped */
    for (int i = 0; i < d->nparams; i++)
        expr_scan(&sc, d->params[i].dflt);
    block_scan(&sc, d->body, d->nbody, true);
    if (sc.dynamic)
        goto done;
    /* callee side: outputs written only by top-level pure assignments, never
     * read, not a parameter, not shared with another output */
    for (int i = 0; i < d->nouts && i < 64; i++) {
        int so = f->out_slots[i];
        bool ok = so >= d->nparams && so < ns && sc.written[so] && !sc.bad_write[so] && !sc.read[so];
        for (int j = 0; j < d->nouts && ok; j++)
            ok = j == i || f->out_slots[j] != so;
        if (ok)
            f->skip_outs |= (uint64_t)1 << i;
    }
    for (int k = 0; k < d->nbody && f->skip_outs; k++) {
        Node *s = d->body[k];
        if (s->kind != N_ASSIGN || s->assign.target.indexed || s->assign.accum)
            continue;
        for (int i = 0; i < d->nouts && i < 64; i++)
            if ((f->skip_outs >> i & 1) && f->out_slots[i] == s->assign.target.slot)
                s->assign.skip_out = i + 1;
    }
    /* caller side */
    mark_calls(&sc, f, d->body, d->nbody, 0);
done:
    free(sc.read);
    free(sc.bad_write);
    free(sc.written);
}
