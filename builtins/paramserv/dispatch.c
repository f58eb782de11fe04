/* SPDX-License-Identifier: Apache-2.0
 * paramserv(..., dispatch="DYNAMIC") (issue 26): the server hands out
 * tasks, not partitions. The data are still split into k partitions by
 * 'scheme'; a task is one push's worth of one partition in one epoch
 * (PsTask, ps.h: one batch with freq=BATCH, nbatches with NBATCHES, the
 * partition's epoch with EPOCH). Its rows and its random stream follow the
 * task, so its result depends only on the task and the model version it
 * starts from, never on the worker that runs it.
 *
 * The tasks of an epoch are numbered round by round: round r holds the
 * r-th push of every partition that has one, in partition order (as a
 * STATIC BSP round holds the r-th push of every worker).
 *
 * ASP: a free worker takes the next task (epoch after epoch), so faster
 *   workers do more; every task runs exactly once per epoch.
 * SSP: the same, but a task of round G (counted over the epochs) is handed
 *   out only while every task of the rounds before G - staleness has been
 *   applied: no task starts from a model missing more than 'staleness'
 *   rounds.
 * BSP and SBP: a round is its fixed set of tasks, summed in task order. A
 *   free worker takes the next task of the round not yet running; with
 *   none left it runs a backup of a task still running elsewhere (the one
 *   with the fewest copies, then the lowest number), on the same model
 *   version, when it is expected to finish first (backup_pays): the first
 *   result wins, the others are dropped. Both copies
 *   give the same bits, so the model does not depend on who was first.
 *   SBP drops no straggler under DYNAMIC (the backups stand in for that),
 *   so it behaves as BSP; num_backup_workers is not used.
 * modelAvg averages a round's local models (BSP) or moves the model 1/k
 * of the way to each pushed one (SSP), as under STATIC. Epochs end when
 * all their tasks and all earlier epochs' are applied (validation,
 * checkpoints, history; ps_epochs_push).
 *
 * Server thread only, except ps_dyn_start (the calling thread, before the
 * server thread starts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/clock.h"
#include "ps.h"

struct PsDyn {
    int64_t T, R;               /* tasks and rounds per epoch */
    int64_t *rstart;            /* R + 1: the first task of each round (T at the end) */
    PsTask *task;               /* T descriptors (no matrices, epoch unset) */
    /* the workers */
    int64_t *w_e, *w_t;         /* the task worker i runs (w_e -1: none) */
    double *w_since;            /* when it was given that task */
    double *w_took;             /* seconds its tasks take (a moving average; 0: none done yet) */
    bool *stopped;
    int nstopped;
    /* ASP/SSP: the next task to hand out, and completed tasks per round
     * (counted over the epochs) from round 'base', the oldest incomplete */
    int64_t next_e, next_t;
    int64_t base;
    int64_t *done, ndone_len, ndone_cap;
    /* BSP/SBP: the current round and its results */
    int64_t re, rr;
    Value *res;                 /* by index in the round */
    int *copies;                /* copies running */
    int64_t nres;
    /* statistics */
    int64_t backups, dropped;
};

static int64_t round_size(const PsDyn *d, int64_t r)
{
    return d->rstart[r + 1] - d->rstart[r];
}

static bool bsp_like(const PsRun *run)
{
    return run->cfg->utype == PS_UTYPE_BSP || run->cfg->utype == PS_UTYPE_SBP;
}

void ps_dyn_free(PsRun *run)
{
    PsDyn *d = run->dyn;
    if (!d)
        return;
    if (d->res)
        for (int64_t i = 0; i < run->k; i++)
            val_release(d->res[i]);
    free(d->rstart);
    free(d->task);
    free(d->w_e);
    free(d->w_t);
    free(d->w_since);
    free(d->w_took);
    free(d->stopped);
    free(d->done);
    free(d->res);
    free(d->copies);
    free(d);
    run->dyn = NULL;
}

