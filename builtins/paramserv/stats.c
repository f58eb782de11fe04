/* SPDX-License-Identifier: Apache-2.0
 * paramserv statistics for --stats: the upstream lines (PARAMSERV.md 8)
 * with the sums over all workers, then bytes moved and one line per worker.
 * Called on the caller's thread after every server and worker is done. */
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/runstats.h"
#include "ps.h"

/* Appends the paramserv block of --stats (PARAMSERV.md 8, plus our own
 * lines) for a finished run to the caller's report; the transport adds its
 * own (what the call cost, what crossed a network). */
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
    run->tp->stats_cpu(run, b, cpu, &sum);
    sb_printf(b, "Paramserv grad compute time:\t%.3f secs.\n", sum.compute);
    sb_printf(b, "Paramserv model update time:\t%.3f/%.3f secs.\n", sum.local_agg, run->agg_time);
    if (!run->tp->own_budgets || run->update_threads > 0)
        sb_printf(b, "Paramserv server updates:\t%.3f secs adding gradients; kernel threads per update: %d.\n",
                  run->sum_time, run->update_threads > 0 ? run->update_threads : 1);
    sb_printf(b, "Paramserv batch slice time:\t%.3f secs.\n", sum.slice);
    sb_printf(b, "Paramserv valdiation time:\t%.3f secs.\n", run->val_time);
    sb_printf(b, "Paramserv checkpoint time:\t%.3f secs.\n", run->ckpt_time);
    sb_printf(b, "Paramserv pulls/pushes:\t\t%lld/%lld.\n", (long long)sum.pulls, (long long)sum.pushes);
    run->tp->stats_net(run, b, &sum);
    if (sum.pushes > 0)
        sb_printf(b, "Paramserv bytes per update:\t%llu pulled + %llu pushed (model: %llu bytes).\n",
                  (unsigned long long)(sum.bytes_pulled / (uint64_t)(sum.pulls ? sum.pulls : 1)),
                  (unsigned long long)(sum.bytes_pushed / (uint64_t)sum.pushes),
                  (unsigned long long)ps_list_bytes(run->cfg->model));
    if (run->dyn)
        ps_dyn_stats(run, b);
    /* Who set the pace, and who waited (issue 26). */
    int slow = 0, fast = 0;
    for (int i = 1; i < run->k; i++) {
        if (run->w[i].st.compute > run->w[slow].st.compute)
            slow = i;
        if (run->w[i].st.compute < run->w[fast].st.compute)
            fast = i;
    }
    if (run->k > 1)
        sb_printf(b, "Paramserv slowest worker:\tworker %d by compute time (%.3f s; the fastest, worker %d: %.3f s).\n",
                  slow + 1, run->w[slow].st.compute, fast + 1, run->w[fast].st.compute);
    sb_puts(b, "Paramserv time spent waiting:\t");
    for (int i = 0; i < run->k; i++)
        sb_printf(b, "%sworker %d %.0f%%", i ? ", " : "", i + 1,
                  total > 0 ? 100.0 * run->w[i].st.wait / total : 0.0);
    sb_puts(b, " (of the call's time, waiting for the model).\n");
    for (int i = 0; i < run->k; i++) {
        PsWorkerStats *s = &run->w[i].st;
        sb_printf(b, "  worker %d%s%s: %lld batches, compute %.3f s, local update %.3f s, wait %.3f s, %lld pulls, "
                  "%lld pushes\n", i + 1, run->w[i].where ? " " : "", run->w[i].where ? run->w[i].where : "",
                  (long long)s->batches, s->compute, s->local_agg, s->wait, (long long)s->pulls, (long long)s->pushes);
    }
}

