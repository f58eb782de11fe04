/* SPDX-License-Identifier: Apache-2.0
 * The payloads of paramserv's Open MPI messages (msg.h). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "msg.h"
#include "params.h"

bool ps_call_xfer(WIO *x, CallMsg *m)
{
    /* A count past what the rest of the message can hold is malformed
     * ('bad'), not a lack of memory. */
    wio_str(x, &m->main_path);
    wio_text(x, &m->main_text, &m->main_len);
    wio_i64(x, &m->nargs);
    if (x->r) {
        /* Each arg takes at least two lengths of the message. */
        if (x->r->bad || m->nargs < 0 || (size_t)m->nargs > (x->r->len - x->r->pos) / 16) {
            x->r->bad = true;
            return false;
        }
        m->args = calloc((size_t)m->nargs + 1, sizeof *m->args);
        if (!m->args) {
            x->r->bad = x->r->oom = true;
            return false;
        }
    }
    for (int64_t i = 0; i < m->nargs; i++) {
        wio_str(x, &m->args[i].name);
        wio_str(x, &m->args[i].text);
    }
    wio_i64(x, &m->nfiles);
    if (x->r) {
        /* ... and each file three. */
        if (x->r->bad || m->nfiles < 0 || (size_t)m->nfiles > (x->r->len - x->r->pos) / 24) {
            x->r->bad = true;
            return false;
        }
        m->files = calloc((size_t)m->nfiles + 1, sizeof *m->files);
        if (!m->files) {
            x->r->bad = x->r->oom = true;
            return false;
        }
    }
    for (int64_t i = 0; i < m->nfiles; i++) {
        wio_str(x, &m->files[i].key);
        wio_str(x, &m->files[i].path);
        wio_text(x, &m->files[i].text, &m->files[i].len);
    }
    wio_str(x, &m->upd_key);
    wio_str(x, &m->upd_name);
    wio_str(x, &m->agg_key);
    wio_str(x, &m->agg_name);
    wio_str(x, &m->agg_spec);
    ps_options_xfer(x, &m->opt);
    wio_i64(x, &m->start_epoch);
    wio_i64(x, &m->opt.slow_worker);
    wio_f64(x, &m->opt.slow_factor);
    int64_t trace = m->opt.trace;
    wio_i64(x, &trace);
    m->opt.trace = trace != 0;
    wio_value(x, &m->hyper);
    return true;
}

void ps_call_free(CallMsg *m)
{
    for (int64_t i = 0; m->files && i < m->nfiles; i++) {
        free((char *)m->files[i].key);
        free((char *)m->files[i].path);
        free((char *)m->files[i].text);
    }
    free(m->files);
    for (int64_t i = 0; m->args && i < m->nargs; i++) {
        free((char *)m->args[i].name);
        free((char *)m->args[i].text);
    }
    free(m->args);
    free((char *)m->main_path);
    free((char *)m->main_text);
    free((char *)m->upd_key);
    free((char *)m->upd_name);
    free((char *)m->agg_key);
    free((char *)m->agg_name);
    free((char *)m->agg_spec);
    val_release(m->hyper);
}

void ps_part_xfer(WIO *x, int64_t *id, int64_t *k)
{
    wio_i64(x, id);
    wio_i64(x, k);
}

void ps_stats_xfer(WIO *x, PsWorkerStats *s)
{
    wio_f64(x, &s->compute);
    wio_f64(x, &s->local_agg);
    wio_f64(x, &s->wait);
    wio_f64(x, &s->slice);
    wio_f64(x, &s->cpu);
    wio_i64(x, &s->pulls);
    wio_i64(x, &s->pushes);
    wio_i64(x, &s->batches);
    wio_u64(x, &s->bytes_pulled);
    wio_u64(x, &s->bytes_pushed);
}

bool ps_stats_read(WRead *r, PsWorkerStats *s)
{
    ps_stats_xfer(&(WIO){.r = r}, s);
    const double t[] = {s->compute, s->local_agg, s->wait, s->slice, s->cpu};
    const int64_t lim = (int64_t)1 << 53;
    bool ok = !r->bad && s->pulls >= 0 && s->pulls <= lim && s->pushes >= 0 && s->pushes <= lim &&
              s->batches >= 0 && s->batches <= lim && s->bytes_pulled <= (uint64_t)lim &&
              s->bytes_pushed <= (uint64_t)lim;
    for (int i = 0; i < 5 && ok; i++)
        ok = isfinite(t[i]) && t[i] >= 0;
    if (!ok)
        *s = (PsWorkerStats){0};
    return ok;
}

/* Whether every string the worker rank hands on (to the loader, which
 * takes them for C strings) was there, not written as absent. */
