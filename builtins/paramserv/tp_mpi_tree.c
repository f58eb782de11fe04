/* SPDX-License-Identifier: Apache-2.0
 * Worker groups and the reduction tree of the Open MPI transport: see
 * tp_mpi_tree.h; the order of the sums is tree.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/failalloc.h"
#include "../../runtime/workers.h"
#include "tp_mpi.h"
#include "tp_mpi_tree.h"

/* ---- groups ---- */

bool tp_groups_init(TpGroups *g, int64_t k, int64_t ranks)
{
    int64_t most = ranks < k ? ranks : k;
    g->k = k;
    g->n = 0;
    g->first = malloc(sizeof *g->first * (size_t)(most + 1));
    if (!g->first)
        return false;
    g->n = ps_tree_groups(k, most, g->first);
    g->first[g->n] = k;
    return true;
}

void tp_groups_free(TpGroups *g)
{
    free(g->first);
    g->first = NULL;
    g->n = 0;
}

int64_t tp_group_of(const TpGroups *g, int64_t w)
{
    int64_t lo = 0, hi = g->n;      /* first[lo] <= w < first[hi] */
    while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (g->first[mid] <= w)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ---- models ---- */

enum { TREE_MIN = 3 };   /* fewer ranks than this: direct sends (tp_mpi.h) */

/* One message: the model for the pairs [0, n) to the first pair's rank,
 * which passes it on to the other ranks named. */
static bool send_one(Value model, const int *pairs, int n, int64_t seq, int shard)
{
    Matrix *fwd = mat_new_raw(2, n);
    List *l = list_new(2, false);
    bool ok = fwd && l && list_push(l, model, NULL);
    if (ok) {
        for (int i = 0; i < n; i++) {
            fwd->data[i] = pairs[2 * i];
            fwd->data[n + i] = pairs[2 * i + 1];
        }
        ok = list_push_take(l, val_matrix_take(fwd), NULL);
        fwd = NULL;
    }
    if (!ok) {
        mat_release(fwd);
        list_release(l);
        return false;
    }
    Value v = val_list_take(l);
    ok = mpi_send_value(pairs[0], MM_MODEL_TREE, pairs[1], shard, seq, v);
    val_release(v);
    return ok;
}

/* The pairs of the first rank of pairs[0..n). */
static int rank_run(const int *pairs, int n)
{
    int j = 1;
    while (j < n && pairs[2 * j] == pairs[0])
        j++;
    return j;
}

bool tp_mpi_send_models(Value model, const int *pairs, int n, bool tree, int64_t seq, int shard)
{
    int ranks = 0;
    for (int i = 0; i < n; i += rank_run(pairs + 2 * i, n - i))
        ranks++;
    if (!tree || ranks < TREE_MIN) {
        for (int i = 0; i < n;) {
            int j = rank_run(pairs + 2 * i, n - i);
            if (!send_one(model, pairs + 2 * i, j, seq, shard))
                return false;
            i += j;
        }
        return true;
    }
    /* Two halves by ranks; the first rank of each passes its half on. */
    int half = (ranks + 1) / 2, at = 0;
    for (int r = 0; r < half; r++)
        at += rank_run(pairs + 2 * at, n - at);
    return send_one(model, pairs, at, seq, shard) && send_one(model, pairs + 2 * at, n - at, seq, shard);
}

bool tp_models_read(Value v, int self, int size, int64_t lo, int64_t hi, int **rest, int *nrest, int **mine,
                    int *nmine)
{
    *rest = *mine = NULL;
    *nrest = *nmine = 0;
    List *l = v.kind == VAL_LIST ? v.l : NULL;
    Matrix *fwd = l && l->n == 2 && l->items[0].kind == VAL_LIST && l->items[1].kind == VAL_MATRIX
                      ? l->items[1].m : NULL;
    int64_t n = fwd && fwd->rows == 2 ? fwd->cols : 0;
    int *pairs = n > 0 && n < INT32_MAX / 2 ? malloc(sizeof *pairs * (size_t)(2 * n)) : NULL;
    int *own = pairs ? malloc(sizeof *own * (size_t)n) : NULL;
    bool ok = pairs && own;
    int nown = 0, nr = 0;
    /* Sorted by rank, this rank's pairs first, a worker at most once. */
    for (int64_t i = 0; ok && i < n; i++) {
        double r = fwd->data[i], w = fwd->data[n + i];
        if (!(r >= 1 && r < size && r == (int)r && w >= 0 && w < 2147483647.0 && w == (int)w) ||
            (i > 0 && r < fwd->data[i - 1]) || (i > 0 && r == fwd->data[i - 1] && w <= fwd->data[n + i - 1])) {
            ok = false;
        } else if ((int)r == self) {
            ok = i == nown && w >= lo && w < hi;
            own[nown++] = (int)w;
        } else {
            pairs[2 * nr] = (int)r;
            pairs[2 * nr + 1] = (int)w;
            nr++;
        }
    }
    if (!ok || nown == 0) {
        free(pairs);
        free(own);
        return false;
    }
    *rest = pairs;
    *nrest = nr;
    *mine = own;
    *nmine = nown;
    return true;
}

bool tp_mpi_take_models(Value v, int self, int size, int64_t lo, int64_t hi, int64_t seq, int shard, Value *model,
                        int **mine, int *nmine, bool *mpi_err)
{
    *model = val_none();
    *mpi_err = false;
    int *rest;
    int nrest;
    bool ok = tp_models_read(v, self, size, lo, hi, &rest, &nrest, mine, nmine);
    if (ok && nrest > 0 && !tp_mpi_send_models(v.l->items[0], rest, nrest, true, seq, shard)) {
        *mpi_err = true;
        ok = false;
        free(*mine);
        *mine = NULL;
        *nmine = 0;
    }
    free(rest);
    if (ok)
        *model = val_ref(v.l->items[0]);
    val_release(v);
    return ok;
}

/* ---- sums ---- */

bool tp_push_sum_read(MpiMsg *m, int64_t k, int64_t seq, Value *sum, int64_t **w, int64_t **b, int64_t *n)
{
    *sum = val_none();
    *w = *b = NULL;
    *n = 0;
    Value v = m->value;
    m->value = val_none();
    List *l = v.kind == VAL_LIST ? v.l : NULL;
    Matrix *meta = l && l->n == 2 && l->items[0].kind == VAL_LIST && l->items[1].kind == VAL_MATRIX
                       ? l->items[1].m : NULL;
    int64_t len = meta ? mat_len(meta) : 0;
    int64_t cnt = len >= 3 && len % 2 == 1 ? (len - 1) / 2 : 0;
    bool ok = cnt > 0 && cnt <= k && meta->data[0] == (double)seq;
    int64_t *ws = ok ? malloc(sizeof *ws * (size_t)cnt) : NULL;
    int64_t *bs = ok ? malloc(sizeof *bs * (size_t)cnt) : NULL;
    bool *seen = ok ? calloc((size_t)k, sizeof *seen) : NULL;
    ok = ok && ws && bs && seen;
    for (int64_t i = 0; ok && i < cnt; i++) {
        double wd = meta->data[1 + 2 * i], bd = meta->data[2 + 2 * i];
        ok = wd >= 0 && wd < (double)k && wd == (double)(int64_t)wd && bd >= 1 && bd < 9e15 &&
             bd == (double)(int64_t)bd && !seen[(int64_t)wd];
        if (ok) {
            ws[i] = (int64_t)wd;
            bs[i] = (int64_t)bd;
            seen[ws[i]] = true;
        }
    }
    free(seen);
    if (!ok) {
        free(ws);
        free(bs);
        val_release(v);
        return false;
    }
    *sum = val_ref(l->items[0]);
    val_release(v);
    *w = ws;
    *b = bs;
    *n = cnt;
    return true;
}

/* A node of the tree above the rank's group whose right half comes from a
 * peer. */
typedef struct RecvNode {
    int64_t lo, hi;             /* the right half's workers */
    int rank;                   /* the peer that sends its sum */
    bool full;
    Value sum;                  /* its sum this round */
    int64_t epoch, round;
    Matrix *meta;               /* [seq, w1, b1, ...] as it came */
} RecvNode;

struct TpReduce {
    Interp I;
    CallFrame top;
    int64_t k, lo, hi;          /* the rank's workers [lo, hi) */
    int64_t *groups;            /* pushes per epoch of each worker */
    int64_t maxg, epochs;       /* rounds per epoch, epochs to go */
    int64_t start_epoch, seq;
    int64_t e, r;               /* the round under way (e relative to start_epoch) */
    Value *slot;                /* the rank's workers' pushes this round */
    int64_t *batch;
    RecvNode *recv;
    int nrecv;
    int dest;                   /* where the rank's sum goes (0: the root's half, to the servers) */
    int S;                      /* servers=S: a root half goes cut in S ranges to ranks 0..S-1 */
};

TpReduce *tp_reduce_new(Program *prog, const TpGroups *g, int64_t group, int wr0, int servers, const int64_t *groups,
                        int64_t epochs, int64_t start_epoch, int64_t seq, atomic_int *abort, int threads, FILE *out)
{
    TpReduce *R = calloc(1, sizeof *R);
    if (!R)
        return NULL;
    int64_t k = g->k;
    R->k = k;
    R->lo = g->first[group];
    R->hi = g->first[group + 1];
    R->epochs = epochs - start_epoch;
    R->start_epoch = start_epoch;
    R->seq = seq;
    R->S = servers > 1 ? servers : 1;
    R->groups = malloc(sizeof *R->groups * (size_t)k);
    R->slot = calloc((size_t)(R->hi - R->lo), sizeof *R->slot);
    R->batch = calloc((size_t)(R->hi - R->lo), sizeof *R->batch);
    R->recv = calloc(64, sizeof *R->recv);
    if (!R->groups || !R->slot || !R->batch || !R->recv) {
        free(R->groups);
        free(R->slot);
        free(R->batch);
        free(R->recv);
        free(R);
        return NULL;
    }
    memcpy(R->groups, groups, sizeof *groups * (size_t)k);
    for (int64_t i = 0; i < k; i++)
        if (groups[i] > R->maxg)
            R->maxg = groups[i];
    /* The path from the root down to the group, then up again: each node
     * whose first worker is the group's adds its right half; the first that
     * is not (or the root) receives the sum. */
    int64_t path_lo[64], path_hi[64];
    int d = 0;
    int64_t lo = 0, hi = k;
    while (!(lo == R->lo && hi == R->hi) && d < 64) {
        path_lo[d] = lo;
        path_hi[d] = hi;
        d++;
        int64_t mid = ps_tree_mid(lo, hi);
        if (R->lo < mid)
            hi = mid;
        else
            lo = mid;
    }
    R->dest = 0;
    for (int i = d - 1; i >= 1; i--) {
        if (path_lo[i] != R->lo) {
            R->dest = (int)tp_group_of(g, path_lo[i]) + wr0;
            break;
        }
        RecvNode *n = &R->recv[R->nrecv++];
        n->lo = ps_tree_mid(path_lo[i], path_hi[i]);
        n->hi = path_hi[i];
        n->rank = (int)tp_group_of(g, n->lo) + wr0;
        n->sum = val_none();
    }
    for (int64_t i = 0; i < R->hi - R->lo; i++)
        R->slot[i] = val_none();
    worker_interp_init(&R->I, prog, 0, abort, threads, out);
    R->I.frame = &R->top;
    return R;
}

/* Whether a worker of [lo, hi) pushes in round r of an epoch. */
static bool takes_part(const TpReduce *R, int64_t lo, int64_t hi, int64_t r)
{
    for (int64_t w = lo; w < hi; w++)
        if (r < R->groups[w])
            return true;
    return false;
}

static char *msgf(const char *fmt, long long a, long long b, long long c)
{
    char buf[256];
    snprintf(buf, sizeof buf, fmt, a, b, c);
    return failalloc_msg_dup(buf);
}

bool tp_reduce_push(TpReduce *R, PsMsg *m, char **err)
{
    int64_t w = m->worker;
    Value payload = m->payload;
    m->payload = val_none();
    if (w < R->lo || w >= R->hi || R->slot[w - R->lo].kind != VAL_NONE || R->groups[w] <= 0) {
        val_release(payload);
        *err = msgf("paramserv: worker %lld pushed twice in a round (epoch %lld, batch %lld)", w + 1,
                    (long long)m->epoch + 1, (long long)m->batch);
        return false;
    }
    R->slot[w - R->lo] = payload;
    R->batch[w - R->lo] = m->batch;
    return true;
}

bool tp_reduce_child(TpReduce *R, MpiMsg *m, char **err)
{
    Value v = m->value;
    m->value = val_none();
    List *l = v.kind == VAL_LIST ? v.l : NULL;
    Matrix *meta = l && l->n == 2 && l->items[0].kind == VAL_LIST && l->items[1].kind == VAL_MATRIX
                       ? l->items[1].m : NULL;
    if (meta && mat_len(meta) >= 1 && meta->data[0] != (double)R->seq) {
        val_release(v);         /* an earlier call's, sent before it ended */
        return true;
    }
    RecvNode *n = NULL;
    for (int i = 0; i < R->nrecv; i++)
        if (R->recv[i].rank == m->src)
            n = &R->recv[i];
    if (!n || !meta || n->full || mat_len(meta) < 3 || mat_len(meta) % 2 != 1) {
        val_release(v);
        *err = msgf("paramserv: a malformed sum of pushes from rank %lld (epoch %lld, round %lld)", m->src,
                    (long long)m->epoch + 1, (long long)m->batch + 1);
        return false;
    }
    n->full = true;
    n->sum = val_ref(l->items[0]);
    n->meta = meta;
    val_ref(l->items[1]);
    n->epoch = m->epoch;
    n->round = m->batch;
    val_release(v);
    return true;
}

/* The round under way has no part here: move on. */
static void next_round(TpReduce *R)
{
    if (++R->r >= R->maxg) {
        R->r = 0;
        R->e++;
    }
}

bool tp_reduce_finished(const TpReduce *R)
{
    return R->e >= R->epochs || R->maxg == 0;
}

/* One MM_PUSH_SUM to 'dest': list(sum, [seq, w1, b1, ...]), the sum
 * taken. False with *err set when out of memory, NULL on an MPI error. */
static bool send_one_sum(TpReduce *R, int dest, Value acc, const int64_t *w, const int64_t *b, int64_t n,
                         int64_t epoch, char **err)
{
    Matrix *meta = mat_new_raw(1, 1 + 2 * n);
    List *l = list_new(2, false);
    bool ok = meta && l && list_push_take(l, acc, NULL);
    if (!ok)
        val_release(acc);
    if (ok) {
        meta->data[0] = (double)R->seq;
        for (int64_t i = 0; i < n; i++) {
            meta->data[1 + 2 * i] = (double)w[i];
            meta->data[2 + 2 * i] = (double)b[i];
        }
        ok = list_push_take(l, val_matrix_take(meta), NULL);
        meta = NULL;
    }
    if (!ok) {
        mat_release(meta);
        list_release(l);
        *err = failalloc_msg_dup("paramserv: out of memory sending a sum of pushes");
        return false;
    }
    Value v = val_list_take(l);
    ok = mpi_send_value(dest, MM_PUSH_SUM, (int)w[0], epoch, R->r, v);
    val_release(v);
    return ok;
}

/* Sends the round's sum (taken) with the workers it covers: to the next
 * rank up the tree, or, a half of the root, to rank 0; with servers=S,
 * cut into the S shards' ranges, range s to server rank s (the sum of a
 * range is the range of the sum: each cell is added alone). */
static bool send_sum(TpReduce *R, Value acc, const int64_t *w, const int64_t *b, int64_t n, int64_t epoch,
                     char **err)
{
    if (R->dest != 0 || R->S <= 1 || acc.kind != VAL_LIST)
        return send_one_sum(R, R->dest, acc, w, b, n, epoch, err);
    bool ok = true;
    for (int s = 0; s < R->S && ok; s++) {
        Value part = tp_shard_cut(acc.l, s, R->S);
        if (part.kind == VAL_NONE) {
            *err = failalloc_msg_dup("paramserv: out of memory sending a sum of pushes");
            ok = false;
            break;
        }
        ok = send_one_sum(R, s, part, w, b, n, epoch, err);
    }
    val_release(acc);
    return ok;
}

/* The round under way, when everything is in: 1 sent, 0 waiting, -1
 * failed. */
static int complete(TpReduce *R, char **err)
{
    int64_t nw = R->hi - R->lo;
    int64_t epoch = R->start_epoch + R->e;
    for (int64_t i = 0; i < nw; i++)
        if (R->r < R->groups[R->lo + i] && R->slot[i].kind == VAL_NONE)
            return 0;
    int64_t cover = 0;
    for (int64_t i = 0; i < nw; i++)
        cover += R->r < R->groups[R->lo + i];
    for (int i = 0; i < R->nrecv; i++) {
        RecvNode *n = &R->recv[i];
        if (!takes_part(R, n->lo, n->hi, R->r))
            continue;
        if (!n->full)
            return 0;
        if (n->epoch != epoch || n->round != R->r) {
            *err = msgf("paramserv: rank %lld sent the sum of epoch %lld, round %lld out of turn", n->rank,
                        (long long)n->epoch + 1, (long long)n->round + 1);
            return -1;
        }
        cover += (mat_len(n->meta) - 1) / 2;
    }
    int64_t *w = malloc(sizeof *w * (size_t)(cover + 1)), *b = malloc(sizeof *b * (size_t)(cover + 1));
    if (!w || !b) {
        free(w);
        free(b);
        *err = failalloc_msg_dup("paramserv: out of memory adding pushes");
        return -1;
    }
    int64_t c = 0;
    for (int64_t i = 0; i < nw; i++)
        if (R->r < R->groups[R->lo + i]) {
            w[c] = R->lo + i;
            b[c++] = R->batch[i];
        }
    Value acc;
    Status st = ps_tree_sum_take(&R->I, R->slot, 0, nw, &acc);
    for (int i = 0; i < R->nrecv && st == ST_OK; i++) {
        RecvNode *n = &R->recv[i];
        if (!n->full)
            continue;
        for (int64_t j = 0; j < (mat_len(n->meta) - 1) / 2; j++) {
            w[c] = (int64_t)n->meta->data[1 + 2 * j];
            b[c++] = (int64_t)n->meta->data[2 + 2 * j];
        }
        Value pair[2] = {acc, n->sum};
        n->sum = val_none();
        if (acc.kind == VAL_NONE)
            acc = pair[1];
        else
            st = ps_list_sum_take(&R->I, pair, 2, &acc);
    }
    for (int i = 0; i < R->nrecv; i++) {
        RecvNode *n = &R->recv[i];
        val_release(n->sum);
        n->sum = val_none();
        mat_release(n->meta);
        n->meta = NULL;
        n->full = false;
    }
    int rc = 0;
    if (st != ST_OK) {
        err_finish_trace(&R->I);
        char *why = err_format(&R->I);
        size_t len = (why ? strlen(why) : 0) + 160;
        *err = malloc(len);
        if (*err)
            snprintf(*err, len, "paramserv: adding the pushes of epoch %lld, round %lld on rank %d failed: %s",
                     (long long)epoch + 1, (long long)R->r + 1, mpi_rank(), why ? why : "out of memory");
        else
            *err = failalloc_msg_dup("paramserv: out of memory adding pushes");
        free(why);
        err_clear(&R->I);
        rc = -1;
    } else if (c > 0) {
        *err = NULL;
        rc = send_sum(R, acc, w, b, c, epoch, err) ? 1 : -1;
    } else {
        val_release(acc);
    }
    free(w);
    free(b);
    if (rc >= 0)
        next_round(R);
    return rc;
}

int tp_reduce_step(TpReduce *R, char **err)
{
    *err = NULL;
    int sent = 0;
    while (!tp_reduce_finished(R)) {
        bool mine = takes_part(R, R->lo, R->hi, R->r);
        for (int i = 0; !mine && i < R->nrecv; i++)
            mine = takes_part(R, R->recv[i].lo, R->recv[i].hi, R->r);
        if (!mine) {
            next_round(R);
            continue;
        }
        int rc = complete(R, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break;
        sent = 1;
    }
    return sent;
}

void tp_reduce_free(TpReduce *R)
{
    if (!R)
        return;
    for (int64_t i = 0; i < R->hi - R->lo; i++)
        val_release(R->slot[i]);
    for (int i = 0; i < R->nrecv; i++) {
        val_release(R->recv[i].sum);
        mat_release(R->recv[i].meta);
    }
    for (int s = 0; s < R->top.nslots; s++)
        val_release(R->top.slots[s]);
    free(R->top.slots);
    interp_destroy(&R->I);
    free(R->groups);
    free(R->slot);
    free(R->batch);
    free(R->recv);
    free(R);
}

void tp_push_sum_enqueue(PsRun *run, const int64_t *w, const int64_t *b, int64_t n, int64_t epoch, Value sum)
{
    for (int64_t j = 0; j < n; j++) {
        Value p = j == 0 ? sum : val_none();
        if (ps_enqueue_push_take(run, (int)w[j], epoch, b[j], p) != ST_OK) {
            ps_fail_msg(run, "paramserv: out of memory queueing a push");
            return;
        }
    }
}
