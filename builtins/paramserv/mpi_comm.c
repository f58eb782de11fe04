/* SPDX-License-Identifier: Apache-2.0
 * Open MPI, loaded with dlopen when launched by mpirun (mpi_comm.h). A
 * message is a 5-word header (tag MT_HDR) followed by its payload in
 * chunks of at most DML_MPI_CHUNK bytes (tag MT_DATA, default 64 MiB), so
 * no count passes MPI's int limit and partitions past 2 GiB travel. MPI
 * keeps messages between two ranks with the same tag in order, so the
 * chunks of a message follow its header. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../base/diag.h"
#include "../../runtime/clock.h"
#include "mpi_comm.h"
#include "psmpi.h"

int mpi_local_ranks(void)
{
    const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long n = ls ? atol(ls) : 1;
    return n > 0 && n < 4096 ? (int)n : 1;
}

void mpi_idle_sleep(MpiIdle *w)
{
    long us = mpi_idle_next(w);
    if (us <= 0) {
        sched_yield();
        return;
    }
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000L};
    nanosleep(&ts, NULL);
}

#ifdef DML_HAVE_MPI
#include <mpi.h>

enum { MT_HDR = 7001, MT_DATA = 7002 };

/* Caps of the idle sleeps (mpi_comm.h): waiting for the rest of a message
 * that stalled (MPI_SPIN_SECS without arriving), and waiting for a message
 * at start-up and shutdown. */
#define CHUNK_IDLE_MAX_US 200
#define WAIT_IDLE_MAX_US 1000

typedef struct Pending {
    int64_t hdr[6];             /* type, worker, epoch, batch, payload bytes, value: see send_msg_take */
    char *data;                 /* the payload, freed when every chunk is sent */
    Value keep;                 /* whose matrices are being sent in place (released when sent) */
    MPI_Request *reqs;
    int nreq, next;             /* reqs[0..next) are complete */
    struct Pending *next_p;
} Pending;

/* The process's one MPI connection. Written at start-up by the main
 * thread; afterwards used only under 'lock'. */
