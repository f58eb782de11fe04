/* SPDX-License-Identifier: Apache-2.0
 * The paramserv server: applies the workers' pushes to the global model
 * (BSP, ASP, SBP, SSP; PARAMSERV.md 5.3), ends epochs (validation, progress
 * line, checkpoint) and delivers models back through the channel
 * (channel.c). It runs on one thread of the process that called paramserv,
 * whatever the transport (threads or Open MPI ranks).
 *
 * Determinism: BSP sums a round's payloads in a fixed tree over the
 * workers (tree.c), whatever order they arrived in, so a seeded BSP run
 * gives the same model for any timing and any transport. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "ps.h"


static void epoch_end(PsRun *run, int64_t e)
{
    const PsConfig *c = run->cfg;
    Interp *I = &run->SI;
    double t0 = clock_now_sec();
    double secs = t0 - run->epoch_t0;
    double loss = NAN, acc = NAN;
    bool have_val = false;
    if (c->val) {
        static const char *const names[] = {"model", "hyperparams", "val_features", "val_labels"};
        Value vals[4] = {run->model, ps_hyper_arg(c), val_matrix_take(c->Xv),
                         val_matrix_take(c->Yv)};
        Value outs[2] = {val_none(), val_none()};
        if (ps_call_named(I, c->val, names, vals, 4, outs, 2) != ST_OK) {
            char who[96];
            snprintf(who, sizeof who, "paramserv: validation failed after epoch %lld", (long long)e + 1);
            ps_fail(run, I, who);
            return;
        }
        if (val_is_number(outs[0]) && val_is_number(outs[1])) {
            loss = val_num(outs[0]);
            acc = val_num(outs[1]);
            have_val = true;
        } else {
            val_release(outs[0]);
            val_release(outs[1]);
            err_set(I, "The outputs of the '%s' function should both be numbers", c->val->name);
            ps_fail(run, I, "paramserv: validation failed");
            return;
        }
    }
    double t1 = clock_now_sec();
    run->val_time += t1 - t0;
    if (c->val)
        ps_ev_add_x(&run->sev, PS_EV_VAL, t0, t1, e, 0, -1, run->updates, -1);
    if (ps_hist_add(run, e, secs, loss, acc) != ST_OK) {
        ps_fail(run, I, "paramserv: history");
        return;
    }
    if (c->verbose) {
        ps_progress_epoch_begin(run);
        double ups = secs > 0 ? (double)run->epoch_updates / secs : 0;
        if (have_val)
            diag_note(&I->sink, DIAG_PROGRESS,
                      "[paramserv] epoch %lld/%lld: loss %.6f, accuracy %.4f | %.2f s, %.1f updates/s\n",
                      (long long)e + 1, (long long)c->epochs, loss, acc, secs, ups);
        else
            diag_note(&I->sink, DIAG_PROGRESS, "[paramserv] epoch %lld/%lld: %.2f s, %lld updates, %.1f updates/s\n",
                      (long long)e + 1, (long long)c->epochs, secs, (long long)run->epoch_updates, ups);
        ps_progress_epoch_end(run, e);
    }
    if (c->ckpt == PS_CKPT_EPOCH || (c->ckpt == PS_CKPT_EPOCH10 && ((e + 1) % 10 == 0 || e + 1 == c->epochs))) {
        if (ps_ckpt_write(I, c, run->model.l, e + 1) != ST_OK) {
            ps_fail(run, I, "");
            return;
        }
    }
    double t2 = clock_now_sec();
    run->ckpt_time += t2 - t1;
    if (c->ckpt == PS_CKPT_EPOCH || (c->ckpt == PS_CKPT_EPOCH10 && ((e + 1) % 10 == 0 || e + 1 == c->epochs)))
        ps_ev_add_x(&run->sev, PS_EV_CKPT, t1, t2, e, 0, -1, run->updates, -1);
    run->epoch_updates = 0;
    run->epoch_t0 = clock_now_sec();
}

/* epoch_end with the whole model in run->model meanwhile, where the
 * transport holds only a shard of it here (servers=S: it joins the shards
 * for validation and the checkpoint). */
static void epoch_end_whole(PsRun *run, int64_t e)
{
    Value whole = val_none();
    if (run->tp->epoch_model && run->tp->epoch_model(run, e, &whole) != ST_OK) {
        ps_fail(run, &run->SI, "paramserv: gathering the model");
        return;
    }
    if (whole.kind == VAL_NONE) {
        epoch_end(run, e);
        return;
    }
    Value shard = run->model;
    run->model = whole;
    epoch_end(run, e);
    run->model = shard;
    val_release(whole);
}

