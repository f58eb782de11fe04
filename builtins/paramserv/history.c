/* SPDX-License-Identifier: Apache-2.0
 * paramserv's training history and its progress line (issue 15).
 *
 * History: the server thread appends one row per completed epoch
 * (epoch_end in server.c); [model, history] = paramserv(...) returns the rows
 * as a matrix, one row per epoch of the call, with the columns of
 * doc/paramserv.md "History" (PS_HIST_*). Epochs that a checkpoint resume
 * skipped have their epoch number and NaN elsewhere (the checkpoint keeps
 * the model, not the history). The server runs on the calling process, also
 * under Open MPI, so the history is built where it is returned.
 *
 * Progress: when the caller's sink can rewrite a line (a terminal,
 * base/diag.h) and verbose=TRUE, a line rewritten in
 * place (\r) with the batches done in the current epoch, their rate and the
 * epoch's ETA, at most PS_PROGRESS_HZ times a second and only once the epoch
 * has run for PS_PROGRESS_AFTER seconds (DML_PROGRESS_AFTER=S in the
 * environment changes that, so a test sees the line on a short run without
 * depending on timing); the epoch line clears it. Under mpirun, rank 0's
 * stderr is a pipe to mpirun, which forwards it to the user's terminal or a
 * log, so neither a terminal nor its absence can be seen: the same text
 * goes as whole lines (no \r, no escapes), one every PS_PROGRESS_PLAIN
 * seconds once the epoch has run that long. Output the user piped or
 * redirected without mpirun gets epoch lines only. Local
 * workers count each batch as they finish it; remote workers (Open MPI
 * ranks) are counted by the server as their pushes arrive. Any of those
 * threads may print; 'prog_mu' orders them with the epoch lines, and
 * 'shown' (under that lock) says whether a line is to clear. Everything
 * goes through the caller's sink: the library itself never prints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/clock.h"
#include "ps.h"
#include "psmpi.h"

#define PS_PROGRESS_HZ 4.0
#define PS_PROGRESS_AFTER 1.0
#define PS_PROGRESS_PLAIN 10.0

Status ps_hist_add(PsRun *run, int64_t e, double secs, double loss, double acc)
{
    PsHistory *h = &run->hist;
    if (h->n == h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 16;
        double *r = realloc(h->rows, sizeof *r * (size_t)(cap * PS_HIST_COLS));
        if (!r)
            return err_set(&run->SI, "out of memory");
        h->rows = r;
        h->cap = cap;
    }
    double *row = h->rows + h->n * PS_HIST_COLS;
    double now = clock_now_sec();
    row[PS_HIST_EPOCH] = (double)e + 1;
    row[PS_HIST_SECONDS] = secs;
    row[PS_HIST_UPDATES] = (double)run->epoch_updates;
    row[PS_HIST_LOSS] = loss;
    row[PS_HIST_ACCURACY] = acc;
    row[PS_HIST_TOTAL] = now - run->t_start;
    row[PS_HIST_BATCHES] = (double)run->batches_per_epoch;
    h->n++;
    return ST_OK;
}

Status ps_hist_matrix(Interp *I, const PsRun *run, Value *out)
{
    const PsHistory *h = &run->hist;
    int64_t skipped = run->start_epoch;
    Matrix *M = mat_alloc(I, skipped + h->n, PS_HIST_COLS);
    if (!M)
        return ST_ERR;
    for (int64_t i = 0; i < skipped; i++) {
        double *row = M->data + i * PS_HIST_COLS;
        for (int j = 0; j < PS_HIST_COLS; j++)
            row[j] = NAN;
        row[PS_HIST_EPOCH] = (double)i + 1;
    }
    if (h->n)
        memcpy(M->data + skipped * PS_HIST_COLS, h->rows, sizeof(double) * (size_t)(h->n * PS_HIST_COLS));
    *out = val_matrix_take(M);
    return ST_OK;
}

void ps_hist_free(PsRun *run)
{
    free(run->hist.rows);
    run->hist.rows = NULL;
    run->hist.n = run->hist.cap = 0;
}

/* ---- progress line ---- */

