/* SPDX-License-Identifier: Apache-2.0
 * One paramserv run (PARAMSERV.md 5, DESIGN.md "paramserv"): partition the
 * data, resume from a checkpoint, start the server thread and have the
 * transport (PsTransportOps, ps.h: threads or Open MPI ranks) run the k
 * workers, join them all and report the first failure or the trained
 * model. Nothing here depends on where the workers run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../runtime/clock.h"
#include "ps.h"

/* The workers SBP's check counts: the partitions, except that under
 * DISJOINT_CONTIGUOUS upstream makes a block only where it starts before
 * the last row (n=2, k=3: one block, so one backup worker is refused).
 * dml trains on every row (doc/paramserv.md), but refuses the SBP calls
 * upstream refuses. */
static int64_t sbp_effective(const PsConfig *c, int64_t np)
{
    int64_t n = c->X->rows;
    if (c->scheme != PS_SCHEME_DC || c->k <= 1 || n < 1)
        return np;
    int64_t step = (n + c->k - 1) / c->k;
    int64_t up = (n - 1 + step - 1) / step;
    return up < np ? up : np;
}

/* A new PsRun of np workers holding the model, resumed from the
 * checkpoint when there is one; NULL (the error set on I) when it cannot
 * be made. Its locks and threads are not set up yet. */
static PsRun *run_new(Interp *I, const PsConfig *c, int64_t np)
{
    PsRun *run = calloc(1, sizeof *run);
    if (!run) {
        err_set(I, "out of memory");
        return NULL;
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
        return NULL;
    }
    return run;
}

/* Sets up the run's locks, the server's interpreter and each worker's
 * shape, then has the transport take the partitions (freed here) and the
 * workers their first model or task. False (the run failed) when the
 * transport could not start. */
static bool run_setup(Interp *I, PsRun *run, PsPart *parts, int64_t np)
{
    const PsConfig *c = run->cfg;
    pthread_mutex_init(&run->mu, NULL);
    pthread_cond_init(&run->server_cv, NULL);
    run->tp = c->tp;
    run->sev.on = c->trace;
    worker_interp_init(&run->SI, I->prog, rng_mix3(c->seed, 0, 0), &run->abort, 0, I->out);
    run->SI.sink = I->sink;
    run->SI.frame = &run->server_top;
    for (int i = 0; i < run->k; i++) {
        PsWorker *w = &run->w[i];
        w->id = i;
        w->rows = parts[i].X->rows;
        ps_worker_shape(c, w->rows, &w->nbatches, &w->groups);
        run->epoch_pushes_needed += w->groups;
        run->batches_per_epoch += w->nbatches;
    }
    bool tp_up = (c->dispatch == PS_DISPATCH_STATIC || ps_dyn_init(run) == ST_OK) &&
                 run->tp->init(run, parts) == ST_OK;
    ps_parts_free(parts, np);
    if (!tp_up)
        ps_fail(run, I, "");
    if (tp_up && run->dyn)
        ps_dyn_start(run);      /* each worker's first task */
    for (int i = 0; tp_up && !run->dyn && i < run->k; i++)
        run->tp->deliver(run, i, val_ref(run->model), NULL);       /* the initial broadcast */
    return tp_up;
}

/* The run's failure as the caller's error: the first line is the
 * message; the failing thread's DML call stack (the following lines)
 * heads the trace of this call. Returns ST_ERR. */
static Status run_failure_error(Interp *I, PsRun *run)
{
    char *nl = strchr(run->failure, '\n');
    if (nl)
        *nl = '\0';
    Status st = err_set(I, "%s", run->failure);
    /* The run stopped for the caller's Ctrl-C: the front ends report
     * an interrupt, not a script error (the REPL, the Jupyter kernel). */
    if (interp_interrupted(I))
        I->err.interrupted = true;
    const char *rest = nl ? nl + 1 : "";
    size_t len = strlen(rest);
    if (len && (I->err.trace = malloc(len + 2)) != NULL) {
        memcpy(I->err.trace, rest, len);
        if (rest[len - 1] != '\n')
            I->err.trace[len++] = '\n';
        I->err.trace[len] = '\0';
        I->err.trace_len = len;
    }
    return st;
}