/* Kernel threads of the server's updates (runtime/pool.h). A local worker
 * waits from its push until its next model arrives, so an update may use
 * the thread share of each worker it keeps waiting (workers x share stays
 * within the budget). Workers on MPI ranks have budgets of their own, so
 * rank 0 keeps to its rank's share, except when every worker waits for
 * this update (a BSP round; SBP or ASP with all k pushing): then the worker
 * ranks on rank 0's host wait too, and the host's whole budget is idle (on
 * 16 cores with 8 worker ranks, one thread summed the eight 13 MB LeNet
 * gradients and ran the optimizer while the eight waited). With servers=S
 * the server ranks on one host update at once (each its shard): each takes
 * its share of the host, not all of it. Outside updates the server keeps
 * to one thread.
 * Element-wise kernels compute each cell alone, so the thread count never
 * changes a result. */
static void update_threads_begin(PsRun *run, int waiting)
{
    int total = blas_budget_total(), share = blas_budget_share(run->k);
    if (run->tp->own_budgets) {
        if (waiting < run->k)
            return;
        share = run->host_servers > 1 ? total / run->host_servers : total;
        if (share < 1)
            share = 1;
        run->SI.blas_threads = share;
        if (share > run->update_threads)
            run->update_threads = share;
        return;
    }
    int n = waiting >= total / share ? total : waiting * share;
    run->SI.blas_threads = n;
    if (n > run->update_threads)
        run->update_threads = n;
}

static void update_threads_end(PsRun *run)
{
    run->SI.blas_threads = 0;
}

/* Apply 'payload' (gradients) to the global model with agg. */
static Status apply_agg(PsRun *run, Value grads)
{
    double t0 = clock_now_sec();
    Value nm;
    Status st = ps_call_agg(&run->SI, run->cfg, run->model, grads, &nm);
    run->agg_time += clock_now_sec() - t0;
    if (st != ST_OK)
        return st;
    val_release(run->model);
    run->model = nm;
    run->updates++;
    run->epoch_updates++;
    return ST_OK;
}

static bool more_pulls(const PsRun *run, const PsWorker *w)
{
    return w->pushed < ps_mul_sat(w->groups, run->cfg->epochs - run->start_epoch);
}

Status ps_apply_round(PsRun *run, Value *lists, int cnt, int waiting)
{
    return ps_apply_round_n(run, lists, cnt, cnt, waiting);
}

/* The slots are added in the tree's order (tree.c), the order every
 * backend uses, so a seeded run has the same bits on threads and ranks. */
Status ps_apply_round_n(PsRun *run, Value *lists, int n, int members, int waiting)
{
    update_threads_begin(run, waiting);
    Value acc;
    double t0 = clock_now_sec();
    Status st = ps_tree_sum_take(&run->SI, lists, 0, n, &acc);
    run->sum_time += clock_now_sec() - t0;
    if (st == ST_OK && acc.kind == VAL_NONE)
        st = err_set(&run->SI, "paramserv: internal error: a round without payloads");
    if (st == ST_OK) {
        if (run->cfg->model_avg) {
            st = ps_list_scale_take(&run->SI, acc, 1.0 / members, &acc);
            if (st == ST_OK) {
                val_release(run->model);
                run->model = acc;
                run->updates++;
                run->epoch_updates++;
            }
        } else {
            st = apply_agg(run, acc);
            val_release(acc);
        }
    }
    update_threads_end(run);
    return st;
}

/* BSP/SBP: aggregate the marked workers' payloads in worker order, then
 * deliver the new model: to the marked workers (SBP), or (BSP, round_e >= 0)
 * to every worker whose next push belongs to the round after (round_e,
 * round_r). */
