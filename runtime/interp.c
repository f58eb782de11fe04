/* SPDX-License-Identifier: Apache-2.0
 * Interp lifecycle: initialisation, the C-stack budget, teardown (the error
 * slot: err.c). An Interp belongs to one thread; nothing here locks. */
#include "interp.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "program.h"

void interp_init(Interp *I, Program *prog, uint64_t seed)
{
    memset(I, 0, sizeof *I);
    I->prog = prog;
    I->hh = prog ? prog->hh : NULL;     /* --stats: every thread adds to one table */
    I->out = stdout;
    I->blas_threads = 0;
    rng_seed(&I->rng, seed);
    interp_stack_init(I, 0);
}

void interp_stack_init(Interp *I, size_t size)
{
    if (size == 0) {
        struct rlimit rl;
        size = 8u << 20;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 0)
            size = (size_t)rl.rlim_cur;
    }
    I->stack_base = (const char *)__builtin_frame_address(0);
    /* Leave a quarter (at least 256 KiB) for BLAS, libc and the reporting. */
    size_t margin = size / 4 > (256u << 10) ? size / 4 : (256u << 10);
    I->stack_limit = size > margin ? size - margin : size / 2;
}

void interp_destroy(Interp *I)
{
    /* Frames other than the top one are owned by the calls that pushed them
     * and are gone by now; the top frame is the owner's (main/REPL/worker). */
    err_clear(I);
}
