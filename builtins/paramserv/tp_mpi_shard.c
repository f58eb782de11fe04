/* SPDX-License-Identifier: Apache-2.0
 * paramserv(servers=S) on Open MPI: the model sharded over S server ranks
 * (issue 25, DESIGN.md "Open MPI"). Rank 0 holds shard 0 and ranks 1..S-1
 * the others; the k workers run on ranks S..S+k-1 (mpirun -np S+k).
 *
 * The shards: every model entry of L cells (in row-major order) is cut
 * into S ranges, shard s holding cells [L*s/S, L*(s+1)/S), so each server
 * holds about 1/S of every entry and of the whole model, and entries of
 * one shape are cut alike (a weight and its momentum buffer line up). A
 * shard is a list of the model's entries, entry i its range of entry i as
 * a column. agg runs on each shard alone: that is right only when agg
 * works cell by cell, which aggcheck.c shows or the call is refused.
 *
 * Each server rank runs the server of server.c (BSP rounds, ASP, SSP
 * clocks) over its shard, with the same workers' shapes: a worker pushes
 * each shard's range of its gradients to that shard's server, and a pull
 * waits for the model's ranges from all S servers and joins them. BSP sums
 * a round's pushes in the tree's order (tree.c) on every shard, so each cell gets the
 * bits it gets with one server: seeded BSP with S servers equals S=1. ASP
 * and SSP count versions per shard; SSP: each server lets a worker pull
 * only while its clock is at most 'staleness' pushes ahead of the slowest
 * worker as that server has heard them, which can only lag the true
 * clocks, and the worker waits for all S, so the bound holds for the
 * whole model.
 *
 * Worker groups and the reduction tree (tp_mpi_tree.h) work as without
 * shards, group g on rank S + g: under BSP the worker ranks add their
 * pushes up the tree, and each of the root's two halves leaves its rank
 * cut into the S ranges, range s to server rank s, which takes it as rank
 * 0 takes a half (the first covered worker's push is the sum, the others'
 * NONE). Without the tree (DML_PS_TREE=0, or not BSP) each worker cuts its
 * own push. A server sends a model once per worker rank that takes it,
 * naming the workers there, down a tree of ranks when each has pushed
 * (MM_MODEL_TREE with the shard in the header); the worker rank joins the
 * S parts of each worker's next model, once for workers whose parts are
 * the same messages (TpShardIn).
 *
 * What crosses: the first model each worker gets is the whole model from
 * rank 0 (it holds the initial model anyway; no update has happened). After
 * that, per update, a server receives and sends only its shard. At the end
 * the servers send their shards to rank 0, which returns the joined model.
 * Rank 0 starts the server ranks first and waits for each to say READY, so
 * no push can reach a server before its call; a server's failure (agg
 * stops, say) reaches rank 0 as a FAIL naming the shard and rank, and a
 * killed server rank ends the job through mpirun, as a killed worker rank
 * does. Validation and checkpoints need the whole model at the end of an
 * epoch: the servers then send rank 0 their shards of that epoch (a whole
 * model per epoch, not per update).
 *
 * SBP, record= and replay=: which pushes make an SBP round (and which
 * stragglers are dropped), and what a record holds, follow from the order
 * in which the server handles the pushes. Rank 0's server decides that
 * order (by arrival, or the record's), and the other servers follow it:
 * rank 0 sends them the (worker, epoch, batch) of each push it handled
 * (MM_SHARD_ORDER, tp_shard_applied, tp_shard_pump), and a server rank
 * holds each push until its turn (shard_release), so every server makes
 * the same rounds, drops the same pushes and delivers after the same
 * pushes. Not with dispatch=DYNAMIC (refused by ps_servers_check: rank 0
 * picks tasks and backups from the results it hears).
 * A server rank's --stats line counts its bytes with ps_traffic_now(),
 * as rank 0's does. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/clock.h"
#include "mpi_comm.h"
#include "msg.h"
#include "ps.h"
#include "psmpi.h"
#include "tp_mpi.h"
#include "tp_mpi_tree.h"

/* ---- the cut ---- */

static void range_of(int64_t len, int s, int S, int64_t *lo, int64_t *hi)
{
    *lo = (int64_t)((__int128)len * s / S);
    *hi = (int64_t)((__int128)len * (s + 1) / S);
}

/* Shard s of a list of whole matrices (the model, or gradients: possibly
 * fewer entries): each entry's range as a column; other values stay
 * NONE. NONE when memory ran out. */
Value tp_shard_cut(const List *l, int s, int S)
{
    List *r = list_new(l->n, false);
    for (int64_t i = 0; r && i < l->n; i++) {
        Value v = val_none();
        if (l->items[i].kind == VAL_MATRIX) {
            const Matrix *m = l->items[i].m;
            int64_t lo, hi;
            range_of(mat_len(m), s, S, &lo, &hi);
            Matrix *c = mat_new_raw(hi - lo, 1);
            if (!c) {
                list_release(r);
                return val_none();
            }
            if (hi > lo)
                memcpy(c->data, m->data + lo, sizeof(double) * (size_t)(hi - lo));
            v = val_matrix_take(c);
        }
        if (!list_push_take(r, v, NULL)) {
            list_release(r);
            return val_none();
        }
    }
    return r ? val_list_take(r) : val_none();
}

/* The whole entries' shapes as a 2 x n matrix (rows, cols). */
static Matrix *shapes_of(const List *model)
{
    Matrix *sh = mat_new_raw(2, model->n);
    for (int64_t i = 0; sh && i < model->n; i++) {
        const Matrix *m = model->items[i].kind == VAL_MATRIX ? model->items[i].m : NULL;
        sh->data[i] = m ? (double)m->rows : 0;
        sh->data[model->n + i] = m ? (double)m->cols : 0;
    }
    return sh;
}

/* A delivery of a shard: its entries (NONE where need[] says a pull
 * does not carry them) and the whole shapes after them (taken). */
static Value wrap(const List *shard, const bool *need, Matrix *shapes)
{
    List *r = list_new(shard->n + 1, false);
    bool ok = r != NULL;
    for (int64_t i = 0; ok && i < shard->n; i++)
        ok = list_push(r, need && !need[i] ? val_none() : shard->items[i], NULL);
    ok = ok && list_push(r, val_matrix_take(shapes), NULL);
    mat_release(shapes);
    if (!ok) {
        list_release(r);
        return val_none();
    }
    return val_list_take(r);
}

/* Joins parts[0..S) (shards, entry i of each part the range of entry i
 * of a model shaped by 'shapes') into whole matrices; an entry NONE in
 * any part is NONE. False when a part does not fit (a malformed message)
 * or memory ran out. */
