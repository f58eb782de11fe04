/* SPDX-License-Identifier: Apache-2.0
 * parfor dependency analysis (doc: DML.md 5.6; upstream's
 * ParForStatementBlock). A variable that exists before a parfor loop and is
 * assigned in its body is a candidate result. A candidate that holds a
 * scalar carries a value from one iteration to the next whatever the body
 * does with it (total = total + i, even a = i). A candidate matrix or list
 * is free of dependencies when no two iterations touch the same cells:
 *   - a whole assignment (A = ...) is a dependency; A += e is not, unless A
 *     is also read or plainly assigned in the body;
 *   - reading A whole (other than nrow(A), ncol(A)) while writing it is;
 *   - every pair of indexed accesses (write/write, write/read) must be
 *     proven disjoint between two different iterations in one of the two
 *     dimensions, from subscripts that are linear in the loop variable
 *     (A[i, ] = .., A[(i-1)*3+1 : 3*i, ] = .., Z[i, j] = ..); indexed +=
 *     pairs need no proof (their deltas add up). Anything not proven is a
 *     dependency, as upstream (which is why upstream scripts say check=0);
 *   - indexed reads inside a nested parfor loop that says check=0 are left
 *     out of the pairs: that loop's author vouched for its accesses, and
 *     upstream accepts such loops (its knn builtin: outer parfor over i,
 *     nested parfor over j with check=0 reading M[1, i] and M[1, j] and
 *     writing M[1, i] = 1). Its writes are still checked against each
 *     other and against the reads outside it.
 * The resolver runs this once per parfor loop; what a candidate holds is
 * known only when the loop starts, so the verdict is taken there, before
 * any iteration runs (parfor_check_entry). */
#include <stdlib.h>
#include <string.h>

#include "builtin_api.h"
#include "eval.h"
#include "parfor.h"

/* Expressions nested deeper than this are not analysed (a dependency). */
#define WALK_MAX_DEPTH 2000

/* ---- the slots of one parfor body ---- */

typedef struct LoopVar {
    int slot;
    bool bounded;           /* every loop over it has literal integer bounds */
    int64_t lo, hi;         /* union of those bounds */
} LoopVar;

typedef struct Body {
    int p;                  /* the parfor variable */
    int *assigned; int nassigned, capassigned;  /* targets of =, +=, [..] = .., ifdef */
    LoopVar *vars; int nvars, capvars;          /* variables of nested for/parfor loops */
    bool oom;
} Body;

static bool has_slot(const int *v, int n, int slot)
{
    for (int i = 0; i < n; i++)
        if (v[i] == slot)
            return true;
    return false;
}

static void add_assigned(Body *b, int slot)
{
    if (has_slot(b->assigned, b->nassigned, slot))
        return;
    if (b->nassigned == b->capassigned) {
        int cap = b->capassigned ? b->capassigned * 2 : 8;
        int *v = realloc(b->assigned, sizeof *v * (size_t)cap);
        if (!v) {
            b->oom = true;
            return;
        }
        b->assigned = v;
        b->capassigned = cap;
    }
    b->assigned[b->nassigned++] = slot;
}

static bool literal_int(const Node *n, int64_t *out)
{
    if (!n)
        return false;
    if (n->kind == N_INT) {
        *out = n->lit.i;
        return true;
    }
    if (n->kind == N_DOUBLE && n->lit.d == (double)(int64_t)n->lit.d && n->lit.d > -9e15 && n->lit.d < 9e15) {
        *out = (int64_t)n->lit.d;
        return true;
    }
    if (n->kind == N_CONST && n->konst.kind == VAL_INT) {
        *out = n->konst.i;
        return true;
    }
    return false;
}