static bool call_strings(const CallMsg *m)
{
    if (!m->main_path || !m->main_text || !m->upd_key || !m->upd_name || !m->agg_key || !m->agg_name)
        return false;
    for (int64_t i = 0; i < m->nargs; i++)
        if (!m->args[i].name || !m->args[i].text)
            return false;
    for (int64_t i = 0; i < m->nfiles; i++)
        if (!m->files[i].key || !m->files[i].path || !m->files[i].text)
            return false;
    return true;
}

const char *ps_call_read(WRead *rd, CallMsg *m, Value part, int64_t *id)
{
    static const char malformed[] = "malformed paramserv call", oom[] = "out of memory";
    *m = (CallMsg){.hyper = val_none()};
    *id = 0;
    if (!ps_call_xfer(&(WIO){.r = rd}, m))
        return rd->bad && !rd->oom ? malformed : oom;
    int64_t i = 0, k = 0;
    ps_part_xfer(&(WIO){.r = rd}, &i, &k);
    if (rd->bad)
        return rd->oom ? oom : malformed;
    if (i >= 0 && i <= INT_MAX)
        *id = i;
    m->k = k;
    List *pl = part.kind == VAL_LIST ? part.l : NULL;
    if (!call_strings(m) || !pl || pl->n != 2 || pl->items[0].kind != VAL_MATRIX ||
        pl->items[1].kind != VAL_MATRIX || pl->items[0].m->rows != pl->items[1].m->rows || m->nargs > INT_MAX ||
        m->nfiles > INT_MAX || !ps_options_valid(&m->opt) || m->start_epoch < 0 || k <= 0 || k > INT_MAX || i < 0 ||
        i >= k || !isfinite(m->opt.slow_factor))
        return malformed;
    /* Under DYNAMIC the partition is empty: the rows come with each task
     * (ps_task_read). */
    if (m->opt.dispatch == PS_DISPATCH_DYNAMIC)
        return NULL;
    int64_t rows = pl->items[0].m->rows > 0 ? pl->items[0].m->rows : 1;
    if (m->opt.batchsize > rows)
        m->opt.batchsize = rows;
    if (m->opt.nbatches > rows)
        m->opt.nbatches = rows;
    return NULL;
}

Value ps_task_value(Value model, Matrix *X, Matrix *Y, const PsTask *t)
{
    Matrix *meta = mat_new_raw(1, 4);
    List *l = list_new(4, false);
    if (!meta || !l) {
        mat_release(meta);
        list_release(l);
        mat_release(X);
        mat_release(Y);
        return val_none();
    }
    meta->data[0] = (double)t->part;
    meta->data[1] = (double)t->group;
    meta->data[2] = (double)t->id;
    meta->data[3] = (double)t->j0;
    bool ok = list_push(l, model, NULL);
    ok = list_push_take(l, val_matrix_take(X), NULL) && ok;
    ok = list_push_take(l, val_matrix_take(Y), NULL) && ok;
    ok = list_push_take(l, val_matrix_take(meta), NULL) && ok;
    if (!ok) {
        list_release(l);
        return val_none();
    }
    return val_list_take(l);
}

bool ps_task_read(Value v, int64_t epoch, int64_t batchsize, Value *model, PsTask *t)
{
    *model = val_none();
    *t = (PsTask){.epoch = -1};
    const List *l = v.kind == VAL_LIST ? v.l : NULL;
    if (!l || l->n != 4 || l->items[0].kind != VAL_LIST || l->items[1].kind != VAL_MATRIX ||
        l->items[2].kind != VAL_MATRIX || l->items[3].kind != VAL_MATRIX || epoch < 0 || batchsize < 1)
        return false;
    Matrix *X = l->items[1].m, *Y = l->items[2].m, *meta = l->items[3].m;
    if (X->rows != Y->rows || X->rows < 1 || mat_len(meta) != 4)
        return false;
    int64_t f[4];
    for (int i = 0; i < 4; i++) {
        double d = meta->data[i];
        if (!(d >= 0 && d <= 0x1p53 && d == (double)(int64_t)d))
            return false;
        f[i] = (int64_t)d;
    }
    int64_t rows = X->rows, nb = rows / batchsize + (rows % batchsize != 0);
    *t = (PsTask){.epoch = epoch, .part = f[0], .group = f[1], .id = f[2], .j0 = f[3], .j1 = f[3] + nb,
                  .X = X, .Y = Y, .row0 = 0, .row1 = rows};
    val_ref(l->items[1]);
    val_ref(l->items[2]);
    *model = val_ref(l->items[0]);
    return true;
}