static bool join_parts(const List *const *parts, int S, const Matrix *shapes, Value *out)
{
    int64_t n = shapes->cols;
    List *r = list_new(n, false);
    if (!r)
        return false;
    for (int64_t i = 0; i < n; i++) {
        double dr = shapes->data[i], dc = shapes->data[n + i];
        bool ok = dr >= 0 && dc >= 0 && dr <= 0x1p31 && dc <= 0x1p31;
        bool none = false;
        for (int s = 0; ok && s < S; s++) {
            ok = parts[s]->n > i;
            if (ok && parts[s]->items[i].kind == VAL_NONE)
                none = true;
            else if (ok)
                ok = parts[s]->items[i].kind == VAL_MATRIX;
        }
        Matrix *m = NULL;
        if (ok && !none) {
            int64_t len = (int64_t)dr * (int64_t)dc;
            for (int s = 0; ok && s < S; s++) {
                int64_t lo, hi;
                range_of(len, s, S, &lo, &hi);
                ok = mat_len(parts[s]->items[i].m) == hi - lo;
            }
            m = ok ? mat_new_raw((int64_t)dr, (int64_t)dc) : NULL;
            ok = m != NULL;
            for (int s = 0; ok && s < S; s++) {
                int64_t lo, hi;
                range_of(len, s, S, &lo, &hi);
                if (hi > lo)
                    memcpy(m->data + lo, parts[s]->items[i].m->data, sizeof(double) * (size_t)(hi - lo));
            }
        }
        if (!ok || !list_push_take(r, m ? val_matrix_take(m) : val_none(), NULL)) {
            mat_release(m);
            list_release(r);
            return false;
        }
    }
    *out = val_list_take(r);
    return true;
}

/* ---- checking the call ---- */

Status ps_servers_check(Interp *I, PsConfig *c, bool k_given)
{
    if (c->servers <= 1)
        return ST_OK;
    char why[512];
    if (!ps_agg_cellwise(c->agg, c->model, why, sizeof why))
        return err_set(I, "paramserv: servers=%lld needs an agg that works cell by cell, but agg '%s' cannot be "
                       "shown to: %s", (long long)c->servers, c->agg_spec, why);
    if (c->tp != &ps_tp_mpi)
        return ST_OK;       /* threads: one server, servers= changes nothing */
    long long S = (long long)c->servers;
    /* doc/paramserv.md, "servers", says why. */
    if (c->dispatch == PS_DISPATCH_DYNAMIC)
        return err_set(I, "paramserv: servers=%lld with dispatch DYNAMIC is not supported: rank 0 hands out the "
                       "tasks and their backups and picks the result that counts by what it hears first, which the "
                       "other server rank%s would not know (use servers=1, or dispatch STATIC)", S,
                       S > 2 ? "s" : "");
    int size = mpi_size();
    if (!k_given)
        c->k = size - c->servers;
    if (c->servers + 1 > size)
        return err_set(I, "paramserv: servers=%lld needs mpirun -np %lld at least (rank 0, %lld more server rank%s, "
                       "then the worker ranks), but this job has %d ranks", S, S + 1, S - 1, S > 2 ? "s" : "", size);
    return ST_OK;
}

/* ---- rank 0 ---- */

/* Validation and checkpoints need the whole model at an epoch's end: the
 * server ranks then send their shards to rank 0. 0: never; 1: every
 * epoch; 2: checkpointing EPOCH10 only (every 10th and the last). */
static int pub_mode(const PsConfig *c)
{
    return c->val || c->ckpt == PS_CKPT_EPOCH ? 1 : c->ckpt == PS_CKPT_EPOCH10 ? 2 : 0;
}

static bool pub_due(int mode, int64_t e, int64_t epochs)
{
    return mode == 1 || (mode == 2 && ((e + 1) % 10 == 0 || e + 1 == epochs));
}

typedef struct EpochShard {
    int64_t e;
    int s;
    Value v;
} EpochShard;

struct TpShard {
    int S, k;
    Value full;                 /* the initial model, whole: each worker's first pull */
    Matrix *shapes;             /* 2 x n */
    bool *first_sent;           /* worker i had its first (whole) model */
    const List *wrapped_of;     /* the shard-0 model 'wrapped' was made of (held by wrapped_src) */
    Value wrapped_src, wrapped;
    const bool *need;           /* set by the bridge: the entries a pull carries (NULL: all) */
    Value *final;               /* final[s]: server s's last shard */
    double *stat;               /* per server: updates, bytes in, bytes out */
    bool *done, *acked;
    double *seen;               /* when each server rank was last heard */
    int ndone, nacked;
    bool ordered;               /* the servers follow rank 0's order (SBP, record=, replay=) */
    PsOrder ord;                /* run->mu: the pushes handled here, not yet sent on */
    pthread_cond_t ep_cv;       /* run->mu: the server thread waits here for the shards of an epoch */
    EpochShard *ep;             /* run->mu: shards of epochs that have come (MM_SHARD_EPOCH) */
    int64_t nep, capep;
};

Status tp_shard_init(PsRun *run, TpShard **out)
{
    const PsConfig *c = run->cfg;
    *out = NULL;
    if (c->servers <= 1)
        return ST_OK;
    TpShard *t = calloc(1, sizeof *t);
    int S = (int)c->servers;
    if (!t)
        return err_set(run->caller, "out of memory");
    pthread_cond_init(&t->ep_cv, NULL);
    t->S = S;
    t->k = run->k;
    t->ordered = c->utype == PS_UTYPE_SBP || c->record_path || c->replay_path;
    t->full = run->model;
    t->wrapped_src = t->wrapped = val_none();
    t->shapes = shapes_of(run->model.l);
    t->first_sent = calloc((size_t)run->k, sizeof *t->first_sent);
    t->final = calloc((size_t)S, sizeof *t->final);
    t->stat = calloc((size_t)S * 3, sizeof *t->stat);
    t->done = calloc((size_t)S, sizeof *t->done);
    t->acked = calloc((size_t)S, sizeof *t->acked);
    t->seen = calloc((size_t)S, sizeof *t->seen);
    run->model = tp_shard_cut(t->full.l, 0, S);
    *out = t;
    if (!t->shapes || !t->first_sent || !t->final || !t->stat || !t->done || !t->acked || !t->seen ||
        run->model.kind == VAL_NONE) {
        if (run->model.kind == VAL_NONE) {
            run->model = t->full;
            t->full = val_none();
        }
        return err_set(run->caller, "out of memory");
    }
    return ST_OK;
}

Value tp_shard_delivery(TpShard *t, int i, Value model)
{
    if (!t->first_sent[i]) {
        t->first_sent[i] = true;
        val_release(model);
        return val_ref(t->full);
    }
    if (model.kind != VAL_LIST)
        return model;
    if (t->wrapped.kind == VAL_NONE || t->wrapped_of != model.l) {
        val_release(t->wrapped);
        val_release(t->wrapped_src);
        t->wrapped = val_none();
        Matrix *sh = mat_new_raw(2, t->shapes->cols);
        if (sh)
            memcpy(sh->data, t->shapes->data, sizeof(double) * (size_t)mat_len(sh));
        t->wrapped = sh ? wrap(model.l, t->need, sh) : val_none();
        t->wrapped_src = val_ref(model);
        t->wrapped_of = model.l;
    }
    val_release(model);
    return val_ref(t->wrapped);
}

