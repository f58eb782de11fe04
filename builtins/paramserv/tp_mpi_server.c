/* SPDX-License-Identifier: Apache-2.0
 * paramserv's Open MPI transport, rank 0's side (PsTransportOps, ps.h).
 *
 * Rank 0 runs the script; its paramserv call starts the server thread as
 * for a local run, and this transport, on the calling thread, ships each
 * worker rank its partition and the program (every loaded file, so no
 * shared filesystem is needed), sends a worker's model to its rank
 * whenever the server delivers one, and puts the pushes that arrive into
 * the server's inbox. With k <= N-1 worker i runs on rank i + 1; with
 * more, the workers run as groups of threads, group g on rank g + 1
 * (tp_mpi_tree.h; tp_mpi_worker.c is that side), and BSP's pushes are
 * summed up a tree of ranks on their way here. With servers=S the workers
 * start at rank S instead (group g on rank g + S), ranks 1..S-1 hold
 * shards of the model (tp_mpi_shard.c), and the tree's two root halves
 * (or each push, without the tree) go to the S servers cut in ranges. Each pull or push moves one copy of the model or gradients;
 * a pull only the model entries that the worker's functions can read
 * (readset.c); a model several ranks pull at once goes down a tree
 * (tp_mpi.h).
 *
 * Same partitions (made on rank 0), the same per-worker RNG streams
 * (seeded from seed, worker and epoch) and BSP's aggregation in the
 * tree's order (tree.c), wherever each sum is made, make a seeded BSP run
 * bit-identical to a local run with the same k; doubles travel as their
 * bytes.
 *
 * Failures: a worker's DML error travels to rank 0 as a message and ends
 * the call there with the worker's rank, host, epoch, batch and DML stack;
 * rank 0 then ends the call on every rank (END, answered by ENDACK). A
 * worker rank sends a heartbeat each second during a call; one that stays
 * silent for DML_MPI_TIMEOUT seconds (default 60) is declared lost and the
 * job is torn down with MPI_Abort at exit. A rank that dies is noticed by
 * mpirun itself, which ends the whole job and names the rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/blas.h"
#include "../../runtime/clock.h"
#include "../../runtime/resolve.h"
#include "../../runtime/sparse_ops.h"
#include "mpi_comm.h"
#include "msg.h"
#include "ps.h"
#include "psmpi.h"
#include "tp_mpi.h"
#include "tp_mpi_tree.h"
#include "tp_mpi_rows.h"

/* The transport's state in one call (PsRun.tps). */
typedef struct MpiServe {
    PsPart *parts;              /* owned: worker i's rows, sent with its CALL */
    Value *mailbox;             /* run->mu: the model to send to worker i, or NONE */
    bool *full;                 /* run->mu: a delivery for worker i waits to be sent */
    PsTask *task;               /* run->mu: DYNAMIC: its task (no matrices) */
    bool *heard_push;           /* a push came from worker i's rank, which so has its CALL */
    bool *done;                 /* worker i sent DONE */
    double *sent;               /* when worker i's CALL went (--trace: its events are timed from there) */
    pthread_cond_t pump_cv;     /* the bridge waits here (run->mu) for deliveries */
    double rpc_time;            /* time the bridge spent sending and receiving */
    int64_t pull_entries;       /* model entries a pull carries (readset.c); -1: all */
    PsTraffic traffic;          /* rank 0's bytes in and out during the call (tp_mpi.h) */
    TpGroups grp;               /* which workers run on which rank (tp_mpi_tree.h) */
    bool tree;                  /* BSP pushes are summed on the way (tp_mpi_tree.h) */
    uint64_t push_bytes;        /* gradient (or model) bytes that pushes brought to rank 0 */
    int64_t push_msgs;          /* and how many messages */
    PsRowsSent rows;            /* DYNAMIC: the task rows each rank keeps (tp_mpi_rows.h) */
    int wr0;                    /* group g runs on rank wr0 + g (servers=S: S, else 1) */
    TpShard *shard;             /* servers=S > 1: the shards (tp_mpi_shard.c) */
} MpiServe;

bool ps_mpi_launched(void)
{
    return mpi_up();
}

/* A call of this transport is running on rank 0 (run->tps set): an agg
 * (or anything else on rank 0) that calls paramserv meanwhile gets local
 * threads, since the worker ranks are busy with the outer call. */
static atomic_int mpi_calls;

/* Worker ranks this rank may serve (mpirun -np N: N-1 on rank 0); 0
 * outside mpirun, on a worker rank (an upd calling paramserv runs it on
 * that rank's threads) and inside a running MPI call. */
static int ps_mpi_workers(void)
{
    return mpi_up() && mpi_rank() == 0 && atomic_load(&mpi_calls) == 0 ? mpi_size() - 1 : 0;
}

static char *ps_mpi_where(int rank)
{
    char buf[320];
    snprintf(buf, sizeof buf, "rank %d on %s", rank, mpi_host(rank));
    return strdup(buf);
}