static Status finish_round(PsRun *run, int64_t round_e, int64_t round_r)
{
    Value few[8];
    Value *lists = run->k <= 8 ? few : malloc(sizeof *lists * (size_t)run->k);
    int cnt = 0;
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        if (lists)
            lists[i] = w->marked ? w->slot : val_none();
        else
            val_release(w->slot);
        w->slot = val_none();
        cnt += w->marked;
    }
    if (!lists)
        return err_set(&run->SI, "out of memory");
    /* BSP: every worker waits for this round's model, so the sum and the
     * update may use all their threads; SBP: the pushers'. In the tree's
     * order over the workers; a slot is NONE when its push was added on a
     * worker rank into an earlier worker's (tree.c). */
    Status st = ps_apply_round_n(run, lists, run->k, cnt, round_e >= 0 ? run->k : cnt);
    if (lists != few)
        free(lists);
    TRY(st);
    int64_t next_e = round_e, next_r = round_r + 1;
    if (round_e >= 0) {
        int64_t maxg = 0;
        for (int i = 0; i < run->k; i++)
            if (run->w[i].groups > maxg)
                maxg = run->w[i].groups;
        if (next_r >= maxg) {
            next_e++;
            next_r = 0;
        }
    }
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        bool was_marked = w->marked;
        w->marked = false;
        if (!more_pulls(run, w))
            continue;
        if (round_e < 0 ? was_marked
                        : (w->pushed / w->groups == next_e && w->pushed % w->groups == next_r))
            ps_deliver(run, w);
    }
    return ST_OK;
}

/* BSP: the round is complete when every worker that still pushes in this
 * epoch's round has pushed. Workers with fewer batches simply sit out the
 * later rounds of an epoch, so unequal partitions never hang the barrier. */
static Status handle_bsp_take(PsRun *run, PsWorker *w, Value payload)
{
    w->slot = payload;
    w->marked = true;
    int64_t idx = w->pushed - 1;
    int64_t e = idx / w->groups, r = idx % w->groups;
    for (int i = 0; i < run->k; i++) {
        PsWorker *v = &run->w[i];
        /* v still owes this round a push if its next push is round (e, r). */
        if (!v->marked && more_pulls(run, v) && v->pushed / v->groups == e && v->pushed % v->groups == r)
            return ST_OK;
    }
    return finish_round(run, e, r);
}

/* SBP: as upstream, a round closes once all but b of the participating
 * workers pushed; the late ones have their next push dropped (and are
 * answered with the current model). */
static Status handle_sbp_take(PsRun *run, PsWorker *w, Value payload)
{
    if (w->straggle > 0) {
        w->straggle--;
        val_release(payload);
        if (more_pulls(run, w))
            ps_deliver(run, w);
    } else {
        w->slot = payload;
        w->marked = true;
    }
    int marked = 0, participating = 0;
    for (int i = 0; i < run->k; i++) {
        PsWorker *v = &run->w[i];
        if (v->marked)
            marked++;
        if (v->marked || more_pulls(run, v))
            participating++;
    }
    if (marked == 0 || marked < participating - run->cfg->backup)
        return ST_OK;
    for (int i = 0; i < run->k; i++) {
        PsWorker *v = &run->w[i];
        if (!v->marked && more_pulls(run, v))
            v->straggle++;
    }
    return finish_round(run, -1, 0);
}

Status ps_apply_one(PsRun *run, Value payload)
{
    Status st;
    if (run->cfg->model_avg) {
        /* Asynchronous model averaging: the pushed local model moves the
         * global one by 1/k of the way (an elastic average). */
        Value part, keep, sum;
        double f = 1.0 / run->k;
        st = ps_list_scale_take(&run->SI, payload, f, &part);
        if (st == ST_OK) {
            st = ps_list_scale_take(&run->SI, run->model, 1.0 - f, &keep);
            run->model = val_none();
            if (st == ST_OK) {
                st = ps_list_add_take(&run->SI, keep, part.l, &sum);
                if (st == ST_OK) {
                    run->model = sum;
                    run->updates++;
                    run->epoch_updates++;
                }
            }
            val_release(part);
        }
    } else {
        update_threads_begin(run, 1);       /* the pusher waits for its model */
        st = apply_agg(run, payload);
        update_threads_end(run);
        val_release(payload);
    }
    return st;
}

/* SSP: apply every push at once (like ASP) but let a worker pull only while
 * it is at most 'staleness' pushes ahead of the slowest unfinished worker. */
static Status handle_ssp_take(PsRun *run, PsWorker *w, Value payload)
{
    Status st = ps_apply_one(run, payload);
    TRY(st);
    int64_t minclock = INT64_MAX;
    for (int i = 0; i < run->k; i++)
        if (more_pulls(run, &run->w[i]) && run->w[i].pushed < minclock)
            minclock = run->w[i].pushed;
    if (more_pulls(run, w))
        w->deferred = true;
    for (int i = 0; i < run->k; i++) {
        PsWorker *v = &run->w[i];
        if (v->deferred && more_pulls(run, v) && v->pushed - minclock <= run->cfg->staleness) {
            v->deferred = false;
            ps_deliver(run, v);
        }
    }
    return ST_OK;
}

