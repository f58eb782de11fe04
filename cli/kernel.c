/* SPDX-License-Identifier: Apache-2.0
 * The Jupyter kernel: the connection file, the five ZeroMQ sockets, the
 * threads (heartbeat, control, the main loop on the shell socket) and the
 * requests that do not run DML; kernel_exec.c runs cells, kernel_io.c
 * carries their output, kernel_msg.c is the wire format. A message that
 * does not decode (malformed, wrongly signed) is dropped with a log line.
 * Protocol: Jupyter messaging 5.3 (doc/jupyter.md). */
#include "kernel.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "../base/strbuf.h"
#include "cli.h"
#include "kernel_int.h"

#ifndef DML_VERSION
#define DML_VERSION "0.1.0"
#endif

/* For ThreadSanitizer (make SANITIZE=thread test): libzmq hands messages
 * between our threads and its I/O thread through lock-free queues of its
 * own, which an uninstrumented libzmq cannot show to the sanitizer, so it
 * reports their memory as racing. Reports that go through libzmq are
 * suppressed; races in our own code are still reported. TSan looks this
 * function up by name; other builds ignore it. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    return "race:libzmq.so\ncalled_from_lib:libzmq.so\n";
}

void kernel_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dml kernel: %s\n", line);
}

/* ==== sending and receiving =============================================== */

static bool send_frames(void *sock, const KFrame *f, int n)
{
    for (int i = 0; i < n; i++) {
        int rc;
        do
            rc = zmq_send(sock, f[i].p, f[i].n, i + 1 < n ? ZMQ_SNDMORE : 0);
        while (rc < 0 && errno == EINTR);
        if (rc < 0)
            return false;
    }
    return true;
}

bool kernel_send(Kernel *k, void *sock, const KMsg *req, const char *type, json_t *content)
{
    KMsg m = {0};
    if (sock != k->iopub && req) {
        m.ids = req->ids;       /* a reply goes back to the requester */
        m.nids = req->nids;
    }
    m.header = kmsg_new_header(type, k->session_id);
    m.parent = req && req->header ? json_incref(req->header) : json_object();
    m.metadata = json_object();
    m.content = content;
    KFrame *f = NULL;
    int n = 0;
    bool ok = m.header && m.parent && m.metadata && content && kmsg_encode(&m, k->key, &f, &n);
    if (ok) {
        /* IOPub's topic frame: the message type, as ipykernel sends it. */
        if (sock == k->iopub) {
            KFrame *t = realloc(f, (size_t)(n + 1) * sizeof *f);
            ok = t != NULL;
            if (ok) {
                f = t;
                memmove(f + 1, f, (size_t)n * sizeof *f);
                f[0].p = (unsigned char *)strdup(type);
                f[0].n = strlen(type);
                n++;
                ok = f[0].p != NULL;
            }
        }
        ok = ok && send_frames(sock, f, n);
        kframes_free(f, n);
    }
    json_decref(m.header);
    json_decref(m.parent);
    json_decref(m.metadata);
    json_decref(content);
    if (!ok)
        kernel_log("could not send %s", type);
    return ok;
}

bool kernel_publish(Kernel *k, const char *type, json_t *content)
{
    pthread_mutex_lock(&k->pub_mu);
    KMsg parent = {.header = k->parent};
    bool ok = kernel_send(k, k->iopub, &parent, type, content);
    pthread_mutex_unlock(&k->pub_mu);
    return ok;
}

/* Receives one multipart message and decodes it. False when nothing
 * usable came (logged when it was a bad message). */
static bool recv_msg(Kernel *k, void *sock, const char *chan, KMsg *m)
{
    KFrame f[KMSG_MAX_FRAMES + 1];
    int n = 0;
    bool more = true, too_many = false;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        int rc;
        do
            rc = zmq_msg_recv(&part, sock, 0);
        while (rc < 0 && errno == EINTR);
        if (rc < 0) {
            zmq_msg_close(&part);
            break;
        }
        more = zmq_msg_more(&part);
        if (n <= KMSG_MAX_FRAMES) {
            size_t len = zmq_msg_size(&part);
            f[n].p = malloc(len ? len : 1);
            if (f[n].p) {
                memcpy(f[n].p, zmq_msg_data(&part), len);
                f[n].n = len;
                n++;
            }
        } else {
            too_many = true;
        }
        zmq_msg_close(&part);
    }
    char why[256];
    bool ok = !too_many && kmsg_decode(f, n, k->key, m, why, sizeof why);
    if (!ok)
        kernel_log("dropped a message on %s: %s", chan, too_many ? "too many frames" : why);
    for (int i = 0; i < n; i++)
        free(f[i].p);
    return ok;
}