Status ps_pick_transport(Interp *I, const char *mode, const PsTransportOps **tp)
{
    bool mpi = ps_mpi_workers() > 0;
    if (!mode) {
        *tp = mpi ? &ps_tp_mpi : &ps_tp_local;
        return ST_OK;
    }
    if (strcmp(mode, "LOCAL") == 0) {
        *tp = &ps_tp_local;
        return ST_OK;
    }
    if (strcmp(mode, "REMOTE_MPI") == 0 || strcmp(mode, "REMOTE_SPARK") == 0) {
        if (!mpi && mpi_up() && (mpi_rank() != 0 || atomic_load(&mpi_calls) > 0))
            return err_set(I, "Paramserv function: mode '%s' inside a running REMOTE_MPI call: the worker ranks "
                           "serve the outer call (omit mode= or use mode=\"LOCAL\" to train on this rank's "
                           "threads)", mode);
        if (!mpi)
            return err_set(I, "Paramserv function: not support ps execution mode '%s' outside mpirun (launch the "
                           "script with 'mpirun -np N dml run ...', N >= 2, or use mode=\"LOCAL\")", mode);
        *tp = &ps_tp_mpi;
        return ST_OK;
    }
    return err_set(I, "Paramserv function: not support ps execution mode '%s' (use LOCAL, or REMOTE_MPI under "
                   "mpirun)", mode);
}

/* ---- what a call ships ---- */

static const char *func_key(const FuncDef *f)
{
    return f->mod == NULL ? ".defaultNS" : f->mod->key;
}

/* Rank 0's CALL, pointing into its program; false when out of memory. */
static bool call_of(CallMsg *m, Interp *I, const PsRun *run, const PsConfig *c)
{
    const Program *p = I->prog;
    *m = (CallMsg){.hyper = c->hyper ? val_list_take(c->hyper) : val_none()};
    m->main_path = p->main->path ? p->main->path : "<main>";
    m->main_text = program_file_text(p, m->main_path, &m->main_len);
    m->args = p->args;
    m->nargs = p->nargs;
    m->files = calloc((size_t)p->nmods + 1, sizeof *m->files);
    if (!m->files)
        return false;
    for (int i = 0; i < p->nmods; i++) {
        const Module *mod = p->mods[i];
        if (mod == p->main)
            continue;
        ShippedFile *f = &m->files[m->nfiles++];
        f->key = mod->key;
        f->path = mod->path;
        f->text = program_file_text(p, mod->path, &f->len);
    }
    m->upd_key = func_key(c->upd);
    m->upd_name = c->upd->name;
    m->agg_key = func_key(c->agg);
    m->agg_name = c->agg->name;
    m->agg_spec = c->agg_spec;
    m->opt = *c;            /* ps_call_xfer writes the options params.h marks 'wire' */
    m->opt.ckpt_sig = NULL;
    m->start_epoch = run->start_epoch;
    return true;
}

/* list(X, Y) of a worker's partition, sharing the matrices; NONE when
 * memory ran out. */
static Value part_value(const PsPart *p)
{
    List *l = list_new(2, false);
    if (!l || !list_push(l, val_matrix_take(p->X), NULL) || !list_push(l, val_matrix_take(p->Y), NULL)) {
        list_release(l);
        return val_none();
    }
    return val_list_take(l);
}

/* ---- rank 0 ---- */

static int rank_of(const PsRun *run, int i);

static void mpi_failed(PsRun *run, const char *what)
{
    char msg[768];
    snprintf(msg, sizeof msg, "paramserv: %s: %s", what, mpi_error());
    ps_fail_msg(run, msg);
    mpi_mark_broken();
}

/* The model as a pull carries it: the entries in need[] (NULL: all), the
 * others as NONE, which the worker's functions never look at. The same
 * matrices as m, no cells copied. */
static Value pull_view(Value m, const bool *need, int64_t n)
{
    if (!need || m.kind != VAL_LIST || m.l->n != n)
        return val_ref(m);
    List *v = list_clone(m.l);
    if (!v)
        return val_ref(m);      /* out of memory: the whole model will do */
    for (int64_t i = 0; i < n; i++)
        if (!need[i]) {
            val_release(v->items[i]);
            v->items[i] = val_none();
        }
    return val_list_take(v);
}

/* Rank 0 numbers its calls; a CALL carries the number (header 'epoch') and
 * so does each tree message (header 'batch'), so a worker rank drops a
 * model forwarded late from an aborted earlier call. Only workers that
 * have pushed get a model through the tree: their CALL is in, and a peer's
 * message cannot overtake it (MPI orders messages per sender only). */
static int64_t call_seq;

/* Rows r0 .. r0+n-1 of a partition, in the form it has: a sparse
 * partition's rows travel sparse (wire.c), 12 bytes a non-zero. NULL when
 * memory runs out. */