void tp_shard_set_need(TpShard *t, const bool *need)
{
    if (t)
        t->need = need;
}

/* The server ranks' part of a call: their CALLs (the common part, then
 * the shard's header), each one's initial shard, and their READYs. */
bool tp_shard_start(PsRun *run, TpShard *t, const WBuf *common, int64_t seq, int64_t ngroups, bool tree)
{
    const PsConfig *c = run->cfg;
    for (int s = 1; s < t->S; s++) {
        WBuf b = {0};
        wb_bytes(&b, common->p, common->len);
        if (common->oom)
            b.oom = true;
        int64_t id = 0, one = 1, S = t->S, k = run->k, se = s, ng = ngroups, tr = tree, od = t->ordered;
        ps_part_xfer(&(WIO){.w = &b}, &id, &one);
        WIO x = {.w = &b};
        wio_i64(&x, &se);
        wio_i64(&x, &S);
        wio_i64(&x, &k);
        wio_i64(&x, &ng);
        wio_i64(&x, &tr);
        wio_i64(&x, &od);
        for (int i = 0; i < run->k; i++) {
            int64_t rows = run->w[i].rows, nb = run->w[i].nbatches, g = run->w[i].groups;
            wio_i64(&x, &rows);
            wio_i64(&x, &nb);
            wio_i64(&x, &g);
        }
        int64_t pub = pub_mode(c);
        wio_i64(&x, &pub);
        Value init = tp_shard_cut(t->full.l, s, t->S);
        List *l = init.kind == VAL_LIST ? list_new(2, false) : NULL;
        Matrix *sh = mat_new_raw(2, t->shapes->cols);
        if (!l || !sh || !list_push_take(l, init, NULL)) {
            val_release(init);
            list_release(l);
            mat_release(sh);
            wb_free(&b);
            ps_fail_msg(run, "paramserv: out of memory");
            return false;
        }
        memcpy(sh->data, t->shapes->data, sizeof(double) * (size_t)mat_len(sh));
        list_push_take(l, val_matrix_take(sh), NULL);
        Value v = val_list_take(l);
        bool ok = mpi_send_take(s, MM_SHARD_CALL, s, seq, 0, &b) && mpi_send_value(s, MM_SHARD_MODEL, s, seq, 0, v);
        val_release(v);
        if (!ok) {
            char msg[512];
            snprintf(msg, sizeof msg, "paramserv: sending server shard %d its call: %s", s + 1, mpi_error());
            ps_fail_msg(run, msg);
            mpi_mark_broken();
            return false;
        }
        t->seen[s] = clock_now_sec();
    }
    /* READY from each, or its failure. */
    int ready = 0;
    bool *got = calloc((size_t)t->S, sizeof *got);
    MpiIdle idle = mpi_idle_init(SERVE_IDLE_MAX_US);
    double t0 = clock_now_sec();
    while (got && ready < t->S - 1 && !atomic_load(&run->abort)) {
        if (!mpi_progress())
            break;
        MpiMsg m;
        int r = mpi_poll(&m);
        if (r < 0)
            break;
        if (r == 0) {
            if (clock_now_sec() - t0 > mpi_timeout()) {
                ps_fail_msg(run, "paramserv: a server rank did not take its call within DML_MPI_TIMEOUT");
                mpi_mark_broken();
                break;
            }
            mpi_idle_sleep(&idle);
            continue;
        }
        mpi_idle_busy(&idle);
        if (m.src >= 1 && m.src < t->S && m.type == MM_SHARD_READY && !got[m.src]) {
            got[m.src] = true;
            ready++;
            t->seen[m.src] = clock_now_sec();
        } else {
            tp_shard_on_message(run, t, &m);
        }
        mpi_msg_free(&m);
    }
    free(got);
    if (ready < t->S - 1 && !atomic_load(&run->abort)) {
        char msg[512];
        snprintf(msg, sizeof msg, "paramserv: starting the server ranks: %s", mpi_error());
        ps_fail_msg(run, msg);
        mpi_mark_broken();
    }
    return !atomic_load(&run->abort);
}

bool tp_shard_on_message(PsRun *run, TpShard *t, MpiMsg *m)
{
    if (!t || m->src < 1 || m->src >= t->S)
        return false;
    int s = m->src;
    t->seen[s] = clock_now_sec();
    if (m->type == MM_FAIL) {
        WRead rd = {.p = m->data, .len = m->len};
        char *msg = m->len ? wr_str(&rd) : NULL;
        char bare[400];
        snprintf(bare, sizeof bare, "paramserv: server shard %d (rank %d on %s) failed", s + 1, s, mpi_host(s));
        ps_fail_msg(run, msg ? msg : bare);
        free(msg);
    } else if (m->type == MM_SHARD_DONE && !t->done[s]) {
        List *l = m->value.kind == VAL_LIST ? m->value.l : NULL;
        if (!l || l->n != 2 || l->items[0].kind != VAL_LIST || l->items[1].kind != VAL_MATRIX ||
            mat_len(l->items[1].m) != 3) {
            char msg[400];
            snprintf(msg, sizeof msg, "paramserv: malformed result from server shard %d (rank %d on %s)", s + 1, s,
                     mpi_host(s));
            ps_fail_msg(run, msg);
        } else {
            t->final[s] = val_ref(l->items[0]);
            for (int j = 0; j < 3; j++) {
                double v = l->items[1].m->data[j];
                t->stat[3 * s + j] = v >= 0 && v < 9e15 ? v : 0;    /* counts: whole and small */
            }
        }
        t->done[s] = true;
        t->ndone++;
    } else if (m->type == MM_SHARD_EPOCH && m->value.kind == VAL_LIST) {
        pthread_mutex_lock(&run->mu);
        if (t->nep == t->capep) {
            int64_t cap = t->capep ? t->capep * 2 : 8;
            EpochShard *np = realloc(t->ep, sizeof *np * (size_t)cap);
            if (np) {
                t->ep = np;
                t->capep = cap;
            }
        }
        if (t->nep < t->capep) {
            t->ep[t->nep++] = (EpochShard){m->epoch, s, m->value};
            m->value = val_none();
        }
        pthread_cond_broadcast(&t->ep_cv);
        pthread_mutex_unlock(&run->mu);
    } else if (m->type == MM_ENDACK && !t->acked[s]) {
        t->acked[s] = true;
        t->nacked++;
    }
    return true;
}

bool tp_shard_done(const TpShard *t)
{
    return !t || t->ndone >= t->S - 1;
}

bool tp_shard_silent(PsRun *run, TpShard *t)
{
    if (!t)
        return false;
    double now = clock_now_sec();
    for (int s = 1; s < t->S; s++)
        if (!t->done[s] && t->seen[s] > 0 && now - t->seen[s] > mpi_timeout()) {
            char msg[512];
            snprintf(msg, sizeof msg, "paramserv: server shard %d (rank %d on %s) sent nothing for %.0f s "
                     "(DML_MPI_TIMEOUT): it hangs or its host is unreachable; ending the job", s + 1, s, mpi_host(s),
                     mpi_timeout());
            ps_fail_msg(run, msg);
            mpi_mark_broken();
            return true;
        }
    return false;
}

