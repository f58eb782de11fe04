/* SPDX-License-Identifier: Apache-2.0
 * The paramserv() builtin: a data-parallel parameter server on threads.
 * args.c checks the call, partition.c splits the data, run.c runs the
 * server and workers, checkpoint.c saves and resumes. */
#include "ps.h"

/* paramserv(model=, features=, labels=, val_features=, val_labels=, upd=,
 *           agg=, val=, mode=, utype=, freq=, epochs=, batchsize=, k=,
 *           scheme=, hyperparams=, checkpointing=, seed=, modelAvg=,
 *           nbatches=, num_backup_workers=, staleness=, checkpoint_path=,
 *           verbose=) -> the trained model (a list). Every argument named. */
static Status bi_paramserv(Interp *I, const BArgs *a, Value *out)
{
    PsConfig c;
    Status st = ps_config(I, a, &c);
    if (st == ST_OK && c.ckpt != PS_CKPT_NONE)
        st = ps_ckpt_prepare(I, &c);
    if (st == ST_OK)
        st = ps_run(I, &c, out);
    ps_config_free(&c);
    return st;
}

const BuiltinDef bi_paramserv_table[] = {
    {"paramserv", bi_paramserv,
     "model,features,labels,val_features,val_labels,upd,agg,val,mode,utype,freq,epochs,batchsize,k,scheme,"
     "hyperparams,checkpointing,seed,modelAvg,nbatches,num_backup_workers,staleness,checkpoint_path,verbose,"
     "runtime_balancing,weighting,he",
     0, BIND_NAMED, 1, BF_NAMED_ONLY},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
