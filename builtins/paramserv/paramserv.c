/* SPDX-License-Identifier: Apache-2.0
 * The paramserv() builtin: a data-parallel parameter server on threads.
 * args.c checks the call, partition.c splits the data, run.c runs the
 * server and workers, checkpoint.c saves and resumes. */
#include <string.h>

#include "params.h"
#include "ps.h"

/* paramserv(model=, features=, ... as params.h lists them) -> the trained
 * model (a list). Every argument named.
 * [model, history] = paramserv(...) also returns the per-epoch history
 * (history.c; doc/paramserv.md "History"). */
static Status bi_paramserv(Interp *I, const BArgs *a0, Value *out)
{
    /* features= and labels= as they are: the partitions of a sparse X stay
     * sparse (partition.c); every other argument dense (the gate the
     * evaluator applies to builtins without BF_SPARSE) */
    BArgs d = *a0, *a = &d;
    Value small[PS_NPARAMS];
    if (a0->n > PS_NPARAMS)
        return err_set(I, "paramserv: too many arguments");
    d.v = small;
    Status st = ST_OK;
    for (int i = 0; i < a0->n; i++) {
        small[i] = val_ref(a0->v[i]);
        if (st == ST_OK && i != PS_A_FEATURES && i != PS_A_LABELS)
            st = val_densify(I, &small[i], "paramserv");
    }
    PsConfig c;
    if (st == ST_OK)
        st = ps_config(I, a, &c);
    else
        memset(&c, 0, sizeof c);
    if (st == ST_OK && c.ckpt != PS_CKPT_NONE)
        st = ps_ckpt_prepare(I, &c);
    if (st == ST_OK && (c.record_path || c.replay_path))
        st = ps_record_prepare(I, &c);
    if (st == ST_OK)
        st = ps_trace_prepare(I);
    if (st == ST_OK)
        st = ps_run(I, &c, out, a->nout > 1 ? &out[1] : NULL);
    ps_config_free(&c);
    for (int i = 0; i < a0->n; i++)
        val_release(small[i]);
    return st;
}

const BuiltinDef bi_paramserv_table[] = {
    /* The parameters as params.h declares them (the string starts with a comma). */
    {"paramserv", bi_paramserv, &(PS_PARAM_NAMES)[1], 0, BIND_NAMED, 2, BF_NAMED_ONLY | BF_MULTI_OPT | BF_SPARSE},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