void tp_shard_gap(TpShard *t, double gap)
{
    for (int s = 1; t && s < t->S; s++)
        t->seen[s] += gap;
}

bool tp_shard_end(TpShard *t)
{
    bool ok = true;
    for (int s = 1; t && s < t->S && ok; s++)
        ok = mpi_send_take(s, MM_END, s, 0, 0, NULL);
    return ok;
}

int tp_shard_acks_left(const TpShard *t)
{
    return t ? t->S - 1 - t->nacked : 0;
}

Status tp_shard_gather(PsRun *run, TpShard *t)
{
    if (!t)
        return ST_OK;
    const List *few[16], **parts = t->S <= 16 ? few : malloc(sizeof *parts * (size_t)t->S);
    if (!parts)
        return err_set(run->caller, "out of memory");
    bool ok = run->model.kind == VAL_LIST;
    parts[0] = run->model.l;
    for (int s = 1; s < t->S; s++) {
        ok = ok && t->final[s].kind == VAL_LIST;
        parts[s] = ok ? t->final[s].l : NULL;
    }
    Value whole;
    ok = ok && join_parts(parts, t->S, t->shapes, &whole);
    if (parts != few)
        free(parts);
    if (!ok)
        return err_set(run->caller, "paramserv: the server shards' models do not fit together");
    val_release(run->model);
    run->model = whole;
    return ST_OK;
}

void tp_shard_wake(TpShard *t)
{
    if (t)
        pthread_cond_broadcast(&t->ep_cv);
}

Status tp_shard_epoch_model(PsRun *run, TpShard *t, int64_t e, Value *whole)
{
    if (!t || !pub_due(pub_mode(run->cfg), e, run->cfg->epochs))
        return ST_OK;
    const List *few[16], **parts = t->S <= 16 ? few : malloc(sizeof *parts * (size_t)t->S);
    Value *vals = calloc((size_t)t->S, sizeof *vals);
    if (!parts || !vals) {
        if (parts != few)
            free(parts);
        free(vals);
        return err_set(&run->SI, "out of memory");
    }
    pthread_mutex_lock(&run->mu);
    for (;;) {
        int have = 0;
        for (int64_t j = 0; j < t->nep; j++)
            have += t->ep[j].e == e;
        if (have >= t->S - 1 || atomic_load(&run->abort))
            break;
        clock_cond_wait_ms(&t->ep_cv, &run->mu, 100);
    }
    bool aborted = atomic_load(&run->abort);
    int64_t keep = 0;
    for (int64_t j = 0; j < t->nep; j++) {
        EpochShard *x = &t->ep[j];
        if (x->e == e && !aborted && x->s > 0 && x->s < t->S && vals[x->s].kind == VAL_NONE)
            vals[x->s] = x->v;
        else if (x->e <= e)
            val_release(x->v);
        else
            t->ep[keep++] = *x;
    }
    t->nep = keep;
    pthread_mutex_unlock(&run->mu);
    bool ok = !aborted && run->model.kind == VAL_LIST;
    parts[0] = ok ? run->model.l : NULL;
    for (int s = 1; ok && s < t->S; s++) {
        ok = vals[s].kind == VAL_LIST;
        parts[s] = ok ? vals[s].l : NULL;
    }
    ok = ok && join_parts(parts, t->S, t->shapes, whole);
    for (int s = 0; s < t->S; s++)
        val_release(vals[s]);
    free(vals);
    if (parts != few)
        free(parts);
    if (aborted)
        return err_set(&run->SI, "paramserv: the call ended");
    return ok ? ST_OK : err_set(&run->SI, "paramserv: the server shards' models of epoch %lld do not fit together",
                                (long long)e + 1);
}

void tp_shard_stats(PsRun *run, const TpShard *t, StrBuf *b)
{
    (void)run;
    for (int s = 1; t && s < t->S; s++) {
        PsTraffic tr = {(uint64_t)t->stat[3 * s + 1], (uint64_t)t->stat[3 * s + 2]};
        ps_traffic_line(b, s, tr, (int64_t)t->stat[3 * s]);
    }
}

void tp_shard_free(TpShard *t)
{
    if (!t)
        return;
    val_release(t->full);
    val_release(t->wrapped);
    val_release(t->wrapped_src);
    mat_release(t->shapes);
    for (int s = 0; t->final && s < t->S; s++)
        val_release(t->final[s]);
    free(t->final);
    free(t->first_sent);
    free(t->stat);
    free(t->done);
    free(t->acked);
    free(t->seen);
    for (int64_t j = 0; j < t->nep; j++)
        val_release(t->ep[j].v);
    free(t->ep);
    ps_order_free(&t->ord);
    pthread_cond_destroy(&t->ep_cv);
    free(t);
}

void tp_shard_applied(PsRun *run, TpShard *t, int worker, int64_t epoch, int64_t batch, pthread_cond_t *wake)
{
    if (!t || !t->ordered)
        return;
    pthread_mutex_lock(&run->mu);
    if (!ps_order_push(&t->ord, worker, epoch, batch)) {
        pthread_mutex_unlock(&run->mu);
        ps_fail_msg(run, "paramserv: out of memory keeping the order of the pushes");
        return;
    }
    pthread_cond_signal(wake);
    pthread_mutex_unlock(&run->mu);
}

bool tp_shard_pump(PsRun *run, TpShard *t)
{
    if (!t || !t->ordered)
        return false;
    pthread_mutex_lock(&run->mu);
    PsOrder taken = t->ord;
    t->ord = (PsOrder){0};
    pthread_mutex_unlock(&run->mu);
    int64_t *ord = taken.e, n = taken.n;
    if (n == 0) {
        free(ord);
        return false;
    }
    Matrix *m = mat_new_raw(3, n);
    bool ok = m != NULL;
    for (int64_t j = 0; ok && j < n; j++)
        for (int r = 0; r < 3; r++)
            m->data[r * n + j] = (double)ord[3 * j + r];
    free(ord);
    if (!ok) {
        ps_fail_msg(run, "paramserv: out of memory sending the order of the pushes");
        return false;
    }
    Value v = val_matrix_take(m);
    for (int s = 1; s < t->S && ok; s++)
        ok = mpi_send_value(s, MM_SHARD_ORDER, s, 0, 0, v);
    val_release(v);
    if (!ok) {
        char msg[512];
        snprintf(msg, sizeof msg, "paramserv: sending the server ranks the order of the pushes: %s", mpi_error());
        ps_fail_msg(run, msg);
        mpi_mark_broken();
    }
    return true;
}

/* ---- a worker rank ---- */

bool tp_shard_push(int S, int worker, int64_t epoch, int64_t batch, Value payload)
{
    if (payload.kind != VAL_LIST)
        return mpi_send_value(0, MM_PUSH, worker, epoch, batch, payload);
    for (int s = 0; s < S; s++) {
        Value part = tp_shard_cut(payload.l, s, S);
        if (part.kind == VAL_NONE)
            return false;
        bool ok = mpi_send_value(s, MM_PUSH, worker, epoch, batch, part);
        val_release(part);
        if (!ok)
            return false;
    }
    return true;
}

