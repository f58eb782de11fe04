/* SPDX-License-Identifier: Apache-2.0
 * Arena: a chain of blocks; allocation bumps a pointer in the newest block. */
#include "arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Block {
    struct Block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Block;

struct Arena {
    Block *head;
};

enum { ARENA_BLOCK = 64 * 1024 };

Arena *arena_new(void)
{
    Arena *a = calloc(1, sizeof *a);
    if (!a) {
        fputs("dml: out of memory\n", stderr);
        abort();
    }
    return a;
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
    size = (size + 15) & ~(size_t)15;
    Block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) {
            fputs("dml: out of memory\n", stderr);
            abort();
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

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}