/* Issue 10: a push must match the model it updates, whatever agg does
 * with it. Gradients: at most as many as the model has entries (upstream's
 * LeNet pushes 8 gradients for a model of 8 weights + 8 momentum buffers),
 * entry i shaped like model entry i. A local model (modelAvg): the same
 * count and shapes. Checked on arrival, so the error names the worker,
 * epoch and batch of the bad push, not whichever push closed a round. */
static Status check_push(PsRun *run, const PsMsg *msg)
{
    Interp *I = &run->SI;
    const List *m = run->model.l, *g = msg->payload.l;
    const char *what = run->cfg->model_avg ? "model" : "gradients";
    const char *one = run->cfg->model_avg ? "model entry" : "gradient";
    if (msg->summed && msg->payload.kind == VAL_NONE && run->cfg->utype == PS_UTYPE_BSP && !run->dyn)
        return ST_OK;       /* added on a worker rank into an earlier worker's push (tree.c) */
    if (msg->payload.kind != VAL_LIST)
        return err_set(I, "the pushed %s are not a list", what);
    TRY(ps_check_model(I, g, what));
    if (run->cfg->model_avg ? g->n != m->n : g->n > m->n)
        return err_set(I, "%lld %s pushed for a model of %lld entries", (long long)g->n, what,
                       (long long)m->n);
    for (int64_t i = 0; i < g->n; i++) {
        if (m->items[i].kind != VAL_MATRIX)
            continue;       /* a scalar in the model: agg decides */
        const Matrix *a = g->items[i].m, *b = m->items[i].m;
        if (a->rows != b->rows || a->cols != b->cols)
            return err_set(I, "%s %lld is %lldx%lld but model entry %lld is %lldx%lld", one, (long long)i + 1,
                           (long long)a->rows, (long long)a->cols, (long long)i + 1, (long long)b->rows,
                           (long long)b->cols);
    }
    return ST_OK;
}

static Status handle(PsRun *run, PsMsg *msg)
{
    const PsConfig *c = run->cfg;
    PsWorker *w = &run->w[msg->worker];
    w->pushed++;
    if (run->tp->progress_by_push)
        ps_progress_push(run, w, msg);
    Status st = ST_OK;
    switch (c->utype) {
    case PS_UTYPE_ASP:
        update_threads_begin(run, 1);       /* the pusher waits for its model */
        st = apply_agg(run, msg->payload);
        update_threads_end(run);
        val_release(msg->payload);
        if (st == ST_OK && more_pulls(run, w))
            ps_deliver(run, w);
        break;
    case PS_UTYPE_BSP: st = handle_bsp_take(run, w, msg->payload); break;
    case PS_UTYPE_SBP: st = handle_sbp_take(run, w, msg->payload); break;
    case PS_UTYPE_SSP: st = handle_ssp_take(run, w, msg->payload); break;
    }
    msg->payload = val_none();
    if (st != ST_OK)
        return st;
    return ps_count_push(run, msg->epoch);
}

Status ps_count_push(PsRun *run, int64_t e)
{
    int64_t first, n;
    TRY(ps_epochs_push(&run->SI, &run->epochs, e, &first, &n));
    for (int64_t j = 0; j < n && !atomic_load(&run->abort); j++)
        epoch_end_whole(run, first + j);
    return ST_OK;
}

/* One push (its payload consumed): checked, handled, counted, recorded;
 * false when the run failed (the failure is recorded). */
static bool process(PsRun *run, PsMsg *msg, int64_t *done)
{
    bool dyn = run->dyn != NULL;
    if (check_push(run, msg) != ST_OK) {
        char who[160];
        snprintf(who, sizeof who, "paramserv: push from worker %d rejected (epoch %lld, batch %lld)", msg->worker + 1,
                 (long long)msg->epoch + 1, (long long)msg->batch);
        ps_fail(run, &run->SI, who);
        val_release(msg->payload);
        msg->payload = val_none();
        return false;
    }
    int w = msg->worker;
    int64_t e = msg->epoch, b = msg->batch, stale = run->updates - run->w[w].pulled;
    double t0 = clock_now_sec();
    Status st = dyn ? ps_dyn_handle(run, msg) : handle(run, msg);
    ps_ev_add_x(&run->sev, PS_EV_APPLY, t0, clock_now_sec(), e, b, w, run->updates, stale);
    val_release(msg->payload);      /* handled: taken already */
    msg->payload = val_none();
    if (st != ST_OK) {
        if (!atomic_load(&run->abort)) {
            char who[96];
            snprintf(who, sizeof who, "paramserv: aggregation failed (push from worker %d, epoch %lld)", w + 1,
                     (long long)e + 1);
            ps_fail(run, &run->SI, who);
        }
        return false;
    }
    if (run->cfg->rec && ps_record_add(run->cfg->rec, &run->SI, w, e, b) != ST_OK) {
        ps_fail(run, &run->SI, "paramserv: record");
        return false;
    }
    if (run->tp->applied)
        run->tp->applied(run, w, e, b);
    (*done)++;
    return true;
}