/* Per worker of the rank: whether its first model (whole, from rank 0)
 * came, and the parts of its next one. 'last' is the latest joined model
 * and 'lastp' the parts it was joined from (held), so that workers whose
 * parts are the same messages share it. */
struct TpShardIn {
    int S;
    int64_t n;
    bool *first;                /* n */
    Value *part;                /* n x S */
    Value *lastp;               /* S */
    Value last;
};

TpShardIn *tp_shard_in_new(int S, int64_t n)
{
    TpShardIn *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->S = S;
    in->n = n;
    in->first = calloc((size_t)n, sizeof *in->first);
    in->part = calloc((size_t)(n * S), sizeof *in->part);
    in->lastp = calloc((size_t)S, sizeof *in->lastp);
    in->last = val_none();
    if (!in->first || !in->part || !in->lastp) {
        tp_shard_in_free(in);
        return NULL;
    }
    return in;
}

static void last_clear(TpShardIn *in)
{
    for (int s = 0; s < in->S; s++) {
        val_release(in->lastp[s]);
        in->lastp[s] = val_none();
    }
    val_release(in->last);
    in->last = val_none();
}

void tp_shard_in_free(TpShardIn *in)
{
    if (!in)
        return;
    for (int64_t i = 0; in->part && i < in->n * in->S; i++)
        val_release(in->part[i]);
    if (in->lastp)
        last_clear(in);
    free(in->first);
    free(in->part);
    free(in->lastp);
    free(in);
}

int tp_shard_in_take(TpShardIn *in, int64_t j, int shard, Value v, Value *whole)
{
    if (j < 0 || j >= in->n) {
        val_release(v);
        return -1;
    }
    if (!in->first[j] && shard == 0) {
        in->first[j] = true;
        *whole = v;
        return 1;
    }
    Value *part = in->part + j * in->S;
    if (shard < 0 || shard >= in->S || v.kind != VAL_LIST || v.l->n < 1 ||
        v.l->items[v.l->n - 1].kind != VAL_MATRIX || v.l->items[v.l->n - 1].m->rows != 2 ||
        v.l->items[v.l->n - 1].m->cols != v.l->n - 1) {
        val_release(v);
        return -1;
    }
    val_release(part[shard]);
    part[shard] = v;
    for (int s = 0; s < in->S; s++)
        if (part[s].kind == VAL_NONE)
            return 0;
    bool same = in->last.kind != VAL_NONE;
    for (int s = 0; same && s < in->S; s++)
        same = in->lastp[s].kind == VAL_LIST && in->lastp[s].l == part[s].l;
    bool ok = true;
    if (same) {
        *whole = val_ref(in->last);
    } else {
        const List *few[16], **parts = in->S <= 16 ? few : malloc(sizeof *parts * (size_t)in->S);
        ok = parts != NULL;
        for (int s = 0; ok && s < in->S; s++)
            parts[s] = part[s].l;
        const Matrix *shapes = part[0].l->items[part[0].l->n - 1].m;
        for (int s = 1; ok && s < in->S; s++)
            ok = part[s].l->n == part[0].l->n;
        ok = ok && join_parts(parts, in->S, shapes, whole);
        if (parts != few)
            free(parts);
        last_clear(in);
        if (ok) {
            for (int s = 0; s < in->S; s++)
                in->lastp[s] = val_ref(part[s]);
            in->last = val_ref(*whole);
        }
    }
    for (int s = 0; s < in->S; s++) {
        val_release(part[s]);
        part[s] = val_none();
    }
    return ok ? 1 : -1;
}

/* ---- a server rank ---- */

/* One call on a server rank. mu is run->mu. */
typedef struct ShardServe {
    PsRun run;
    PsConfig cfg;
    CallMsg call;
    Program *prog;
    int s, S, wr0;
    TpGroups grp;               /* which workers run on which rank (group g on rank wr0 + g) */
    bool tree;                  /* BSP pushes come summed up the tree of worker ranks */
    int64_t seq;                /* rank 0's number of the call */
    bool *heard;                /* a push of worker i came: its rank has its CALL (models may go through peers) */
    bool ordered;               /* pushes go to the server in rank 0's order (MM_SHARD_ORDER) */
    PsMsg *pend;                /* ordered: pushes that came before their turn */
    int64_t npend, cappend;
    PsOrder ord;                /* ordered: rank 0's order, from 'head' on still to come */
    int64_t head;
    Matrix *shapes;
    bool *need;
    Value *mailbox;             /* run.mu: the model to send to worker i, or NONE */
    bool *full;
    pthread_cond_t pump_cv;
    bool finished;              /* run.mu: the server thread returned */
    PsTraffic traffic0;         /* the rank's byte counters when the call came (tp_mpi.h) */
    char where[320];
    int pub;                    /* pub_mode of the call */
    EpochShard *epq;            /* run.mu: shards of ended epochs to send to rank 0 */
    int64_t nepq, capepq;
} ShardServe;

static void shard_deliver(PsRun *run, int i, Value model, const PsTask *task)
{
    (void)task;
    ShardServe *z = run->tps;
    pthread_mutex_lock(&run->mu);
    val_release(z->mailbox[i]);
    z->mailbox[i] = model;
    z->full[i] = true;
    pthread_cond_signal(&z->pump_cv);
    pthread_mutex_unlock(&run->mu);
}

static void shard_wake(PsRun *run)
{
    ShardServe *z = run->tps;
    if (z)
        pthread_cond_broadcast(&z->pump_cv);
}

/* The end of epoch e: the shard goes to rank 0 when validation or a
 * checkpoint needs it there. */
static Status shard_epoch_model(PsRun *run, int64_t e, Value *whole)
{
    (void)whole;
    ShardServe *z = run->tps;
    if (!pub_due(z->pub, e, run->cfg->epochs))
        return ST_OK;
    pthread_mutex_lock(&run->mu);
    if (z->nepq == z->capepq) {
        int64_t cap = z->capepq ? z->capepq * 2 : 8;
        EpochShard *np = realloc(z->epq, sizeof *np * (size_t)cap);
        if (!np) {
            pthread_mutex_unlock(&run->mu);
            return err_set(&run->SI, "out of memory");
        }
        z->epq = np;
        z->capepq = cap;
    }
    z->epq[z->nepq++] = (EpochShard){e, z->s, val_ref(run->model)};
    pthread_cond_signal(&z->pump_cv);
    pthread_mutex_unlock(&run->mu);
    return ST_OK;
}

static const PsTransportOps ps_tp_shard = {
    .name = "Open MPI server shard",
    .own_budgets = true,
    .deliver = shard_deliver,
    .wake = shard_wake,
    .epoch_model = shard_epoch_model,
};

