/* SPDX-License-Identifier: Apache-2.0
 * The local transport of paramserv: the k workers are threads of the
 * calling process. Each has a one-slot mailbox (under PsRun.mu) that the
 * server fills and the worker's pull empties; a push goes straight into
 * the server's inbox. The thread budget (--threads / DML_THREADS,
 * runtime/blas.h) is split among the workers: each gets budget / k BLAS
 * and kernel threads, so workers x threads never exceed it. */
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/blas.h"
#include "ps.h"

typedef struct LocalWorker {
    PsLoop loop;
    PsRun *run;
    pthread_t thread;
    bool started;
    bool full;                  /* run->mu: a delivery waits to be pulled */
    Value mailbox;              /* run->mu: its model (NONE with a stop) */
    PsTask task;                /* run->mu: DYNAMIC: its task (matrices owned) */
    pthread_cond_t cv;          /* the worker waits here for its mailbox */
} LocalWorker;

typedef struct Local {
    LocalWorker *w;
    Workers ws;
    bool ws_ended;
} Local;

/* ---- the workers' port ---- */

static Status local_pull(PsLoop *l, Value *model, PsTask *task)
{
    LocalWorker *lw = l->ctx;
    PsRun *run = lw->run;
    pthread_mutex_lock(&run->mu);
    while (!lw->full && !atomic_load(&run->abort))
        pthread_cond_wait(&lw->cv, &run->mu);
    bool ok = !atomic_load(&run->abort);
    if (ok) {
        *model = lw->mailbox;
        lw->mailbox = val_none();
        lw->full = false;
        if (task) {
            *task = lw->task;
            lw->task = (PsTask){.epoch = -1};
        }
    }
    pthread_mutex_unlock(&run->mu);
    return ok ? ST_OK : ST_ERR;
}

static void local_push(PsLoop *l, int64_t epoch, int64_t batch, Value payload)
{
    LocalWorker *lw = l->ctx;
    if (ps_enqueue_push_take(lw->run, l->id, epoch, batch, payload) != ST_OK) {
        err_set(&l->I, "paramserv: out of memory queueing a push");
        ps_fail(lw->run, &l->I, "");
    }
}

static void local_fail(PsLoop *l, const char *who)
{
    LocalWorker *lw = l->ctx;
    ps_fail(lw->run, &l->I, who);
}

static void local_batch_done(PsLoop *l)
{
    LocalWorker *lw = l->ctx;
    ps_progress_add(lw->run, 1);
}

static const PsPortOps local_port = {
    .pull = local_pull,
    .push = local_push,
    .fail = local_fail,
    .batch_done = local_batch_done,
};

/* ---- the server's side ---- */

static Status local_init(PsRun *run, PsPart *parts)
{
    Interp *I = run->caller;
    Local *L = calloc(1, sizeof *L);
    LocalWorker *w = L ? calloc((size_t)run->k, sizeof *w) : NULL;
    if (!w) {
        free(L);
        return err_set(I, "out of memory");
    }
    L->w = w;
    workers_begin(&L->ws, run->k);
    for (int i = 0; i < run->k; i++) {
        LocalWorker *lw = &w[i];
        lw->run = run;
        lw->mailbox = val_none();
        lw->task = (PsTask){.epoch = -1};
        pthread_cond_init(&lw->cv, NULL);
        ps_loop_init(&lw->loop, run->cfg, I->prog, i, run->start_epoch, parts[i], &local_port, lw, &run->abort,
                     L->ws.share, I->out);
        lw->loop.I.sink = I->sink;
        parts[i].X = parts[i].Y = NULL;
    }
    run->tps = L;
    return ST_OK;
}

/* The worker's previous model was pulled before it pushed, so the mailbox
 * is empty here. A task's rows are its partition's, which every worker's
 * loop holds (read only). */
