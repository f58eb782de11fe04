/* SPDX-License-Identifier: Apache-2.0
 * The Interp's error slot (Interp.err, declared in interp.h): setting the
 * message and position, the DML call-stack trace, moving an error between
 * threads' Interps, and formatting it for the user. An Interp belongs to one
 * thread; nothing here locks. */
#include "interp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/failalloc.h"

static Status err_vset(Interp *I, const Loc *loc, const char *fmt, va_list ap)
{
    err_clear(I);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *msg = malloc((size_t)(n < 0 ? 0 : n) + 1);
    if (msg)
        vsnprintf(msg, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    I->err.msg = msg ? msg : failalloc_msg_dup("out of memory");   /* no room for the real message */
    if (loc) {
        I->err.loc = *loc;
        I->err.has_loc = loc->file != NULL;
    }
    return ST_ERR;
}

Status err_set(Interp *I, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(I, NULL, fmt, ap);
    va_end(ap);
    return ST_ERR;
}

Status err_at(Interp *I, const Loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(I, loc, fmt, ap);
    va_end(ap);
    return ST_ERR;
}

Status err_take(Interp *I, const DiagErr *e)
{
    return err_at(I, e->has_loc ? &e->loc : NULL, "%s", e->msg);
}

Status err_stamp(Interp *I, const Loc *loc)
{
    if (!I->err.has_loc && loc && loc->file) {
        I->err.loc = *loc;
        I->err.has_loc = true;
    }
    if (!I->err.msg && !I->err.interrupted)
        I->err.msg = strdup("unknown error");
    return ST_ERR;
}

/* Append "  ... (repeated N more times)" for pending repeats. */
static void flush_repeat(Interp *I)
{
    if (I->err.repeat == 0)
        return;
    char note[64];
    int n = snprintf(note, sizeof note, "  ... (repeated %d more times)\n", I->err.repeat);
    I->err.repeat = 0;
    char *t = realloc(I->err.trace, I->err.trace_len + (size_t)n + 1);
    if (!t)
        return;
    memcpy(t + I->err.trace_len, note, (size_t)n + 1);
    I->err.trace = t;
    I->err.trace_len += (size_t)n;
}

void err_finish_trace(Interp *I)
{
    flush_repeat(I);
}

void err_push_frame(Interp *I, const char *fname, const Loc *call_loc)
{
    char line[512];
    int n;
    if (call_loc && call_loc->file)
        n = snprintf(line, sizeof line, "  in %s() called at %s:%d:%d\n", fname, call_loc->file,
                     call_loc->line, call_loc->col);
    else
        n = snprintf(line, sizeof line, "  in %s()\n", fname);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    /* Runaway recursion repeats one line thousands of times: count repeats
     * instead of storing them. */
    size_t tl = I->err.trace_len;
    if (tl >= (size_t)n && strcmp(I->err.trace + tl - (size_t)n, line) == 0 &&
        (tl == (size_t)n || I->err.trace[tl - (size_t)n - 1] == '\n')) {
        I->err.repeat++;
        return;
    }
    flush_repeat(I);
    if (I->err.trace_len > 64 * 1024)
        return;
    char *t = realloc(I->err.trace, I->err.trace_len + (size_t)n + 1);
    if (!t)
        return;
    memcpy(t + I->err.trace_len, line, (size_t)n + 1);
    I->err.trace = t;
    I->err.trace_len += (size_t)n;
}

Status err_oom(Interp *I, int64_t rows, int64_t cols)
{
    return err_set(I, "out of memory allocating a %lldx%lld matrix", (long long)rows, (long long)cols);
}

void err_clear(Interp *I)
{
    free(I->err.msg);
    free(I->err.trace);
    memset(&I->err, 0, sizeof I->err);
}

void err_move(Interp *to, Interp *from)
{
    err_clear(to);
    to->err = from->err;
    memset(&from->err, 0, sizeof from->err);
}

char *err_format(const Interp *I)
{
    const char *msg = I->err.msg ? I->err.msg : (I->err.interrupted ? "interrupted" : "unknown error");
    size_t cap = strlen(msg) + I->err.trace_len + 256;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    int n = 0;
    if (I->err.has_loc)
        n = snprintf(s, cap, "%s:%d:%d: %s\n", I->err.loc.file, I->err.loc.line, I->err.loc.col, msg);
    else
        n = snprintf(s, cap, "%s\n", msg);
    if (I->err.trace && n >= 0 && (size_t)n < cap)
        memcpy(s + n, I->err.trace, I->err.trace_len + 1);
    return s;
}

Status err_stack(Interp *I)
{
    return err_set(I, "stack overflow: recursion or nesting too deep for the C stack (runaway recursion?)");
}
