/* SPDX-License-Identifier: Apache-2.0
 * The text forms of frames (runtime/frame.h): a cell as text, toString().
 * Apart from the rest of runtime/frame.c because it needs nothing but the
 * storage and print.c, so the file-format fuzzer links it alone. Pure
 * functions; safe from any thread. */
#include "frame.h"

#include <string.h>

#include "fmt.h"

void frame_cell_text(StrBuf *b, const FrameBlock *f, int64_t i, int64_t j)
{
    const FrameCol *c = &f->col[j];
    char buf[32];
    switch (c->type) {
    case FT_STRING:
        if (c->s[i])
            sb_putn(b, c->s[i]->s, (size_t)c->s[i]->len);
        break;
    case FT_DOUBLE:
        if (c->narrow)
            sb_putn(b, buf, (size_t)fmt_float_java((float)c->d[i], buf));
        else
            sb_putn(b, buf, (size_t)fmt_double_java(c->d[i], buf));
        break;
    case FT_INT:
        sb_printf(b, "%lld", (long long)c->i[i]);
        break;
    case FT_BOOL:
        sb_puts(b, c->b[i] ? "true" : "false");
        break;
    }
}

/* ---- toString ---- */

void frame_tostring_sb(StrBuf *b, const FrameBlock *f, const ToStringOpts *o)
{
    int64_t rows = f->rows < o->rows ? f->rows : o->rows;
    int64_t cols = f->cols < o->cols ? f->cols : o->cols;
    if (rows < 0)
        rows = 0;
    if (cols < 0)
        cols = 0;
    const char *sep = o->sep ? o->sep : " ";
    const char *linesep = o->linesep ? o->linesep : "\n";
    size_t seplen = strlen(sep), linelen = strlen(linesep);
    sb_printf(b, "# FRAME: nrow = %lld, ncol = %lld", (long long)f->rows, (long long)f->cols);
    sb_putn(b, linesep, linelen);
    /* As upstream's DataConverter: "#" and a separator start the names and
     * the schema lines; a missing (null) cell prints nothing and drops the
     * separator that would follow it. */
    sb_puts(b, "#");
    sb_putn(b, sep, seplen);
    for (int64_t j = 0; j < cols; j++) {
        char name[256];
        if (j)
            sb_putn(b, sep, seplen);
        sb_puts(b, frame_col_name(f, j, name, sizeof name));
    }
    sb_putn(b, linesep, linelen);
    sb_puts(b, "#");
    sb_putn(b, sep, seplen);
    for (int64_t j = 0; j < cols; j++) {
        if (j)
            sb_putn(b, sep, seplen);
        sb_puts(b, frame_col_type_name(&f->col[j]));
    }
    sb_putn(b, linesep, linelen);
    for (int64_t i = 0; i < rows && !b->oom; i++) {
        for (int64_t j = 0; j < cols; j++) {
            if (f->col[j].type == FT_STRING && !f->col[j].s[i])
                continue;
            if (f->col[j].type == FT_DOUBLE)
                fmt_decimal_format(b, f->col[j].d[i], o->decimal);
            else
                frame_cell_text(b, f, i, j);
            if (j != cols - 1)
                sb_putn(b, sep, seplen);
        }
        sb_putn(b, linesep, linelen);
    }
}