static Matrix *task_rows(const Matrix *M, int64_t r0, int64_t n)
{
    if (M->sp && n > 0)
        return mat_new_sparse_take(sp_slice(M->sp, r0, r0 + n, 0, M->cols));
    Matrix *r = mat_new_raw(n, M->cols);
    if (r && n * M->cols > 0)
        memcpy(r->data, M->data + r0 * M->cols, sizeof(double) * (size_t)(n * M->cols));
    return r;
}

/* DYNAMIC: send worker i its task with model m (taken): list(model,
 * rows, meta), the rows copied out of the task's partition; a stop
 * (epoch -1) is a bare message. */
static bool send_task(PsRun *run, int i, Value m, const PsTask *t, const bool *need, int64_t nneed)
{
    MpiServe *S = run->tps;
    if (t->epoch < 0) {
        val_release(m);
        return mpi_send_take(rank_of(run, i), MM_TASK, i, -1, 0, NULL);
    }
    const PsPart *p = &S->parts[t->part];
    int64_t n = t->row1 - t->row0, cx = p->X->cols, cy = p->Y->cols;
    int plan = ps_rows_plan(&S->rows, (int)tp_group_of(&S->grp, i), t->id, sizeof(double) * (uint64_t)(n * (cx + cy)));
    if (plan == PS_ROWS_KEPT)
        n = 0;              /* the rank has them from an earlier epoch */
    Matrix *X = task_rows(p->X, t->row0, n), *Y = task_rows(p->Y, t->row0, n);
    Value view = pull_view(m, need, nneed);
    val_release(m);
    Value v = X && Y ? ps_task_value(view, X, Y, t) : val_none();
    if (!X || !Y) {
        mat_release(X);
        mat_release(Y);
    }
    val_release(view);
    if (v.kind != VAL_NONE && !ps_rows_mark(v, plan)) {
        val_release(v);
        v = val_none();
    }
    if (v.kind == VAL_NONE) {
        ps_fail_msg(run, "paramserv: out of memory");
        return true;
    }
    bool ok = mpi_send_value(rank_of(run, i), MM_TASK, i, t->epoch, t->id, v);
    val_release(v);
    return ok;
}

/* Send each worker's pending delivery to its rank (the entries in need[]).
 * Workers whose mailboxes hold the same model (BSP delivers one model to
 * every worker) get one copy per rank, through a tree of ranks when there
 * are three or more (tp_mpi_tree.h). Returns whether anything was sent. */
static bool send_models(PsRun *run, const bool *need, int64_t nneed)
{
    MpiServe *S = run->tps;
    bool any = false;
    int k = run->k, few[32];
    int *ranks = k <= 16 ? few : malloc(sizeof *ranks * (size_t)(2 * k));
    Value *ms = calloc((size_t)k, sizeof *ms);
    bool *go = calloc((size_t)k, sizeof *go);
    PsTask *tk = calloc((size_t)k, sizeof *tk);
    if (!ranks || !ms || !go || !tk) {
        if (ranks != few)
            free(ranks);
        free(ms);
        free(go);
        free(tk);
        ps_fail_msg(run, "paramserv: out of memory");
        return false;
    }
    pthread_mutex_lock(&run->mu);
    for (int i = 0; i < k; i++) {
        ms[i] = S->mailbox[i];
        go[i] = S->full[i];
        tk[i] = S->task[i];
        S->mailbox[i] = val_none();
        S->full[i] = false;
    }
    pthread_mutex_unlock(&run->mu);
    bool ok = true;
    for (int i = 0; i < k; i++) {
        if (!go[i])
            continue;
        if (run->dyn) {
            if (ok)
                ok = send_task(run, i, ms[i], &tk[i], need, nneed);
            else
                val_release(ms[i]);
            ms[i] = val_none();
            if (!ok)
                mpi_failed(run, "sending a task");
            any = true;
            continue;
        }
        /* The workers from i on waiting for this very model: one copy to
         * each of their ranks, naming the workers there that take it;
         * down a tree when rank 0 has heard from all of them
         * (tp_mpi_tree.h). ranks[] holds (rank, worker) pairs. */
        int n = 0;
        bool heard = true;
        for (int j = i; j < k; j++)
            if (go[j] && (j == i || (ms[j].kind == VAL_LIST && ms[i].kind == VAL_LIST && ms[j].l == ms[i].l))) {
                ranks[2 * n] = rank_of(run, j);
                ranks[2 * n + 1] = j;
                n++;
                heard = heard && S->heard_push[j];
                if (j > i) {
                    val_release(ms[j]);
                    ms[j] = val_none();
                    go[j] = false;
                }
            }
        Value view = ok ? pull_view(ms[i], need, nneed) : val_none();
        if (ok)
            ok = tp_mpi_send_models(view, ranks, n, heard, call_seq, 0);
        val_release(view);
        val_release(ms[i]);
        ms[i] = val_none();
        if (!ok)
            mpi_failed(run, "sending a model");
        else
            any = true;
    }
    for (int i = 0; i < k; i++)
        val_release(ms[i]);
    if (ranks != few)
        free(ranks);
    free(ms);
    free(go);
    free(tk);
    return any;
}

