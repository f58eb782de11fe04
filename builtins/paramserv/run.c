/* SPDX-License-Identifier: Apache-2.0
 * One paramserv run: the server thread, the k worker threads and the
 * messages between them (PARAMSERV.md 5, DESIGN.md "paramserv").
 *
 * Locking: PsRun.mu protects the inbox, every mailbox and the per-worker
 * bookkeeping marked "shared" in ps.h. The server waits on server_cv for
 * pushes; worker w waits on w->cv for its mailbox. Nobody runs DML code
 * while holding mu. On failure the first failing thread records its message,
 * sets 'abort' (which every Interp polls as its interrupt flag) and
 * broadcasts every condition variable, so no thread can stay blocked.
 *
 * Determinism: BSP sums a round's payloads in worker order, each worker's
 * RNG is reseeded from (seed, worker, epoch), and partitions come from the
 * seed, so a seeded BSP run gives the same model for any timing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "../../runtime/eval.h"
#include "../../runtime/stats.h"
#include "ps.h"

/* Stack of each server/worker thread: DML recursion inside upd/agg gets the
 * same room as on the main thread. */
#define PS_STACK ((size_t)64 << 20)

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL ^ (c + 0x632BE59BD9B4E019ULL) * 0x94D049BB133111EBULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- failure ---- */

static void broadcast_all(PsRun *run)
{
    pthread_cond_broadcast(&run->server_cv);
    for (int i = 0; i < run->k; i++)
        pthread_cond_broadcast(&run->w[i].cv);
}

/* Record the first failure (from I's pending error, prefixed by 'who') and
 * stop everyone. An "interrupted" error caused by an earlier abort is not a
 * failure of its own. */
static void ps_fail(PsRun *run, Interp *I, const char *who)
{
    err_finish_trace(I);
    char *msg = err_format(I);
    pthread_mutex_lock(&run->mu);
    if (!run->failure && !(I->err.interrupted && atomic_load(&run->abort))) {
        size_t len = strlen(who) + (msg ? strlen(msg) : 0) + 64;
        run->failure = malloc(len);
        if (run->failure) {
            snprintf(run->failure, len, "%s%s%s", who, *who ? ": " : "", msg ? msg : "unknown error");
            size_t l = strlen(run->failure);
            while (l > 0 && run->failure[l - 1] == '\n')
                run->failure[--l] = '\0';
        }
    }
    atomic_store(&run->abort, 1);
    broadcast_all(run);
    pthread_mutex_unlock(&run->mu);
    free(msg);
}

/* ---- calling DML functions by parameter name ---- */

/* The hyperparams list as a borrowed argument value (NONE when not given). */
static Value hyper_arg(const PsConfig *c)
{
    return c->hyper ? val_list_take(c->hyper) : val_none();
}

/* Calls f binding only the parameters it declares among names[0..n). */
static Status call_named(Interp *I, const FuncDef *f, const char *const *names, const Value *vals, int n, Value *outs,
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
    return interp_call(I, f, bv, bn, m, outs, nout, NULL);
}

static Status call_agg(Interp *I, const PsConfig *c, Value model, Value grads, Value *out)
{
    static const char *const names[] = {"model", "hyperparams", "gradients"};
    Value vals[3] = {model, hyper_arg(c), grads};
    TRY(call_named(I, c->agg, names, vals, 3, out, 1));
    if (ps_check_agg_result(I, c, model.l, *out) != ST_OK) {
        val_release(*out);
        *out = val_none();
        return ST_ERR;
    }
    return ST_OK;
}

/* ---- messages ---- */

/* Worker side: block until the server has put a model in our mailbox. */
static Status ps_pull(PsWorker *w, Value *model)
{
    PsRun *run = w->run;
    double t0 = clock_now_sec();
    pthread_mutex_lock(&run->mu);
    while (w->mailbox.kind == VAL_NONE && !atomic_load(&run->abort))
        pthread_cond_wait(&w->cv, &run->mu);
    bool ok = !atomic_load(&run->abort);
    if (ok) {
        *model = w->mailbox;
        w->mailbox = val_none();
    }
    pthread_mutex_unlock(&run->mu);
    w->st.wait += clock_now_sec() - t0;
    if (!ok)
        return ST_ERR;
    w->st.pulls++;
    w->st.bytes_pulled += ps_list_bytes(model->l);
    return ST_OK;
}

