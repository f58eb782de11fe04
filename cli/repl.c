/* SPDX-License-Identifier: Apache-2.0
 * The interactive REPL (`dml` with no arguments): reads inputs with readline,
 * accumulates lines until an input is complete, loads it into the Program
 * (as a bare expression when it is one, else as statements) and runs it in
 * one persistent top-level frame, printing the value of bare expressions
 * (reading, running and showing: the Session of cli/session.c, which the
 * Jupyter kernel shares).
 * Owns history (~/.dml_history), Tab completion and Ctrl-C at the prompt.
 * Main thread only: readline's state is process-global. */
#include "repl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "../base/strbuf.h"
#include "../builtins/help.h"
#include "../parser/parse.h"
#include "../runtime/program.h"
#include "cli.h"
#include "session.h"

#ifndef DML_VERSION
#define DML_VERSION "0.1.0"
#endif

#define PROMPT "dml> "
#define PROMPT_MORE "...  "
/* Entries kept in memory and in the history file. */
#define HISTORY_MAX 1000

typedef struct Repl {
    Session s;              /* program, Interp, top frame; s.ninput names inputs "<repl#N>" */
    bool tty;               /* stdin is a terminal: readline, prompts, history */
    StrBuf in;              /* the input being accumulated (lines joined by '\n') */
    char *histfile;         /* malloc'd path, or NULL for no history file */
    int hist_added;         /* entries added this session (appended on exit) */
    bool had_error;         /* any input failed (piped mode exit status) */
    bool quit;              /* quit() / q() was typed */
} Repl;

/* ==== readline glue =====================================================
 * readline's callback interface hands lines to a function without a context
 * pointer, and its completion hooks are global too, so the state they share
 * with the loop lives here. Only the main thread touches it. */

static Repl *cb_repl;       /* the session completion reads from */
static char *cb_line;       /* line handed over by on_rl_line (malloc'd) */
static bool cb_got;         /* on_rl_line ran (cb_line NULL = EOF) */
static volatile sig_atomic_t winch_flag;
/* Self-pipe: the signal handlers write a byte so the wait at the prompt
 * wakes up even when the kernel hands the signal to another thread (an
 * OpenBLAS worker), which a signal mask on the main thread cannot prevent. */
static int wake_fds[2] = {-1, -1};

static void wake_loop(void)
{
    int saved = errno;
    if (wake_fds[1] >= 0) {
        ssize_t w = write(wake_fds[1], "!", 1);
        (void)w;        /* a full pipe already wakes the loop */
    }
    errno = saved;
}

/* Same contract as cli.c's handler (only sets the flag the evaluator
 * polls), plus the wake-up byte. */
static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&cli_interrupt_flag, 1);
    wake_loop();
}

static void on_sigwinch(int sig)
{
    (void)sig;
    winch_flag = 1;
    wake_loop();
}

static void drain_wake_pipe(void)
{
    char junk[64];
    while (wake_fds[0] >= 0 && read(wake_fds[0], junk, sizeof junk) > 0)
        ;
}

static void on_rl_line(char *line)
{
    cb_line = line;
    cb_got = true;
    /* Removing the handler here stops readline from redisplaying the prompt
     * before we know whether the next one is the continuation prompt, and
     * gives the terminal back (cooked mode) while DML code runs. */
    rl_callback_handler_remove();
}

/* Ctrl-C at the prompt: show ^C, drop the partial line, go to a new line.
 * The caller drops the accumulated input and shows a fresh prompt. */
static void abandon_prompt_line(void)
{
    rl_echo_signal_char(SIGINT);
    rl_callback_sigcleanup();       /* ends an incremental search, if any */
    rl_free_line_state();
    rl_replace_line("", 0);
    rl_crlf();
    rl_callback_handler_remove();
    using_history();                /* history browsing restarts at the end */
}

enum { READ_LINE, READ_EOF, READ_INTERRUPTED };

/* Reads one line at 'prompt' on the terminal with readline's callback
 * interface, waiting on the terminal and the wake-up pipe together, so a
 * Ctrl-C abandons the line at once (our handlers stay installed:
 * rl_catch_signals = 0). */
static int read_line_tty(const char *prompt, char **out)
{
    cb_got = false;
    cb_line = NULL;
    rl_callback_handler_install(prompt, on_rl_line);
    int fd = fileno(rl_instream ? rl_instream : stdin);
    while (!cb_got) {
        drain_wake_pipe();
        if (atomic_exchange(&cli_interrupt_flag, 0)) {
            abandon_prompt_line();
            return READ_INTERRUPTED;
        }
        if (winch_flag) {
            winch_flag = 0;
            rl_resize_terminal();
        }
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        if (wake_fds[0] >= 0)
            FD_SET(wake_fds[0], &fds);
        int nfds = (fd > wake_fds[0] ? fd : wake_fds[0]) + 1;
        int rc = select(nfds, &fds, NULL, NULL, NULL);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            rl_callback_handler_remove();
            return READ_EOF;
        }
        if (FD_ISSET(fd, &fds))
            rl_callback_read_char();
    }
    *out = cb_line;
    return cb_line ? READ_LINE : READ_EOF;
}

