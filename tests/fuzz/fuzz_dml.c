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
#include <stdint.h>
#include <stdlib.h>

#include "builtins/registry.h"
#include "tests/unit/run_src.h"

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
    CmdArg args[2] = {{"n", "3"}, {"name", "abc"}};
    RunOpts o = {.name = "fuzz.dml", .args = args, .nargs = 2, .budget_ms = 50};
    char *msg;      /* rendered too: the caret display is fuzzed with the rest */
    run_src(&o, (const char *)data, size, &msg);
    free(msg);
    return 0;
}