static void ps_push(PsWorker *w, int64_t epoch, Value payload)
{
    PsRun *run = w->run;
    w->st.pushes++;
    w->st.bytes_pushed += ps_list_bytes(payload.l);
    pthread_mutex_lock(&run->mu);
    if (run->ninbox == run->capinbox) {
        int64_t cap = run->capinbox ? run->capinbox * 2 : 16;
        PsMsg *nb = realloc(run->inbox, sizeof *nb * (size_t)cap);
        if (!nb) {
            pthread_mutex_unlock(&run->mu);
            val_release(payload);
            err_set(&w->I, "paramserv: out of memory queueing a push");
            ps_fail(run, &w->I, "");
            return;
        }
        run->inbox = nb;
        run->capinbox = cap;
    }
    run->inbox[run->ninbox++] = (PsMsg){.worker = w->id, .epoch = epoch, .payload = payload};
    pthread_cond_signal(&run->server_cv);
    pthread_mutex_unlock(&run->mu);
}

/* Server side: hand the current model to worker w. The worker's previous
 * model was pulled before it pushed, so the mailbox is empty here. */
static void deliver(PsRun *run, PsWorker *w)
{
    pthread_mutex_lock(&run->mu);
    val_release(w->mailbox);
    w->mailbox = val_ref(run->model);
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&run->mu);
}

/* ---- worker thread ---- */

static Matrix *rows_of(Interp *I, const Matrix *M, int64_t lo, int64_t hi)
{
    Matrix *r = mat_alloc(I, hi - lo, M->cols);
    if (r && (hi - lo) * M->cols > 0)
        memcpy(r->data, M->data + lo * M->cols, sizeof(double) * (size_t)((hi - lo) * M->cols));
    return r;
}

static void *worker_main(void *arg)
{
    PsWorker *w = arg;
    PsRun *run = w->run;
    const PsConfig *c = run->cfg;
    Interp *I = &w->I;
    interp_stack_init(I, PS_STACK);
    int64_t n = w->part.X->rows, bs = c->batchsize, B = w->nbatches;
    char who[128];
    int64_t e = run->start_epoch, j = 0;
    for (; e < c->epochs; e++) {
        rng_seed(&I->rng, mix3(c->seed, (uint64_t)w->id + 1, (uint64_t)e));
        j = 0;
        for (int64_t g = 0; g < w->groups; g++) {
            Value m;
            if (ps_pull(w, &m) != ST_OK)
                return NULL;        /* aborted by someone else */
            Value acc = val_none();
            int64_t jend = c->freq == PS_BATCH ? j + 1 : c->freq == PS_EPOCH ? B : (j + c->nbatches < B ? j + c->nbatches : B);
            for (; j < jend; j++) {
                double t0 = clock_now_sec();
                int64_t lo = j * bs, hi = lo + bs < n ? lo + bs : n;
                Matrix *Xb = rows_of(I, w->part.X, lo, hi);
                Matrix *Yb = Xb ? rows_of(I, w->part.Y, lo, hi) : NULL;
                double t1 = clock_now_sec();
                w->st.slice += t1 - t0;
                Value grad = val_none();
                Status st = ST_ERR;
                if (Xb && Yb) {
                    static const char *const names[] = {"model", "hyperparams", "features", "labels"};
                    Value vals[4] = {m, hyper_arg(c), val_matrix_take(Xb),
                                     val_matrix_take(Yb)};
                    st = call_named(I, c->upd, names, vals, 4, &grad, 1);
                }
                if (Xb)
                    val_release(val_matrix_take(Xb));
                if (Yb)
                    val_release(val_matrix_take(Yb));
                double t2 = clock_now_sec();
                w->st.compute += t2 - t1;
                w->st.batches++;
                if (st == ST_OK && grad.kind != VAL_LIST)
                    st = err_set(I, "The output of the '%s' function should be type of list.", c->upd->name);
                if (st == ST_OK && !c->model_avg) {
                    if (c->freq == PS_BATCH) {
                        st = ps_check_model(I, grad.l, "gradients");
                        if (st == ST_OK)
                            acc = val_ref(grad);
                    } else {
                        /* ps_list_add consumes acc, also on failure. */
                        st = ps_list_add(I, acc, grad.l, &acc);
                        if (st != ST_OK)
                            acc = val_none();
                    }
                }
                bool last = j == jend - 1;
                if (st == ST_OK && (c->model_avg || c->freq == PS_NBATCHES || (c->freq == PS_EPOCH && !last))) {
                    Value nm;
                    st = call_agg(I, c, m, grad, &nm);
                    if (st == ST_OK) {
                        val_release(m);
                        m = nm;
                    }
                    w->st.local_agg += clock_now_sec() - t2;
                }
                val_release(grad);
                if (st != ST_OK) {
                    val_release(acc);
                    val_release(m);
                    snprintf(who, sizeof who, "paramserv: worker %d failed in epoch %lld, batch %lld", w->id + 1,
                             (long long)e + 1, (long long)j + 1);
                    ps_fail(run, I, who);
                    return NULL;
                }
            }
            Value payload = c->model_avg ? val_ref(m) : acc;
            val_release(m);
            ps_push(w, e, payload);
        }
    }
    return NULL;
}

