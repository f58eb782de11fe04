/* SPDX-License-Identifier: Apache-2.0
 * Bytes allocated while a fuzz target decodes its input, through the
 * sanitizer allocator's hooks, for the targets that hold a decoder to
 * allocating in proportion to the bytes it was given (fuzz_wire.c,
 * fuzz_checkpoint.c). Install with alloc_count_install() once; set
 * 'counting' around the decoding and read 'allocated'. */
#ifndef DML_TESTS_FUZZ_ALLOC_COUNT_H
#define DML_TESTS_FUZZ_ALLOC_COUNT_H

#include <sanitizer/allocator_interface.h>
#include <stddef.h>

static volatile int counting;
static volatile size_t allocated;

static void on_malloc(const volatile void *p, size_t n)
{
    (void)p;
    if (counting)
        allocated += n;
}

static void on_free(const volatile void *p) { (void)p; }

static inline void alloc_count_install(void) { __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free); }

#endif
