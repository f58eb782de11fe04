/* SPDX-License-Identifier: Apache-2.0
 * StackGuard (see stack.h): the thread's stack bounds from pthread_getattr_np
 * (for the main thread glibc derives them from RLIMIT_STACK). Stacks grow
 * down on every platform we build for. */
#define _GNU_SOURCE     /* pthread_getattr_np */
#include "stack.h"

#include <pthread.h>
#include <stddef.h>

void stack_guard_init(StackGuard *g)
{
    g->floor = NULL;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    void *lo = NULL;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &lo, &size) == 0 && lo && size) {
        const char *here = (const char *)__builtin_frame_address(0);
        size_t margin = size / 8 > (256u << 10) ? size / 8 : (256u << 10);
        const char *floor = (const char *)lo + margin;
        /* A frame already below the floor (a tiny stack) gets no guard
         * rather than an error on every check. */
        if (here > floor)
            g->floor = floor;
    }
    pthread_attr_destroy(&attr);
}