/* ---- server thread ---- */

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
        Value vals[4] = {run->model, hyper_arg(c), val_matrix_take(c->Xv),
                         val_matrix_take(c->Yv)};
        Value outs[2] = {val_none(), val_none()};
        if (call_named(I, c->val, names, vals, 4, outs, 2) != ST_OK) {
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
    if (c->verbose) {
        double ups = secs > 0 ? (double)run->epoch_updates / secs : 0;
        if (have_val)
            fprintf(stderr, "[paramserv] epoch %lld/%lld: loss %.6f, accuracy %.4f | %.2f s, %.1f updates/s\n",
                    (long long)e + 1, (long long)c->epochs, loss, acc, secs, ups);
        else
            fprintf(stderr, "[paramserv] epoch %lld/%lld: %.2f s, %lld updates, %.1f updates/s\n", (long long)e + 1,
                    (long long)c->epochs, secs, (long long)run->epoch_updates, ups);
    }
    if (c->ckpt == PS_CKPT_EPOCH || (c->ckpt == PS_CKPT_EPOCH10 && ((e + 1) % 10 == 0 || e + 1 == c->epochs))) {
        if (ps_ckpt_write(I, c, run->model.l, e + 1) != ST_OK) {
            ps_fail(run, I, "");
            return;
        }
    }
    run->ckpt_time += clock_now_sec() - t1;
    run->epoch_updates = 0;
    run->epoch_t0 = clock_now_sec();
}

/* Apply 'payload' (gradients) to the global model with agg. */
static Status apply_agg(PsRun *run, Value grads)
{
    double t0 = clock_now_sec();
    Value nm;
    Status st = call_agg(&run->SI, run->cfg, run->model, grads, &nm);
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

/* BSP/SBP: aggregate the marked workers' payloads in worker order, then
 * deliver the new model: to the marked workers (SBP), or (BSP, round_e >= 0)
 * to every worker whose next push belongs to the round after (round_e,
 * round_r). */
static Status finish_round(PsRun *run, int64_t round_e, int64_t round_r)
{
    const PsConfig *c = run->cfg;
    Value acc = val_none();
    int cnt = 0;
    Status st = ST_OK;
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        if (!w->marked)
            continue;
        if (st == ST_OK)
            st = ps_list_add(&run->SI, acc, w->slot.l, &acc);
        val_release(w->slot);
        w->slot = val_none();
        cnt++;
    }
    if (st != ST_OK)
        return st;
    if (c->model_avg) {
        TRY(ps_list_scale_take(&run->SI, acc, 1.0 / cnt, &acc));
        val_release(run->model);
        run->model = acc;
        run->updates++;
        run->epoch_updates++;
    } else {
        st = apply_agg(run, acc);
        val_release(acc);
        TRY(st);
    }
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
            deliver(run, w);
    }
    return ST_OK;
}

/* BSP: the round is complete when every worker that still pushes in this
 * epoch's round has pushed. Workers with fewer batches simply sit out the
 * later rounds of an epoch, so unequal partitions never hang the barrier. */
