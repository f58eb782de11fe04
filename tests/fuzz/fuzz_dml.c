/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the whole front end and the evaluator: each input is
 * a DML program that is parsed, resolved and, when it loads, run with a time
 * budget (a watchdog raises the interrupt flag after 50 ms, so endless loops
 * end as ordinary errors) and a cap on matrix sizes. Any crash, sanitizer
 * report or leak is a bug.
 *
 * Build and run (see tests/fuzz/README):
 *   make fuzz            # builds build/fuzz/fuzz_dml with clang -fsanitize=fuzzer,address,undefined
 *   build/fuzz/fuzz_dml -max_total_time=600 -max_len=2048 tests/fuzz/corpus */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builtins/registry.h"
#include "runtime/eval.h"
#include "runtime/program.h"
#include "runtime/resolve.h"

typedef struct Watchdog {
    atomic_int *flag;
    atomic_int done;
} Watchdog;

static void *watch(void *arg)
{
    Watchdog *w = arg;
    for (int i = 0; i < 50 && !atomic_load(&w->done); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(w->flag, 1);
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Keep user-sized allocations small so "matrix(0, 1e5, 1e5)" is an
     * ordinary error here rather than the fuzzer's out-of-memory. */
    setenv("DML_MAX_MATRIX_BYTES", "67108864", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    builtin_registry_install();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Program *p = program_new();
    if (!p)
        return 0;
    CmdArg args[2] = {{"n", "3"}, {"name", "abc"}};
    program_set_args(p, args, 2);
    Node **stmts = NULL;
    int n = 0;
    char *err = program_load_main(p, "fuzz.dml", (const char *)data, size, &stmts, &n);
    if (err) {
        free(err);
        program_free(p);
        return 0;
    }
    atomic_int flag = 0;
    Interp I;
    interp_init(&I, p, 42);
    I.interrupt = &flag;
    I.out = fopen("/dev/null", "w");
    Frame top = {0};
    I.frame = &top;
    Watchdog w = {&flag, 0};
    pthread_t th;
    pthread_create(&th, NULL, watch, &w);
    if (exec_sync_top(&I, &top) == ST_OK)
        exec_block(&I, stmts, n);
    atomic_store(&w.done, 1);
    pthread_join(th, NULL);
    char *msg = err_format(&I);
    free(msg);
    for (int i = 0; i < top.nslots; i++)
        val_release(top.slots[i]);
    free(top.slots);
    fclose(I.out);
    interp_destroy(&I);
    program_free(p);
    return 0;
}
