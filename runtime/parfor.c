/* SPDX-License-Identifier: Apache-2.0
 * parfor (doc/language.md, "parfor"): iterations split into contiguous chunks, one chunk per
 * thread, each thread with its own Interp and a copy of the frame (values
 * are shared copy-on-write, so the copy is cheap). After all threads are
 * joined, the written variables are merged in chunk order, which is
 * iteration order: a matrix cell changed by an iteration wins (later
 * iterations over earlier ones), += results add up their deltas, other
 * values take the last chunk's value. So a parfor whose iterations write
 * disjoint cells gives exactly the sequential result. Each iteration seeds
 * the RNG from (base seed, iteration), so rand() is reproducible whatever the
 * thread count; print output is buffered per chunk and emitted in order. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "clock.h"
#include "eval.h"
#include "frame.h"
#include "ops.h"
#include "parfor.h"
#include "workers.h"

typedef struct Pf Pf;

typedef struct PfWorker {
    Pf *pf;
    Interp I;
    CallFrame frame;
    int64_t lo, hi;         /* iterations [lo, hi) */
    pthread_t thread;
    char *buf;              /* buffered print output */
    size_t len;
    Status st;
} PfWorker;

struct Pf {
    const Node *s;
    Interp *caller;
    int64_t a, inc;
    uint64_t seed;
    atomic_int abort;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* the caller waits here for 'done' */
    int done;
};

/* Runs iterations [lo, hi) in I's current frame. */
static Status run_chunk(Interp *I, const Node *s, int64_t a, int64_t inc, uint64_t seed, int64_t lo, int64_t hi)
{
    for (int64_t k = lo; k < hi; k++) {
        if (interp_interrupted(I))
            return eval_raise_interrupt(I, &s->loc);
        /* unsigned: a + k*inc stays in [a, b], but k*inc alone may not */
        slot_set_take(I, s->loop.var_slot, val_int((int64_t)((uint64_t)a + (uint64_t)k * (uint64_t)inc)));
        rng_seed(&I->rng, rng_split(seed, (uint64_t)k + 1));
        TRY(exec_block(I, s->loop.body, s->loop.nbody));
    }
    return ST_OK;
}

static void *pf_main(void *arg)
{
    PfWorker *w = arg;
    Pf *pf = w->pf;
    worker_enter(&w->I);
    FILE *out = open_memstream(&w->buf, &w->len);
    w->I.out = out ? out : pf->caller->out;
    w->st = run_chunk(&w->I, pf->s, pf->a, pf->inc, pf->seed, w->lo, w->hi);
    if (out)
        fclose(out);
    w->I.out = NULL;
    pthread_mutex_lock(&pf->mu);
    if (w->st != ST_OK)
        atomic_store(&pf->abort, 1);
    pf->done++;
    pthread_cond_signal(&pf->cv);
    pthread_mutex_unlock(&pf->mu);
    return NULL;
}

static bool same_value(Value x, Value y)
{
    if (x.kind != y.kind)
        return false;
    switch (x.kind) {
    case VAL_NONE: return true;
    case VAL_BOOL: return x.b == y.b;
    case VAL_INT: return x.i == y.i;
    case VAL_DOUBLE: return x.d == y.d || (isnan(x.d) && isnan(y.d));
    default: return x.o == y.o;
    }
}

/* Merge worker value v of one written slot into *res (owned), relative to
 * the pre-loop value 'orig'. Lists of unchanged length merge entry by
 * entry, each entry as a value of its own ('depth' bounds the nesting). */