static Status handle_bsp(PsRun *run, PsWorker *w, Value payload)
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
static Status handle_sbp(PsRun *run, PsWorker *w, Value payload)
{
    if (w->straggle > 0) {
        w->straggle--;
        val_release(payload);
        if (more_pulls(run, w))
            deliver(run, w);
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

/* SSP: apply every push at once (like ASP) but let a worker pull only while
 * it is at most 'staleness' pushes ahead of the slowest unfinished worker. */
static Status handle_ssp(PsRun *run, PsWorker *w, Value payload)
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
                st = ps_list_add(&run->SI, keep, part.l, &sum);
                if (st == ST_OK) {
                    run->model = sum;
                    run->updates++;
                    run->epoch_updates++;
                }
            }
            val_release(part);
        }
    } else {
        st = apply_agg(run, payload);
        val_release(payload);
    }
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
            deliver(run, v);
        }
    }
    return ST_OK;
}

static Status handle(PsRun *run, PsMsg *msg)
{
    const PsConfig *c = run->cfg;
    PsWorker *w = &run->w[msg->worker];
    w->pushed++;
    Status st = ST_OK;
    switch (c->utype) {
    case PS_ASP:
        st = apply_agg(run, msg->payload);
        val_release(msg->payload);
        if (st == ST_OK && more_pulls(run, w))
            deliver(run, w);
        break;
    case PS_BSP: st = handle_bsp(run, w, msg->payload); break;
    case PS_SBP: st = handle_sbp(run, w, msg->payload); break;
    case PS_SSP: st = handle_ssp(run, w, msg->payload); break;
    }
    msg->payload = val_none();
    if (st != ST_OK)
        return st;
    bool complete;
    TRY(ps_epochs_push(&run->SI, &run->epochs, msg->epoch, &complete));
    if (complete)
        epoch_end(run, msg->epoch);
    return ST_OK;
}

static void *server_main(void *arg)
{
    PsRun *run = arg;
    interp_stack_init(&run->SI, PS_STACK);
    int64_t total = ps_mul_sat(run->epoch_pushes_needed, run->cfg->epochs - run->start_epoch), done = 0;
    PsMsg *batch = NULL;
    int64_t cap = 0;
    while (done < total) {
        pthread_mutex_lock(&run->mu);
        while (run->ninbox == 0 && !atomic_load(&run->abort)) {
            clock_cond_wait_ms(&run->server_cv, &run->mu, 100);
            if (interp_interrupted(run->caller) && !atomic_load(&run->abort)) {
                pthread_mutex_unlock(&run->mu);
                interp_raise_interrupt(&run->SI, NULL);
                ps_fail(run, &run->SI, "");
                pthread_mutex_lock(&run->mu);
            }
        }
        if (atomic_load(&run->abort)) {
            pthread_mutex_unlock(&run->mu);
            break;
        }
        /* Take the whole inbox; process it without the lock. */
        if (cap < run->ninbox) {
            PsMsg *nb = realloc(batch, sizeof *nb * (size_t)run->ninbox);
            if (!nb) {
                pthread_mutex_unlock(&run->mu);
                err_set(&run->SI, "paramserv: out of memory");
                ps_fail(run, &run->SI, "");
                break;
            }
            batch = nb;
            cap = run->ninbox;
        }
        int64_t nb = run->ninbox;
        memcpy(batch, run->inbox, sizeof *batch * (size_t)nb);
        run->ninbox = 0;
        pthread_mutex_unlock(&run->mu);
        for (int64_t i = 0; i < nb; i++) {
            if (atomic_load(&run->abort) || handle(run, &batch[i]) != ST_OK) {
                if (!atomic_load(&run->abort)) {
                    char who[96];
                    snprintf(who, sizeof who, "paramserv: aggregation failed (push from worker %d, epoch %lld)",
                             batch[i].worker + 1, (long long)batch[i].epoch + 1);
                    ps_fail(run, &run->SI, who);
                }
                for (int64_t j = i; j < nb; j++)
                    val_release(batch[j].payload);
                break;
            }
            done++;
        }
        if (atomic_load(&run->abort))
            break;
    }
    free(batch);
    return NULL;
}

/* ---- the run ---- */

