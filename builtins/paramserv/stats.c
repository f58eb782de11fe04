/* SPDX-License-Identifier: Apache-2.0
 * paramserv statistics for --stats: the upstream lines (PARAMSERV.md 8)
 * with the sums over all workers, then bytes moved and one line per worker.
 * Called on the caller's thread after every server and worker is done. */
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/stats.h"
#include "../../runtime/blas.h"
#include "ps.h"

/* Appends the paramserv block of --stats (PARAMSERV.md 8, plus our own
 * lines) for a finished run to the caller's report. Worker statistics of a
 * remote run came back with each rank's last message. */
void ps_report_stats(PsRun *run, double total, double cpu)
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
        sum.cpu += s->cpu;
        sum.pulls += s->pulls;
        sum.pushes += s->pushes;
        sum.bytes_pulled += s->bytes_pulled;
        sum.bytes_pushed += s->bytes_pushed;
    }
    sb_printf(b, "Paramserv total execution time:\t%.3f secs.\n", total);
    sb_printf(b, "Paramserv total num workers:\t%d.\n", run->k);
    /* What the call cost the machine(s), comparable between the backends:
     * threads share one process; ranks each have their own. */
    if (run->remote)
        sb_printf(b, "Paramserv CPU time:\t\t%.3f secs (rank 0 %.3f + worker ranks %.3f, user + system).\n",
                  cpu + sum.cpu, cpu, sum.cpu);
    else
        sb_printf(b, "Paramserv CPU time:\t\t%.3f secs (server and %d worker threads, user + system).\n", cpu,
                  run->k);
    if (!run->remote)
        sb_printf(b, "Paramserv threads per worker:\t%d (budget %d over %d workers).\n", blas_budget_share(run->k),
                  blas_budget_total(), run->k);
    sb_printf(b, "Paramserv grad compute time:\t%.3f secs.\n", sum.compute);
    sb_printf(b, "Paramserv model update time:\t%.3f/%.3f secs.\n", sum.local_agg, run->agg_time);
    if (!run->remote || run->update_threads > 0)
        sb_printf(b, "Paramserv server updates:\t%.3f secs adding gradients; kernel threads per update: %d.\n",
                  run->sum_time, run->update_threads > 0 ? run->update_threads : 1);
    sb_printf(b, "Paramserv batch slice time:\t%.3f secs.\n", sum.slice);
    sb_printf(b, "Paramserv valdiation time:\t%.3f secs.\n", run->val_time);
    sb_printf(b, "Paramserv checkpoint time:\t%.3f secs.\n", run->ckpt_time);
    sb_printf(b, "Paramserv pulls/pushes:\t\t%lld/%lld.\n", (long long)sum.pulls, (long long)sum.pushes);
    if (run->remote) {
        sb_printf(b, "Paramserv RPC request time:\t%.3f secs.\n", run->rpc_time);
        sb_printf(b, "Paramserv network bytes:\t%llu pulled, %llu pushed (Open MPI, %d worker ranks).\n",
                  (unsigned long long)sum.bytes_pulled, (unsigned long long)sum.bytes_pushed, run->k);
        if (run->pull_entries >= 0)
            sb_printf(b, "Paramserv pulled entries:\t%lld of the model's %lld (those the workers' functions read).\n",
                      (long long)run->pull_entries, (long long)run->cfg->model->n);
    } else {
        /* Threads share the whole model; over Open MPI a pull would carry
         * only the entries the workers' functions read (readset.c). */
        int64_t n = run->cfg->model->n, carried = n;
        bool *need = ps_pull_entries(run->cfg, n);
        if (need) {
            uint64_t per = 0;
            carried = 0;
            for (int64_t i = 0; i < n; i++)
                if (need[i] && run->cfg->model->items[i].kind == VAL_MATRIX) {
                    per += (uint64_t)mat_len(run->cfg->model->items[i].m) * sizeof(double);
                    carried++;
                }
            sum.bytes_pulled = per * (uint64_t)sum.pulls;
            free(need);
        }
        sb_printf(b, "Paramserv network bytes:\t%llu pulled, %llu pushed (what a distributed run would send).\n",
                  (unsigned long long)sum.bytes_pulled, (unsigned long long)sum.bytes_pushed);
        if (carried < n)
            sb_printf(b, "Paramserv pulled entries:\t%lld of the model's %lld (those the workers' functions read).\n",
                      (long long)carried, (long long)n);
    }
    if (sum.pushes > 0)
        sb_printf(b, "Paramserv bytes per update:\t%llu pulled + %llu pushed (model: %llu bytes).\n",
                  (unsigned long long)(sum.bytes_pulled / (uint64_t)(sum.pulls ? sum.pulls : 1)),
                  (unsigned long long)(sum.bytes_pushed / (uint64_t)sum.pushes),
                  (unsigned long long)ps_list_bytes(run->cfg->model));
    for (int i = 0; i < run->k; i++) {
        PsWorkerStats *s = &run->w[i].st;
        sb_printf(b, "  worker %d%s%s: %lld batches, compute %.3f s, local update %.3f s, wait %.3f s, %lld pulls, "
                  "%lld pushes\n", i + 1, run->w[i].where ? " " : "", run->w[i].where ? run->w[i].where : "",
                  (long long)s->batches, s->compute, s->local_agg, s->wait, (long long)s->pulls, (long long)s->pushes);
    }
}