static void local_deliver(PsRun *run, int i, Value model, const PsTask *task)
{
    Local *L = run->tps;
    LocalWorker *lw = &L->w[i];
    pthread_mutex_lock(&run->mu);
    val_release(lw->mailbox);
    ps_task_clear(&lw->task);
    lw->mailbox = model;
    lw->full = true;
    if (task) {
        lw->task = *task;
        lw->task.X = lw->task.Y = NULL;
        if (task->epoch >= 0) {
            const PsPart *p = &L->w[task->part].loop.part;
            lw->task.X = val_ref(val_matrix_take(p->X)).m;
            lw->task.Y = val_ref(val_matrix_take(p->Y)).m;
        }
    }
    pthread_cond_signal(&lw->cv);
    pthread_mutex_unlock(&run->mu);
}

static void local_serve(PsRun *run)
{
    Local *L = run->tps;
    for (int i = 0; i < run->k; i++) {
        if (!ps_loop_start(&L->w[i].loop, &L->w[i].thread)) {
            err_set(run->caller, "paramserv: cannot start threads");
            ps_fail(run, run->caller, "");
            break;
        }
        L->w[i].started = true;
    }
    for (int i = 0; i < run->k; i++) {
        if (L->w[i].started)
            pthread_join(L->w[i].thread, NULL);
        run->w[i].st = L->w[i].loop.st;
        run->w[i].ev = L->w[i].loop.ev;      /* --trace: the events move over */
        L->w[i].loop.ev = (PsEvents){0};
    }
    workers_end(&L->ws);
    L->ws_ended = true;
}

static void local_wake(PsRun *run)
{
    Local *L = run->tps;
    for (int i = 0; L && i < run->k; i++)
        pthread_cond_broadcast(&L->w[i].cv);
}

static void local_stats_cpu(PsRun *run, StrBuf *b, double cpu, const PsWorkerStats *sum)
{
    (void)sum;  /* the workers are threads of this process: cpu counts them */
    sb_printf(b, "Paramserv CPU time:\t\t%.3f secs (server and %d worker threads, user + system).\n", cpu, run->k);
    sb_printf(b, "Paramserv threads per worker:\t%d (budget %d over %d workers).\n", blas_budget_share(run->k),
              blas_budget_total(), run->k);
}

/* Threads share the whole model; over Open MPI a pull would carry only the
 * entries the workers' functions read (readset.c): say what that would be. */
static void local_stats_net(PsRun *run, StrBuf *b, PsWorkerStats *sum)
{
    const List *model = run->cfg->model;
    int64_t n = model->n, carried = n;
    bool *need = ps_pull_entries(run->cfg, n);
    if (need) {
        uint64_t per = 0;
        carried = 0;
        for (int64_t i = 0; i < n; i++)
            if (need[i] && model->items[i].kind == VAL_MATRIX) {
                per += (uint64_t)mat_len(model->items[i].m) * sizeof(double);
                carried++;
            }
        sum->bytes_pulled = per * (uint64_t)sum->pulls;
        free(need);
    }
    sb_printf(b, "Paramserv network bytes:\t%llu pulled, %llu pushed (what a distributed run would send).\n",
              (unsigned long long)sum->bytes_pulled, (unsigned long long)sum->bytes_pushed);
    if (carried < n)
        sb_printf(b, "Paramserv pulled entries:\t%lld of the model's %lld (those the workers' functions read).\n",
                  (long long)carried, (long long)n);
}

static void local_free(PsRun *run)
{
    Local *L = run->tps;
    if (!L)
        return;
    for (int i = 0; i < run->k; i++) {
        LocalWorker *lw = &L->w[i];
        val_release(lw->mailbox);
        ps_task_clear(&lw->task);
        ps_loop_free(&lw->loop);
        pthread_cond_destroy(&lw->cv);
    }
    if (!L->ws_ended)
        workers_end(&L->ws);
    free(L->w);
    free(L);
    run->tps = NULL;
}

const PsTransportOps ps_tp_local = {
    .name = "threads",
    .own_budgets = false,
    .progress_by_push = false,
    .check = NULL,          /* threads run any call */
    .init = local_init,
    .deliver = local_deliver,
    .serve = local_serve,
    .wake = local_wake,
    .stats_cpu = local_stats_cpu,
    .stats_net = local_stats_net,
    .free = local_free,
};