static void *shard_main(void *arg)
{
    ShardServe *z = arg;
    ps_server_main(&z->run);
    pthread_mutex_lock(&z->run.mu);
    z->finished = true;
    pthread_cond_broadcast(&z->pump_cv);
    pthread_mutex_unlock(&z->run.mu);
    return NULL;
}

/* The value that follows a SHARD_CALL: list(initial shard, shapes); NONE
 * when something else came first or nothing within mpi_timeout(). */
static bool recv_init(Value *v, int64_t seq)
{
    double t0 = clock_now_sec();
    MpiIdle idle = mpi_idle_init(AWAIT_IDLE_MAX_US);
    for (;;) {
        if (!mpi_progress())
            return false;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            return false;
        if (got) {
            if (m.type == MM_SHARD_MODEL && m.epoch == seq) {
                *v = m.value;
                m.value = val_none();
            }
            mpi_msg_free(&m);
            return true;
        }
        if (clock_now_sec() - t0 > mpi_timeout())
            return true;
        mpi_idle_sleep(&idle);
    }
}

static bool send_fail_msg(const char *msg)
{
    WBuf b = {0};
    wb_str(&b, msg);
    return mpi_send_take(0, MM_FAIL, 0, 0, 0, &b);
}

/* Decodes the call and sets up the server; NULL when it serves, else why
 * not (malloc'd, or NULL in *oom). */
static char *shard_setup(ShardServe *z, MpiMsg *callm, Value init)
{
    WRead rd = {.p = callm->data, .len = callm->len};
    Matrix *dummy[2] = {mat_new_raw(1, 0), mat_new_raw(1, 0)};
    List *pl = list_new(2, false);
    Value part = val_none();
    if (dummy[0] && dummy[1] && pl && list_push_take(pl, val_matrix_take(dummy[0]), NULL)) {
        dummy[0] = NULL;
        if (list_push_take(pl, val_matrix_take(dummy[1]), NULL)) {
            dummy[1] = NULL;
            part = val_list_take(pl);
            pl = NULL;
        }
    }
    mat_release(dummy[0]);
    mat_release(dummy[1]);
    list_release(pl);
    int64_t id;
    const char *why = part.kind == VAL_LIST ? ps_call_read(&rd, &z->call, part, &id) : "out of memory";
    val_release(part);
    if (why)
        return strdup(why);
    int64_t s = -1, S = 0, k = 0, ng = 0, tree = -1, ordered = -1;
    WIO x = {.r = &rd};
    wio_i64(&x, &s);
    wio_i64(&x, &S);
    wio_i64(&x, &k);
    wio_i64(&x, &ng);
    wio_i64(&x, &tree);
    wio_i64(&x, &ordered);
    if (rd.bad || S < 2 || S > 4096 || s != mpi_rank() || k < 1 || ng < 1 || ng > k || S + ng > mpi_size() ||
        (tree != 0 && tree != 1) || (ordered != 0 && ordered != 1))
        return strdup("malformed server shard call");
    z->ordered = ordered == 1;
    if (!tp_groups_init(&z->grp, k, ng))
        return strdup("out of memory");
    if (z->grp.n != ng)
        return strdup("malformed server shard call");
    z->tree = tree == 1;
    z->s = (int)s;
    z->S = (int)S;
    z->wr0 = (int)S;
    PsConfig *c = &z->cfg;
    *c = z->call.opt;
    c->agg_spec = z->call.agg_spec;
    c->hyper = z->call.hyper.kind == VAL_LIST ? z->call.hyper.l : NULL;
    c->val = NULL;
    c->verbose = false;
    c->trace = false;
    c->tp = &ps_tp_shard;
    PsRun *run = &z->run;
    run->k = (int)k;
    run->w = calloc((size_t)k, sizeof *run->w);
    z->mailbox = calloc((size_t)k, sizeof *z->mailbox);
    z->full = calloc((size_t)k, sizeof *z->full);
    z->heard = calloc((size_t)k, sizeof *z->heard);
    if (!run->w || !z->mailbox || !z->full || !z->heard)
        return strdup("out of memory");
    for (int i = 0; i < k; i++) {
        PsWorker *w = &run->w[i];
        w->id = i;
        w->slot = val_none();
        wio_i64(&x, &w->rows);
        wio_i64(&x, &w->nbatches);
        wio_i64(&x, &w->groups);
        if (rd.bad || w->groups < 1 || w->groups > (int64_t)1 << 40 || w->nbatches < 0 || w->rows < 0)
            return strdup("malformed server shard call");
        run->epoch_pushes_needed += w->groups;
        run->batches_per_epoch += w->nbatches;
    }
    int64_t pub = -1;
    wio_i64(&x, &pub);
    if (rd.bad || pub < 0 || pub > 2)
        return strdup("malformed server shard call");
    z->pub = (int)pub;
    List *il = init.kind == VAL_LIST ? init.l : NULL;
    if (!il || il->n != 2 || il->items[0].kind != VAL_LIST || il->items[1].kind != VAL_MATRIX ||
        il->items[1].m->rows != 2 || il->items[1].m->cols != il->items[0].l->n)
        return strdup("malformed initial shard");
    z->shapes = il->items[1].m;
    val_ref(il->items[1]);
    /* The program, for agg. */
    z->prog = program_new();
    if (!z->prog)
        return strdup("out of memory");
    program_set_args(z->prog, z->call.args, (int)z->call.nargs);
    z->prog->shipped = z->call.files;
    z->prog->nshipped = (int)z->call.nfiles;
    Node **stmts;
    int nst;
    DiagErr lerr;
    if (!program_load_main(z->prog, z->call.main_path, z->call.main_text, z->call.main_len, &stmts, &nst, &lerr))
        return program_render_err(z->prog, &lerr, false);
    c->upd = program_find_func(z->prog, z->call.upd_key, z->call.upd_name);
    c->agg = program_find_func(z->prog, z->call.agg_key, z->call.agg_name);
    if (!c->upd || !c->agg)
        return strdup("cannot find agg in the shipped program");
    z->need = ps_pull_entries(c, il->items[0].l->n);
    run->cfg = c;
    run->tp = c->tp;
    run->tps = z;
    run->host_servers = mpi_ranks_here_below(z->S);
    run->start_epoch = z->call.start_epoch;
    run->model = val_ref(il->items[0]);
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->server_cv, NULL);
    pthread_cond_init(&z->pump_cv, NULL);
    worker_interp_init(&run->SI, z->prog, rng_mix3(c->seed, 0, 0), &run->abort, 0, stdout);
    run->SI.frame = &run->server_top;
    run->caller = &run->SI;
    ps_epochs_init(&run->epochs, run->epoch_pushes_needed, run->start_epoch);
    return NULL;
}

/* Sends the deliveries waiting; true if any went. Workers waiting for the
 * same model (a BSP round's) get one copy per rank, through a tree of
 * ranks when each has pushed here (tp_mpi_tree.h). */