static Status merge_one(Interp *I, Value orig, Value v, bool accum, Value *res, int depth)
{
    if (same_value(orig, v))
        return ST_OK;
    if (orig.kind == VAL_LIST && v.kind == VAL_LIST && res->kind == VAL_LIST && v.l->n == orig.l->n &&
        res->l->n == orig.l->n && depth < 64) {
        List *c = list_clone(res->l);
        if (!c)
            return err_set(I, "out of memory merging parfor results");
        val_release(*res);
        *res = val_list_take(c);
        for (int64_t k = 0; k < c->n; k++)
            TRY(merge_one(I, orig.l->items[k], v.l->items[k], accum, &c->items[k], depth + 1));
        return ST_OK;
    }
    if (accum && val_is_number(orig) && val_is_number(v) && val_is_number(*res)) {
        Value d, r;
        TRY(ops_binary(I, OP_SUB, v, orig, &d));
        TRY(ops_binary_take(I, OP_ADD, *res, d, &r));
        *res = r;
        return ST_OK;
    }
    if (orig.kind == VAL_MATRIX && v.kind == VAL_MATRIX && res->kind == VAL_MATRIX && v.m->rows == orig.m->rows &&
        v.m->cols == orig.m->cols && res->m->rows == orig.m->rows && res->m->cols == orig.m->cols) {
        Matrix *m = mat_make_unique_take(I, res->m);
        *res = val_none();
        if (!m)
            return ST_ERR;
        int64_t n = mat_len(m);
        const double *o = mat_dense(I, orig.m, "parfor"), *x = mat_dense(I, v.m, "parfor");
        if (n > 0 && (!o || !x)) {
            mat_release(m);
            return ST_ERR;
        }
        if (accum) {
            for (int64_t i = 0; i < n; i++)
                m->data[i] += x[i] - o[i];
        } else {
            for (int64_t i = 0; i < n; i++)
                if (x[i] != o[i] && !(isnan(x[i]) && isnan(o[i])))
                    m->data[i] = x[i];
        }
        *res = val_matrix_take(m);
        return ST_OK;
    }
    if (orig.kind == VAL_FRAME && v.kind == VAL_FRAME && res->kind == VAL_FRAME && !accum &&
        frame_same_layout(orig.f, v.f) && frame_same_layout(orig.f, res->f)) {
        FrameBlock *f = frame_make_unique_take(I, res->f);
        *res = val_none();
        if (!f)
            return ST_ERR;
        frame_merge_changed(f, orig.f, v.f);
        *res = val_frame_take(f);
        return ST_OK;
    }
    val_release(*res);
    *res = val_ref(v);
    return ST_OK;
}

/* One thread runs every iteration in the caller's frame; as after a
 * parallel run, outer scalars the body assigns (check=0) keep their
 * pre-loop values. */
static Status run_sequential(Interp *I, const Node *s, int64_t a, int64_t inc, uint64_t seed, int64_t count)
{
    int n = s->loop.nwritten;
    Value small[8];
    Value *kept = n <= 8 ? small : calloc((size_t)n, sizeof *kept);
    if (!kept)
        return err_at(I, &s->loc, "out of memory");
    for (int j = 0; j < n; j++) {
        Value v = I->frame->slots[s->loop.written[j]];
        kept[j] = s->loop.candidate[j] && val_is_scalar(v) ? val_ref(v) : val_none();
    }
    Status st = run_chunk(I, s, a, inc, seed, 0, count);
    for (int j = 0; j < n; j++)
        if (kept[j].kind != VAL_NONE) {
            if (st == ST_OK)
                slot_set_take(I, s->loop.written[j], kept[j]);
            else
                val_release(kept[j]);
        }
    if (kept != small)
        free(kept);
    return st;
}

static int option_int(Interp *I, const Node *s, const char *name, int dflt)
{
    for (int i = 0; i < s->loop.nopts; i++) {
        const LoopOpt *o = &s->loop.opts[i];
        if (strcmp(o->name, name) != 0 || !o->value)
            continue;
        const Node *v = o->value;
        if (v->kind == N_INT)
            return (int)v->lit.i;
        if (v->kind == N_DOUBLE)
            return (int)v->lit.d;
        if (v->kind == N_CONST && val_is_number(v->konst))
            return (int)val_num(v->konst);
        (void)I;
    }
    return dflt;
}

