/* SPDX-License-Identifier: Apache-2.0
 * What a running cell shows: print() output (a FILE whose writes land in
 * the stdout buffer), warnings and progress (the Interp's sink, into the
 * stderr buffer), pictures (the Interp's display sink, published at once).
 * The flusher thread publishes the buffers as "stream" messages every
 * FLUSH_MS, so output appears as it is printed without a message per line;
 * kernel_flush publishes them at once. paramserv's progress line, a status
 * line rewritten with "\r\033[K" on a terminal, goes out as "\r" and
 * spaces, which notebooks draw as one line updating in place. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "../base/diag.h"
#include "kernel_int.h"

#define FLUSH_MS 100

/* Appends to stream 'which' and wakes the flusher. Any thread. */
static void stream_append(Kernel *k, int which, const char *text, size_t n)
{
    pthread_mutex_lock(&k->out_mu);
    sb_putn(&k->out[which], text, n);
    pthread_cond_signal(&k->out_cv);
    pthread_mutex_unlock(&k->out_mu);
}

/* ==== print(): a FILE over the stdout buffer ============================== */

static ssize_t cookie_write(void *ctx, const char *buf, size_t n)
{
    stream_append(ctx, KSTREAM_STDOUT, buf, n);
    return (ssize_t)n;
}

/* ==== the sink: warnings, progress, the status line ======================= */

static void sink_write(void *ctx, DiagLevel level, const char *text, size_t n)
{
    Kernel *k = ctx;
    if (level != DIAG_STATUS) {
        stream_append(k, KSTREAM_STDERR, text, n);
        return;
    }
    /* "\r\033[K" + line: the line, then spaces over what is left of the
     * previous one; "\r\033[K" alone: the line blanked. */
    while (n && (*text == '\r' || *text == '\n')) {
        text++;
        n--;
    }
    if (n >= 3 && memcmp(text, "\033[K", 3) == 0) {
        text += 3;
        n -= 3;
    }
    pthread_mutex_lock(&k->out_mu);
    StrBuf *b = &k->out[KSTREAM_STDERR];
    int len = 0;
    for (size_t i = 0; i < n; i += diag_char(text + i, n - i, NULL))
        len++;
    sb_puts(b, "\r");
    sb_putn(b, text, n);
    for (int i = len; i < k->status_len; i++)
        sb_puts(b, " ");
    if (n == 0)
        sb_puts(b, "\r");
    k->status_len = len;
    pthread_cond_signal(&k->out_cv);
    pthread_mutex_unlock(&k->out_mu);
}

/* ==== publishing the buffers ============================================== */

/* Bytes of b that end on a whole UTF-8 character (a character split over
 * two writes waits for the next flush unless 'all'). */
static size_t whole_chars(const StrBuf *b, bool all)
{
    size_t n = b->len;
    if (all || n == 0)
        return n;
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = (unsigned char)b->p[n - back];
        if ((c & 0xc0) == 0x80)
            continue;               /* a continuation byte: look further back */
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
        return need > back ? n - back : n;
    }
    return n;
}

/* Publishes the buffers; 'all' also sends a trailing partial character. */
static void flush_streams(Kernel *k, bool all)
{
    static const char *const names[2] = {"stdout", "stderr"};
    pthread_mutex_lock(&k->pub_mu);
    for (int w = 0; w < 2; w++) {
        pthread_mutex_lock(&k->out_mu);
        StrBuf *b = &k->out[w];
        size_t n = whole_chars(b, all);
        char *text = NULL;
        if (n) {
            text = malloc(n);
            if (text) {
                memcpy(text, b->p, n);
                memmove(b->p, b->p + n, b->len - n);
                b->len -= n;
            }
        }
        if (b->oom) {           /* printed more than memory holds: say so once */
            sb_free(b);
            sb_init(b);
        }
        pthread_mutex_unlock(&k->out_mu);
        if (!text)
            continue;
        json_t *t = kjson_text(text, n);
        free(text);
        json_t *c = t ? json_pack("{s:s, s:o}", "name", names[w], "text", t) : NULL;
        if (c) {
            KMsg parent = {.header = k->parent};
            kernel_send(k, k->iopub, &parent, "stream", c);
        }
    }
    pthread_mutex_unlock(&k->pub_mu);
}