static void report_stats(PsRun *run, double total)
{
    Stats *S = run->caller->stats;
    if (!S)
        return;
    StrBuf *b = &S->report;
    PsWorkerStats sum = {0};
    for (int i = 0; i < run->k; i++) {
        PsWorkerStats *s = &run->w[i].st;
        sum.compute += s->compute;
        sum.local_agg += s->local_agg;
        sum.wait += s->wait;
        sum.slice += s->slice;
        sum.pulls += s->pulls;
        sum.pushes += s->pushes;
        sum.bytes_pulled += s->bytes_pulled;
        sum.bytes_pushed += s->bytes_pushed;
    }
    sb_printf(b, "Paramserv total execution time:\t%.3f secs.\n", total);
    sb_printf(b, "Paramserv total num workers:\t%d.\n", run->k);
    sb_printf(b, "Paramserv grad compute time:\t%.3f secs.\n", sum.compute);
    sb_printf(b, "Paramserv model update time:\t%.3f/%.3f secs.\n", sum.local_agg, run->agg_time);
    sb_printf(b, "Paramserv batch slice time:\t%.3f secs.\n", sum.slice);
    sb_printf(b, "Paramserv valdiation time:\t%.3f secs.\n", run->val_time);
    sb_printf(b, "Paramserv checkpoint time:\t%.3f secs.\n", run->ckpt_time);
    sb_printf(b, "Paramserv pulls/pushes:\t\t%lld/%lld.\n", (long long)sum.pulls, (long long)sum.pushes);
    sb_printf(b, "Paramserv network bytes:\t%llu pulled, %llu pushed (what a distributed run would send).\n",
              (unsigned long long)sum.bytes_pulled, (unsigned long long)sum.bytes_pushed);
    for (int i = 0; i < run->k; i++) {
        PsWorkerStats *s = &run->w[i].st;
        sb_printf(b, "  worker %d: %lld batches, compute %.3f s, local update %.3f s, wait %.3f s, %lld pulls, "
                  "%lld pushes\n", i + 1, (long long)s->batches, s->compute, s->local_agg, s->wait,
                  (long long)s->pulls, (long long)s->pushes);
    }
}