static void add_loop_var(Body *b, const Node *loop)
{
    int64_t from, to;
    bool bounded = literal_int(loop->loop.from, &from) && literal_int(loop->loop.to, &to);
    if (bounded && from > to) {
        int64_t t = from;
        from = to;
        to = t;
    }
    for (int i = 0; i < b->nvars; i++) {
        LoopVar *v = &b->vars[i];
        if (v->slot != loop->loop.var_slot)
            continue;
        v->bounded = v->bounded && bounded;
        if (v->bounded) {
            v->lo = from < v->lo ? from : v->lo;
            v->hi = to > v->hi ? to : v->hi;
        }
        return;
    }
    if (b->nvars == b->capvars) {
        int cap = b->capvars ? b->capvars * 2 : 4;
        LoopVar *v = realloc(b->vars, sizeof *v * (size_t)cap);
        if (!v) {
            b->oom = true;
            return;
        }
        b->vars = v;
        b->capvars = cap;
    }
    b->vars[b->nvars++] = (LoopVar){loop->loop.var_slot, bounded, bounded ? from : 0, bounded ? to : 0};
}

static void scan_body(Body *b, Node *const *stmts, int n)
{
    for (int i = 0; i < n; i++) {
        const Node *s = stmts[i];
        switch (s->kind) {
        case N_ASSIGN: add_assigned(b, s->assign.target.slot); break;
        case N_IFDEF: add_assigned(b, s->ifdef.target.slot); break;
        case N_MULTIASSIGN:
            for (int j = 0; j < s->multi.n; j++)
                add_assigned(b, s->multi.targets[j].slot);
            break;
        case N_IF:
            scan_body(b, s->ifs.then_b, s->ifs.nthen);
            scan_body(b, s->ifs.else_b, s->ifs.nelse);
            break;
        case N_FOR:
            add_loop_var(b, s);
            scan_body(b, s->loop.body, s->loop.nbody);
            break;
        case N_WHILE:
            scan_body(b, s->loop.body, s->loop.nbody);
            break;
        default:
            break;
        }
    }
}

static const LoopVar *loop_var(const Body *b, int slot)
{
    for (int i = 0; i < b->nvars; i++)
        if (b->vars[i].slot == slot)
            return &b->vars[i];
    return NULL;
}

/* ---- linear subscripts: c + sum coef * variable ---- */

enum { LIN_MAXT = 8 };

typedef struct Lin {
    int64_t c;
    int n;
    int slot[LIN_MAXT];
    int64_t coef[LIN_MAXT];
} Lin;

static bool lin_add_term(Lin *l, int slot, int64_t coef)
{
    for (int i = 0; i < l->n; i++) {
        if (l->slot[i] == slot)
            return !__builtin_add_overflow(l->coef[i], coef, &l->coef[i]);
    }
    if (l->n == LIN_MAXT)
        return false;
    l->slot[l->n] = slot;
    l->coef[l->n] = coef;
    l->n++;
    return true;
}

static bool lin_scale(Lin *l, int64_t k)
{
    if (__builtin_mul_overflow(l->c, k, &l->c))
        return false;
    for (int i = 0; i < l->n; i++)
        if (__builtin_mul_overflow(l->coef[i], k, &l->coef[i]))
            return false;
    return true;
}

/* a += k * b */
static bool lin_axpy(Lin *a, const Lin *b, int64_t k)
{
    int64_t t;
    if (__builtin_mul_overflow(b->c, k, &t) || __builtin_add_overflow(a->c, t, &a->c))
        return false;
    for (int i = 0; i < b->n; i++)
        if (__builtin_mul_overflow(b->coef[i], k, &t) || !lin_add_term(a, b->slot[i], t))
            return false;
    return true;
}

/* Subscript e as a linear form over the parfor variable, the variables of
 * nested loops, and variables the body never assigns (same value in every
 * iteration). False when it is not one. */