/* ==== requests that do not run DML ======================================== */

static json_t *language_info(void)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "name", "dml", "version", DML_VERSION, "mimetype",
                     "text/x-dml", "file_extension", ".dml", "pygments_lexer", "r", "codemirror_mode", "r");
}

static void kernel_info(Kernel *k, void *sock, const KMsg *req)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:[{s:s, s:s}]}", "status", "ok", "protocol_version",
                          "5.3", "implementation", "dml", "implementation_version", DML_VERSION, "language_info",
                          language_info(), "banner",
                          "dml " DML_VERSION " \xe2\x80\x94 DML (Apache SystemDS) in Jupyter. ?name shows help.",
                          "help_links", "text", "DML reference", "url", "https://apache.github.io/systemds/");
    kernel_send(k, sock, req, "kernel_info_reply", c);
}

static void shutdown_req(Kernel *k, void *sock, const KMsg *req)
{
    bool restart = json_is_true(json_object_get(req->content, "restart"));
    atomic_store(&k->restart, restart);
    kernel_send(k, sock, req, "shutdown_reply", json_pack("{s:s, s:b}", "status", "ok", "restart", restart));
    atomic_store(&k->shutdown, 1);
    atomic_store(&cli_interrupt_flag, 1);  /* a running cell stops */
}

/* The control channel: its own thread, so shutdown and interrupt work
 * while a cell runs. */
static void *control_main(void *arg)
{
    Kernel *k = arg;
    while (!atomic_load(&k->shutdown)) {
        zmq_pollitem_t it = {k->control, 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&it, 1, 200);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            break;              /* ETERM: the context is going away */
        }
        if (rc == 0)
            continue;
        KMsg m;
        if (!recv_msg(k, k->control, "control", &m))
            continue;
        if (strcmp(m.type, "shutdown_request") == 0) {
            shutdown_req(k, k->control, &m);
        } else if (strcmp(m.type, "interrupt_request") == 0) {
            atomic_store(&cli_interrupt_flag, 1);
            kernel_send(k, k->control, &m, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
        } else if (strcmp(m.type, "kernel_info_request") == 0) {
            kernel_info(k, k->control, &m);
        } else {
            kernel_log("no handler for %s on control", m.type);
        }
        kmsg_free(&m);
    }
    return NULL;
}

/* The heartbeat: every message echoed back. Returns when the context ends. */
static void *hb_main(void *arg)
{
    Kernel *k = arg;
    zmq_proxy(k->hb, k->hb, NULL);
    return NULL;
}

static void set_status(Kernel *k, const char *state)
{
    kernel_publish(k, "status", json_pack("{s:s}", "execution_state", state));
}

static void serve_shell(Kernel *k, KMsg *m)
{
    pthread_mutex_lock(&k->pub_mu);
    json_decref(k->parent);
    k->parent = json_incref(m->header);
    pthread_mutex_unlock(&k->pub_mu);
    set_status(k, "busy");
    const char *t = m->type;
    if (strcmp(t, "execute_request") == 0)
        kernel_execute(k, m);
    else if (strcmp(t, "kernel_info_request") == 0)
        kernel_info(k, k->shell, m);
    else if (strcmp(t, "complete_request") == 0)
        kernel_complete(k, m);
    else if (strcmp(t, "inspect_request") == 0)
        kernel_inspect(k, m);
    else if (strcmp(t, "is_complete_request") == 0)
        kernel_is_complete(k, m);
    else if (strcmp(t, "history_request") == 0)
        kernel_send(k, k->shell, m, "history_reply", json_pack("{s:s, s:[]}", "status", "ok", "history"));
    else if (strcmp(t, "comm_info_request") == 0)
        kernel_send(k, k->shell, m, "comm_info_reply", json_pack("{s:s, s:{}}", "status", "ok", "comms"));
    else if (strcmp(t, "shutdown_request") == 0)
        shutdown_req(k, k->shell, m);
    else
        kernel_log("no handler for %s on shell", t);
    set_status(k, "idle");
}

/* ==== start-up ============================================================= */

typedef struct Conn {
    json_t *j;
    const char *transport, *ip, *key, *scheme;
} Conn;