Status parfor_run(Interp *I, const Node *s, int64_t a, int64_t inc, int64_t count)
{
    uint64_t seed = rng_next(&I->rng);
    /* Default parallelism: the thread budget (--threads / DML_THREADS). */
    int par = option_int(I, s, "par", blas_budget_total());
    if (par < 1)
        par = 1;
    int64_t T = count < par ? count : par;
    if (T <= 1 || I->in_parallel)
        return run_sequential(I, s, a, inc, seed, count);

    Pf pf = {.s = s, .caller = I, .a = a, .inc = inc, .seed = seed};
    pthread_mutex_init(&pf.mu, NULL);
    pthread_cond_init(&pf.cv, NULL);
    PfWorker *w = calloc((size_t)T, sizeof *w);
    if (!w)
        return err_at(I, &s->loc, "out of memory starting parfor workers");
    const CallFrame *cf = I->frame;
    int64_t per = count / T, extra = count % T, lo = 0;
    int started = 0;
    Workers ws;
    workers_begin(&ws, (int)T);
    for (int64_t t = 0; t < T; t++) {
        PfWorker *x = &w[t];
        x->pf = &pf;
        x->lo = lo;
        x->hi = lo + per + (t < extra ? 1 : 0);
        lo = x->hi;
        worker_interp_init(&x->I, I->prog, seed, &pf.abort, ws.share, I->out);
        x->I.sink = I->sink;
        x->I.depth = I->depth;
        x->frame = *cf;
        x->frame.slots = calloc((size_t)cf->nslots + 1, sizeof(Value));
        for (int i = 0; i < cf->nslots && x->frame.slots; i++)
            x->frame.slots[i] = val_ref(cf->slots[i]);
        x->I.frame = &x->frame;
        if (!x->frame.slots || !worker_start(&x->thread, pf_main, x))
            break;
        started++;
    }
    /* Wait, passing a Ctrl-C on to the workers. */
    pthread_mutex_lock(&pf.mu);
    while (pf.done < started) {
        clock_cond_wait_ms(&pf.cv, &pf.mu, 50);
        if (interp_interrupted(I))
            atomic_store(&pf.abort, 1);
    }
    pthread_mutex_unlock(&pf.mu);
    for (int t = 0; t < started; t++)
        pthread_join(w[t].thread, NULL);
    workers_end(&ws);

    Status st = ST_OK;
    if (started < T)
        st = err_at(I, &s->loc, "parfor: cannot start %lld worker threads", (long long)T);
    /* Output in iteration order, then the first error in iteration order. */
    for (int t = 0; t < started; t++)
        if (w[t].buf && w[t].len)
            fwrite(w[t].buf, 1, w[t].len, I->out);
    for (int t = 0; t < started && st == ST_OK; t++) {
        if (w[t].st != ST_OK && !(w[t].I.err.interrupted && !interp_interrupted(I))) {
            err_move(I, &w[t].I);
            st = ST_ERR;
        }
    }
    for (int t = 0; t < started && st == ST_OK; t++)
        if (w[t].st != ST_OK) {
            err_move(I, &w[t].I);
            st = ST_ERR;
        }
    if (st == ST_OK) {
        for (int j = 0; j < s->loop.nwritten && st == ST_OK; j++) {
            int slot = s->loop.written[j];
            Value orig = cf->slots[slot];
            if (s->loop.candidate[j] && val_is_scalar(orig))
                continue;   /* not a result (check=0): keeps its value */
            Value res = val_ref(orig);
            for (int t = 0; t < started && st == ST_OK; t++)
                st = merge_one(I, orig, w[t].frame.slots[slot], s->loop.accum_only[j], &res, 0);
            if (st == ST_OK)
                slot_set_take(I, slot, res);
            else
                val_release(res);
        }
        if (st != ST_OK)
            err_stamp(I, &s->loc);
    }
    for (int64_t t = 0; t < T; t++) {
        if (w[t].frame.slots) {
            for (int i = 0; i < w[t].frame.nslots; i++)
                val_release(w[t].frame.slots[i]);
            free(w[t].frame.slots);
        }
        free(w[t].buf);
        if (t < started || w[t].frame.slots)
            interp_destroy(&w[t].I);
    }
    free(w);
    pthread_cond_destroy(&pf.cv);
    pthread_mutex_destroy(&pf.mu);
    return st;
}
