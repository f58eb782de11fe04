/* SPDX-License-Identifier: Apache-2.0
 * A paramserv worker: loops over the mini-batches of its partition calling
 * upd (and agg for local steps), pulling models from and pushing payloads to
 * the server through the channel (channel.c). The same loop runs on a worker
 * thread of a local run and on a worker rank under Open MPI (mpi_run.c).
 * Each worker's RNG is reseeded from (seed, worker, epoch), so its random
 * stream does not depend on where or when it runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/clock.h"
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
    return eval_function(I, f, bv, bn, m, outs, nout, NULL);
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


/* ---- worker thread ---- */

static Matrix *rows_of(Interp *I, const Matrix *M, int64_t lo, int64_t hi)
{
    Matrix *r = mat_alloc(I, hi - lo, M->cols);
    if (r && (hi - lo) * M->cols > 0)
        memcpy(r->data, M->data + lo * M->cols, sizeof(double) * (size_t)((hi - lo) * M->cols));
    return r;
}

void *ps_worker_main(void *arg)
{
    PsWorker *w = arg;
    PsRun *run = w->run;
    const PsConfig *c = run->cfg;
    Interp *I = &w->I;
    worker_enter(I);
    int64_t n = w->part.X->rows, bs = c->batchsize, B = w->nbatches;
    char who[384];
    int64_t e = run->start_epoch, j = 0;
    for (; e < c->epochs; e++) {
        rng_seed(&I->rng, rng_mix3(c->seed, (uint64_t)w->id + 1, (uint64_t)e));
        j = 0;
        for (int64_t g = 0; g < w->groups; g++) {
            Value m;
            if (ps_pull(w, &m) != ST_OK)
                return NULL;        /* aborted by someone else */
            Value acc = val_none();
            int64_t jend = c->freq == PS_FREQ_BATCH ? j + 1 : c->freq == PS_FREQ_EPOCH ? B : (j + c->nbatches < B ? j + c->nbatches : B);
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
                    Value vals[4] = {m, ps_hyper_arg(c), val_matrix_take(Xb),
                                     val_matrix_take(Yb)};
                    st = ps_call_named(I, c->upd, names, vals, 4, &grad, 1);
                }
                if (Xb)
                    mat_release(Xb);
                if (Yb)
                    mat_release(Yb);
                double t2 = clock_now_sec();
                w->st.compute += t2 - t1;
                w->st.batches++;
                ps_progress_add(run, 1);
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
                bool last = j == jend - 1;
                if (st == ST_OK && (c->model_avg || c->freq == PS_FREQ_NBATCHES || (c->freq == PS_FREQ_EPOCH && !last))) {
                    Value nm;
                    st = ps_call_agg(I, c, m, grad, &nm);
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
                    if (run->where)
                        snprintf(who, sizeof who, "paramserv: worker %d (%s) failed in epoch %lld, batch %lld",
                                 w->id + 1, run->where, (long long)e + 1, (long long)j + 1);
                    else
                        snprintf(who, sizeof who, "paramserv: worker %d failed in epoch %lld, batch %lld", w->id + 1,
                                 (long long)e + 1, (long long)j + 1);
                    ps_fail(run, I, who);
                    return NULL;
                }
            }
            Value payload = c->model_avg ? val_ref(m) : acc;
            val_release(m);
            ps_push_take(w, e, j, payload);     /* j: 1-based number of its last batch */
        }
    }
    return NULL;
}