/* Free everything, including undelivered mail and queued pushes. */
static void run_free(PsRun *run, bool tp_up)
{
    for (int64_t i = 0; i < run->ninbox; i++)
        val_release(run->inbox[i].payload);
    free(run->inbox);
    if (tp_up)
        run->tp->free(run);
    ps_dyn_free(run);
    for (int i = 0; i < run->k; i++) {
        val_release(run->w[i].slot);
        free(run->w[i].where);
        ps_ev_free(&run->w[i].ev);
    }
    ps_ev_free(&run->sev);
    val_release(run->model);
    interp_destroy(&run->SI);
    pthread_cond_destroy(&run->server_cv);
    pthread_mutex_destroy(&run->mu);
    free(run->failure);
    ps_epochs_free(&run->epochs);
    ps_hist_free(run);
    free(run->w);
    free(run);
}

Status ps_run(Interp *I, const PsConfig *c, Value *out, Value *hist)
{
    double t0 = clock_now_sec(), cpu0 = ps_process_cpu();
    PsPart *parts = NULL;
    int64_t np = 0;
    TRY(ps_partition(I, c, &parts, &np));
    if (np == 0) {
        ps_parts_free(parts, np);
        return err_set(I, "paramserv: features has no rows to train on");
    }
    if (np < c->k && c->verbose)
        diag_note(&I->sink, DIAG_WARNING, "[paramserv] warning: there are only %lld partitions of data for %lld "
                  "workers; using %lld workers\n", (long long)np, (long long)c->k, (long long)np);
    if (c->utype == PS_UTYPE_SBP && sbp_effective(c, np) <= c->backup) {
        ps_parts_free(parts, np);
        return err_set(I, "Effective number of workers is smaller or equal to the number of backup workers. Change "
                       "partitioning scheme to OVERLAP_RESHUFFLE, decrease number of backup workers or increase "
                       "number of rows in dataset.");
    }
    PsRun *run = run_new(I, c, np);
    if (!run) {
        ps_parts_free(parts, np);
        return ST_ERR;
    }
    Status st = ST_OK;
    bool tp_up = run_setup(I, run, parts, np);
    ps_epochs_init(&run->epochs, run->epoch_pushes_needed, run->start_epoch);

    run->t_start = run->epoch_t0 = clock_now_sec();
    ps_progress_init(run);
    pthread_t server;
    bool server_up = false;
    if (tp_up && run->start_epoch < c->epochs) {
        server_up = worker_start(&server, ps_server_main, run);
        if (!server_up) {
            err_set(I, "paramserv: cannot start threads");
            ps_fail(run, I, "");
        } else {
            run->tp->serve(run);
        }
    }
    if (server_up) {
        /* Workers are gone; wake the server in case it waits for pushes
         * that will never come (only possible after an abort). */
        pthread_mutex_lock(&run->mu);
        pthread_cond_broadcast(&run->server_cv);
        pthread_mutex_unlock(&run->mu);
        pthread_join(server, NULL);
    }
    ps_progress_finish(run);

    if (run->failure) {
        st = run_failure_error(I, run);
    } else if (run->tp->gather && run->tp->gather(run) != ST_OK) {
        st = ST_ERR;
    } else if (hist && ps_hist_matrix(I, run, hist) != ST_OK) {
        st = ST_ERR;
    } else if (ps_record_finish(I, c) != ST_OK || ps_trace_write(I, run) != ST_OK) {
        st = ST_ERR;
        if (hist) {
            val_release(*hist);
            *hist = val_none();
        }
    } else {
        *out = run->model;
        run->model = val_none();
        ps_report_stats(run, clock_now_sec() - t0, ps_process_cpu() - cpu0);
    }
    run_free(run, tp_up);
    return st;
}