Status ps_dyn_init(PsRun *run)
{
    const PsConfig *c = run->cfg;
    Interp *I = run->caller;
    PsDyn *d = calloc(1, sizeof *d);
    if (!d)
        return err_set(I, "out of memory");
    run->dyn = d;
    int k = run->k;
    for (int p = 0; p < k; p++) {
        d->T += run->w[p].groups;
        if (run->w[p].groups > d->R)
            d->R = run->w[p].groups;
    }
    d->rstart = calloc((size_t)d->R + 1, sizeof *d->rstart);
    d->task = calloc((size_t)d->T + 1, sizeof *d->task);
    d->w_e = calloc((size_t)k, sizeof *d->w_e);
    d->w_t = calloc((size_t)k, sizeof *d->w_t);
    d->w_since = calloc((size_t)k, sizeof *d->w_since);
    d->w_took = calloc((size_t)k, sizeof *d->w_took);
    d->stopped = calloc((size_t)k, sizeof *d->stopped);
    d->res = calloc((size_t)k, sizeof *d->res);
    d->copies = calloc((size_t)k, sizeof *d->copies);
    if (!d->rstart || !d->task || !d->w_e || !d->w_t || !d->w_since || !d->w_took || !d->stopped || !d->res || !d->copies) {
        ps_dyn_free(run);
        return err_set(I, "out of memory");
    }
    int64_t t = 0, bs = c->batchsize;
    for (int64_t r = 0; r < d->R; r++) {
        d->rstart[r] = t;
        for (int p = 0; p < k; p++) {
            const PsWorker *w = &run->w[p];
            if (r >= w->groups)
                continue;
            int64_t per = c->freq == PS_FREQ_BATCH ? 1 : c->freq == PS_FREQ_NBATCHES ? c->nbatches : w->nbatches;
            int64_t j0 = r * per, j1 = j0 + per < w->nbatches ? j0 + per : w->nbatches;
            d->task[t] = (PsTask){.epoch = -1, .id = t, .part = p, .group = r, .j0 = j0, .j1 = j1,
                                  .row0 = j0 * bs, .row1 = j1 * bs < w->rows ? j1 * bs : w->rows};
            t++;
        }
    }
    d->rstart[d->R] = t;
    for (int i = 0; i < k; i++) {
        d->w_e[i] = -1;
        d->res[i] = val_none();
    }
    d->next_e = d->re = run->start_epoch;
    d->base = run->start_epoch * d->R;      /* rounds are counted over the epochs */
    return ST_OK;
}

/* ---- handing out ---- */

static void give(PsRun *run, int i, int64_t e, int64_t t)
{
    PsDyn *d = run->dyn;
    d->w_e[i] = e;
    d->w_t[i] = t;
    d->w_since[i] = clock_now_sec();
    run->w[i].pulled = run->updates;
    PsTask task = d->task[t];
    task.epoch = e;
    run->tp->deliver(run, i, val_ref(run->model), &task);
}

static void stop(PsRun *run, int i)
{
    PsDyn *d = run->dyn;
    if (d->stopped[i])
        return;
    d->stopped[i] = true;
    d->nstopped++;
    PsTask none = {.epoch = -1};
    run->tp->deliver(run, i, val_none(), &none);
}

/* The round (counted over the epochs) of task t of epoch e. */
static int64_t global_round(const PsDyn *d, int64_t e, int64_t t)
{
    return e * d->R + d->task[t].group;
}

/* ASP/SSP: give worker i the next task, stop it when there is none, or
 * leave it waiting when SSP's bound holds the next task back. */
static void assign_async(PsRun *run, int i)
{
    PsDyn *d = run->dyn;
    const PsConfig *c = run->cfg;
    if (d->stopped[i] || d->w_e[i] >= 0)
        return;
    if (d->next_e >= c->epochs || d->T == 0) {
        stop(run, i);
        return;
    }
    if (c->utype == PS_UTYPE_SSP && global_round(d, d->next_e, d->next_t) - d->base > c->staleness)
        return;
    give(run, i, d->next_e, d->next_t);
    if (++d->next_t == d->T) {
        d->next_t = 0;
        d->next_e++;
    }
}

