/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for frames in csv and text files, where strings may
 * hold separators, quotes, blanks and line breaks (quoted fields that span
 * lines, RFC 4180). Two halves, picked by the first byte:
 *  - build: the rest is cut at '\x01' into cell strings (any bytes but NUL)
 *    of a frame with 1 to 4 columns (a header of names too); the frame is
 *    written as csv (with the separator and header the first byte picks)
 *    and as text, and each must read back cell for cell, names included;
 *  - parse: the rest is read as frame csv with those options (all STRING,
 *    or a typed schema); a frame that parses is written back and must read
 *    back the same, typed cells bit for bit.
 * Any crash, leak, sanitizer report or round-trip mismatch is a bug.
 * Built by `make fuzz` (build/fuzz/fuzz_frame_csv), its corpus
 * (tests/fuzz/corpus_frame) replayed by `make fuzz-replay`. */
#include "../../builtins/io/io_formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const seps[] = {",", ";", "\t", "|", "::"};

static bool same_cell(const FrameCol *a, int64_t i, const FrameCol *b, int64_t k)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case FT_STRING: {
        const Str *x = a->s[i], *y = b->s[k];
        return !x == !y && (!x || (x->len == y->len && memcmp(x->s, y->s, (size_t)x->len) == 0));
    }
    case FT_DOUBLE: return a->d[i] == b->d[k] || (isnan(a->d[i]) && isnan(b->d[k]));
    case FT_INT: return a->i[i] == b->i[k];
    case FT_BOOL: return a->b[i] == b->b[k];
    }
    return false;
}

/* f written as csv (and, without a header to keep, as text) and read back
 * must be f again. */
static void round_trip(const FrameBlock *f, const char *sep, bool header, const FrameType *types)
{
    for (int fmt = 0; fmt < 2; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *fp = open_memstream(&buf, &len);
        if (!fp)
            return;
        IoCsvWriteOpts w = {header, sep, false};
        bool ok = fmt == 0 ? io_write_frame_csv(fp, f, &w) : io_write_frame_text(fp, f);
        fclose(fp);
        if (!ok) {
            free(buf);
            return;
        }
        DiagErr e;
        FrameBlock *r;
        if (fmt == 0) {
            IoFrameCsvOpts o = {header, sep, true, NULL, 0, f->rows, f->cols, types, types ? f->cols : 0, NULL};
            r = io_parse_frame_csv(buf, len, "rt.csv", &o, &e);
        } else {
            r = io_parse_frame_text(buf, len, "rt.txt", f->rows, f->cols, types, NULL, types ? f->cols : 0, &e);
        }
        if (!r || r->rows != f->rows || r->cols != f->cols)
            abort();
        for (int64_t j = 0; j < f->cols; j++) {
            if (fmt == 0 && header) {
                char a[256], b[256];
                if (strcmp(frame_col_name(f, j, a, sizeof a), frame_col_name(r, j, b, sizeof b)))
                    abort();
            }
            for (int64_t i = 0; i < f->rows; i++) {
                /* the text format does not write a missing string; csv
                 * writes one as an empty field, read back as missing */
                if (!same_cell(&f->col[j], i, &r->col[j], i))
                    abort();
            }
        }
        frame_release(r);
        free(buf);
    }
}

/* The build half: cells from the input, cut at '\x01'. */
static void build(unsigned sel, const char *p, size_t n)
{
    int64_t cols = 1 + (sel >> 3) % 4;
    bool header = (sel >> 5) & 1;
    int64_t cells = 1;
    for (size_t k = 0; k < n; k++)
        cells += p[k] == '\x01';
    int64_t names = header ? cols : 0;
    int64_t rows = cells > names ? (cells - names + cols - 1) / cols : 0;
    if (rows > 10000)
        return;
    FrameBlock *f = frame_new_raw(rows, cols, NULL);
    if (!f)
        return;
    const char *s = p, *end = p + n;
    for (int64_t c = 0; c < names + rows * cols && s <= end; c++) {
        const char *e = memchr(s, '\x01', (size_t)(end - s));
        if (!e)
            e = end;
        Str *v = memchr(s, '\0', (size_t)(e - s)) ? NULL : str_new(s, (size_t)(e - s));
        if (v) {
            if (c < names) {
                frame_set_name(f, c, v);
            } else {
                int64_t i = (c - names) / cols, j = (c - names) % cols;
                /* an empty string reads back as missing: keep it missing */
                if (v->len > 0) {
                    f->col[j].s[i] = v;
                    v = NULL;
                }
            }
            str_release(v);
        }
        s = e + 1;
    }
    round_trip(f, seps[sel % 5], header, NULL);
    frame_release(f);
}

/* The parse half: any input as frame csv, then round-tripped. */
static void parse(unsigned sel, const char *p, size_t n)
{
    static const FrameType typed[4] = {FT_STRING, FT_DOUBLE, FT_INT, FT_BOOL};
    bool header = (sel >> 5) & 1;
    const char *sep = seps[sel % 5];
    DiagErr e;
    IoFrameCsvOpts o = {header, sep, true, NULL, 0, -1, -1, NULL, 0, NULL};
    FrameBlock *f = io_parse_frame_csv(p, n, "f.csv", &o, &e);
    if (!f)
        return;
    round_trip(f, sep, header, NULL);
    int64_t cols = f->cols;
    frame_release(f);
    /* the same text with a schema cycling through the four types */
    if ((sel >> 3) & 1 && cols > 0 && cols <= 64) {
        FrameType t[64];
        for (int64_t j = 0; j < cols; j++)
            t[j] = typed[(j + (sel >> 4)) % 4];
        o.schema = t;
        o.nschema = cols;
        f = io_parse_frame_csv(p, n, "f.csv", &o, &e);
        if (f) {
            round_trip(f, sep, header, t);
            frame_release(f);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned sel = data[0];
    if (sel & 0x80)
        build(sel, (const char *)data + 1, size - 1);
    else
        parse(sel, (const char *)data + 1, size - 1);
    return 0;
}