/* The first worker of rank 'rank', or -1. */
static int worker_of_rank(const PsRun *run, int rank)
{
    const MpiServe *S = run->tps;
    return rank >= S->wr0 && rank < S->wr0 + S->grp.n ? (int)S->grp.first[rank - S->wr0] : -1;
}

/* Rank of worker i. */
static int rank_of(const PsRun *run, int i)
{
    const MpiServe *S = run->tps;
    return (int)tp_group_of(&S->grp, i) + S->wr0;
}

/* The worker a message from 'rank' names in its header, when it runs
 * there; else -1. */
static int worker_named(const PsRun *run, int rank, int w)
{
    const MpiServe *S = run->tps;
    int g = rank - S->wr0;
    if (g < 0 || g >= S->grp.n || w < S->grp.first[g] || w >= S->grp.first[g + 1])
        return -1;
    return w;
}

/* Marks the ranks of the workers w[0..n) as having their CALL (they pushed). */
static void heard_from(PsRun *run, const int64_t *w, int64_t n)
{
    MpiServe *S = run->tps;
    for (int64_t j = 0; j < n; j++) {
        int64_t g = tp_group_of(&S->grp, w[j]);
        for (int64_t v = S->grp.first[g]; v < S->grp.first[g + 1]; v++)
            S->heard_push[v] = true;
    }
}

/* A MM_PUSH_SUM: every worker it covers pushed; the sum is the first's
 * payload, the others' are NONE (ps_enqueue_push_take). */
static void on_push_sum(PsRun *run, MpiMsg *m)
{
    MpiServe *S = run->tps;
    Value sum;
    int64_t *w, *b, n;
    if (!S->tree || !tp_push_sum_read(m, run->k, call_seq, &sum, &w, &b, &n)) {
        char msg[256];
        snprintf(msg, sizeof msg, "paramserv: malformed sum of pushes from rank %d", m->src);
        ps_fail_msg(run, msg);
        return;
    }
    S->push_bytes += ps_list_bytes(sum.l);
    S->push_msgs++;
    heard_from(run, w, n);
    tp_push_sum_enqueue(run, w, b, n, m->epoch, sum);
    free(w);
    free(b);
}

/* One message from a worker rank during the call. */
static void on_message(PsRun *run, MpiMsg *m, int *ndone)
{
    MpiServe *S = run->tps;
    if (tp_shard_on_message(run, S->shard, m))
        return;
    int i = worker_of_rank(run, m->src);
    if (i < 0)
        return;
    if (m->type == MM_PUSH_SUM) {
        on_push_sum(run, m);
        return;
    }
    if (m->type == MM_PUSH || m->type == MM_DONE || m->type == MM_TRACE) {
        /* Per worker: the one the header names, on that rank. */
        i = worker_named(run, m->src, m->worker);
        if (i < 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "paramserv: rank %d sent a message for worker %d, which it does not run",
                     m->src, m->worker + 1);
            ps_fail_msg(run, msg);
            return;
        }
    }
    PsWorker *w = &run->w[i];
    WRead rd = {.p = m->data, .len = m->len};
    switch (m->type) {
    case MM_PUSH: {
        Value payload = m->value;
        m->value = val_none();
        if (payload.kind != VAL_LIST) {
            val_release(payload);
            char msg[256];
            snprintf(msg, sizeof msg, "paramserv: malformed push from worker %d (%s)", i + 1, w->where);
            ps_fail_msg(run, msg);
            return;
        }
        int64_t wi = i;
        heard_from(run, &wi, 1);
        S->push_bytes += ps_list_bytes(payload.l);
        S->push_msgs++;
        if (ps_enqueue_push_take(run, i, m->epoch, m->batch, payload) != ST_OK)
            ps_fail_msg(run, "paramserv: out of memory queueing a push");
        break;
    }
    case MM_PRINT:
        if (m->len) {
            fwrite(m->data, 1, m->len, run->caller->out);
            fflush(run->caller->out);
        }
        break;
    case MM_FAIL: {
        char *msg = wr_str(&rd);
        if (msg) {
            ps_fail_msg(run, msg);
            free(msg);
        } else {
            /* A bare FAIL: the rank had no memory left for its message. */
            char bare[400];
            snprintf(bare, sizeof bare, "paramserv: worker %d (%s) failed: %s", i + 1, w->where,
                     m->len ? "its message could not be read" : "out of memory there");
            ps_fail_msg(run, bare);
        }
        break;
    }
    case MM_TRACE:
        /* Its events, placed on rank 0's clock from when its CALL went. */
        if (m->value.kind == VAL_MATRIX && m->value.m->cols == 5 && !S->done[i] && !w->ev.n) {
            const Matrix *ev = m->value.m;
            w->ev.on = true;
            for (int64_t j = 0; j < ev->rows; j++) {
                const double *row = ev->data + 5 * j;
                int kind = row[0] >= 0 && row[0] <= PS_EV_PUSH ? (int)row[0] : -1;
                if (kind < 0 || !(row[2] >= 0) || !(row[1] > -1e9 && row[1] < 1e9) || !(fabs(row[3]) < 1e15) ||
                    !(fabs(row[4]) < 1e15))
                    continue;       /* malformed rows are left out */
                double t0 = S->sent[i] + row[1];
                ps_ev_add(&w->ev, kind, t0, t0 + row[2], (int64_t)row[3], (int64_t)row[4]);
            }
        }
        break;
    case MM_DONE:
        if (S->done[i])
            break;              /* said twice: counted once */
        if (!ps_stats_read(&rd, &w->st)) {
            char msg[256];
            snprintf(msg, sizeof msg, "paramserv: malformed statistics from worker %d (%s)", i + 1, w->where);
            ps_fail_msg(run, msg);
        }
        S->done[i] = true;
        (*ndone)++;
        break;
    default: break;             /* MM_BEAT: being here is the point */
    }
}