/* Reads one line from a non-terminal stdin (no prompt, no editing). */
static int read_line_pipe(char **out)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) {
        free(line);
        /* A Ctrl-C typed while a pipe feeds us interrupts the read. */
        if (errno == EINTR && atomic_exchange(&cli_interrupt_flag, 0)) {
            clearerr(stdin);
            return READ_INTERRUPTED;
        }
        return READ_EOF;
    }
    if (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    if (n > 0 && line[n - 1] == '\r')
        line[--n] = '\0';
    *out = line;
    return READ_LINE;
}

/* ==== Tab completion ===================================================== */

/* Candidates matching the word being completed, collected on the first call
 * of the generator (state 0) and handed out one by one. */
typedef struct Cands {
    char **v;
    int n, cap, next;
    const char *prefix;
    size_t plen;
    bool any_func, any_other;   /* kinds seen, to pick the append character */
} Cands;

static Cands cands;

static void cand_add(void *ctx, const char *name, SessionNameKind kind)
{
    Cands *c = ctx;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        char **v = realloc(c->v, sizeof *v * (size_t)cap);
        if (!v)
            return;
        c->v = v;
        c->cap = cap;
    }
    char *s = strdup(name);
    if (!s)
        return;
    c->v[c->n++] = s;
    if (kind == SN_FUNCTION)
        c->any_func = true;
    else
        c->any_other = true;
}

static void cands_reset(Cands *c)
{
    for (int i = c->next; i < c->n; i++)
        free(c->v[i]);      /* readline took (and frees) the ones handed out */
    free(c->v);
    memset(c, 0, sizeof *c);
}

static void cands_collect(Cands *c, const Repl *r, const char *prefix)
{
    cands_reset(c);
    c->prefix = prefix;
    c->plen = strlen(prefix);
    session_each_name(&r->s, prefix, cand_add, c);
}

static char *cand_next(const char *text, int state)
{
    if (state == 0)
        cands_collect(&cands, cb_repl, text);
    if (cands.next < cands.n)
        return cands.v[cands.next++];
    return NULL;
}

/* readline's completion hook. Inside a string literal we let readline
 * complete file names (source("nn/la<Tab>), elsewhere only DML names. */
static char **dml_complete(const char *text, int start, int end)
{
    if (rl_completion_quote_character)
        return NULL;
    rl_attempted_completion_over = 1;
    char **m = rl_completion_matches(text, cand_next);
    /* A single function match gets '(' appended, a variable nothing, a
     * keyword a space. readline appends only when the match is unique. */
    if (m && !m[1]) {
        bool is_func = cands.any_func && !cands.any_other;
        bool is_kw = session_is_keyword(m[0]);
        /* No second '(' when completing "rowSu|(X)", and none after '?'
         * ("?rowSu|" asks for help on a name, not a call). */
        if (is_func && (rl_line_buffer[end] == '(' || (start > 0 && rl_line_buffer[start - 1] == '?')))
            is_func = false;
        rl_completion_append_character = is_func ? '(' : is_kw ? ' ' : '\0';
    }
    cands_reset(&cands);
    return m;
}

/* ==== history ============================================================ */

static char *history_path(void)
{
    const char *env = getenv("DML_HISTFILE");
    if (env)
        return *env ? strdup(env) : NULL;   /* DML_HISTFILE= turns history files off */
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + sizeof "/.dml_history";
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s/.dml_history", home);
    return s;
}

static void history_start(Repl *r)
{
    using_history();
    /* Timestamps mark where an entry starts, which lets a multi-line input
     * (a function typed over several lines) come back as one entry. */
    history_write_timestamps = 1;
    history_multiline_entries = 1;
    /* Timestamps are made as history_comment_char + digits; with the default
     * (NUL) they come out empty and are never written. */
    history_comment_char = '#';
    stifle_history(HISTORY_MAX);
    r->histfile = history_path();
    if (r->histfile)
        read_history(r->histfile);
}

static void history_add(Repl *r, const char *entry)
{
    if (!*entry)
        return;
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && strcmp(last->line, entry) == 0)
        return;     /* repeating a command does not fill the history */
    add_history(entry);
    r->hist_added++;
}

/* Appends this session's entries, so concurrent sessions do not overwrite
 * each other, then trims the file to HISTORY_MAX entries. */
