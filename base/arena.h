/* SPDX-License-Identifier: Apache-2.0
 * Bump allocator for data that lives and dies together: the AST and the
 * identifier/literal text of one Program. Not thread-safe; an arena is filled
 * while a file is parsed (by one thread) and only read afterwards. */
#ifndef DML_BASE_ARENA_H
#define DML_BASE_ARENA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct Arena Arena;

/* NULL when out of memory. */
Arena *arena_new(void);
/* Frees every block the arena handed out. NULL is fine. */
void arena_free(Arena *a);
/* Zero-filled, 16-byte aligned memory. Out of memory marks the arena
 * failed (for good) and returns a shared scratch area for requests of up to
 * 512 bytes, NULL for larger ones: whoever fills an arena checks
 * arena_failed() before using what it built. */
void *arena_alloc(Arena *a, size_t size);
/* True once an allocation from 'a' has failed. */
bool arena_failed(const Arena *a);
/* Copy of s[0..n) with a terminating NUL; NULL (arena failed) when out of
 * memory, for any length. */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);

#endif