void ps_progress_init(PsRun *run)
{
    const DiagSink *sink = &run->caller->sink;
    bool tty = sink->rewrite;      /* a terminal: the line is rewritten in place */
    run->progress = run->cfg->verbose && sink->write && (tty || ps_mpi_launched());
    run->prog_plain = !tty;
    run->prog_after = run->prog_plain ? PS_PROGRESS_PLAIN : PS_PROGRESS_AFTER;
    if (run->progress)
        pthread_mutex_init(&run->prog_mu, NULL);
    const char *env = getenv("DML_PROGRESS_AFTER");
    if (env && *env) {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && v >= 0 && v < 1e9)
            run->prog_after = v;
    }
    atomic_store(&run->prog_batches, 0);
    atomic_store(&run->prog_last, 0);
    atomic_store(&run->prog_epoch_t0, run->epoch_t0);
    atomic_store(&run->prog_epoch, run->start_epoch);
}

/* Prints the line when it is time; n batches were just done. */
void ps_progress_add(PsRun *run, int64_t n)
{
    if (!run->progress)
        return;
    atomic_fetch_add_explicit(&run->prog_batches, n, memory_order_relaxed);
    double now = clock_now_sec();
    double t0 = atomic_load(&run->prog_epoch_t0), last = atomic_load(&run->prog_last);
    if (now - t0 < run->prog_after || now - last < (run->prog_plain ? PS_PROGRESS_PLAIN : 1.0 / PS_PROGRESS_HZ))
        return;
    /* One thread wins the slot; the others skip this round. */
    if (!atomic_compare_exchange_strong(&run->prog_last, &last, now))
        return;
    pthread_mutex_lock(&run->prog_mu);
    int64_t e = atomic_load(&run->prog_epoch);
    int64_t total = run->batches_per_epoch;
    int64_t done = atomic_load(&run->prog_batches);
    /* prog_epoch and prog_batches move together at epoch ends, under the
     * lock held here: read under it they are consistent. */
    if (e < run->cfg->epochs && total > 0) {
        if (done > total)
            done = total;   /* ASP/SSP workers already in the next epoch */
        double el = now - atomic_load(&run->prog_epoch_t0);
        double rate = el > 0 ? (double)done / el : 0;
        char eta[32] = "?";
        if (rate > 0) {
            double s = (double)(total - done) / rate;
            if (s >= 3600)
                snprintf(eta, sizeof eta, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
            else if (s >= 60)
                snprintf(eta, sizeof eta, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
            else
                snprintf(eta, sizeof eta, "%.0fs", s);
        }
        /* Short enough for an 80-column terminal: a wrapped line would not
         * be rewritten by \r. */
        diag_note(&run->caller->sink, run->prog_plain ? DIAG_PROGRESS : DIAG_STATUS,
                  "%s[paramserv] epoch %lld/%lld: %lld/%lld batches, %.1f batches/s, ETA %s%s",
                  run->prog_plain ? "" : "\r\033[K", (long long)e + 1, (long long)run->cfg->epochs, (long long)done,
                  (long long)total, rate, eta, run->prog_plain ? "\n" : "");
        run->prog_shown = !run->prog_plain;
    }
    pthread_mutex_unlock(&run->prog_mu);
}

static void ps_progress_clear(PsRun *run)
{
    if (run->prog_shown) {
        diag_note(&run->caller->sink, DIAG_STATUS, "\r\033[K");
        run->prog_shown = false;
    }
}

void ps_progress_epoch_begin(PsRun *run)
{
    if (!run->progress)
        return;
    pthread_mutex_lock(&run->prog_mu);
    ps_progress_clear(run);
}

void ps_progress_epoch_end(PsRun *run, int64_t e)
{
    if (!run->progress)
        return;
    /* Batches of later epochs (asynchronous workers ahead) stay counted. */
    atomic_fetch_sub(&run->prog_batches, run->batches_per_epoch);
    atomic_store(&run->prog_epoch, e + 1);
    atomic_store(&run->prog_epoch_t0, clock_now_sec());
    pthread_mutex_unlock(&run->prog_mu);
}

void ps_progress_finish(PsRun *run)
{
    if (!run->progress)
        return;
    pthread_mutex_lock(&run->prog_mu);
    ps_progress_clear(run);
    pthread_mutex_unlock(&run->prog_mu);
    pthread_mutex_destroy(&run->prog_mu);
}

void ps_progress_push(PsRun *run, const PsWorker *w, const PsMsg *msg)
{
    if (!run->progress || w->groups <= 0)
        return;
    const PsConfig *c = run->cfg;
    int64_t per = c->freq == PS_FREQ_BATCH ? 1 : c->freq == PS_FREQ_NBATCHES ? c->nbatches : w->nbatches;
    int64_t r = (w->pushed - 1) % w->groups;
    int64_t n = msg->batch - r * per;
    ps_progress_add(run, n > 0 ? n : 0);
}
