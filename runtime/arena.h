/* SPDX-License-Identifier: Apache-2.0
 * Bump allocator for data that lives and dies together: the AST and the
 * identifier/literal text of one Program. Not thread-safe; an arena is filled
 * while a file is parsed (by one thread) and only read afterwards. */
#ifndef DML_RUNTIME_ARENA_H
#define DML_RUNTIME_ARENA_H

#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_new(void);
/* Frees every block the arena handed out. NULL is fine. */
void arena_free(Arena *a);
/* Zero-filled, 16-byte aligned memory; aborts only if malloc itself fails. */
void *arena_alloc(Arena *a, size_t size);
/* Copy of s[0..n) with a terminating NUL. */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);

#endif
