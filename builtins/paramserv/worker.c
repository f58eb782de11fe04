/* SPDX-License-Identifier: Apache-2.0
 * A paramserv worker: loops over the mini-batches of its partition calling
 * upd (and agg for local steps), pulling models from and pushing payloads to
 * the server through its port (PsPortOps, ps.h), which the transport
 * provides. The same loop runs on a worker thread of a local run
 * (tp_local.c) and on a worker rank under Open MPI (tp_mpi_worker.c).
 * Each worker's RNG is reseeded from (seed, worker, epoch), so its random
 * stream does not depend on where or when it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../runtime/clock.h"
#include "../../runtime/sparse_ops.h"
#include "ps.h"

/* ---- calling DML functions by parameter name (workers and server) ---- */

/* The hyperparams list as a borrowed argument value (NONE when not given). */
Value ps_hyper_arg(const PsConfig *c)
{
    return c->hyper ? val_list_take(c->hyper) : val_none();
}

/* Calls f binding only the parameters it declares among names[0..n). */
Status ps_call_named(Interp *I, const FuncDef *f, const char *const *names, const Value *vals, int n, Value *outs,
                         int nout)
{
    const char *bn[8];
    Value bv[8];
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (vals[i].kind == VAL_NONE)
            continue;
        for (int j = 0; j < f->decl->nparams; j++) {
            if (strcmp(f->decl->params[j].name, names[i]) == 0) {
                bn[m] = names[i];
                bv[m] = vals[i];
                m++;
                break;
            }
        }
    }
    Status st = eval_function(I, f, bv, bn, m, outs, nout, NULL);
    if (st != ST_OK)
        return st;
    /* models and gradients are dense (doc/sparse-plan.md 6.): the server
     * and the transports read their cells */
    for (int k = 0; st == ST_OK && k < nout; k++)
        st = val_densify(I, &outs[k], f->name);
    if (st != ST_OK)
        for (int k = 0; k < nout; k++) {
            val_release(outs[k]);
            outs[k] = val_none();
        }
    return st;
}

Status ps_call_agg(Interp *I, const PsConfig *c, Value model, Value grads, Value *out)
{
    static const char *const names[] = {"model", "hyperparams", "gradients"};
    Value vals[3] = {model, ps_hyper_arg(c), grads};
    TRY(ps_call_named(I, c->agg, names, vals, 3, out, 1));
    if (ps_check_agg_result(I, c, model.l, *out) != ST_OK) {
        val_release(*out);
        *out = val_none();
        return ST_ERR;
    }
    return ST_OK;
}


/* ---- the worker loop ---- */

static Matrix *rows_of(Interp *I, const Matrix *M, int64_t lo, int64_t hi)
{
    if (M->sp)  /* a sparse partition (partition.c): a sparse batch */
        return mat_from_sp_take(I, sp_slice(M->sp, lo, hi, 0, M->cols), "paramserv");
    Matrix *r = mat_alloc(I, hi - lo, M->cols);
    if (r && (hi - lo) * M->cols > 0)
        memcpy(r->data, M->data + lo * M->cols, sizeof(double) * (size_t)((hi - lo) * M->cols));
    return r;
}

void ps_worker_shape(const PsConfig *c, int64_t rows, int64_t *nbatches, int64_t *groups)
{
    int64_t B = (rows + c->batchsize - 1) / c->batchsize;
    *nbatches = B;
    *groups = c->freq == PS_FREQ_BATCH ? B : c->freq == PS_FREQ_EPOCH ? (B > 0 ? 1 : 0)
            : (B + c->nbatches - 1) / c->nbatches;
}

void ps_loop_init(PsLoop *l, const PsConfig *c, Program *prog, int id, int64_t start_epoch, PsPart part,
                  const PsPortOps *port, void *ctx, atomic_int *abort, int threads, FILE *out)
{
    l->cfg = c;
    l->port = port;
    l->ctx = ctx;
    l->id = id;
    l->start_epoch = start_epoch;
    l->part = part;
    l->ev.on = c->trace;
    ps_worker_shape(c, part.X->rows, &l->nbatches, &l->groups);
    worker_interp_init(&l->I, prog, rng_mix3(c->seed, (uint64_t)id + 1, 0), abort, threads, out);
    l->I.frame = &l->top;
}

