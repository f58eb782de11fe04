/* SPDX-License-Identifier: Apache-2.0
 * StrBuf: the growable byte buffer for building text (messages, toString(),
 * reports). An allocation failure sets 'oom' and makes every later append a
 * no-op, so a caller checks once, at the end. A zeroed StrBuf is empty. */
#ifndef DML_BASE_STRBUF_H
#define DML_BASE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "value.h"

typedef struct StrBuf { char *p; size_t len, cap; bool oom; } StrBuf;
void sb_init(StrBuf *b);
void sb_free(StrBuf *b);
void sb_putn(StrBuf *b, const char *s, size_t n);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take the contents as a Str (NULL on OOM); the buffer is emptied. */
Str *sb_to_str(StrBuf *b);

#endif