/* The group message (MM_GROUP, mpi_comm.h) for group g; NONE when out
 * of memory. */
static Value group_value(const PsRun *run, int64_t g)
{
    const MpiServe *S = run->tps;
    Matrix *m = mat_new_raw(1, 4 + run->k);
    if (!m)
        return val_none();
    m->data[0] = (double)S->grp.first[g];
    m->data[1] = (double)(S->grp.first[g + 1] - S->grp.first[g]);
    m->data[2] = (double)S->grp.n;
    m->data[3] = S->tree;
    for (int i = 0; i < run->k; i++)
        m->data[4 + i] = (double)run->w[i].groups;
    return val_matrix_take(m);
}

/* The CALL to every worker rank: the common part, then its first worker's
 * id and k; its group (MM_GROUP) and each of its workers' partitions
 * (MM_PART) follow. seen[i] is when it went. */
static void send_calls(PsRun *run, double *seen)
{
    MpiServe *S = run->tps;
    const PsConfig *c = run->cfg;
    int n = run->k;
    WBuf common = {0};
    CallMsg call;
    if (!call_of(&call, run->caller, run, c))
        common.oom = true;
    else
        ps_call_xfer(&(WIO){.w = &common}, &call);
    free(call.files);
    bool shards_ok = !S->shard || tp_shard_start(run, S->shard, &common, call_seq, S->grp.n, S->tree);
    for (int64_t g = 0; shards_ok && g < S->grp.n && !atomic_load(&run->abort); g++) {
        int rank = (int)g + S->wr0;
        WBuf b = {0};
        wb_bytes(&b, common.p, common.len);
        if (common.oom)
            b.oom = true;
        int64_t id = S->grp.first[g], k = n;
        ps_part_xfer(&(WIO){.w = &b}, &id, &k);
        Value gv = group_value(run, g);
        bool ok = gv.kind != VAL_NONE;
        if (ok && (!mpi_send_take(rank, MM_CALL, (int)id, call_seq, 0, &b) ||
                   !mpi_send_value(rank, MM_GROUP, (int)id, 0, 0, gv))) {
            mpi_failed(run, "sending a paramserv call");
            ok = false;
        }
        wb_free(&b);
        val_release(gv);
        for (int64_t i = S->grp.first[g]; ok && i < S->grp.first[g + 1]; i++) {
            /* Under DYNAMIC the rows go with each task: an empty partition. */
            PsPart none = {NULL, NULL};
            if (c->dispatch == PS_DISPATCH_DYNAMIC) {
                none.X = mat_new_raw(0, S->parts[i].X->cols);
                none.Y = mat_new_raw(0, S->parts[i].Y->cols);
            }
            Value part = c->dispatch == PS_DISPATCH_DYNAMIC ? (none.X && none.Y ? part_value(&none) : val_none())
                                                             : part_value(&S->parts[i]);
            mat_release(none.X);
            mat_release(none.Y);
            if (part.kind == VAL_NONE) {
                ok = false;
                break;
            }
            if (!mpi_send_value(rank, MM_PART, (int)i, 0, 0, part)) {
                mpi_failed(run, "sending a paramserv call");
                ok = false;
            }
            val_release(part);
        }
        if (!ok && !atomic_load(&run->abort)) {
            ps_fail_msg(run, "paramserv: out of memory");
            break;
        }
        for (int64_t i = S->grp.first[g]; i < S->grp.first[g + 1]; i++)
            seen[i] = S->sent[i] = clock_now_sec();
    }
    wb_free(&common);
}

/* Fails the job on the first worker not yet done that has been silent
 * longer than DML_MPI_TIMEOUT, counting silence only while the bridge
 * was watching (*watched: when it last looked). */
