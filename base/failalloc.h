/* SPDX-License-Identifier: Apache-2.0
 * Allocation-failure injection (after Lua's ltests): every malloc, calloc,
 * realloc, strdup, strndup and posix_memalign made by dml's own code goes
 * through the wrappers in failalloc.c (the link uses ld --wrap, so no source
 * changes), which count the calls. With DML_FAIL_ALLOC=N in the environment
 * the Nth call fails (returns NULL, errno ENOMEM); every other call goes
 * through. Tests sweep N over a script to prove each failure is a clean DML
 * error, never a crash or a leak. Libraries (libc, BLAS, readline, zlib)
 * allocate unaffected. Thread-safe: the count is atomic. */
#ifndef DML_BASE_FAILALLOC_H
#define DML_BASE_FAILALLOC_H

#include <stdbool.h>

/* Arms the injector: the nth allocation from now (1 = the next) fails; 0
 * disarms it. Overrides DML_FAIL_ALLOC. Resets the count and the fired flag. */
void failalloc_set(long n);
/* True when the armed failure has happened. */
bool failalloc_fired(void);

/* An owned copy of 'msg' for reporters that must hand back a malloc'd
 * diagnostic even when memory has run out. If the copy cannot be made, the
 * process-wide reserve (made by failalloc_reserve) is handed out instead,
 * holding the text "out of memory". NULL only when both are gone. */
char *failalloc_msg_dup(const char *msg);
/* Makes the reserve if there is none (called when a Program is made). */
void failalloc_reserve(void);

#endif