static void history_finish(Repl *r)
{
    if (r->histfile && r->hist_added > 0) {
        int n = r->hist_added < history_length ? r->hist_added : history_length;
        if (access(r->histfile, F_OK) == 0)
            append_history(n, r->histfile);
        else
            write_history(r->histfile);
        history_truncate_file(r->histfile, HISTORY_MAX);
    }
    clear_history();
    free(r->histfile);
    r->histfile = NULL;
}

/* ==== evaluating one input =============================================== */

/* A syntax error in input 'text' that is not part of the Program. */
static void report_parse_error(const DiagErr *e, const char *text, size_t len)
{
    fflush(stdout);
    char *s = diag_render_err(e, text, len, true);
    fputs(s ? s : e->msg, stderr);
    if (!s)
        fputc('\n', stderr);
    fflush(stderr);
    free(s);
}

static void report_runtime_error(Repl *r)
{
    fflush(stdout);
    if (r->s.I.err.interrupted) {
        /* On a terminal the echoed ^C sits at the cursor: start a line. */
        fputs(r->tty ? "\ninterrupted\n" : "interrupted\n", stderr);
        fflush(stderr);
    } else {
        cli_report_error(&r->s.I, stderr);
    }
    err_clear(&r->s.I);
    r->had_error = true;
}

static void show_value(void *ctx, Value v)
{
    Repl *r = ctx;
    FILE *out = r->s.I.out ? r->s.I.out : stdout;
    StrBuf b;
    sb_init(&b);
    session_show_sb(&b, v);
    if (b.oom)
        fputs("(value too large to show)\n", out);
    else if (b.len)
        fwrite(b.p, 1, b.len, out);
    sb_free(&b);
    fflush(out);
}

static void run_expr(Repl *r, const Node *e)
{
    Status st = session_run_expr(&r->s, e, show_value, r);
    fflush(stdout);
    if (st != ST_OK)
        report_runtime_error(r);
}

static void run_stmts(Repl *r, Node **stmts, int n)
{
    Status st = session_run_stmts(&r->s, stmts, n);
    fflush(stdout);
    if (st != ST_OK)
        report_runtime_error(r);
}

/* "?name", "?"name"" and "help(name)" with a bare name (which would
 * otherwise be an undefined variable) print the reference entry for name.
 * Returns false when 'text' is not such a request. */
static bool repl_help(Repl *r, const char *text)
{
    char topic[256];
    if (!session_help_request(&r->s, text, topic, sizeof topic))
        return false;
    StrBuf b;
    sb_init(&b);
    help_topic(topic, &b);
    FILE *out = r->s.I.out ? r->s.I.out : stdout;
    if (b.len)
        fwrite(b.p, 1, b.len, out);
    fflush(out);
    sb_free(&b);
    r->s.ninput++;
    return true;
}

/* Handles the accumulated input. Returns false when more lines are needed
 * (the input ends inside an open construct). */
static bool handle_input(Repl *r)
{
    const char *text = r->in.p;
    size_t len = r->in.len;
    char name[32];
    snprintf(name, sizeof name, "<%s#%d>", r->tty ? "repl" : "stdin", r->s.ninput + 1);
    bool einc = false, pinc = false;
    DiagErr eerr, perr, lerr;
    if (repl_help(r, text))
        return true;
    if (session_try_parse(name, text, len, PARSE_EXPR, &einc, &eerr)) {
        r->s.ninput++;
        if (session_is_quit(&r->s, text)) {
            r->quit = true;
            return true;
        }
        Node *e = NULL;
        if (!program_load_expr(r->s.prog, name, text, len, &e, &lerr)) {
            cli_report_diag(r->s.prog, &lerr, stderr);
            r->had_error = true;
            return true;
        }
        run_expr(r, e);
        return true;
    }
    if (session_try_parse(name, text, len, PARSE_PROGRAM, &pinc, &perr)) {
        r->s.ninput++;
        Node **stmts = NULL;
        int n = 0;
        bool incomplete = false;
        if (!program_load_chunk(r->s.prog, name, text, len, &stmts, &n, &incomplete, &lerr)) {
            cli_report_diag(r->s.prog, &lerr, stderr);
            r->had_error = true;
            return true;
        }
        run_stmts(r, stmts, n);
        return true;
    }
    /* "1 +" is an unfinished expression (the statement grammar rejects it
     * at once); "if (x) {" an unfinished statement. Either wants more. */
    if (einc || pinc)
        return false;
    r->s.ninput++;
    r->had_error = true;
    report_parse_error(session_pick_error(&eerr, false, &perr, false), text, len);
    return true;
}

static bool only_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return false;
    return true;
}

/* False when out of memory (the input so far is dropped). */
static bool buf_append(Repl *r, const char *line)
{
    if (r->in.len)
        sb_putn(&r->in, "\n", 1);
    sb_puts(&r->in, line);
    if (r->in.oom) {
        sb_free(&r->in);
        return false;
    }
    return true;
}