void ps_loop_free(PsLoop *l)
{
    if (l->part.X)
        mat_release(l->part.X);
    if (l->part.Y)
        mat_release(l->part.Y);
    l->part.X = l->part.Y = NULL;
    for (int s = 0; s < l->top.nslots; s++)
        val_release(l->top.slots[s]);
    free(l->top.slots);
    l->top.slots = NULL;
    l->top.nslots = 0;
    ps_ev_free(&l->ev);
    interp_destroy(&l->I);
}

static void *loop_thread(void *arg)
{
    PsLoop *l = arg;
    ps_loop_run(l);
    if (l->port->done)
        l->port->done(l);
    return NULL;
}

bool ps_loop_start(PsLoop *l, pthread_t *th)
{
    return worker_start(th, loop_thread, l);
}

/* Pull and push through the port, counting them. */
static Status pull(PsLoop *l, Value *m, PsTask *task, int64_t epoch, int64_t batch)
{
    double t0 = clock_now_sec();
    Status st = l->port->pull(l, m, task);
    double t1 = clock_now_sec();
    l->st.wait += t1 - t0;
    if (task && st == ST_OK && task->epoch >= 0) {
        epoch = task->epoch;
        batch = task->j0 + 1;
    }
    ps_ev_add(&l->ev, PS_EV_WAIT, t0, t1, epoch, batch);
    if (st != ST_OK)
        return st;
    if (task && task->epoch < 0)
        return ST_OK;           /* no more work: no model came */
    l->st.pulls++;
    l->st.bytes_pulled += ps_list_bytes(m->l);
    return ST_OK;
}

static void push(PsLoop *l, int64_t epoch, int64_t batch, Value payload)
{
    double t0 = clock_now_sec();
    l->st.pushes++;
    l->st.bytes_pushed += ps_list_bytes(payload.l);
    l->port->push(l, epoch, batch, payload);
    ps_ev_add(&l->ev, PS_EV_PUSH, t0, clock_now_sec(), epoch, batch);
}

/* DML_PS_SLOW: the slowed worker sleeps (F - 1) times what the batch took. */
static void slow_down(const PsLoop *l, double secs)
{
    const PsConfig *c = l->cfg;
    if (l->id != c->slow_worker || c->slow_factor <= 1 || secs <= 0)
        return;
    double t = secs * (c->slow_factor - 1);
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && !atomic_load(l->I.interrupt))
        ;
}

/* One push's worth of work: batches [j0, j1) of a partition, whose rows are
 * X/Y [row0, row1) (batch j starts at row0 + (j - j0) * batchsize),
 * starting from model m (taken): upd on each batch, agg between them as
 * freq and modelAvg ask. *payload: the summed gradients or the local
 * model. False after a failure, reported through the port ('e' and the
 * batch name it). */