static struct {
    void *lib;
    int (*Init_thread)(int *, char ***, int, int *);
    int (*Finalize)(void);
    int (*Abort)(MPI_Comm, int);
    int (*Comm_rank)(MPI_Comm, int *);
    int (*Comm_size)(MPI_Comm, int *);
    int (*Comm_set_errhandler)(MPI_Comm, MPI_Errhandler);
    int (*Isend)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*Recv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
    int (*Irecv)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
    int (*Iprobe)(int, int, MPI_Comm, int *, MPI_Status *);
    int (*Test)(MPI_Request *, int *, MPI_Status *);
    int (*Error_string)(int, char *, int *);
    MPI_Comm world;
    MPI_Datatype byte;
    MPI_Errhandler errors_return;
    bool up, broken;
    int rank, size;
    char **hosts;               /* per rank, from the handshake */
    size_t chunk;
    double timeout;
    uint64_t host_mem;          /* bytes of physical memory: no message may claim more */
    Pending *pending;
    double send_moved;          /* clock_now_sec() when a send request was last posted or completed */
    bool spin_sends;            /* this host has a core per rank: senders may spin */
    uint64_t bytes_in, bytes_out;   /* every byte of every message received and queued (mpi_traffic) */
    char err[512];
    pthread_mutex_t lock;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool mpi_fail(int rc, const char *what)
{
    char s[256];
    int n = 0;
    s[0] = '\0';
    if (M.Error_string)
        M.Error_string(rc, s, &n);
    snprintf(M.err, sizeof M.err, "Open MPI error in %s: %s", what, s);
    return false;
}

bool mpi_up(void) { return M.up; }
int mpi_rank(void) { return M.rank; }
int mpi_size(void) { return M.size; }
const char *mpi_error(void) { return M.err; }
double mpi_timeout(void) { return M.timeout; }
void mpi_mark_broken(void) { M.broken = true; }
void mpi_lock(void) { pthread_mutex_lock(&M.lock); }
void mpi_unlock(void) { pthread_mutex_unlock(&M.lock); }

const char *mpi_host(int rank)
{
    return M.hosts && rank >= 0 && rank < M.size && M.hosts[rank] ? M.hosts[rank] : "?";
}

int mpi_ranks_here_below(int n)
{
    if (!M.hosts)
        return 1;
    const char *me = mpi_host(M.rank);
    int c = 0;
    for (int r = 0; r < n && r < M.size; r++)
        c += strcmp(mpi_host(r), me) == 0;
    return c > 0 ? c : 1;
}

static void pending_free(Pending *p)
{
    val_release(p->keep);
    free(p->data);
    free(p->reqs);
    free(p);
}

/* Isend len bytes at p in chunks; false (error set) on failure. */
static bool send_chunks(Pending *pd, int dest, const char *p, size_t len)
{
    for (size_t off = 0; off < len; off += M.chunk) {
        size_t n = len - off < M.chunk ? len - off : M.chunk;
        int rc = M.Isend(p + off, (int)n, M.byte, dest, MT_DATA, M.world, &pd->reqs[pd->nreq]);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Isend");
        pd->nreq++;
    }
    return true;
}

/* The header, the payload (taken), then the cells of mats[0..nmats) in
 * place (keep holds them alive until sent; taken). The header's last field
 * is 0 for a message that is only its payload, and 1 + nmats for a value
 * (mpi_send_value) whose payload is its layout: so a value with no matrix
 * at all (a pull that carries no model entry, when upd reads none) still
 * arrives as a value. */
static bool send_msg_take(int dest, int type, int worker, int64_t epoch, int64_t batch, WBuf *payload, Value keep,
                     Matrix **mats, int64_t nmats)
{
    size_t len = payload ? payload->len : 0;
    if (payload && payload->oom) {
        wb_free(payload);
        val_release(keep);
        snprintf(M.err, sizeof M.err, "out of memory encoding a message for rank %d", dest);
        return false;
    }
    size_t nreq = 1 + (len + M.chunk - 1) / M.chunk;
    for (int64_t i = 0; i < nmats; i++)
        nreq += (sizeof(double) * (size_t)mat_len(mats[i]) + M.chunk - 1) / M.chunk;
    Pending *p = calloc(1, sizeof *p);
    MPI_Request *reqs = calloc(nreq, sizeof *reqs);
    if (!p || !reqs) {
        free(p);
        free(reqs);
        if (payload)
            wb_free(payload);
        val_release(keep);
        snprintf(M.err, sizeof M.err, "out of memory sending to rank %d", dest);
        return false;
    }
    p->hdr[0] = type;
    p->hdr[1] = worker;
    p->hdr[2] = epoch;
    p->hdr[3] = batch;
    p->hdr[4] = (int64_t)len;
    p->hdr[5] = keep.kind == VAL_NONE ? 0 : 1 + nmats;
    p->reqs = reqs;
    p->keep = keep;
    M.bytes_out += sizeof p->hdr + len;
    for (int64_t i = 0; i < nmats; i++)
        M.bytes_out += sizeof(double) * (size_t)mat_len(mats[i]);
    if (payload) {
        p->data = payload->p;
        *payload = (WBuf){0};
    }
    /* Pending before the first Isend: a started request's buffers must
     * live until it completes, even when a later Isend fails. */
    p->next_p = M.pending;
    M.pending = p;
    M.send_moved = clock_now_sec();
    int rc = M.Isend(p->hdr, (int)sizeof p->hdr, M.byte, dest, MT_HDR, M.world, &reqs[0]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Isend");
    p->nreq = 1;
    if (!send_chunks(p, dest, p->data, len))
        return false;
    for (int64_t i = 0; i < nmats; i++)
        if (!send_chunks(p, dest, (const char *)mats[i]->data, sizeof(double) * (size_t)mat_len(mats[i])))
            return false;
    return true;
}

bool mpi_send_take(int dest, int type, int worker, int64_t epoch, int64_t batch, WBuf *payload)
{
    return send_msg_take(dest, type, worker, epoch, batch, payload, val_none(), NULL, 0);
}

bool mpi_send_value(int dest, int type, int worker, int64_t epoch, int64_t batch, Value v)
{
    WBuf b = {0};
    wb_value_layout(&b, v);
    int64_t n = wire_matrices(v, NULL, 0);
    Matrix **mats = calloc((size_t)n + 1, sizeof *mats);
    if (!mats) {
        wb_free(&b);
        snprintf(M.err, sizeof M.err, "out of memory sending to rank %d", dest);
        return false;
    }
    wire_matrices(v, mats, n);
    bool ok = send_msg_take(dest, type, worker, epoch, batch, &b, val_ref(v), mats, n);
    free(mats);
    return ok;
}

bool mpi_progress(void)
{
    Pending **pp = &M.pending;
    while (*pp) {
        Pending *p = *pp;
        while (p->next < p->nreq) {
            int flag = 0;
            int rc = M.Test(&p->reqs[p->next], &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return mpi_fail(rc, "MPI_Test");
            if (!flag)
                break;
            p->next++;
            M.send_moved = clock_now_sec();
        }
        if (p->next == p->nreq) {
            *pp = p->next_p;
            pending_free(p);
        } else {
            pp = &p->next_p;
        }
    }
    return true;
}

bool mpi_sends_pending(void) { return M.pending != NULL; }

void mpi_traffic(uint64_t *in, uint64_t *out)
{
    *in = M.bytes_in;
    *out = M.bytes_out;
}

bool mpi_sends_moving(void)
{
    return M.spin_sends && M.pending && clock_now_sec() - M.send_moved < MPI_SPIN_SECS;
}

bool mpi_flush_sends(void)
{
    double t0 = clock_now_sec();
    MpiIdle idle = mpi_idle_init(WAIT_IDLE_MAX_US);
    while (M.pending) {
        if (!mpi_progress() || clock_now_sec() - t0 > M.timeout)
            return false;
        mpi_idle_cap(&idle, mpi_sends_moving() ? 0 : WAIT_IDLE_MAX_US);
        mpi_idle_sleep(&idle);
    }
    return true;
}

void mpi_msg_free(MpiMsg *m)
{
    free(m->data);
    m->data = NULL;
    m->len = 0;
    val_release(m->value);
    m->value = val_none();
}

/* Receive len bytes from src into p, in the chunks they were sent in.
 * Polls rather than blocking in MPI_Recv, which spins while the sender
 * (over TCP) feeds the data in: that spinning takes a core from the ranks
 * that compute. */
static bool recv_chunks(int src, char *p, size_t len)
{
    for (size_t off = 0; off < len; off += M.chunk) {
        size_t n = len - off < M.chunk ? len - off : M.chunk;
        MPI_Request req;
        int rc = M.Irecv(p + off, (int)n, M.byte, src, MT_DATA, M.world, &req);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Irecv");
        /* The chunk is on its way: spin (mpi_comm.h) until it is in or
         * stalls for MPI_SPIN_SECS, then sleep between polls. */
        MpiIdle idle = mpi_idle_init(0);
        double t0 = clock_now_sec();
        for (;;) {
            int flag = 0;
            rc = M.Test(&req, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return mpi_fail(rc, "MPI_Test");
            if (flag)
                break;
            mpi_idle_spun(&idle, clock_now_sec() - t0, CHUNK_IDLE_MAX_US);
            mpi_idle_sleep(&idle);
        }
    }
    return true;
}

/* Bytes of physical memory (no limit when unknown). */
static uint64_t host_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : UINT64_MAX;
}

int mpi_poll(MpiMsg *m)
{
    int flag = 0;
    MPI_Status st;
    int rc = M.Iprobe(MPI_ANY_SOURCE, MT_HDR, M.world, &flag, &st);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Iprobe"), -1;
    if (!flag)
        return 0;
    int src = st.MPI_SOURCE;
    int64_t hdr[6];
    rc = M.Recv(hdr, (int)sizeof hdr, M.byte, src, MT_HDR, M.world, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Recv"), -1;
    *m = (MpiMsg){.src = src, .type = (int)hdr[0], .worker = (int)hdr[1], .epoch = hdr[2], .batch = hdr[3]};
    M.bytes_in += sizeof hdr;
    m->value = val_none();
    /* Nothing is allocated for a message larger than this host's memory:
     * it cannot be received. */
    uint64_t cap = M.host_mem;
    if (hdr[4] < 0 || hdr[5] < 0 || (uint64_t)hdr[4] > cap) {
        snprintf(M.err, sizeof M.err, "malformed message from rank %d", src);
        return -1;
    }
    size_t len = (size_t)hdr[4];
    if (len) {
        m->data = malloc(len);
        if (!m->data) {
            snprintf(M.err, sizeof M.err, "out of memory receiving %zu bytes from rank %d", len, src);
            return -1;
        }
        /* The chunks were sent right after the header; wait for them. */
        if (!recv_chunks(src, m->data, len)) {
            mpi_msg_free(m);
            return -1;
        }
        m->len = len;
        M.bytes_in += len;
    }
    if (hdr[5] > 0) {
        /* A value whose matrices (hdr[5] - 1 of them) follow in place:
         * allocate them from the layout, then receive each one's cells
         * straight into it. */
        WRead rd = {.p = m->data, .len = m->len};
        Value v = wr_value_layout(&rd, cap);
        int64_t n = rd.bad ? -1 : wire_matrices(v, NULL, 0);
        Matrix **mats = n == hdr[5] - 1 ? calloc((size_t)n + 1, sizeof *mats) : NULL;
        if (!mats) {
            val_release(v);
            mpi_msg_free(m);
            if (rd.oom || n == hdr[5] - 1)
                snprintf(M.err, sizeof M.err, "out of memory receiving a message from rank %d", src);
            else
                snprintf(M.err, sizeof M.err, "malformed message from rank %d", src);
            return -1;
        }
        wire_matrices(v, mats, n);
        for (int64_t i = 0; i < n; i++)
            if (!recv_chunks(src, (char *)mats[i]->data, sizeof(double) * (size_t)mat_len(mats[i]))) {
                free(mats);
                val_release(v);
                mpi_msg_free(m);
                return -1;
            }
        for (int64_t i = 0; i < n; i++)
            M.bytes_in += sizeof(double) * (size_t)mat_len(mats[i]);
        free(mats);
        m->value = v;
    }
    return 1;
}

/* Wait (polling) for the next message from 'src' of one of the types in
 * 'types' (others are dropped), or until 'timeout' seconds pass. 1 got,
 * 0 timed out, -1 MPI error. */
static int wait_msg(int src, const int *types, int ntypes, double timeout, MpiMsg *m)
{
    double t0 = clock_now_sec();
    MpiIdle idle = mpi_idle_init(WAIT_IDLE_MAX_US);
    for (;;) {
        if (!mpi_progress())
            return -1;
        int got = mpi_poll(m);
        if (got < 0)
            return -1;
        if (got) {
            if (src < 0 || m->src == src)
                for (int i = 0; i < ntypes; i++)
                    if (m->type == types[i])
                        return 1;
            mpi_msg_free(m);
            mpi_idle_busy(&idle);
            continue;
        }
        if (timeout >= 0 && clock_now_sec() - t0 > timeout)
            return 0;
        mpi_idle_sleep(&idle);
    }
}

/* ---- start-up: load libmpi, init, handshake ---- */

static bool load_lib(void)
{
    static const char *const names[] = {"libmpi.so.40", "libmpi.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !M.lib; i++)
        M.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
    if (!M.lib) {
        snprintf(M.err, sizeof M.err, "cannot load Open MPI's libmpi.so.40 (install openmpi-bin): %s", dlerror());
        return false;
    }
#define SYM(field, name)                                                                                \
    do {                                                                                                \
        *(void **)&M.field = dlsym(M.lib, name);                                                         \
        if (!M.field) {                                                                                 \
            snprintf(M.err, sizeof M.err, "libmpi.so has no '%s' (dml needs Open MPI 4 or later)", name); \
            return false;                                                                               \
        }                                                                                               \
    } while (0)
    SYM(Init_thread, "MPI_Init_thread");
    SYM(Finalize, "MPI_Finalize");
    SYM(Abort, "MPI_Abort");
    SYM(Comm_rank, "MPI_Comm_rank");
    SYM(Comm_size, "MPI_Comm_size");
    SYM(Comm_set_errhandler, "MPI_Comm_set_errhandler");
    SYM(Isend, "MPI_Isend");
    SYM(Recv, "MPI_Recv");
    SYM(Irecv, "MPI_Irecv");
    SYM(Iprobe, "MPI_Iprobe");
    SYM(Test, "MPI_Test");
    SYM(Error_string, "MPI_Error_string");
    /* Open MPI's predefined handles are the addresses of these objects. */
    SYM(world, "ompi_mpi_comm_world");
    SYM(byte, "ompi_mpi_byte");
    SYM(errors_return, "ompi_mpi_errors_return");
#undef SYM
    return true;
}

/* The build id: a hash of this executable's bytes, so ranks agree only
 * when they run the very same dml binary (wherever it is installed). */
static uint64_t build_id(void)
{
    FILE *f = fopen("/proc/self/exe", "rb");
    if (!f)
        return 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * 0x100000001b3ULL;
    fclose(f);
    return h;
}

static double env_double(const char *name, double dflt)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return dflt;
    double v = strtod(s, &end);
    return *end || v <= 0 ? dflt : v;
}

/* DML_MPI_TIMEOUT: a positive, finite number of seconds, or unset (60).
 * Anything else ("5s", "0", "abc", "nan") is refused at start-up rather
 * than replaced by the default or read as "never"; set but empty is unset. */
static bool timeout_from_env(double *out)
{
    const char *s = getenv("DML_MPI_TIMEOUT");
    if (!s || !*s)
        return true;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v) || v <= 0) {
        snprintf(M.err, sizeof M.err,
                 "DML_MPI_TIMEOUT='%.40s' is not a positive number of seconds (e.g. DML_MPI_TIMEOUT=60)", s);
        return false;
    }
    *out = v;
    return true;
}

/* Said at once through the front end's sink: an Abort may follow. A
 * worker rank names itself (its message reaches the user among mpirun's). */
static int start_failed(const DiagSink *sink)
{
    if (M.rank > 0) {
        char host[256];
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        diag_note(sink, DIAG_ERROR, "dml: rank %d on %s: %s\n", M.rank, host, M.err);
    } else {
        diag_note(sink, DIAG_ERROR, "dml: %s\n", M.err);
    }
    return 1;
}

/* Rank 0 sends its build id to every rank; each answers with its own and
 * its host name. A mismatch is reported by rank 0, naming the rank. */
static bool handshake(int *status)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    M.hosts = calloc((size_t)M.size, sizeof *M.hosts);
    if (!M.hosts) {
        snprintf(M.err, sizeof M.err, "out of memory at start-up");
        return false;
    }
    M.hosts[M.rank] = strdup(host);
    uint64_t id = build_id();
    static const int hello[] = {MM_HELLO};
    if (M.rank == 0) {
        for (int r = 1; r < M.size; r++)
            if (!mpi_send_take(r, MM_HELLO, 0, (int64_t)id, 0, NULL))
                return false;
        bool same = true;
        for (int n = 1; n < M.size; n++) {
            MpiMsg m;
            int got = wait_msg(-1, hello, 1, M.timeout, &m);
            if (got == 0)
                snprintf(M.err, sizeof M.err, "%d of %d ranks did not answer rank 0 within %.0f s "
                         "(DML_MPI_TIMEOUT): is every rank running dml?", M.size - n, M.size - 1, M.timeout);
            if (got <= 0)
                return false;
            WRead rd = {.p = m.data, .len = m.len};
            char *h = wr_str(&rd);
            free(M.hosts[m.src]);
            M.hosts[m.src] = h ? h : strdup("?");
            if ((uint64_t)m.epoch != id && same) {
                snprintf(M.err, sizeof M.err, "rank %d on %s runs another dml build than rank 0 on %s (build ids "
                         "%016llx and %016llx): every rank must run the same dml executable", m.src,
                         mpi_host(m.src), host, (unsigned long long)m.epoch, (unsigned long long)id);
                same = false;
            }
            mpi_msg_free(&m);
        }
        /* Everyone learns every host name (for messages about ranks). */
        WBuf b = {0};
        for (int r = 0; r < M.size; r++)
            wb_str(&b, M.hosts[r]);
        for (int r = 1; r < M.size; r++) {
            WBuf c = {0};
            wb_bytes(&c, b.p, b.len);
            if (!mpi_send_take(r, MM_HELLO, same, 0, 0, &c))
                return false;
        }
        wb_free(&b);
        if (!same) {
            *status = 1;
            return false;
        }
        return true;
    }
    MpiMsg m;
    if (wait_msg(0, hello, 1, -1, &m) <= 0)
        return false;
    mpi_msg_free(&m);
    WBuf b = {0};
    wb_str(&b, host);
    if (!mpi_send_take(0, MM_HELLO, 0, (int64_t)id, 0, &b))
        return false;
    if (wait_msg(0, hello, 1, -1, &m) <= 0)
        return false;
    WRead rd = {.p = m.data, .len = m.len};
    for (int r = 0; r < M.size; r++) {
        char *h = wr_str(&rd);
        if (h) {
            free(M.hosts[r]);
            M.hosts[r] = h;
        }
    }
    bool same = m.worker != 0;
    mpi_msg_free(&m);
    if (!same) {
        *status = 1;
        snprintf(M.err, sizeof M.err, "(reported by rank 0)");
        return false;
    }
    return true;
}

/* Launched by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) or by another
 * PMIx launcher such as srun --mpi=pmix (PMIX_RANK). */
static bool launched(void)
{
    const char *s = getenv("OMPI_COMM_WORLD_SIZE"), *p = getenv("PMIX_RANK");
    return (s && *s) || (p && *p);
}

static void teardown(void)
{
    while (M.pending) {
        Pending *p = M.pending;
        M.pending = p->next_p;
        pending_free(p);
    }
    if (M.hosts)
        for (int r = 0; r < M.size; r++)
            free(M.hosts[r]);
    free(M.hosts);
    M.hosts = NULL;
}

bool ps_mpi_launch(const DiagSink *sink, int *status)
{
    if (!launched())
        return false;
    *status = 1;
    if (!load_lib())
        return start_failed(sink), true;
    /* Nothing here blocks inside MPI (every wait polls and sleeps, see
     * MpiIdle), so Open MPI's sched_yield after each idle poll, switched on
     * when ranks oversubscribe the cores, would only add system calls. */
    setenv("OMPI_MCA_mpi_yield_when_idle", "0", 0);
    /* Open MPI's ob1 keeps at most pml_ob1_send_pipeline_depth fragments
     * of one large send in flight (default 3; 32 KiB each over shared
     * memory without single copy): the next ones leave only when the
     * sender polls again, and a bridge that sleeps between polls, as ours
     * do where ranks outnumber cores, then adds a sleep per 96 KiB. With 64
     * in flight a message up to 2 MiB leaves at the first poll and a larger
     * one needs 32x fewer polls (2 cores, 3 ranks, a BSP round of k=2 with
     * a 0.8 MB model: 4.3 -> 2.3 ms; 12.8 MB: 38-83 -> 15-19 ms; the
     * fragments come from the same bounded shared segment either way).
     * Only when the environment has none (mpirun --mca sets it there); a
     * value in an Open MPI parameter file yields to this one, so such a
     * setting must go in the environment instead. */
    setenv("OMPI_MCA_pml_ob1_send_pipeline_depth", "64", 0);
    int provided = 0;
    int rc = M.Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Init_thread"), start_failed(sink), true;
    M.Comm_set_errhandler(M.world, M.errors_return);
    M.Comm_rank(M.world, &M.rank);
    M.Comm_size(M.world, &M.size);
    /* MPI counts are ints: a chunk is at most 1 GiB whatever is asked. */
    double chunk = env_double("DML_MPI_CHUNK", 64.0 * 1024 * 1024);
    M.chunk = chunk < 1 ? 1 : chunk > 1073741824.0 ? 1073741824 : (size_t)chunk;
    M.timeout = 60;
    if (!timeout_from_env(&M.timeout)) {
        /* Every rank reads the same environment (mpirun forwards it):
         * rank 0 says what is wrong, every rank leaves with 1. */
        if (M.rank == 0)
            start_failed(sink);
        M.Finalize();
        teardown();
        return true;
    }
    M.host_mem = host_memory();
    /* A sender spins (mpi_sends_moving) only where each of this host's
     * ranks has a core of its own; on an oversubscribed host the spinning
     * takes the core a receiver copies on (2 cores, 3 ranks, with Open
     * MPI's single copy: 17 -> 21 ms per step of bench/dml/ps_transport.dml).
     * Receivers spin anyway (recv_chunks): they do the copying. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    M.spin_sends = cores >= 1 && mpi_local_ranks() <= cores;
    M.up = true;
    if (M.size >= 2) {
        int st = 0;
        if (!handshake(&st)) {
            if (st == 0) {
                /* MPI itself failed: an orderly goodbye could hang. */
                start_failed(sink);
                M.Abort(M.world, 1);
                return true;
            }
            /* Different builds: rank 0 says so, everyone exits with 1. */
            if (M.rank == 0)
                start_failed(sink);
            mpi_flush_sends();
            M.Finalize();
            teardown();
            M.up = false;
            return true;
        }
    }
    if (M.rank == 0)
        return false;
    *status = ps_mpi_worker_loop();
    if (*status < 0) {
        /* This rank cannot reach rank 0 any more (MPI failed, or memory
         * ran out for a message): say why and end the job, since rank 0
         * may be waiting for this rank and an orderly goodbye could hang. */
        diag_note(sink, DIAG_ERROR, "dml: rank %d on %s: %s\n", M.rank, mpi_host(M.rank),
                  M.err[0] ? M.err : "lost the connection to rank 0");
        M.Abort(M.world, 1);
        *status = 1;
        return true;
    }
    M.Finalize();
    teardown();
    return true;
}