/* Whether a backup of task t of the current round, run by worker i, is
 * expected to finish before the copy already running: by the seconds each
 * worker's tasks took so far. A worker whose copy has run longer than 1.5
 * times i's tasks take, with none done yet, is taken for slow. This only
 * decides how soon a round ends (a backup on a busy machine takes cores
 * from the copies that count), never its result. */
static bool backup_pays(const PsRun *run, int i, int64_t t)
{
    const PsDyn *d = run->dyn;
    double now = clock_now_sec(), mine = d->w_took[i];
    if (mine <= 0)
        return false;
    for (int v = 0; v < run->k; v++) {
        if (v == i || d->w_e[v] != d->re || d->w_t[v] != t)
            continue;
        double ran = now - d->w_since[v], theirs = d->w_took[v];
        if (theirs > 0 ? mine < d->w_since[v] + theirs - now : ran > 1.5 * mine)
            return true;
    }
    return false;
}

/* BSP/SBP: give worker i the next task of the round not yet running, or a
 * backup of one still running when that pays (backup_pays); stop it after
 * the last round. */
static void assign_round(PsRun *run, int i)
{
    PsDyn *d = run->dyn;
    if (d->stopped[i] || d->w_e[i] >= 0)
        return;
    if (d->re >= run->cfg->epochs || d->T == 0) {
        stop(run, i);
        return;
    }
    int64_t n = round_size(d, d->rr), best = -1;
    for (int64_t j = 0; j < n; j++) {
        if (d->res[j].kind != VAL_NONE)
            continue;
        if (best < 0 || d->copies[j] < d->copies[best])
            best = j;
    }
    if (best < 0)
        return;                 /* every result is in: the round is closing */
    if (d->copies[best] > 0) {
        if (!backup_pays(run, i, d->rstart[d->rr] + best))
            return;             /* idle until the round ends */
        d->backups++;
        double now = clock_now_sec();
        ps_ev_add_x(&run->sev, PS_EV_BACKUP, now, now, d->re, d->rstart[d->rr] + best + 1, i, run->updates, -1);
    }
    d->copies[best]++;
    give(run, i, d->re, d->rstart[d->rr] + best);
}

static void assign(PsRun *run, int i)
{
    if (bsp_like(run))
        assign_round(run, i);
    else
        assign_async(run, i);
}

void ps_dyn_start(PsRun *run)
{
    for (int i = 0; i < run->k; i++)
        assign(run, i);
}

bool ps_dyn_stopped(const PsRun *run, int i)
{
    return run->dyn->stopped[i];
}

bool ps_dyn_finished(const PsRun *run)
{
    return run->dyn->nstopped == run->k;
}

/* ---- results ---- */

/* ASP/SSP: task t of epoch e is applied: count it in its round. */
static Status count_async(PsRun *run, int64_t e, int64_t t)
{
    PsDyn *d = run->dyn;
    int64_t off = global_round(d, e, t) - d->base;
    if (off < 0)
        return ST_OK;
    if (off >= d->ndone_cap) {
        int64_t cap = d->ndone_cap ? d->ndone_cap * 2 : 16;
        while (cap <= off)
            cap *= 2;
        int64_t *nd = realloc(d->done, sizeof *nd * (size_t)cap);
        if (!nd)
            return err_set(&run->SI, "out of memory");
        memset(nd + d->ndone_cap, 0, sizeof *nd * (size_t)(cap - d->ndone_cap));
        d->done = nd;
        d->ndone_cap = cap;
    }
    if (off >= d->ndone_len)
        d->ndone_len = off + 1;
    d->done[off]++;
    /* Rounds complete from the oldest on: the window moves. */
    int64_t moved = 0;
    while (moved < d->ndone_len && d->done[moved] == round_size(d, (d->base + moved) % d->R))
        moved++;
    if (moved > 0) {
        memmove(d->done, d->done + moved, sizeof *d->done * (size_t)(d->ndone_len - moved));
        memset(d->done + d->ndone_len - moved, 0, sizeof *d->done * (size_t)moved);
        d->ndone_len -= moved;
        d->base += moved;
    }
    return ST_OK;
}