static bool read_conn(const char *path, Conn *c)
{
    json_error_t e;
    c->j = json_load_file(path, 0, &e);
    if (!c->j || !json_is_object(c->j)) {
        fprintf(stderr, "dml kernel: %s: %s\n", path, c->j ? "not a JSON object" : e.text);
        json_decref(c->j);
        return false;
    }
    c->transport = json_string_value(json_object_get(c->j, "transport"));
    c->ip = json_string_value(json_object_get(c->j, "ip"));
    c->key = json_string_value(json_object_get(c->j, "key"));
    c->scheme = json_string_value(json_object_get(c->j, "signature_scheme"));
    if (!c->transport)
        c->transport = "tcp";
    if (!c->ip)
        c->ip = "127.0.0.1";
    if (!c->key)
        c->key = "";
    if (*c->key && c->scheme && strcmp(c->scheme, "hmac-sha256") != 0) {
        fprintf(stderr, "dml kernel: %s: signature scheme '%s' is not supported (hmac-sha256 is)\n", path, c->scheme);
        json_decref(c->j);
        return false;
    }
    return true;
}

static void *open_socket(Kernel *k, const Conn *c, int type, const char *port_key)
{
    json_t *pj = json_object_get(c->j, port_key);
    if (!json_is_integer(pj) || json_integer_value(pj) < 0 || json_integer_value(pj) > 65535) {
        fprintf(stderr, "dml kernel: connection file: '%s' is not a port number\n", port_key);
        return NULL;
    }
    void *s = zmq_socket(k->zctx, type);
    if (!s)
        return NULL;
    int linger = 1000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    char addr[512];
    if (strcmp(c->transport, "ipc") == 0)
        snprintf(addr, sizeof addr, "ipc://%s-%lld", c->ip, (long long)json_integer_value(pj));
    else
        snprintf(addr, sizeof addr, "%s://%s:%lld", c->transport, c->ip, (long long)json_integer_value(pj));
    if (zmq_bind(s, addr) != 0) {
        fprintf(stderr, "dml kernel: cannot listen on %s: %s\n", addr, zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

static void close_all(Kernel *k)
{
    if (k->zctx)
        zmq_ctx_shutdown(k->zctx);     /* the heartbeat's proxy returns */
    if (k->have_hb)
        pthread_join(k->hb_thread, NULL);
    if (k->have_ctl)
        pthread_join(k->ctl_thread, NULL);
    void **socks[] = {&k->shell, &k->control, &k->iopub, &k->stdin_sock, &k->hb};
    for (size_t i = 0; i < sizeof socks / sizeof *socks; i++)
        if (*socks[i]) {
            zmq_close(*socks[i]);
            *socks[i] = NULL;
        }
    if (k->zctx)
        zmq_ctx_term(k->zctx);
    k->zctx = NULL;
}

int kernel_main(Program *prog, const char *path, uint64_t seed)
{
    Conn c;
    if (!read_conn(path, &c))
        return 1;
    Kernel *k = calloc(1, sizeof *k);
    if (!k) {
        json_decref(c.j);
        return 1;
    }
    pthread_mutex_init(&k->pub_mu, NULL);
    k->keybuf = strdup(c.key);
    k->key = (KKey){(const unsigned char *)k->keybuf, k->keybuf ? strlen(k->keybuf) : 0};
    json_t *h = kmsg_new_header("x", "");
    snprintf(k->session_id, sizeof k->session_id, "%s", h ? json_string_value(json_object_get(h, "msg_id")) : "dml");
    json_decref(h);
    int rc = 1;
    bool session = session_init(&k->s, prog, seed);
    k->zctx = zmq_ctx_new();
    if (session && k->zctx && k->keybuf && (k->shell = open_socket(k, &c, ZMQ_ROUTER, "shell_port")) &&
        (k->control = open_socket(k, &c, ZMQ_ROUTER, "control_port")) &&
        (k->iopub = open_socket(k, &c, ZMQ_PUB, "iopub_port")) &&
        (k->stdin_sock = open_socket(k, &c, ZMQ_ROUTER, "stdin_port")) &&
        (k->hb = open_socket(k, &c, ZMQ_ROUTER, "hb_port")) && kernel_io_start(k)) {
        cli_install_sigint();  /* Jupyter interrupts with SIGINT (interrupt_mode "signal") */
        k->have_hb = pthread_create(&k->hb_thread, NULL, hb_main, k) == 0;
        k->have_ctl = pthread_create(&k->ctl_thread, NULL, control_main, k) == 0;
        rc = k->have_hb && k->have_ctl ? 0 : 1;
        set_status(k, "starting");
        while (rc == 0 && !atomic_load(&k->shutdown)) {
            zmq_pollitem_t it = {k->shell, 0, ZMQ_POLLIN, 0};
            int n = zmq_poll(&it, 1, 200);
            if (n < 0 && errno != EINTR)
                break;
            if (n <= 0)
                continue;
            KMsg m;
            if (!recv_msg(k, k->shell, "shell", &m))
                continue;
            serve_shell(k, &m);
            kmsg_free(&m);
        }
        kernel_flush(k);
    } else if (session) {
        fprintf(stderr, "dml kernel: could not start (%s)\n", errno ? zmq_strerror(errno) : "out of memory");
    }
    atomic_store(&k->shutdown, 1);
    close_all(k);
    kernel_io_stop(k);
    if (session)
        session_destroy(&k->s);
    json_decref(k->parent);
    pthread_mutex_destroy(&k->pub_mu);
    free(k->keybuf);
    free(k);
    json_decref(c.j);
    return rc;
}

/* ==== dml kernel install ================================================== */

/* Writes 'text' to path through a temporary renamed over it. */
static bool write_atomic(const char *path, const char *text)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (ok)
        ok = rename(tmp, path) == 0;
    if (!ok)
        unlink(tmp);
    return ok;
}


/* The kernelspec starts `dml kernel -f FILE`: the dml next to this
 * executable (dml-kernel, which `dml kernel` runs), malloc'd; NULL when
 * /proc/self/exe cannot be read. */
static char *dml_path(void)
{
    char *exe = realpath("/proc/self/exe", NULL);
    char *slash = exe ? strrchr(exe, '/') : NULL;
    if (slash && strcmp(slash + 1, "dml-kernel") == 0) {
        slash[4] = '\0';  /* ".../dml-kernel" -> ".../dml" */
        if (access(exe, X_OK) != 0) {
            free(exe);
            return NULL;
        }
    }
    return exe;
}

/* mkdir -p */
static bool make_dirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return false;
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return false;
            *p = '/';
        }
    return mkdir(buf, 0755) == 0 || errno == EEXIST;
}