static void watch_silence(PsRun *run, double *seen, double *watched)
{
    MpiServe *S = run->tps;
    int n = run->k;
    double now = clock_now_sec();
    /* Silence counts only while this loop was watching: after a gap in
     * rank 0's own running (SIGSTOP, a suspended job, a long agg) the
     * workers' heartbeats may still be on their way, so the gap is
     * not held against them. The queue was drained just above. */
    double gap = now - *watched;
    *watched = now;
    if (gap > WATCH_GAP_SEC) {
        for (int i = 0; i < n; i++)
            if (seen[i] >= 0)
                seen[i] += gap;
        tp_shard_gap(S->shard, gap);
    }
    if (tp_shard_silent(run, S->shard))
        return;
    for (int i = 0; i < n; i++) {
        if (!S->done[i] && seen[i] >= 0 && now - seen[i] > mpi_timeout()) {
            char msg[512];
            snprintf(msg, sizeof msg, "paramserv: worker %d (%s) sent nothing for %.0f s (DML_MPI_TIMEOUT): "
                     "it hangs or its host is unreachable; ending the job", i + 1, run->w[i].where,
                     mpi_timeout());
            ps_fail_msg(run, msg);
            mpi_mark_broken();
            seen[i] = -1;       /* lost: expect no ENDACK from it */
            break;
        }
    }
}

/* The bridge: models out, pushes in, until every worker is done or the
 * job aborts. Adds its time in RPCs to *t_rpc; returns how many workers
 * are done. */
static int serve_bridge(PsRun *run, const bool *need, int64_t nneed, double *seen, MpiIdle *idle, double *t_rpc)
{
    MpiServe *S = run->tps;
    int n = run->k;
    int ndone = 0;
    double watched = clock_now_sec();
    while ((ndone < n || !tp_shard_done(S->shard)) && !atomic_load(&run->abort)) {
        double t1 = clock_now_sec();
        bool busy = send_models(run, need, nneed);
        busy = tp_shard_pump(run, S->shard) || busy;
        if (!mpi_progress()) {
            mpi_failed(run, "sending");
            break;
        }
        MpiMsg m;
        int got;
        while ((got = mpi_poll(&m)) > 0) {
            busy = true;
            int i = worker_of_rank(run, m.src);
            for (int v = i; i >= 0 && v < S->grp.first[m.src - S->wr0 + 1]; v++)
                seen[v] = clock_now_sec();     /* every worker of that rank */
            on_message(run, &m, &ndone);
            mpi_msg_free(&m);
        }
        *t_rpc += clock_now_sec() - t1;
        if (got < 0) {
            mpi_failed(run, "receiving");
            break;
        }
        watch_silence(run, seen, &watched);
        if (busy) {
            mpi_idle_busy(idle);
        } else {
            mpi_idle_cap(idle, mpi_sends_moving() ? 0 : mpi_sends_pending() ? SEND_IDLE_MAX_US : SERVE_IDLE_MAX_US);
            pthread_mutex_lock(&run->mu);
            if (!atomic_load(&run->abort))
                tp_mpi_cond_wait_us(&S->pump_cv, &run->mu, mpi_idle_next(idle));
            pthread_mutex_unlock(&run->mu);
        }
    }
    return ndone;
}

/* End the call on every worker rank, done or not, and wait until each
 * has left it, so no message of this call is left for the next. Workers
 * with seen[i] < 0 are lost and owe no ENDACK; n is run->k. */
static void end_call(PsRun *run, int n, const double *seen, MpiIdle *idle, int *ndone)
{
    MpiServe *S = run->tps;
    int nr = (int)S->grp.n;
    (void)n;
    bool sent_ok = tp_shard_end(S->shard);
    for (int g = 0; g < nr && sent_ok; g++)
        sent_ok = mpi_send_take(g + S->wr0, MM_END, (int)S->grp.first[g], 0, 0, NULL);
    int acks = 0;
    bool *acked = nr > 0 ? calloc((size_t)nr, sizeof *acked) : NULL;
    for (int g = 0; g < nr && acked; g++)
        for (int64_t i = S->grp.first[g]; i < S->grp.first[g + 1]; i++)
            if (seen[i] < 0 && !acked[g]) {
                acked[g] = true;     /* lost: owes no ENDACK */
                acks++;
            }
    double tend = clock_now_sec();
    mpi_idle_busy(idle);
    while (sent_ok && acked && (acks < nr || tp_shard_acks_left(S->shard) > 0)) {
        if (!mpi_progress())
            break;
        MpiMsg m;
        int got = mpi_poll(&m);
        if (got < 0)
            break;
        if (got == 0) {
            if (clock_now_sec() - tend > mpi_timeout())
                break;
            mpi_idle_sleep(idle);
            continue;
        }
        int i = worker_of_rank(run, m.src);
        if (i < 0 && m.type == MM_ENDACK && tp_shard_on_message(run, S->shard, &m)) {
            /* a server rank left the call */
        } else if (i >= 0 && m.type == MM_ENDACK && !acked[m.src - S->wr0]) {
            acked[m.src - S->wr0] = true;
            acks++;
        } else if (i >= 0 && m.type == MM_FAIL && !atomic_load(&run->abort)) {
            on_message(run, &m, ndone);
        }
        mpi_msg_free(&m);
    }
    if (acks < nr || tp_shard_acks_left(S->shard) > 0) {
        if (!atomic_load(&run->abort))
            ps_fail_msg(run, "paramserv: a worker rank did not leave the call");
        mpi_mark_broken();
    }
    free(acked);
}