/* BSP/SBP: every result of the round is in: sum them in task order, apply,
 * end the round and start the next. */
static Status close_round(PsRun *run)
{
    PsDyn *d = run->dyn;
    int64_t n = round_size(d, d->rr), e = d->re;
    Value few[8];
    Value *lists = n <= 8 ? few : malloc(sizeof *lists * (size_t)n);
    if (!lists)
        return err_set(&run->SI, "out of memory");
    for (int64_t j = 0; j < n; j++) {
        lists[j] = d->res[j];
        d->res[j] = val_none();
        d->copies[j] = 0;
    }
    d->nres = 0;
    /* Every worker not running a dropped copy waits for this model. */
    Status st = ps_apply_round(run, lists, (int)n, run->k);
    if (lists != few)
        free(lists);
    TRY(st);
    if (++d->rr == d->R) {
        d->rr = 0;
        d->re++;
    }
    for (int64_t j = 0; j < n; j++)
        TRY(ps_count_push(run, e));
    return ST_OK;
}

Status ps_dyn_handle(PsRun *run, PsMsg *msg)
{
    PsDyn *d = run->dyn;
    int i = msg->worker;
    int64_t e = msg->epoch, t = msg->batch;
    Value payload = msg->payload;
    msg->payload = val_none();
    if (d->w_e[i] != e || d->w_t[i] != t || t < 0 || t >= d->T) {
        val_release(payload);
        return err_set(&run->SI, "worker %d pushed a result for epoch %lld, task %lld, which it was not given", i + 1,
                       (long long)e + 1, (long long)t + 1);
    }
    d->w_e[i] = -1;
    double took = clock_now_sec() - d->w_since[i];
    d->w_took[i] = d->w_took[i] > 0 ? 0.7 * d->w_took[i] + 0.3 * took : took;
    run->w[i].pushed++;
    const PsTask *task = &d->task[t];
    if (!bsp_like(run)) {
        if (run->tp->progress_by_push)
            ps_progress_add(run, task->j1 - task->j0);
        TRY(ps_apply_one(run, payload));
        TRY(count_async(run, e, t));
        TRY(ps_count_push(run, e));
        /* The pusher first, then whoever SSP's bound held back. */
        assign(run, i);
        for (int v = 0; v < run->k; v++)
            assign(run, v);
        return ST_OK;
    }
    int64_t j = t - d->rstart[d->rr];
    bool current = e == d->re && task->group == d->rr;
    if (current)
        d->copies[j]--;
    if (!current || d->res[j].kind != VAL_NONE) {
        /* A copy that lost: its twin's result is in (the same bits). */
        val_release(payload);
        d->dropped++;
        assign(run, i);
        return ST_OK;
    }
    if (run->tp->progress_by_push)
        ps_progress_add(run, task->j1 - task->j0);
    d->res[j] = payload;
    if (++d->nres < round_size(d, d->rr)) {
        assign(run, i);
        return ST_OK;
    }
    TRY(close_round(run));
    for (int v = 0; v < run->k; v++)
        assign(run, v);
    return ST_OK;
}

void ps_dyn_stats(PsRun *run, StrBuf *b)
{
    PsDyn *d = run->dyn;
    if (bsp_like(run))
        sb_printf(b, "Paramserv dispatch:\t\tDYNAMIC, %lld tasks per epoch; %lld backup runs, %lld results dropped "
                  "(their twin was first).\n", (long long)d->T, (long long)d->backups, (long long)d->dropped);
    else
        sb_printf(b, "Paramserv dispatch:\t\tDYNAMIC, %lld tasks per epoch.\n", (long long)d->T);
}
