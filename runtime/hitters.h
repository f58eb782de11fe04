/* SPDX-License-Identifier: Apache-2.0
 * Heavy hitters for --stats: time and call count per builtin and operator,
 * summed over every thread (paramserv workers and parfor workers included),
 * printed after the run as SystemDS prints "Heavy hitter instructions".
 *
 * One table per run, made by main before the first Interp and reached
 * through Program.hh, which interp_init copies into Interp.hh: an Interp
 * without a table (no --stats) pays one pointer test per call and nothing
 * else. The counters are atomics, so any thread may add to the table. */
#ifndef DML_RUNTIME_HITTERS_H
#define DML_RUNTIME_HITTERS_H

#include <stdint.h>
#include <time.h>

#include "../base/strbuf.h"
#include "interp.h"

typedef struct Hitters Hitters;

/* NULL when out of memory (the run goes on without the table). */
Hitters *hitters_new(void);
void hitters_free(Hitters *h);
/* Adds one call of 'name' taking 'ns' nanoseconds. 'name' must outlive the
 * table (a builtin's table row, an operator's static name): entries are
 * keyed by the pointer. Thread-safe, lock-free. */
void hitters_add(Hitters *h, const char *name, uint64_t ns);
/* Appends the table of the 'top' most expensive entries to b:
 *   Heavy hitter instructions:
 *    #  Instruction  Time(s)  Count
 *    1  %*%            1.234    100
 * Call after every thread that adds has been joined. */
void hitters_report(const Hitters *h, int top, StrBuf *b);

/* Operator names for the table: "+", "%*%", "u-", ... */
const char *hitters_binop_name(BinOp op);
const char *hitters_unop_name(UnOp op);

static inline uint64_t hitters_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The evaluator's hook: the Status of 'call', timed and counted under
 * 'name' when I->hh is set. Off, it costs one pointer test: the name is
 * not even computed. (A GNU statement expression, to put the first clock
 * reading before the call: argument order would not.) */
#define HITTERS_TIMED(I, name, call)                                    \
    (__builtin_expect((I)->hh != NULL, 0)                               \
         ? ({                                                           \
               uint64_t hh_t0_ = hitters_now_ns();                      \
               Status hh_st_ = (call);                                  \
               hitters_add((I)->hh, (name), hitters_now_ns() - hh_t0_); \
               hh_st_;                                                  \
           })                                                           \
         : (call))

#endif