/* ==== the loop =========================================================== */

static void setup_readline(Repl *r)
{
    rl_readline_name = "dml";
    /* Our SIGINT handler (cli.c) stays in charge, so a Ctrl-C always lands in
     * cli_interrupt_flag whether the prompt or DML code is running; SIGWINCH
     * likewise (readline's handlers would act only inside its own calls). */
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    cb_repl = r;
    rl_attempted_completion_function = dml_complete;
    /* ':' is not a break so "nn::aff" completes as one word; '.' neither
     * (as.scalar). */
    rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{}()[],+-*/%^!~?";
    rl_completer_quote_characters = "\"'";
    history_start(r);
}

/* Installs the SIGINT and SIGWINCH handlers and their wake-up pipe. Without
 * a pipe (no descriptors left) Ctrl-C still works, one key press late. */
static void install_signals(void)
{
    if (pipe(wake_fds) == 0) {
        for (int i = 0; i < 2; i++) {
            fcntl(wake_fds[i], F_SETFL, fcntl(wake_fds[i], F_GETFL) | O_NONBLOCK);
            fcntl(wake_fds[i], F_SETFD, FD_CLOEXEC);
        }
    } else {
        wake_fds[0] = wake_fds[1] = -1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART for SIGINT: a blocking read in DML code should see EINTR
     * and fail as interrupted, as under 'dml run'. */
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    /* SA_RESTART for SIGWINCH: resizing the window must not fail a read. */
    sa.sa_handler = on_sigwinch;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGWINCH, &sa, NULL);
}

static void remove_signals(void)
{
    signal(SIGWINCH, SIG_DFL);
    cli_install_sigint();   /* the handler without the pipe we are closing */
    for (int i = 0; i < 2; i++)
        if (wake_fds[i] >= 0) {
            close(wake_fds[i]);
            wake_fds[i] = -1;
        }
}

int repl_main(Program *prog, uint64_t seed)
{
    Repl r;
    memset(&r, 0, sizeof r);
    r.tty = isatty(STDIN_FILENO);
    if (!session_init(&r.s, prog, seed)) {
        fputs("dml: out of memory\n", stderr);
        return 1;
    }

    if (r.tty) {
        setup_readline(&r);
        printf("dml %s \xe2\x80\x94 DML interpreter. Ctrl-D to exit, help() for help\n", DML_VERSION);
        fflush(stdout);
        install_signals();
    } else {
        cli_install_sigint();
    }

    for (;;) {
        char *line = NULL;
        int got = r.tty ? read_line_tty(r.in.len ? PROMPT_MORE : PROMPT, &line) : read_line_pipe(&line);
        if (got == READ_INTERRUPTED) {
            r.in.len = 0;      /* Ctrl-C abandons the whole (multi-line) input */
            continue;
        }
        if (got == READ_EOF) {
            if (r.in.len) {
                /* EOF inside an open construct: say what is missing. On a
                 * terminal this was Ctrl-D at the continuation prompt: drop
                 * the input but keep the session (its variables) alive. */
                DiagErr eerr, perr;
                bool einc = false, pinc = false;
                char name[32];
                snprintf(name, sizeof name, "<%s#%d>", r.tty ? "repl" : "stdin", r.s.ninput + 1);
                if (r.tty)
                    putchar('\n');
                if (session_try_parse(name, r.in.p, r.in.len, PARSE_EXPR, &einc, &eerr))
                    diag_fail(&eerr, "syntax error");   /* cannot happen: it failed before */
                if (session_try_parse(name, r.in.p, r.in.len, PARSE_PROGRAM, &pinc, &perr))
                    diag_fail(&perr, "syntax error");
                report_parse_error(session_pick_error(&eerr, einc, &perr, pinc), r.in.p, r.in.len);
                r.had_error = true;
                r.in.len = 0;
                if (r.tty)
                    continue;
            } else if (r.tty) {
                putchar('\n');
            }
            break;
        }
        if (r.in.len == 0 && only_blank(line)) {
            free(line);
            continue;
        }
        if (!buf_append(&r, line)) {
            free(line);
            fputs("out of memory: input dropped\n", stderr);
            r.in.len = 0;
            continue;
        }
        free(line);
        if (!handle_input(&r))
            continue;
        if (r.tty)
            history_add(&r, r.in.p);
        r.in.len = 0;
        if (r.quit)
            break;
    }
    fflush(stdout);

    if (r.tty) {
        history_finish(&r);
        remove_signals();
        cb_repl = NULL;
    }
    sb_free(&r.in);
    session_destroy(&r.s);
    /* Piped input is a script: its exit status says whether it all ran. */
    return !r.tty && r.had_error ? 1 : 0;
}
