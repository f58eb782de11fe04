/* SPDX-License-Identifier: Apache-2.0
 * Time helpers shared by the CLI, the test runner, parfor and paramserv.
 * Pure functions of the system clocks; safe from any thread. */
#ifndef DML_RUNTIME_CLOCK_H
#define DML_RUNTIME_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Seconds on the monotonic clock (for durations). */
static inline double clock_now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait on cv (mu held) for at most 'ms' milliseconds, so the waiter can poll
 * an interrupt flag between wake-ups. */
static inline void clock_cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}

#endif
