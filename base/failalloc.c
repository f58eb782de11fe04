/* SPDX-License-Identifier: Apache-2.0
 * The allocation wrappers behind DML_FAIL_ALLOC (see failalloc.h). The
 * Makefile links with -Wl,--wrap=malloc,... so that our objects' calls reach
 * __wrap_X and __real_X is the C library's X. The state is process-wide on
 * purpose (a test hook, like ltests): 'target' is the allocation number that
 * fails (0: none, -1: not read from the environment yet). */
#include "failalloc.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static _Atomic long target = -1;
static _Atomic long count;
static atomic_bool fired;

void failalloc_set(long n)
{
    atomic_store(&count, 0);
    atomic_store(&fired, false);
    atomic_store(&target, n > 0 ? n : 0);
}

bool failalloc_fired(void)
{
    return atomic_load(&fired);
}

/* True when this allocation is the one to fail. The common case (no
 * injection) costs one relaxed load. */
static bool fail_now(void)
{
    long t = atomic_load_explicit(&target, memory_order_relaxed);
    if (t == 0)
        return false;
    if (t < 0) {
        const char *e = getenv("DML_FAIL_ALLOC");
        long n = e ? strtol(e, NULL, 10) : 0;
        long unset = -1;
        atomic_compare_exchange_strong(&target, &unset, n > 0 ? n : 0);
        t = atomic_load(&target);
        if (t == 0)
            return false;
    }
    if (atomic_fetch_add(&count, 1) + 1 != t)
        return false;
    atomic_store(&fired, true);
    errno = ENOMEM;
    return true;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    return fail_now() ? ENOMEM : __real_posix_memalign(p, align, n);
}

/* ---- the reserve diagnostic ---- */

static char *_Atomic reserve;

void failalloc_reserve(void)
{
    if (atomic_load(&reserve))
        return;
    char *r = __real_malloc(sizeof "out of memory");
    if (!r)
        return;
    memcpy(r, "out of memory", sizeof "out of memory");
    char *none = NULL;
    if (!atomic_compare_exchange_strong(&reserve, &none, r))
        free(r);
}

char *failalloc_msg_dup(const char *msg)
{
    size_t n = strlen(msg) + 1;
    char *s = malloc(n);
    if (s) {
        memcpy(s, msg, n);
        return s;
    }
    return atomic_exchange(&reserve, NULL);
}