static bool run_group(PsLoop *l, Value m, const Matrix *X, const Matrix *Y, int64_t row0, int64_t row1, int64_t j0,
                      int64_t j1, int64_t e, Value *payload)
{
    const PsConfig *c = l->cfg;
    Interp *I = &l->I;
    int64_t bs = c->batchsize;
    Value acc = val_none();
    for (int64_t j = j0; j < j1; j++) {
        double t0 = clock_now_sec();
        int64_t lo = row0 + (j - j0) * bs, hi = row1 - lo > bs ? lo + bs : row1;
        Matrix *Xb = rows_of(I, X, lo, hi);
        Matrix *Yb = Xb ? rows_of(I, Y, lo, hi) : NULL;
        double t1 = clock_now_sec();
        l->st.slice += t1 - t0;
        Value grad = val_none();
        Status st = ST_ERR;
        if (Xb && Yb) {
            static const char *const names[] = {"model", "hyperparams", "features", "labels"};
            Value vals[4] = {m, ps_hyper_arg(c), val_matrix_take(Xb), val_matrix_take(Yb)};
            st = ps_call_named(I, c->upd, names, vals, 4, &grad, 1);
        }
        if (Xb)
            mat_release(Xb);
        if (Yb)
            mat_release(Yb);
        slow_down(l, clock_now_sec() - t1);     /* DML_PS_SLOW: part of the batch's time */
        double t2 = clock_now_sec();
        l->st.compute += t2 - t1;
        l->st.batches++;
        ps_ev_add(&l->ev, PS_EV_COMPUTE, t1, t2, e, j + 1);
        if (l->port->batch_done)
            l->port->batch_done(l);
        if (st == ST_OK && grad.kind != VAL_LIST)
            st = err_set(I, "The output of the '%s' function should be type of list.", c->upd->name);
        if (st == ST_OK && !c->model_avg) {
            if (c->freq == PS_FREQ_BATCH) {
                st = ps_check_model(I, grad.l, "gradients");
                if (st == ST_OK)
                    acc = val_ref(grad);
            } else {
                /* ps_list_add_take consumes acc, also on failure. */
                st = ps_list_add_take(I, acc, grad.l, &acc);
                if (st != ST_OK)
                    acc = val_none();
            }
        }
        bool last = j == j1 - 1;
        if (st == ST_OK && (c->model_avg || c->freq == PS_FREQ_NBATCHES || (c->freq == PS_FREQ_EPOCH && !last))) {
            Value nm;
            st = ps_call_agg(I, c, m, grad, &nm);
            if (st == ST_OK) {
                val_release(m);
                m = nm;
            }
            double t3 = clock_now_sec();
            l->st.local_agg += t3 - t2;
            ps_ev_add(&l->ev, PS_EV_LOCAL, t2, t3, e, j + 1);
        }
        val_release(grad);
        if (st != ST_OK) {
            val_release(acc);
            val_release(m);
            char who[384];
            if (l->where)
                snprintf(who, sizeof who, "paramserv: worker %d (%s) failed in epoch %lld, batch %lld", l->id + 1,
                         l->where, (long long)e + 1, (long long)j + 1);
            else
                snprintf(who, sizeof who, "paramserv: worker %d failed in epoch %lld, batch %lld", l->id + 1,
                         (long long)e + 1, (long long)j + 1);
            l->port->fail(l, who);
            return false;
        }
    }
    *payload = c->model_avg ? val_ref(m) : acc;
    val_release(m);
    return true;
}

/* STATIC: the batches of this worker's partition, epoch after epoch; its
 * random stream reseeded from (seed, worker, epoch). */
static void loop_static(PsLoop *l)
{
    const PsConfig *c = l->cfg;
    int64_t n = l->part.X->rows, B = l->nbatches;
    for (int64_t e = l->start_epoch; e < c->epochs; e++) {
        rng_seed(&l->I.rng, rng_mix3(c->seed, (uint64_t)l->id + 1, (uint64_t)e));
        int64_t j = 0;
        for (int64_t g = 0; g < l->groups; g++) {
            Value m, payload;
            if (pull(l, &m, NULL, e, j + 1) != ST_OK)
                return;             /* aborted by someone else */
            int64_t jend = c->freq == PS_FREQ_BATCH ? j + 1 : c->freq == PS_FREQ_EPOCH ? B
                         : (j + c->nbatches < B ? j + c->nbatches : B);
            int64_t row1 = jend * c->batchsize < n ? jend * c->batchsize : n;
            if (!run_group(l, m, l->part.X, l->part.Y, j * c->batchsize, row1, j, jend, e, &payload))
                return;
            j = jend;
            push(l, e, j, payload);     /* j: 1-based number of its last batch */
        }
    }
}

/* DYNAMIC: whatever task comes with each model, until no more come. The
 * random stream follows the task. */
static void loop_dynamic(PsLoop *l)
{
    const PsConfig *c = l->cfg;
    for (;;) {
        Value m, payload;
        PsTask t = {.epoch = -1};
        if (pull(l, &m, &t, -1, 0) != ST_OK)
            return;
        if (t.epoch < 0)
            return;
        rng_seed(&l->I.rng, rng_mix3(rng_mix3(c->seed, (uint64_t)t.part + 1, (uint64_t)t.epoch),
                                     (uint64_t)t.group + 1, 0x7a5c));
        bool ok = run_group(l, m, t.X, t.Y, t.row0, t.row1, t.j0, t.j1, t.epoch, &payload);
        int64_t e = t.epoch, id = t.id;
        ps_task_clear(&t);
        if (!ok)
            return;
        push(l, e, id, payload);
    }
}

void ps_loop_run(PsLoop *l)
{
    worker_enter(&l->I);
    if (l->cfg->dispatch == PS_DISPATCH_DYNAMIC)
        loop_dynamic(l);
    else
        loop_static(l);
}