void kernel_flush(Kernel *k)
{
    if (k->cell_out)
        fflush(k->cell_out);
    flush_streams(k, true);
}

static void *flusher_main(void *arg)
{
    Kernel *k = arg;
    pthread_mutex_lock(&k->out_mu);
    while (!k->flusher_stop) {
        if (k->out[0].len == 0 && k->out[1].len == 0) {
            pthread_cond_wait(&k->out_cv, &k->out_mu);
            continue;
        }
        /* Gather what comes in the next FLUSH_MS into the same message. */
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += FLUSH_MS * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        while (!k->flusher_stop && pthread_cond_timedwait(&k->out_cv, &k->out_mu, &t) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&k->out_mu);
        flush_streams(k, false);
        pthread_mutex_lock(&k->out_mu);
    }
    pthread_mutex_unlock(&k->out_mu);
    return NULL;
}

/* ==== pictures ============================================================ */

static bool display_show(void *ctx, const DisplayPart *parts, int n)
{
    Kernel *k = ctx;
    json_t *data = json_object();
    if (!data)
        return false;
    for (int i = 0; i < n; i++) {
        json_t *v;
        if (strncmp(parts[i].mime, "image/svg", 9) == 0 || strncmp(parts[i].mime, "text/", 5) == 0) {
            v = kjson_text((const char *)parts[i].data, parts[i].n);
        } else {
            /* base64, as Jupyter carries binary data in JSON */
            size_t cap = 4 * ((parts[i].n + 2) / 3) + 1;
            unsigned char *b64 = malloc(cap);
            int len = b64 && parts[i].n <= 0x7fffffff ? EVP_EncodeBlock(b64, parts[i].data, (int)parts[i].n) : -1;
            v = len >= 0 ? json_stringn((const char *)b64, (size_t)len) : NULL;
            free(b64);
        }
        if (!v || json_object_set_new(data, parts[i].mime, v) != 0) {
            json_decref(data);
            return false;
        }
    }
    json_t *c = json_pack("{s:o, s:{}, s:{}}", "data", data, "metadata", "transient");
    if (!c)
        return false;
    kernel_flush(k);            /* what was printed before the picture comes first */
    return kernel_publish(k, "display_data", c);
}

/* ==== start and stop ====================================================== */

bool kernel_io_start(Kernel *k)
{
    pthread_mutex_init(&k->out_mu, NULL);
    pthread_cond_init(&k->out_cv, NULL);
    sb_init(&k->out[0]);
    sb_init(&k->out[1]);
    cookie_io_functions_t io = {.write = cookie_write};
    k->cell_out = fopencookie(k, "w", io);
    if (!k->cell_out)
        return false;
    setvbuf(k->cell_out, NULL, _IOLBF, 0);
    k->s.I.out = k->cell_out;
    k->s.I.sink = (DiagSink){.write = sink_write, .ctx = k, .rewrite = true};
    k->s.I.display = (DisplaySink){.show = display_show, .ctx = k};
    if (pthread_create(&k->flusher, NULL, flusher_main, k) != 0)
        return false;
    k->have_flusher = true;
    return true;
}

void kernel_io_stop(Kernel *k)
{
    if (k->have_flusher) {
        pthread_mutex_lock(&k->out_mu);
        k->flusher_stop = true;
        pthread_cond_signal(&k->out_cv);
        pthread_mutex_unlock(&k->out_mu);
        pthread_join(k->flusher, NULL);
        k->have_flusher = false;
    }
    if (k->cell_out) {
        k->s.I.out = stdout;
        fclose(k->cell_out);
        k->cell_out = NULL;
    }
    sb_free(&k->out[0]);
    sb_free(&k->out[1]);
    pthread_cond_destroy(&k->out_cv);
    pthread_mutex_destroy(&k->out_mu);
}