int kernel_install_main(int argc, char **argv)
{
    const char *prefix = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--user") == 0) {
            prefix = NULL;
        } else if (strcmp(argv[i], "--prefix") == 0 && i + 1 < argc) {
            prefix = argv[++i];
        } else {
            fprintf(stderr, "dml: kernel install: unknown option '%s'\nusage: dml kernel install [--user | --prefix DIR]\n",
                    argv[i]);
            return 2;
        }
    }
    char dir[PATH_MAX];
    int w;
    if (prefix) {
        w = snprintf(dir, sizeof dir, "%s/share/jupyter/kernels/dml", prefix);
    } else {
        /* Jupyter's user data folder */
        const char *jd = getenv("JUPYTER_DATA_DIR"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
        if (jd && *jd)
            w = snprintf(dir, sizeof dir, "%s/kernels/dml", jd);
        else if (xdg && *xdg)
            w = snprintf(dir, sizeof dir, "%s/jupyter/kernels/dml", xdg);
        else if (home && *home)
            w = snprintf(dir, sizeof dir, "%s/.local/share/jupyter/kernels/dml", home);
        else {
            fputs("dml: kernel install: no HOME; give --prefix DIR\n", stderr);
            return 1;
        }
    }
    if (w < 0 || w >= (int)sizeof dir - 16) {
        fputs("dml: kernel install: path too long\n", stderr);
        return 1;
    }
    char *exe = dml_path();
    json_t *spec = json_pack("{s:[s, s, s, s], s:s, s:s, s:s, s:{s:b}}", "argv", exe ? exe : "dml", "kernel", "-f",
                             "{connection_file}", "display_name", "DML", "language", "dml", "interrupt_mode",
                             "signal", "metadata", "debugger", 0);
    free(exe);
    char *text = spec ? json_dumps(spec, JSON_INDENT(2)) : NULL;
    json_decref(spec);
    char file[PATH_MAX + 16];
    snprintf(file, sizeof file, "%s/kernel.json", dir);
    StrBuf b;
    sb_init(&b);
    if (text)
        sb_printf(&b, "%s\n", text);
    free(text);
    bool ok = !b.oom && b.len && make_dirs(dir) && write_atomic(file, b.p);
    sb_free(&b);
    if (!ok) {
        fprintf(stderr, "dml: kernel install: cannot write %s: %s\n", file, strerror(errno));
        return 1;
    }
    printf("Installed the DML kernel (kernelspec 'dml') in %s\n", dir);
    return 0;
}
