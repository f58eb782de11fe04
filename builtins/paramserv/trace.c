/* SPDX-License-Identifier: Apache-2.0
 * paramserv's timeline (issue 26): with `dml run x.dml --trace FILE`, every
 * paramserv call of the script adds its events to FILE, a Chrome
 * trace-event JSON file (Perfetto and chrome://tracing open it): one track
 * per worker (waiting for the model, computing each batch, local updates,
 * pushing) and one for the server (applying each push or round, with the
 * model version it made and the push's staleness; validation; checkpoints;
 * the backups it hands out under dispatch="DYNAMIC"). Each event carries
 * its epoch and batch. Under mpirun rank 0 writes the file for all ranks:
 * a worker rank sends its events with its last message, timed from its
 * CALL, and rank 0 places them from when it sent that CALL.
 *
 * Events go into per-thread buffers (PsEvents: no lock, one append per
 * event next to clock readings the run takes anyway). After each call the
 * whole file is written again, to a temporary renamed over it, so a
 * killed run leaves the previous complete file or none; a path that
 * cannot be written is an error before the first call trains. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../runtime/clock.h"
#include "../io/io_formats.h"
#include "ps.h"

static char *trace_path;        /* --trace FILE (NULL: off) */
static double trace_t0;         /* the timeline's zero */
static StrBuf trace_events;     /* the events of the calls so far, rendered */
static int trace_calls;         /* calls so far: each call is a process track group */

void ps_trace_set_path(const char *path)
{
    free(trace_path);
    trace_path = path ? strdup(path) : NULL;
    trace_t0 = clock_now_sec();
}

bool ps_trace_on(void)
{
    return trace_path != NULL;
}

Status ps_trace_prepare(Interp *I)
{
    if (!trace_path)
        return ST_OK;
    struct stat sb;
    if (stat(trace_path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return err_set(I, "paramserv: cannot write --trace '%s': %s", trace_path, strerror(EISDIR));
    /* A killed run's temporary (its process gone) goes, as record= does. */
    io_remove_stale_tmps(trace_path);
    char *tmp;
    int fd = ps_open_tmp(trace_path, &tmp);
    if (fd < 0)
        return err_set(I, "paramserv: cannot write --trace '%s': %s", trace_path, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    return ST_OK;
}

void ps_ev_add(PsEvents *b, int kind, double t0, double t1, int64_t epoch, int64_t batch)
{
    ps_ev_add_x(b, kind, t0, t1, epoch, batch, -1, -1, -1);
}

void ps_ev_add_x(PsEvents *b, int kind, double t0, double t1, int64_t epoch, int64_t batch, int64_t worker,
                 int64_t version, int64_t staleness)
{
    if (!b->on)
        return;
    if (b->n == b->cap) {
        int64_t cap = b->cap ? b->cap * 2 : 1024;
        PsEvent *ne = realloc(b->e, sizeof *ne * (size_t)cap);
        if (!ne) {
            b->lost++;
            return;
        }
        b->e = ne;
        b->cap = cap;
    }
    b->e[b->n++] = (PsEvent){.kind = kind, .t0 = t0, .dur = t1 - t0, .epoch = epoch, .batch = batch,
                             .worker = worker, .version = version, .staleness = staleness};
}

void ps_ev_free(PsEvents *b)
{
    free(b->e);
    *b = (PsEvents){0};
}

static const char *const NAMES[] = {"wait for model", "compute", "local update", "push",
                                    "apply", "validation", "checkpoint", "backup"};

static void render(StrBuf *o, int pid, int tid, const PsEvent *ev)
{
    const char *cat = ev->kind >= PS_EV_APPLY ? "server" : "worker";
    double ts = (ev->t0 - trace_t0) * 1e6, dur = ev->dur * 1e6;
    if (ev->kind == PS_EV_BACKUP)
        sb_printf(o, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,",
                  NAMES[ev->kind], cat, ts, pid, tid);
    else
        sb_printf(o, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,",
                  NAMES[ev->kind], cat, ts, dur < 0 ? 0 : dur, pid, tid);
    sb_printf(o, "\"args\":{\"epoch\":%lld,\"batch\":%lld", (long long)ev->epoch + 1, (long long)ev->batch);
    if (ev->worker >= 0)
        sb_printf(o, ",\"worker\":%lld", (long long)ev->worker + 1);
    if (ev->version >= 0)
        sb_printf(o, ",\"version\":%lld", (long long)ev->version);
    if (ev->staleness >= 0)
        sb_printf(o, ",\"staleness\":%lld", (long long)ev->staleness);
    sb_puts(o, "}}");
}

static void json_str(StrBuf *o, const char *s)
{
    sb_puts(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            sb_printf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            sb_printf(o, "\\u%04x", (unsigned)(unsigned char)*s);
        else
            sb_putn(o, s, 1);
    }
    sb_puts(o, "\"");
}

static void track_name(StrBuf *o, int pid, int tid, const char *name)
{
    sb_printf(o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", pid, tid);
    json_str(o, name);
    sb_puts(o, "}}");
}

Status ps_trace_write(Interp *I, const PsRun *run)
{
    if (!trace_path)
        return ST_OK;
    int pid = ++trace_calls;
    StrBuf *o = &trace_events;
    char name[400];
    snprintf(name, sizeof name, "paramserv call %d (%s, %s, %s)", pid,
             (const char *[]){"BSP", "ASP", "SBP", "SSP"}[run->cfg->utype],
             run->cfg->dispatch == PS_DISPATCH_DYNAMIC ? "DYNAMIC" : "STATIC", run->tp->name);
    sb_printf(o, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", pid);
    json_str(o, name);
    sb_puts(o, "}}");
    track_name(o, pid, 0, "server");
    int64_t lost = run->sev.lost;
    for (int64_t j = 0; j < run->sev.n; j++)
        render(o, pid, 0, &run->sev.e[j]);
    for (int i = 0; i < run->k; i++) {
        const PsWorker *w = &run->w[i];
        if (w->where)
            snprintf(name, sizeof name, "worker %d (%s)", i + 1, w->where);
        else
            snprintf(name, sizeof name, "worker %d", i + 1);
        track_name(o, pid, i + 1, name);
        for (int64_t j = 0; j < w->ev.n; j++)
            render(o, pid, i + 1, &w->ev.e[j]);
        lost += w->ev.lost;
    }
    if (o->oom || lost)
        return err_set(I, "paramserv: --trace '%s': out of memory for the events", trace_path);
    StrBuf all;
    sb_init(&all);
    sb_puts(&all, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{\"name\":\"dml\",\"ph\":\"M\",\"pid\":0,\"args\":{}}");
    sb_putn(&all, o->p ? o->p : "", o->len);
    sb_puts(&all, "\n]}\n");
    if (all.oom) {
        sb_free(&all);
        return err_set(I, "paramserv: --trace '%s': out of memory", trace_path);
    }
    errno = 0;
    bool ok = ps_write_file(trace_path, all.p, all.len);
    sb_free(&all);
    if (!ok)
        return err_set(I, "paramserv: cannot write --trace '%s': %s", trace_path, strerror(errno ? errno : EIO));
    return ST_OK;
}