static bool shard_send(ShardServe *z, bool *ok)
{
    PsRun *run = &z->run;
    int k = run->k;
    bool any = false;
    Value *ms = calloc((size_t)k, sizeof *ms);
    bool *go = calloc((size_t)k, sizeof *go);
    int *pairs = malloc(sizeof *pairs * (size_t)(2 * k));
    if (!ms || !go || !pairs) {
        free(ms);
        free(go);
        free(pairs);
        ps_fail_msg(run, "paramserv: out of memory on a server rank");
        return false;
    }
    pthread_mutex_lock(&run->mu);
    for (int i = 0; i < k; i++) {
        ms[i] = z->full[i] ? z->mailbox[i] : val_none();
        go[i] = z->full[i];
        z->mailbox[i] = val_none();
        z->full[i] = false;
    }
    pthread_mutex_unlock(&run->mu);
    for (int i = 0; i < k && *ok; i++) {
        if (!go[i])
            continue;
        int n = 0;
        bool heard = true;
        for (int j = i; j < k; j++)
            if (go[j] && (j == i || (ms[j].kind == VAL_LIST && ms[i].kind == VAL_LIST && ms[j].l == ms[i].l))) {
                pairs[2 * n] = (int)tp_group_of(&z->grp, j) + z->wr0;
                pairs[2 * n + 1] = j;
                n++;
                heard = heard && z->heard[j];
                if (j > i) {
                    val_release(ms[j]);
                    ms[j] = val_none();
                    go[j] = false;
                }
            }
        Matrix *sh = mat_new_raw(2, z->shapes->cols);
        if (sh)
            memcpy(sh->data, z->shapes->data, sizeof(double) * (size_t)mat_len(sh));
        Value v = val_none();
        if (sh && ms[i].kind == VAL_LIST)
            v = wrap(ms[i].l, z->need, sh);
        else
            mat_release(sh);
        val_release(ms[i]);
        ms[i] = val_none();
        if (v.kind == VAL_NONE) {
            ps_fail_msg(run, "paramserv: out of memory on a server rank");
            continue;
        }
        *ok = tp_mpi_send_models(v, pairs, n, heard, z->seq, z->s);
        val_release(v);
        any = true;
    }
    for (int i = 0; i < k; i++)
        val_release(ms[i]);
    free(ms);
    free(go);
    free(pairs);
    return any;
}

/* Ordered: hands the server thread the pushes that are next in rank 0's
 * order, as long as they have come. */
static void shard_release(ShardServe *z)
{
    while (z->head < z->ord.n) {
        const int64_t *o = z->ord.e + 3 * z->head;
        int64_t j = 0;
        while (j < z->npend && !(z->pend[j].worker == o[0] && z->pend[j].epoch == o[1] && z->pend[j].batch == o[2]))
            j++;
        if (j == z->npend)
            return;
        PsMsg p = z->pend[j];
        memmove(z->pend + j, z->pend + j + 1, sizeof *z->pend * (size_t)(z->npend - j - 1));
        z->npend--;
        z->head++;
        if (ps_enqueue_push_take(&z->run, p.worker, p.epoch, p.batch, p.payload) != ST_OK) {
            ps_fail_msg(&z->run, "paramserv: out of memory queueing a push");
            return;
        }
    }
    /* Everything given: start over at the front. */
    z->head = z->ord.n = 0;
}

/* A push of worker i from 'src' (m's value taken): queued when worker i
 * runs there (ordered: once it is its turn). */
static void shard_on_push(ShardServe *z, MpiMsg *m)
{
    PsRun *run = &z->run;
    int i = m->worker;
    if (i < 0 || i >= run->k || (int)tp_group_of(&z->grp, i) + z->wr0 != m->src || m->value.kind != VAL_LIST) {
        char msg[256];
        snprintf(msg, sizeof msg, "paramserv: server shard %d got a malformed push from rank %d", z->s + 1, m->src);
        ps_fail_msg(run, msg);
        return;
    }
    Value p = m->value;
    m->value = val_none();
    z->heard[i] = true;
    if (z->ordered) {
        if (z->npend == z->cappend) {
            int64_t cap = z->cappend ? z->cappend * 2 : 16;
            PsMsg *np = realloc(z->pend, sizeof *np * (size_t)cap);
            if (!np) {
                val_release(p);
                ps_fail_msg(run, "paramserv: out of memory queueing a push");
                return;
            }
            z->pend = np;
            z->cappend = cap;
        }
        z->pend[z->npend++] = (PsMsg){.worker = i, .epoch = m->epoch, .batch = m->batch, .payload = p};
        shard_release(z);
        return;
    }
    if (ps_enqueue_push_take(run, i, m->epoch, m->batch, p) != ST_OK)
        ps_fail_msg(run, "paramserv: out of memory queueing a push");
}

/* MM_SHARD_ORDER: more of rank 0's order (a 3 x n matrix, m's value). */
static void shard_on_order(ShardServe *z, MpiMsg *m)
{
    PsRun *run = &z->run;
    const Matrix *o = m->value.kind == VAL_MATRIX ? m->value.m : NULL;
    int64_t n = o && o->rows == 3 ? o->cols : -1;
    bool ok = z->ordered && n >= 0;
    for (int64_t j = 0; ok && j < n; j++) {
        double w = o->data[j], e = o->data[n + j], b = o->data[2 * n + j];
        ok = w >= 0 && w < run->k && w == (int64_t)w && e >= 0 && e < 9e15 && e == (int64_t)e && b >= -1 &&
             b < 9e15 && b == (int64_t)b;
    }
    if (ok && !ps_order_reserve(&z->ord, n)) {
        ps_fail_msg(run, "paramserv: out of memory keeping the order of the pushes");
        return;
    }
    if (!ok) {
        char msg[256];
        snprintf(msg, sizeof msg, "paramserv: server shard %d got a malformed order of pushes from rank 0", z->s + 1);
        ps_fail_msg(run, msg);
        return;
    }
    for (int64_t j = 0; j < n; j++)     /* the room is reserved above */
        ps_order_push(&z->ord, (int64_t)o->data[j], (int64_t)o->data[n + j], (int64_t)o->data[2 * n + j]);
    shard_release(z);
}

/* A half of the tree's root (BSP), this shard's range of it: the first
 * worker's push is the sum, the others' are NONE (as on rank 0,
 * tp_mpi_server.c). */
static void shard_on_push_sum(ShardServe *z, MpiMsg *m)
{
    PsRun *run = &z->run;
    Value sum;
    int64_t *w, *b, n;
    if (!z->tree || !tp_push_sum_read(m, run->k, z->seq, &sum, &w, &b, &n)) {
        char msg[256];
        snprintf(msg, sizeof msg, "paramserv: server shard %d got a malformed sum of pushes from rank %d", z->s + 1,
                 m->src);
        ps_fail_msg(run, msg);
        return;
    }
    if ((int)tp_group_of(&z->grp, w[0]) + z->wr0 != m->src || sum.kind != VAL_LIST) {
        val_release(sum);
        char msg[256];
        snprintf(msg, sizeof msg, "paramserv: server shard %d got a sum of pushes from rank %d for workers it does "
                 "not run", z->s + 1, m->src);
        ps_fail_msg(run, msg);
    } else {
        for (int64_t j = 0; j < n; j++)
            z->heard[w[j]] = true;
        tp_push_sum_enqueue(run, w, b, n, m->epoch, sum);
    }
    free(w);
    free(b);
}

