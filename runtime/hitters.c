/* SPDX-License-Identifier: Apache-2.0
 * The heavy-hitter table of --stats (contract in hitters.h): a fixed
 * open-addressing hash from name pointers to atomic time and count, filled
 * without locks by every thread, sorted only when printed. */
#include "hitters.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Distinct builtins and operators are a few hundred; a full table sends
 * the rest to one "(other)" entry rather than failing. */
enum { HH_SLOTS = 1024 };

typedef struct Slot {
    _Atomic(const char *) name;
    _Atomic uint64_t ns, count;
} Slot;

struct Hitters {
    Slot slot[HH_SLOTS];
    Slot other;
};

static const char other_name[] = "(other)";

Hitters *hitters_new(void)
{
    Hitters *h = calloc(1, sizeof *h);
    if (h)
        atomic_init(&h->other.name, other_name);
    return h;
}

void hitters_free(Hitters *h)
{
    free(h);
}

static Slot *find_slot(Hitters *h, const char *name)
{
    uintptr_t k = (uintptr_t)name;
    size_t i = (size_t)((k >> 3) * 0x9E3779B97F4A7C15u >> 54) % HH_SLOTS;
    for (int probe = 0; probe < HH_SLOTS; probe++, i = (i + 1) % HH_SLOTS) {
        Slot *s = &h->slot[i];
        const char *cur = atomic_load_explicit(&s->name, memory_order_acquire);
        if (cur == name)
            return s;
        if (cur == NULL) {
            const char *expected = NULL;
            if (atomic_compare_exchange_strong(&s->name, &expected, name) || expected == name)
                return s;
            /* Another name took the slot first: go on probing. */
        }
    }
    return &h->other;
}

void hitters_add(Hitters *h, const char *name, uint64_t ns)
{
    Slot *s = find_slot(h, name);
    atomic_fetch_add_explicit(&s->ns, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
}

const char *hitters_binop_name(BinOp op)
{
    static const char *const names[OP__COUNT] = {
        [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_POW] = "^",
        [OP_INTDIV] = "%/%", [OP_MOD] = "%%", [OP_MATMUL] = "%*%", [OP_LT] = "<", [OP_LE] = "<=",
        [OP_GT] = ">", [OP_GE] = ">=", [OP_EQ] = "==", [OP_NE] = "!=", [OP_AND] = "&", [OP_OR] = "|",
        [OP_ANDAND] = "&&", [OP_OROR] = "||",
    };
    return (unsigned)op < OP__COUNT && names[op] ? names[op] : "?";
}

const char *hitters_unop_name(UnOp op)
{
    switch (op) {
    case UOP_NEG: return "u-";
    case UOP_PLUS: return "u+";
    case UOP_NOT: return "!";
    default: return "?";
    }
}

typedef struct Row {
    const char *name;
    uint64_t ns, count;
} Row;

static int by_time_desc(const void *a, const void *b)
{
    const Row *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int digits(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

void hitters_report(const Hitters *h, int top, StrBuf *b)
{
    Row rows[HH_SLOTS + 1];
    int n = 0;
    for (int i = 0; i <= HH_SLOTS; i++) {
        const Slot *s = i < HH_SLOTS ? &h->slot[i] : &h->other;
        uint64_t c = atomic_load_explicit((_Atomic uint64_t *)&s->count, memory_order_relaxed);
        if (!c)
            continue;
        const char *name = atomic_load_explicit((_Atomic(const char *) *)&s->name, memory_order_relaxed);
        /* Rows of one name under two pointers (aliases) become one. */
        int j = 0;
        while (j < n && strcmp(rows[j].name, name) != 0)
            j++;
        if (j == n)
            rows[n++] = (Row){name, 0, 0};
        rows[j].ns += atomic_load_explicit((_Atomic uint64_t *)&s->ns, memory_order_relaxed);
        rows[j].count += c;
    }
    qsort(rows, (size_t)n, sizeof *rows, by_time_desc);
    if (top < n)
        n = top;
    int wnum = digits((uint64_t)(n > 0 ? n : 1)), wname = 11, wtime = 7, wcount = 5;
    char tb[32];
    for (int i = 0; i < n; i++) {
        int ln = (int)strlen(rows[i].name);
        wname = ln > wname ? ln : wname;
        int lt = snprintf(tb, sizeof tb, "%.3f", (double)rows[i].ns * 1e-9);
        wtime = lt > wtime ? lt : wtime;
        int lc = digits(rows[i].count);
        wcount = lc > wcount ? lc : wcount;
    }
    sb_puts(b, "Heavy hitter instructions:\n");
    sb_printf(b, " %*s  %-*s  %*s  %*s\n", wnum, "#", wname, "Instruction", wtime, "Time(s)", wcount, "Count");
    for (int i = 0; i < n; i++)
        sb_printf(b, " %*d  %-*s  %*.3f  %*llu\n", wnum, i + 1, wname, rows[i].name, wtime,
                  (double)rows[i].ns * 1e-9, wcount, (unsigned long long)rows[i].count);
}