/* Workers that may still push. */
static int active_workers(const PsRun *run)
{
    int n = 0;
    for (int i = 0; i < run->k; i++)
        n += run->dyn ? !ps_dyn_stopped(run, i) : more_pulls(run, &run->w[i]);
    return n;
}

/* Replaying (record.c): apply the pushes held in pend[0..*np) that are
 * next in the record, in its order; the others wait for their turn.
 * false when the run failed. */
static bool replay_pending(PsRun *run, PsMsg *pend, int64_t *np, int64_t *done)
{
    PsRecord *r = run->cfg->rec;
    for (;;) {
        int w;
        int64_t e, b, j;
        if (!ps_replay_next(r, &w, &e, &b))
            break;
        for (j = 0; j < *np; j++)
            if (pend[j].worker == w && pend[j].epoch == e && pend[j].batch == b)
                break;
        if (j == *np)
            break;
        PsMsg msg = pend[j];
        memmove(pend + j, pend + j + 1, sizeof *pend * (size_t)(*np - j - 1));
        (*np)--;
        ps_replay_advance(r);
        if (!process(run, &msg, done))
            return false;
    }
    /* Every worker that may still push has pushed, and none is next. */
    if (*np > 0 && *np >= active_workers(run)) {
        int w;
        int64_t e, b;
        if (ps_replay_next(r, &w, &e, &b))
            err_set(&run->SI, "paramserv: the replay went another way than the record: it expects a push from "
                    "worker %d (epoch %lld, batch %lld) next, but worker %d pushed epoch %lld, batch %lld", w + 1,
                    (long long)e + 1, (long long)b, pend[0].worker + 1, (long long)pend[0].epoch + 1,
                    (long long)pend[0].batch);
        else
            err_set(&run->SI, "paramserv: the replay went another way than the record: the record has ended");
        ps_fail(run, &run->SI, "");
        return false;
    }
    return true;
}

/* The server thread: applies pushes one at a time, in arrival order (when
 * replaying, in the record's). */
void *ps_server_main(void *arg)
{
    PsRun *run = arg;
    worker_enter(&run->SI);
    bool dyn = run->dyn != NULL, replay = ps_replaying(run->cfg->rec);
    int64_t total = ps_mul_sat(run->epoch_pushes_needed, run->cfg->epochs - run->start_epoch), done = 0;
    PsMsg *batch = NULL, *pend = NULL;
    int64_t cap = 0, npend = 0, cappend = 0;
    while (dyn ? !ps_dyn_finished(run) : done < total) {
        int64_t nb = ps_take_pushes(run, &batch, &cap);
        if (nb < 0)
            break;
        /* Process what arrived without holding the lock. */
        int64_t i = 0;
        for (; i < nb; i++) {
            if (atomic_load(&run->abort))
                break;
            if (replay) {
                if (npend == cappend) {
                    int64_t nc = cappend ? cappend * 2 : 16;
                    PsMsg *np = realloc(pend, sizeof *np * (size_t)nc);
                    if (!np) {
                        err_set(&run->SI, "out of memory");
                        ps_fail(run, &run->SI, "");
                        break;
                    }
                    pend = np;
                    cappend = nc;
                }
                pend[npend++] = batch[i];
                batch[i].payload = val_none();
                continue;
            }
            if (!process(run, &batch[i], &done)) {
                i++;
                break;
            }
        }
        for (; i < nb; i++)
            val_release(batch[i].payload);
        if (replay && !atomic_load(&run->abort))
            replay_pending(run, pend, &npend, &done);
        if (atomic_load(&run->abort))
            break;
    }
    for (int64_t j = 0; j < npend; j++)
        val_release(pend[j].payload);
    free(pend);
    free(batch);
    return NULL;
}