static bool linearize(const Body *b, const Node *e, int depth, Lin *out)
{
    memset(out, 0, sizeof *out);
    if (depth > WALK_MAX_DEPTH)
        return false;
    int64_t k;
    if (literal_int(e, &k)) {
        out->c = k;
        return true;
    }
    switch (e->kind) {
    case N_IDENT: {
        /* A variable the body assigns (or a nested loop rebinds, for the
         * parfor variable) may hold anything; one only a nested loop binds
         * stays in its bounds. */
        int s = e->ident.slot;
        if (has_slot(b->assigned, b->nassigned, s) || (s == b->p && loop_var(b, s)))
            return false;
        return lin_add_term(out, s, 1);
    }
    case N_UNARY:
        if (e->unary.op == UOP_NOT || !linearize(b, e->unary.operand, depth + 1, out))
            return false;
        return e->unary.op == UOP_PLUS || lin_scale(out, -1);
    case N_BINARY: {
        Lin r;
        if (!linearize(b, e->binary.lhs, depth + 1, out) || !linearize(b, e->binary.rhs, depth + 1, &r))
            return false;
        switch (e->binary.op) {
        case OP_ADD: return lin_axpy(out, &r, 1);
        case OP_SUB: return lin_axpy(out, &r, -1);
        case OP_MUL:
            if (r.n == 0)
                return lin_scale(out, r.c);
            if (out->n == 0) {
                int64_t c = out->c;
                *out = r;
                return lin_scale(out, c);
            }
            return false;
        default:
            return false;
        }
    }
    default:
        return false;
    }
}

/* The part of a subscript that is the same in every iteration (variables
 * the body never assigns), the coefficient of the parfor variable, and the
 * range [mn, mx] of the rest over the bounds of nested loop variables. */
typedef struct Split {
    int64_t a, mn, mx;
    Lin sym;
} Split;

static bool split(const Body *b, const Lin *l, Split *sp)
{
    memset(sp, 0, sizeof *sp);
    sp->mn = sp->mx = l->c;
    for (int i = 0; i < l->n; i++) {
        int64_t c = l->coef[i];
        if (c == 0)
            continue;
        if (l->slot[i] == b->p) {
            sp->a = c;
            continue;
        }
        const LoopVar *v = loop_var(b, l->slot[i]);
        if (!v) {
            if (!lin_add_term(&sp->sym, l->slot[i], c))
                return false;
            continue;
        }
        if (!v->bounded)
            return false;
        int64_t x, y;
        if (__builtin_mul_overflow(c, v->lo, &x) || __builtin_mul_overflow(c, v->hi, &y))
            return false;
        if (x > y) {
            int64_t t = x;
            x = y;
            y = t;
        }
        if (__builtin_add_overflow(sp->mn, x, &sp->mn) || __builtin_add_overflow(sp->mx, y, &sp->mx))
            return false;
    }
    return true;
}