/* Ship the call to the worker ranks and bridge their messages until the
 * call ends on every rank. */
static void mpi_serve(PsRun *run)
{
    MpiServe *S = run->tps;
    const PsConfig *c = run->cfg;
    double t_rpc = 0;
    int n = run->k;
    double *seen = calloc((size_t)n, sizeof *seen);
    if (!seen) {
        ps_fail_msg(run, "paramserv: out of memory");
        return;
    }
    int64_t nneed = c->model->n;
    bool *need = ps_pull_entries(c, nneed);
    S->pull_entries = need ? 0 : -1;
    pthread_mutex_lock(&run->mu);
    tp_shard_set_need(S->shard, need);
    pthread_mutex_unlock(&run->mu);
    for (int64_t i = 0; need && i < nneed; i++)
        S->pull_entries += need[i];
    /* The server's agg and val share this host with worker ranks. */
    int blas_before = blas_budget_enter(mpi_local_ranks());
    mpi_lock();
    PsTraffic traffic0 = ps_traffic_now();
    double t0 = clock_now_sec();
    call_seq++;
    send_calls(run, seen);
    t_rpc += clock_now_sec() - t0;
    MpiIdle idle = mpi_idle_init(SERVE_IDLE_MAX_US);
    int ndone = serve_bridge(run, need, nneed, seen, &idle, &t_rpc);
    end_call(run, n, seen, &idle, &ndone);
    /* Sends still in flight must finish before the models they carry go. */
    mpi_flush_sends();
    S->traffic = ps_traffic_since(traffic0);
    mpi_unlock();
    blas_budget_leave(blas_before);
    S->rpc_time = t_rpc;
    pthread_mutex_lock(&run->mu);
    tp_shard_set_need(S->shard, NULL);
    pthread_mutex_unlock(&run->mu);
    free(need);
    free(seen);
}

/* ---- the transport ---- */

/* More workers than worker ranks run as groups of threads on the ranks
 * (tp_mpi_tree.h): any k will do. */
static Status mpi_check(Interp *I, const PsConfig *c)
{
    (void)c;
    const char *t = getenv("DML_PS_TREE");
    if (t && strcmp(t, "0") != 0 && strcmp(t, "1") != 0)
        return err_set(I, "DML_PS_TREE='%s': expected 1 (sum BSP pushes up a tree of worker ranks, the default) or "
                       "0 (each worker pushes to rank 0)", t);
    return ST_OK;
}

static void mpi_free(PsRun *run);

static Status mpi_gather(PsRun *run)
{
    MpiServe *S = run->tps;
    return tp_shard_gather(run, S->shard);
}

static Status mpi_epoch_model(PsRun *run, int64_t e, Value *whole)
{
    MpiServe *S = run->tps;
    return tp_shard_epoch_model(run, S->shard, e, whole);
}

static void mpi_applied(PsRun *run, int worker, int64_t epoch, int64_t batch)
{
    MpiServe *S = run->tps;
    tp_shard_applied(run, S->shard, worker, epoch, batch, &S->pump_cv);
}

static Status mpi_init(PsRun *run, PsPart *parts)
{
    int k = run->k;
    MpiServe *S = calloc(1, sizeof *S);
    if (!S)
        return err_set(run->caller, "out of memory");
    run->tps = S;
    atomic_fetch_add(&mpi_calls, 1);
    S->parts = calloc((size_t)k, sizeof *S->parts);
    S->mailbox = calloc((size_t)k, sizeof *S->mailbox);
    S->full = calloc((size_t)k, sizeof *S->full);
    S->task = calloc((size_t)k, sizeof *S->task);
    S->heard_push = calloc((size_t)k, sizeof *S->heard_push);
    S->done = calloc((size_t)k, sizeof *S->done);
    S->sent = calloc((size_t)k, sizeof *S->sent);
    pthread_cond_init(&S->pump_cv, NULL);
    S->pull_entries = -1;
    const PsConfig *c = run->cfg;
    /* servers=S > 1: workers from rank S on; the tree's root halves go
     * to the S servers, each its range (tp_mpi_shard.c). */
    S->wr0 = c->servers > 1 ? (int)c->servers : 1;
    run->host_servers = mpi_ranks_here_below(S->wr0);
    S->tree = c->utype == PS_UTYPE_BSP && c->dispatch == PS_DISPATCH_STATIC && !ps_tree_off();
    if (tp_shard_init(run, &S->shard) != ST_OK) {
        mpi_free(run);
        return ST_ERR;
    }
    if (!S->parts || !S->mailbox || !S->full || !S->task || !S->heard_push || !S->done || !S->sent ||
        !tp_groups_init(&S->grp, k, mpi_size() - S->wr0) ||
        !ps_rows_sent_init(&S->rows, (int)S->grp.n)) {
        mpi_free(run);
        return err_set(run->caller, "out of memory");
    }
    for (int i = 0; i < k; i++) {
        S->parts[i] = parts[i];
        parts[i].X = parts[i].Y = NULL;
        S->mailbox[i] = val_none();
        run->w[i].where = ps_mpi_where(rank_of(run, i));
    }
    return ST_OK;
}

