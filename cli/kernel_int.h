/* SPDX-License-Identifier: Apache-2.0
 * Private to the kernel (cli/kernel*.c): its state and the functions its
 * files share.
 * Threads: the main thread serves the shell socket and runs cells; the
 * control thread serves the control socket (shutdown, interrupt, kernel
 * info); the heartbeat thread echoes; the flusher thread publishes what
 * cells print. Any thread that runs DML (paramserv and parfor workers)
 * may print. Locks: 'pub_mu' serialises every send on the IOPub socket
 * and guards 'parent'; 'out_mu' guards the stream buffers. Lock order:
 * pub_mu before out_mu. */
#ifndef DML_CLI_KERNEL_INT_H
#define DML_CLI_KERNEL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "../base/strbuf.h"
#include "kernel_msg.h"
#include "session.h"

enum { KSTREAM_STDOUT, KSTREAM_STDERR };

typedef struct Kernel {
    void *zctx;
    void *shell, *control, *iopub, *stdin_sock, *hb;
    KKey key;
    char *keybuf;
    char session_id[40];

    pthread_mutex_t pub_mu;
    json_t *parent;             /* header of the request being served (IOPub's parent) */

    pthread_mutex_t out_mu;
    pthread_cond_t out_cv;      /* signalled when text arrives or the flusher must stop */
    StrBuf out[2];              /* text printed and not yet published, per stream */
    int status_len;             /* characters of the status line now shown (paramserv) */
    bool flusher_stop;
    pthread_t flusher, hb_thread, ctl_thread;
    bool have_flusher, have_hb, have_ctl;

    atomic_int shutdown;        /* a shutdown request came: leave the loop */
    atomic_int restart;         /* ... asking for a restart (echoed in the reply) */
    Session s;
    FILE *cell_out;             /* I.out while cells run: the stdout stream */
    int exec_count;
} Kernel;

/* kernel.c: send a message on 'sock' ('pub' true: IOPub, under pub_mu)
 * with 'type', parent header 'parent' (may be NULL), taking 'content'.
 * Returns false (logged) on failure. */
bool kernel_send(Kernel *k, void *sock, const KMsg *req, const char *type, json_t *content);
/* Publishes on IOPub with the current parent, taking 'content'. */
bool kernel_publish(Kernel *k, const char *type, json_t *content);
/* A log line on the kernel's own stderr (the Jupyter server's log). */
void kernel_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* kernel_io.c: the stream buffers, the cell's stdout FILE, the sink, the
 * display of pictures, the flusher thread. */
bool kernel_io_start(Kernel *k);
void kernel_io_stop(Kernel *k);
/* Publishes everything printed so far (before any other IOPub message
 * of a cell, so the order is kept). */
void kernel_flush(Kernel *k);

/* kernel_exec.c: the shell requests that run DML or read the session. */
void kernel_execute(Kernel *k, const KMsg *req);
void kernel_complete(Kernel *k, const KMsg *req);
void kernel_inspect(Kernel *k, const KMsg *req);
void kernel_is_complete(Kernel *k, const KMsg *req);

#endif