void ps_mpi_finish(int status)
{
    if (!M.up || M.rank != 0)
        return;
    mpi_lock();
    if (M.broken) {
        fflush(stdout);
        fflush(stderr);
        M.Abort(M.world, status ? status : 1);
    }
    for (int r = 1; r < M.size; r++)
        mpi_send_take(r, MM_SHUTDOWN, 0, status, 0, NULL);
    mpi_flush_sends();
    mpi_unlock();
    M.Finalize();
    teardown();
    M.up = false;
}

#else /* no Open MPI headers at build time */

/* The stubs below keep the MPI build's interface and need none of their
 * arguments: nothing is ever sent or received without Open MPI. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

bool mpi_up(void) { return false; }
int mpi_rank(void) { return 0; }
int mpi_size(void) { return 1; }
const char *mpi_host(int rank) { return "?"; }
int mpi_ranks_here_below(int n) { return 1; }
bool mpi_send_take(int dest, int type, int worker, int64_t epoch, int64_t batch, WBuf *payload)
{
    if (payload)
        wb_free(payload);
    return false;
}
bool mpi_progress(void) { return false; }
bool mpi_sends_pending(void) { return false; }
void mpi_traffic(uint64_t *in, uint64_t *out) { *in = *out = 0; }
bool mpi_sends_moving(void) { return false; }
bool mpi_flush_sends(void) { return true; }
int mpi_poll(MpiMsg *m) { return -1; }
void mpi_msg_free(MpiMsg *m) { free(m->data); m->data = NULL; val_release(m->value); m->value = val_none(); }
bool mpi_send_value(int dest, int type, int worker, int64_t epoch, int64_t batch, Value v) { return false; }
const char *mpi_error(void) { return "this dml was built without Open MPI"; }
double mpi_timeout(void) { return 60; }
void mpi_mark_broken(void) {}
void mpi_lock(void) {}
void mpi_unlock(void) {}

bool ps_mpi_launch(const DiagSink *sink, int *status)
{
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK"))
        return false;
    diag_note(sink, DIAG_ERROR, "dml: launched by mpirun, but this dml was built without Open MPI (install "
              "libopenmpi-dev and rebuild)\n");
    *status = 1;
    return true;
}

void ps_mpi_finish(int status) {}

#endif
