/* SPDX-License-Identifier: Apache-2.0
 * What both sides of the Open MPI transport use (tp_mpi.h). */
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>

#include "mpi_comm.h"
#include "tp_mpi.h"

void tp_mpi_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, long us)
{
    if (us <= 0) {
        pthread_mutex_unlock(mu);
        sched_yield();
        pthread_mutex_lock(mu);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += us * 1000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
}