static bool same_sym(const Lin *x, const Lin *y)
{
    for (int i = 0; i < x->n; i++) {
        bool found = x->coef[i] == 0;
        for (int j = 0; j < y->n && !found; j++)
            found = y->slot[j] == x->slot[i] && y->coef[j] == x->coef[i];
        if (!found)
            return false;
    }
    for (int j = 0; j < y->n; j++) {
        bool found = y->coef[j] == 0;
        for (int i = 0; i < x->n && !found; i++)
            found = x->slot[i] == y->slot[j];
        if (!found)
            return false;
    }
    return true;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t floor_div(int64_t x, int64_t d)  /* d > 0 */
{
    int64_t q = x / d;
    return (x % d != 0 && x < 0) ? q - 1 : q;
}

static int64_t ceil_div(int64_t x, int64_t d)   /* d > 0 */
{
    int64_t q = x / d;
    return (x % d != 0 && x > 0) ? q + 1 : q;
}

/* True when the index parts w and x (one dimension of two accesses) cannot
 * name the same cell in two different iterations. */
static bool part_disjoint(const Body *b, const IndexPart *w, const IndexPart *x)
{
    if (w->kind == IX_ALL || x->kind == IX_ALL)
        return false;
    const Node *e[4] = {w->lo, w->kind == IX_RANGE ? w->hi : w->lo, x->lo, x->kind == IX_RANGE ? x->hi : x->lo};
    Split sp[4];
    for (int i = 0; i < 4; i++) {
        Lin l;
        if (!linearize(b, e[i], 0, &l) || !split(b, &l, &sp[i]))
            return false;
    }
    for (int i = 1; i < 4; i++)
        if (!same_sym(&sp[0].sym, &sp[i].sym))
            return false;
    if (sp[0].a != sp[1].a || sp[2].a != sp[3].a || sp[0].a == 0 || sp[2].a == 0)
        return false;
    /* w covers [a p1 + wl, a p1 + wh], x covers [a' p2 + xl, a' p2 + xh]. */
    int64_t wl = sp[0].mn, wh = sp[1].mx, xl = sp[2].mn, xh = sp[3].mx;
    if (sp[0].a != sp[2].a) {
        /* Single cells a p1 + wl == a' p2 + xl need gcd(a, a') | xl - wl. */
        int64_t d;
        if (wl != wh || xl != xh || __builtin_sub_overflow(xl, wl, &d))
            return false;
        return d % gcd64(sp[0].a, sp[2].a) != 0;
    }
    /* They overlap iff a (p1 - p2) lies in [xl - wh, xh - wl]: disjoint
     * when no non-zero multiple of |a| does. */
    int64_t lo, hi, a = sp[0].a < 0 ? -sp[0].a : sp[0].a;
    if (__builtin_sub_overflow(xl, wh, &lo) || __builtin_sub_overflow(xh, wl, &hi))
        return false;
    if (lo > hi)
        return true;
    int64_t kmin = ceil_div(lo, a), kmax = floor_div(hi, a);
    return kmin > kmax || (kmin == 0 && kmax == 0);
}

/* ---- the accesses to one candidate ---- */

typedef struct Access {
    const IndexPart *rows, *cols;   /* cols NULL: all columns */
    bool write, accum;
} Access;

typedef struct Uses {
    int slot;
    Access *v; int n, cap;
    bool whole_read, whole_write, whole_accum, plain_indexed_write;
    bool unknown;           /* too deep or out of memory: assume a dependency */
    int unchecked;          /* > 0 inside a nested parfor with check=0 */
} Uses;

static void add_access(Uses *u, const IndexPart *rows, const IndexPart *cols, bool has_cols, bool write, bool accum)
{
    if (!write && u->unchecked > 0)
        return;             /* a read in a nested parfor with check=0 */
    if (u->n == u->cap) {
        int cap = u->cap ? u->cap * 2 : 8;
        Access *v = realloc(u->v, sizeof *v * (size_t)cap);
        if (!v) {
            u->unknown = true;
            return;
        }
        u->v = v;
        u->cap = cap;
    }
    u->v[u->n++] = (Access){rows, has_cols ? cols : NULL, write, accum};
    if (write && !accum)
        u->plain_indexed_write = true;
}

static void uses_expr(Uses *u, const Node *e, int depth);
static bool option_on(const Node *loop, const char *name, bool dflt);

static void uses_part(Uses *u, const IndexPart *ip, int depth)
{
    if (ip->lo)
        uses_expr(u, ip->lo, depth + 1);
    if (ip->hi)
        uses_expr(u, ip->hi, depth + 1);
}

static bool is_dim_call(const Node *e)
{
    return e->call.bi && e->call.nargs == 1 && e->call.args[0]->kind == N_IDENT &&
           (e->call.bi->flags & BF_DIM_ONLY);
}

static void uses_expr(Uses *u, const Node *e, int depth)
{
    if (!e)
        return;
    if (depth > WALK_MAX_DEPTH) {
        u->unknown = true;
        return;
    }
    switch (e->kind) {
    case N_IDENT:
        if (e->ident.slot == u->slot)
            u->whole_read = true;
        break;
    case N_BINARY:
        uses_expr(u, e->binary.lhs, depth + 1);
        uses_expr(u, e->binary.rhs, depth + 1);
        break;
    case N_UNARY:
        uses_expr(u, e->unary.operand, depth + 1);
        break;
    case N_CALL:
        /* Left indexing never changes a matrix's dimensions. */
        if (is_dim_call(e))
            break;
        for (int i = 0; i < e->call.nargs; i++)
            uses_expr(u, e->call.args[i], depth + 1);
        break;
    case N_INDEX:
        if (e->index.target->kind == N_IDENT && e->index.target->ident.slot == u->slot)
            add_access(u, &e->index.rows, &e->index.cols, e->index.has_cols, false, false);
        else
            uses_expr(u, e->index.target, depth + 1);
        uses_part(u, &e->index.rows, depth);
        if (e->index.has_cols)
            uses_part(u, &e->index.cols, depth);
        break;
    case N_EXPRLIST:
        for (int i = 0; i < e->list.n; i++)
            uses_expr(u, e->list.items[i], depth + 1);
        break;
    default:
        break;
    }
}

static void uses_lhs(Uses *u, const Lhs *l, bool accum, int depth)
{
    if (l->indexed) {
        uses_part(u, &l->rows, depth);
        if (l->has_cols)
            uses_part(u, &l->cols, depth);
    }
    if (l->slot != u->slot)
        return;
    if (l->indexed)
        add_access(u, &l->rows, &l->cols, l->has_cols, true, accum);
    else if (accum)
        u->whole_accum = true;
    else
        u->whole_write = true;
}

static void uses_stmts(Uses *u, Node *const *stmts, int n, int depth)
{
    if (depth > WALK_MAX_DEPTH) {
        u->unknown = true;
        return;
    }
    for (int i = 0; i < n; i++) {
        const Node *s = stmts[i];
        switch (s->kind) {
        case N_ASSIGN:
            uses_expr(u, s->assign.value, depth + 1);
            uses_lhs(u, &s->assign.target, s->assign.accum, depth + 1);
            break;
        case N_MULTIASSIGN:
            uses_expr(u, s->multi.call, depth + 1);
            for (int j = 0; j < s->multi.n; j++)
                uses_lhs(u, &s->multi.targets[j], false, depth + 1);
            break;
        case N_IFDEF:
            uses_expr(u, s->ifdef.dflt, depth + 1);
            uses_lhs(u, &s->ifdef.target, false, depth + 1);
            break;
        case N_EXPRSTMT:
            uses_expr(u, s->expr.e, depth + 1);
            break;
        case N_IF:
            uses_expr(u, s->ifs.cond, depth + 1);
            uses_stmts(u, s->ifs.then_b, s->ifs.nthen, depth + 1);
            uses_stmts(u, s->ifs.else_b, s->ifs.nelse, depth + 1);
            break;
        case N_FOR:
            uses_expr(u, s->loop.from, depth + 1);
            uses_expr(u, s->loop.to, depth + 1);
            uses_expr(u, s->loop.by, depth + 1);
            if (s->loop.var_slot == u->slot)
                u->whole_write = true;
            {
                bool off = s->loop.parfor && !option_on(s, "check", true);
                u->unchecked += off;
                uses_stmts(u, s->loop.body, s->loop.nbody, depth + 1);
                u->unchecked -= off;
            }
            break;
        case N_WHILE:
            uses_expr(u, s->loop.cond, depth + 1);
            uses_stmts(u, s->loop.body, s->loop.nbody, depth + 1);
            break;
        default:
            break;
        }
    }
}

static bool access_disjoint(const Body *b, const Access *w, const Access *x)
{
    static const IndexPart all = {IX_ALL, NULL, NULL};
    return part_disjoint(b, w->rows, x->rows) || part_disjoint(b, w->cols ? w->cols : &all, x->cols ? x->cols : &all);
}

/* Whether the candidate 'slot', holding a matrix or list, carries a
 * dependency between iterations of 'loop'. */
static bool nonscalar_dependency(const Body *b, const Node *loop, int slot)
{
    Uses u = {.slot = slot};
    uses_stmts(&u, loop->loop.body, loop->loop.nbody, 0);
    bool dep = u.unknown || u.whole_write;
    bool any_write = u.whole_accum;
    for (int i = 0; i < u.n; i++)
        any_write = any_write || u.v[i].write;
    if (u.whole_accum && (u.whole_read || u.plain_indexed_write))
        dep = true;
    for (int i = 0; i < u.n && !dep; i++)
        if (u.whole_accum && !u.v[i].write)
            dep = true;     /* A += e with A[..] also read */
    if (u.whole_read && any_write)
        dep = true;
    for (int i = 0; i < u.n && !dep; i++) {
        const Access *w = &u.v[i];
        if (!w->write)
            continue;
        for (int j = 0; j < u.n && !dep; j++) {
            const Access *x = &u.v[j];
            if (j < i && x->write)
                continue;   /* that pair was tested from x's side */
            if (w->accum && x->write && x->accum)
                continue;
            if (!access_disjoint(b, w, x))
                dep = true;
        }
    }
    free(u.v);
    return dep;
}

static bool option_on(const Node *loop, const char *name, bool dflt)
{
    for (int i = 0; i < loop->loop.nopts; i++) {
        const LoopOpt *o = &loop->loop.opts[i];
        if (strcmp(o->name, name) != 0 || !o->value)
            continue;
        const Node *v = o->value;
        int64_t k;
        if (literal_int(v, &k))
            return k != 0;
        if (v->kind == N_DOUBLE)
            return v->lit.d != 0;
        if (v->kind == N_BOOL)
            return v->lit.b;
        if (v->kind == N_CONST && val_is_number(v->konst))
            return val_num(v->konst) != 0;
        if (v->kind == N_CONST && v->konst.kind == VAL_BOOL)
            return v->konst.b;
    }
    return dflt;
}

static const Node *forbidden_call(Node *const *stmts, int n, int depth)
{
    if (depth > WALK_MAX_DEPTH)
        return NULL;
    for (int i = 0; i < n; i++) {
        const Node *s = stmts[i], *hit = NULL;
        switch (s->kind) {
        case N_EXPRSTMT:
            if (s->expr.e->kind == N_CALL && s->expr.e->call.bi && (s->expr.e->call.bi->flags & BF_CONTROL))
                hit = s->expr.e;
            break;
        case N_IF:
            hit = forbidden_call(s->ifs.then_b, s->ifs.nthen, depth + 1);
            if (!hit)
                hit = forbidden_call(s->ifs.else_b, s->ifs.nelse, depth + 1);
            break;
        case N_FOR: case N_WHILE:
            hit = forbidden_call(s->loop.body, s->loop.nbody, depth + 1);
            break;
        default:
            break;
        }
        if (hit)
            return hit;
    }
    return NULL;
}

const Node *parfor_forbidden_call(const Node *loop)
{
    return forbidden_call(loop->loop.body, loop->loop.nbody, 0);
}

bool parfor_analyze(Arena *a, Node *loop)
{
    int n = loop->loop.nwritten;
    loop->loop.check = option_on(loop, "check", true);
    loop->loop.candidate = arena_alloc(a, sizeof(bool) * (size_t)(n + 1));
    loop->loop.dep_nonscalar = arena_alloc(a, sizeof(bool) * (size_t)(n + 1));
    if (!loop->loop.candidate || !loop->loop.dep_nonscalar)
        return false;
    Body b = {.p = loop->loop.var_slot};
    scan_body(&b, loop->loop.body, loop->loop.nbody);
    for (int j = 0; j < n; j++) {
        int slot = loop->loop.written[j];
        bool cand = slot != b.p && has_slot(b.assigned, b.nassigned, slot);
        loop->loop.candidate[j] = cand;
        loop->loop.dep_nonscalar[j] = cand && loop->loop.check && (b.oom || nonscalar_dependency(&b, loop, slot));
    }
    free(b.assigned);
    free(b.vars);
    return true;
}

Status parfor_check_entry(Interp *I, const Node *s)
{
    if (!s->loop.check)
        return ST_OK;
    const CallFrame *f = I->frame;
    for (int j = 0; j < s->loop.nwritten; j++) {
        int slot = s->loop.written[j];
        if (!s->loop.candidate[j] || slot >= f->nslots)
            continue;
        Value v = f->slots[slot];
        bool dep;
        switch (v.kind) {
        case VAL_NONE: dep = false; break;
        case VAL_MATRIX: case VAL_LIST: case VAL_FRAME: dep = s->loop.dep_nonscalar[j]; break;
        default: dep = true; break;     /* scalars */
        }
        if (dep) {
            const SlotTable *names = f->names ? f->names : f->fn ? &f->fn->slots : &I->prog->top;
            const char *name = slot < names->n ? names->names[slot] : "?";
            return err_at(I, &s->loc, PARFOR_DEP_FMT, name);
        }
    }
    return ST_OK;
}