static void shard_free(ShardServe *z, bool up)
{
    PsRun *run = &z->run;
    if (up) {
        for (int64_t i = 0; i < run->ninbox; i++)
            val_release(run->inbox[i].payload);
        free(run->inbox);
        val_release(run->model);
        interp_destroy(&run->SI);
        pthread_cond_destroy(&z->pump_cv);
        pthread_cond_destroy(&run->server_cv);
        pthread_mutex_destroy(&run->mu);
        ps_epochs_free(&run->epochs);
        ps_hist_free(run);
        ps_ev_free(&run->sev);
        free(run->failure);
    }
    for (int64_t j = 0; j < z->nepq; j++)
        val_release(z->epq[j].v);
    free(z->epq);
    for (int i = 0; run->w && i < run->k; i++)
        val_release(run->w[i].slot);
    for (int i = 0; z->mailbox && i < run->k; i++)
        val_release(z->mailbox[i]);
    free(run->w);
    free(z->mailbox);
    free(z->full);
    free(z->heard);
    for (int64_t j = 0; j < z->npend; j++)
        val_release(z->pend[j].payload);
    free(z->pend);
    ps_order_free(&z->ord);
    tp_groups_free(&z->grp);
    free(z->need);
    mat_release(z->shapes);
    if (z->prog)
        program_free(z->prog);
    ps_call_free(&z->call);
    free(z);
}

/* Waits for END (after its result or failure went), answers ENDACK. */
bool tp_shard_serve(MpiMsg *callm)
{
    int64_t seq = callm->epoch;
    PsTraffic traffic0 = ps_traffic_now();
    Value init = val_none();
    if (!recv_init(&init, seq))
        return false;
    ShardServe *z = calloc(1, sizeof *z);
    if (!z) {
        val_release(init);
        return send_fail_msg("paramserv: out of memory on a server rank");
    }
    snprintf(z->where, sizeof z->where, "rank %d on %s", mpi_rank(), mpi_host(mpi_rank()));
    z->traffic0 = traffic0;
    z->seq = seq;
    z->call.hyper = val_none();
    char *why = shard_setup(z, callm, init);
    val_release(init);
    bool up = why == NULL;
    bool ok = true;
    pthread_t th;
    bool started = false;
    if (why) {
        char msg[1024];
        snprintf(msg, sizeof msg, "paramserv: server shard %d (%s) cannot start: %s", mpi_rank() + 1, z->where, why);
        free(why);
        ok = send_fail_msg(msg);
    } else {
        ok = mpi_send_take(0, MM_SHARD_READY, z->s, seq, 0, NULL);
        started = worker_start(&th, shard_main, z);
        if (!started)
            ok = send_fail_msg("paramserv: a server rank cannot start its thread") && ok;
    }
    PsRun *run = &z->run;
    bool reported = !started;
    double last_send = clock_now_sec();
    MpiIdle idle = mpi_idle_init(SERVE_IDLE_MAX_US);
    for (;;) {
        bool busy = started && shard_send(z, &ok);
        if (started && !reported) {
            /* The epochs' shards first, taken with 'finished' so that
             * none is left behind the result. */
            pthread_mutex_lock(&run->mu);
            bool fin = z->finished;
            EpochShard *eq = z->epq;
            int64_t neq = z->nepq;
            z->epq = NULL;
            z->nepq = z->capepq = 0;
            pthread_mutex_unlock(&run->mu);
            for (int64_t j = 0; j < neq; j++) {
                ok = ok && mpi_send_value(0, MM_SHARD_EPOCH, z->s, eq[j].e, 0, eq[j].v);
                val_release(eq[j].v);
                busy = true;
            }
            free(eq);
            if (fin) {
                reported = true;
                busy = true;
                if (run->failure) {
                    /* Named by its shard and rank; the DML stack follows. */
                    const char *f = run->failure;
                    if (strncmp(f, "paramserv: ", 11) == 0)
                        f += 11;
                    size_t cap = strlen(f) + 400;
                    char *msg = malloc(cap);
                    if (msg)
                        snprintf(msg, cap, "paramserv: server shard %d (%s): %s", z->s + 1, z->where, f);
                    ok = ok && (msg ? send_fail_msg(msg) : mpi_send_take(0, MM_FAIL, 0, 0, 0, NULL));
                    free(msg);
                } else if (!atomic_load(&run->abort)) {
                    Matrix *st = mat_new_raw(1, 3);
                    List *l = st ? list_new(2, false) : NULL;
                    if (l && list_push(l, run->model, NULL) && list_push_take(l, val_matrix_take(st), NULL)) {
                        st->data[0] = (double)run->updates;
                        PsTraffic tr = ps_traffic_since(z->traffic0);
                        st->data[1] = (double)tr.in;
                        st->data[2] = (double)tr.out;
                        Value v = val_list_take(l);
                        ok = ok && mpi_send_value(0, MM_SHARD_DONE, z->s, 0, 0, v);
                        val_release(v);
                    } else {
                        list_release(l);
                        if (!l)
                            mat_release(st);
                        ok = ok && send_fail_msg("paramserv: out of memory on a server rank");
                    }
                }
                last_send = clock_now_sec();
            }
        }
        if (!ok || !mpi_progress()) {
            ok = false;
            break;
        }
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0) {
            ok = false;
            break;
        }
        if (got) {
            busy = true;
            if (m.type == MM_END) {
                mpi_msg_free(&m);
                break;
            }
            if (m.type == MM_PUSH && started)
                shard_on_push(z, &m);
            else if (m.type == MM_PUSH_SUM && started)
                shard_on_push_sum(z, &m);
            else if (m.type == MM_SHARD_ORDER && started)
                shard_on_order(z, &m);
            mpi_msg_free(&m);
        }
        if (clock_now_sec() - last_send >= BEAT_SECS) {
            mpi_send_take(0, MM_BEAT, z->s, 0, 0, NULL);
            last_send = clock_now_sec();
        } else if (busy) {
            mpi_idle_busy(&idle);
        } else if (started) {
            mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US : SERVE_IDLE_MAX_US);
            pthread_mutex_lock(&run->mu);
            if (reported || !z->finished)
                tp_mpi_cond_wait_us(&z->pump_cv, &run->mu, mpi_idle_next(&idle));
            pthread_mutex_unlock(&run->mu);
        } else {
            mpi_idle_sleep(&idle);
        }
    }
    if (started) {
        pthread_mutex_lock(&run->mu);
        atomic_store(&run->abort, 1);
        pthread_cond_broadcast(&run->server_cv);
        pthread_mutex_unlock(&run->mu);
        pthread_join(th, NULL);
    }
    mpi_flush_sends();
    mpi_send_take(0, MM_ENDACK, z->s, 0, 0, NULL);
    shard_free(z, up);
    return ok;
}
