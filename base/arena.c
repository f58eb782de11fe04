/* SPDX-License-Identifier: Apache-2.0
 * Arena: a chain of blocks; allocation bumps a pointer in the newest block.
 * Out of memory is sticky (arena_failed) and never aborts: a small request
 * then gets the arena's zeroed sink, so a grammar action can finish writing
 * its node before the parser stops at the next step; a larger one gets NULL. */
#include "arena.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct Block {
    struct Block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Block;

enum { ARENA_SINK = 512 };

struct Arena {
    Block *head;
    bool failed;
    _Alignas(16) unsigned char sink[ARENA_SINK];
};

enum { ARENA_BLOCK = 64 * 1024 };

Arena *arena_new(void)
{
    return calloc(1, sizeof(Arena));
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    Block *b = a->head;
    while (b) {
        Block *next = b->next;
        free(b);
        b = next;
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t size)
{
    if (size > ((size_t)-1 >> 1)) {
        a->failed = true;
        return NULL;
    }
    size = (size + 15) & ~(size_t)15;
    Block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = size <= (size_t)-1 - sizeof *b ? malloc(sizeof *b + cap) : NULL;
        if (!b) {
            a->failed = true;
            if (size > ARENA_SINK)
                return NULL;
            memset(a->sink, 0, size);
            return a->sink;
        }
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

bool arena_failed(const Arena *a)
{
    return a->failed;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = n < (size_t)-1 ? arena_alloc(a, n + 1) : NULL;
    if (!p || p == (char *)a->sink)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}
