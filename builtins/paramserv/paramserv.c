/* SPDX-License-Identifier: Apache-2.0
 * The paramserv() builtin: a data-parallel parameter server on threads.
 * args.c checks the call, partition.c splits the data, run.c runs the
 * server and workers, checkpoint.c saves and resumes. */
#include "params.h"
#include "ps.h"

/* paramserv(model=, features=, ... as params.h lists them) -> the trained
 * model (a list). Every argument named.
 * [model, history] = paramserv(...) also returns the per-epoch history
 * (history.c; doc/paramserv.md "History"). */
static Status bi_paramserv(Interp *I, const BArgs *a, Value *out)
{
    PsConfig c;
    Status st = ps_config(I, a, &c);
    if (st == ST_OK && c.ckpt != PS_CKPT_NONE)
        st = ps_ckpt_prepare(I, &c);
    if (st == ST_OK && (c.record_path || c.replay_path))
        st = ps_record_prepare(I, &c);
    if (st == ST_OK)
        st = ps_trace_prepare(I);
    if (st == ST_OK)
        st = ps_run(I, &c, out, a->nout > 1 ? &out[1] : NULL);
    ps_config_free(&c);
    return st;
}

const BuiltinDef bi_paramserv_table[] = {
    /* The parameters as params.h declares them (the string starts with a comma). */
    {"paramserv", bi_paramserv, &(PS_PARAM_NAMES)[1], 0, BIND_NAMED, 2, BF_NAMED_ONLY | BF_MULTI_OPT},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