static void mpi_deliver(PsRun *run, int i, Value model, const PsTask *task)
{
    MpiServe *S = run->tps;
    pthread_mutex_lock(&run->mu);
    if (S->shard)
        model = tp_shard_delivery(S->shard, i, model);
    val_release(S->mailbox[i]);
    S->mailbox[i] = model;
    S->full[i] = true;
    if (task) {
        S->task[i] = *task;
        S->task[i].X = S->task[i].Y = NULL;
    }
    pthread_cond_signal(&S->pump_cv);
    pthread_mutex_unlock(&run->mu);
}

static void mpi_wake(PsRun *run)
{
    MpiServe *S = run->tps;
    if (S) {
        pthread_cond_broadcast(&S->pump_cv);
        tp_shard_wake(S->shard);
    }
}

static void mpi_stats_cpu(PsRun *run, StrBuf *b, double cpu, const PsWorkerStats *sum)
{
    (void)run;  /* the worker ranks' CPU time arrives in sum */
    /* Each rank has its own process: rank 0's CPU time and the worker
     * ranks' (sent with DONE). */
    sb_printf(b, "Paramserv CPU time:\t\t%.3f secs (rank 0 %.3f + worker ranks %.3f, user + system).\n",
              cpu + sum->cpu, cpu, sum->cpu);
}

static void mpi_stats_net(PsRun *run, StrBuf *b, PsWorkerStats *sum)
{
    MpiServe *S = run->tps;
    sb_printf(b, "Paramserv RPC request time:\t%.3f secs.\n", S->rpc_time);
    sb_printf(b, "Paramserv network bytes:\t%llu pulled, %llu pushed (Open MPI, %d worker ranks).\n",
              (unsigned long long)sum->bytes_pulled, (unsigned long long)sum->bytes_pushed, (int)S->grp.n);
    if (S->grp.n < run->k)
        sb_printf(b, "Paramserv workers per rank:\t%.3g (%d workers on %d worker ranks, threads sharing a rank's "
                  "model).\n", (double)run->k / (double)S->grp.n, run->k, (int)S->grp.n);
    sb_printf(b, "Paramserv pushes into rank 0:\t%llu bytes in %lld messages (%s).\n",
              (unsigned long long)S->push_bytes, (long long)S->push_msgs,
              S->tree ? "BSP summed up the tree of ranks" : "one per worker push");
    if (S->pull_entries >= 0)
        sb_printf(b, "Paramserv pulled entries:\t%lld of the model's %lld (those the workers' functions read).\n",
                  (long long)S->pull_entries, (long long)run->cfg->model->n);
    if (run->dyn)
        sb_printf(b, "Paramserv task rows:\t\t%lld tasks sent with their rows, %lld without (kept on the rank from "
                  "an earlier epoch).\n", (long long)S->rows.sent, (long long)S->rows.kept);
    ps_traffic_line(b, 0, S->traffic, run->updates);
    tp_shard_stats(run, S->shard, b);
}

static void mpi_free(PsRun *run)
{
    MpiServe *S = run->tps;
    if (!S)
        return;
    for (int i = 0; i < run->k; i++) {
        if (S->mailbox)
            val_release(S->mailbox[i]);
        if (S->parts) {
            if (S->parts[i].X)
                mat_release(S->parts[i].X);
            if (S->parts[i].Y)
                mat_release(S->parts[i].Y);
        }
    }
    pthread_cond_destroy(&S->pump_cv);
    ps_rows_sent_free(&S->rows);
    tp_shard_free(S->shard);
    free(S->parts);
    free(S->mailbox);
    free(S->full);
    free(S->task);
    free(S->heard_push);
    free(S->done);
    free(S->sent);
    tp_groups_free(&S->grp);
    free(S);
    run->tps = NULL;
    atomic_fetch_sub(&mpi_calls, 1);
}

const PsTransportOps ps_tp_mpi = {
    .name = "Open MPI",
    .own_budgets = true,
    .progress_by_push = true,
    .default_k = ps_mpi_workers,
    .check = mpi_check,
    .init = mpi_init,
    .deliver = mpi_deliver,
    .serve = mpi_serve,
    .wake = mpi_wake,
    .stats_cpu = mpi_stats_cpu,
    .stats_net = mpi_stats_net,
    .free = mpi_free,
    .gather = mpi_gather,
    .epoch_model = mpi_epoch_model,
    .applied = mpi_applied,
};
