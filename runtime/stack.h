/* SPDX-License-Identifier: Apache-2.0
 * C-stack guard for the recursive walks that run without an Interp (the
 * resolver, the AST dump): the same measurement as interp_stack_low(), taken
 * from the calling thread's real stack bounds, so a walk over a tree or a
 * value nested deeper than the stack allows becomes an error instead of a
 * SIGSEGV. A guard belongs to the thread that initialised it. */
#ifndef DML_RUNTIME_STACK_H
#define DML_RUNTIME_STACK_H

#include <stdbool.h>

typedef struct StackGuard {
    const char *floor;      /* lowest frame address a guarded walk may reach; NULL: unknown */
} StackGuard;

/* Measures the calling thread's stack and leaves a margin (an eighth of the
 * stack, at least 256 KiB) for the callees below the last check and for
 * reporting the error. */
void stack_guard_init(StackGuard *g);

/* True when the caller's frame is below the guard's floor. */
static inline bool stack_guard_low(const StackGuard *g)
{
    return g->floor && (const char *)__builtin_frame_address(0) < g->floor;
}

#endif