Status ps_run(Interp *I, const PsConfig *c, Value *out)
{
    double t0 = clock_now_sec();
    PsPart *parts = NULL;
    int64_t np = 0;
    TRY(ps_partition(I, c, &parts, &np));
    if (np == 0) {
        ps_parts_free(parts, np);
        return err_set(I, "paramserv: features has no rows to train on");
    }
    if (np < c->k && c->verbose)
        fprintf(stderr, "[paramserv] warning: there are only %lld partitions of data for %lld workers; using %lld "
                "workers\n", (long long)np, (long long)c->k, (long long)np);
    if (c->utype == PS_SBP && np <= c->backup) {
        ps_parts_free(parts, np);
        return err_set(I, "Effective number of workers is smaller or equal to the number of backup workers. Change "
                       "partitioning scheme to OVERLAP_RESHUFFLE, decrease number of backup workers or increase "
                       "number of rows in dataset.");
    }
    PsRun *run = calloc(1, sizeof *run);
    if (!run) {
        ps_parts_free(parts, np);
        return err_set(I, "out of memory");
    }
    run->cfg = c;
    run->caller = I;
    run->k = (int)np;
    run->w = calloc((size_t)np, sizeof *run->w);
    run->model = val_ref(val_list_take(c->model));
    Status st = ST_OK;
    if (c->ckpt != PS_CKPT_NONE) {
        Value m;
        int64_t done;
        bool found;
        st = ps_ckpt_resume(I, c, &m, &done, &found);
        if (st == ST_OK && found) {
            val_release(run->model);
            run->model = m;
            run->start_epoch = done < c->epochs ? done : c->epochs;
        }
    }
    if (!run->w) {
        st = err_set(I, "out of memory");
    }
    if (st != ST_OK) {
        val_release(run->model);
        free(run->w);
        free(run);
        ps_parts_free(parts, np);
        return ST_ERR;
    }
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->server_cv, NULL);
    interp_init(&run->SI, I->prog, mix3(c->seed, 0, 0));
    run->SI.interrupt = &run->abort;
    run->SI.in_parallel = true;
    run->SI.out = I->out;
    run->SI.frame = &run->stop;
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        w->run = run;
        w->id = i;
        w->part = parts[i];
        parts[i].X = parts[i].Y = NULL;
        int64_t rows = w->part.X->rows;
        w->nbatches = (rows + c->batchsize - 1) / c->batchsize;
        w->groups = c->freq == PS_BATCH ? w->nbatches : c->freq == PS_EPOCH ? (w->nbatches > 0 ? 1 : 0)
                  : (w->nbatches + c->nbatches - 1) / c->nbatches;
        run->epoch_pushes_needed += w->groups;
        pthread_cond_init(&w->cv, NULL);
        interp_init(&w->I, I->prog, mix3(c->seed, (uint64_t)i + 1, 0));
        w->I.interrupt = &run->abort;
        w->I.in_parallel = true;
        w->I.out = I->out;
        w->I.frame = &w->top;
        w->mailbox = val_ref(run->model);     /* the initial broadcast */
    }
    ps_parts_free(parts, np);
    ps_epochs_init(&run->epochs, run->epoch_pushes_needed, run->start_epoch);
    if (c->utype == PS_SSP)
        for (int i = 0; i < run->k; i++)
            run->w[i].deferred = false;

    /* BLAS: workers share the cores instead of each spawning BLAS threads. */
    int blas_before = blas_get_threads();
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    int per = (int)(ncores / run->k);
    blas_set_threads(per > 1 ? per : 1);

    run->t_start = run->epoch_t0 = clock_now_sec();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, PS_STACK);
    pthread_t server;
    int started = 0;
    bool server_up = false;
    if (run->start_epoch < c->epochs) {
        server_up = pthread_create(&server, &attr, server_main, run) == 0;
        for (; server_up && started < run->k; started++)
            if (pthread_create(&run->w[started].thread, &attr, worker_main, &run->w[started]) != 0)
                break;
        if (!server_up || started < run->k) {
            err_set(I, "paramserv: cannot start threads");
            ps_fail(run, I, "");
        }
    }
    pthread_attr_destroy(&attr);
    for (int i = 0; i < started; i++)
        pthread_join(run->w[i].thread, NULL);
    if (server_up) {
        /* Workers are gone; wake the server in case it waits for pushes
         * that will never come (only possible after an abort). */
        pthread_mutex_lock(&run->mu);
        pthread_cond_broadcast(&run->server_cv);
        pthread_mutex_unlock(&run->mu);
        pthread_join(server, NULL);
    }
    blas_set_threads(blas_before);

    if (run->failure) {
        /* First line is the message; the failing thread's DML call stack
         * (the following lines) heads the trace of this call. */
        char *nl = strchr(run->failure, '\n');
        if (nl)
            *nl = '\0';
        st = err_set(I, "%s", run->failure);
        const char *rest = nl ? nl + 1 : "";
        size_t len = strlen(rest);
        if (len && (I->err.trace = malloc(len + 2)) != NULL) {
            memcpy(I->err.trace, rest, len);
            if (rest[len - 1] != '\n')
                I->err.trace[len++] = '\n';
            I->err.trace[len] = '\0';
            I->err.trace_len = len;
        }
    } else {
        *out = run->model;
        run->model = val_none();
        report_stats(run, clock_now_sec() - t0);
    }
    /* Free everything, including undelivered mail and queued pushes. */
    for (int64_t i = 0; i < run->ninbox; i++)
        val_release(run->inbox[i].payload);
    free(run->inbox);
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        val_release(w->mailbox);
        val_release(w->slot);
        if (w->part.X)
            val_release(val_matrix_take(w->part.X));
        if (w->part.Y)
            val_release(val_matrix_take(w->part.Y));
        for (int s = 0; s < w->top.nslots; s++)
            val_release(w->top.slots[s]);
        free(w->top.slots);
        interp_destroy(&w->I);
        pthread_cond_destroy(&w->cv);
    }
    val_release(run->model);
    interp_destroy(&run->SI);
    pthread_cond_destroy(&run->server_cv);
    pthread_mutex_destroy(&run->mu);
    free(run->failure);
    ps_epochs_free(&run->epochs);
    free(run->w);
    free(run);
    return st;
}
