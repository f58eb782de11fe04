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

PsTraffic ps_traffic_now(void)
{
    PsTraffic t;
    mpi_traffic(&t.in, &t.out);
    return t;
}

PsTraffic ps_traffic_since(PsTraffic start)
{
    PsTraffic t = ps_traffic_now();
    t.in -= start.in;
    t.out -= start.out;
    return t;
}

void ps_traffic_line(StrBuf *b, int rank, PsTraffic t, int64_t rounds)
{
    uint64_t r = rounds > 0 ? (uint64_t)rounds : 1;
    sb_printf(b, "Rank %d bytes per round: in %llu, out %llu\n", rank, (unsigned long long)(t.in / r),
              (unsigned long long)(t.out / r));
}
