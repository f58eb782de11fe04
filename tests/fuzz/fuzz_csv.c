/* SPDX-License-Identifier: Apache-2.0
 * libFuzzer target for the file parsers: the input is fed to the csv (with
 * option sets picked by the first byte), text, mm, libsvm, binary, idx,
 * gzip and .mtd parsers. A matrix that parses as csv is written back with
 * io_write_csv and must parse again to the same matrix; a frame (all
 * STRING columns) likewise with io_write_frame_csv, cell for cell. Any crash, leak,
 * sanitizer report or round-trip mismatch is a bug.
 *
 * Build and run from the repository root (clang with libFuzzer):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DIO_MAX_BYTES=268435456 \
 *       -I. -o build/fuzz_csv tests/fuzz/fuzz_csv.c builtins/io/[a-z]*.c \
 *       builtins/mtd.c base/value.c base/strbuf.c base/diag.c runtime/fmt.c -lz -lm
 *   mkdir -p build/fuzz-corpus && build/fuzz_csv -max_len=4096 build/fuzz-corpus tests/fuzz/corpus
 * IO_MAX_BYTES caps the matrix size a header may ask for, so the fuzzer
 * explores parsing instead of running out of memory. */
#include "../../builtins/io/io_formats.h"
#include "../../builtins/mtd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void drop(Matrix *m)
{
    if (m)
        mat_release(m);
}

static void csv_round_trip(const Matrix *m, const IoCsvOpts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return;
    IoCsvWriteOpts w = {false, o->sep, false};
    bool ok = io_write_csv(f, m, &w);
    fclose(f);
    if (ok && m->cols > 0) {
        IoCsvOpts back;
        io_csv_opts_init(&back);
        back.sep = o->sep;
        back.rows = m->rows;
        back.cols = m->cols;
        DiagErr e;
        Matrix *r = io_parse_csv(buf, len, "rt", &back, &e);
        if (!r)
            abort();
        for (int64_t k = 0; k < m->rows * m->cols; k++)
            if (!(r->data[k] == m->data[k] || (isnan(r->data[k]) && isnan(m->data[k]))))
                abort();
        drop(r);
    }
    free(buf);
}

/* The frame f (parsed with options o, no NA strings) written back and
 * parsed again must give the same names and cells, missing ones included. */
static void frame_round_trip(const FrameBlock *f, const IoFrameCsvOpts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp)
        return;
    IoCsvWriteOpts w = {o->header, o->sep, false};
    bool ok = io_write_frame_csv(fp, f, &w);
    fclose(fp);
    if (ok && f->cols > 0) {
        IoFrameCsvOpts back = *o;
        back.rows = f->rows;
        back.cols = f->cols;
        DiagErr e;
        FrameBlock *r = io_parse_frame_csv(buf, len, "rt", &back, &e);
        if (!r || r->rows != f->rows || r->cols != f->cols)
            abort();
        for (int64_t j = 0; j < f->cols; j++) {
            char a[64], b[64];
            if (o->header && strcmp(frame_col_name(f, j, a, sizeof a), frame_col_name(r, j, b, sizeof b)))
                abort();
            for (int64_t i = 0; i < f->rows; i++) {
                const Str *x = f->col[j].s[i], *y = r->col[j].s[i];
                if (!x != !y || (x && strcmp(x->s, y->s)))
                    abort();
            }
        }
        frame_release(r);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned sel = data[0];
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    DiagErr e;

    static const char *const seps[] = {",", ";", "\t", " ", "::"};
    static const char *const na[] = {"NA", "?"};
    IoCsvOpts o;
    io_csv_opts_init(&o);
    o.sep = seps[sel % 5];
    o.header = (sel >> 3) & 1;
    o.fill = (sel >> 4) & 1;
    if ((sel >> 5) & 1) {
        o.na = na;
        o.nna = 2;
    }
    Matrix *m = io_parse_csv(buf, len, "f", &o, &e);
    if (m && o.nna == 0 && (sel >> 6) & 1)
        csv_round_trip(m, &o);
    drop(m);

    IoFrameCsvOpts fo = {o.header, o.sep, o.fill, o.na, o.nna, -1, -1, NULL, 0, NULL};
    FrameBlock *fr = io_parse_frame_csv(buf, len, "f", &fo, &e);
    if (fr && fo.nna == 0 && fo.fill)
        frame_round_trip(fr, &fo);
    if (fr)
        frame_release(fr);

    drop(io_parse_text(buf, len, "f", 20, 20, &e));
    drop(io_parse_mm(buf, len, "f", -1, -1, &e));
    drop(io_parse_libsvm(buf, len, "f", -1, -1, &e));
    drop(io_parse_binary(buf, len, "f", -1, -1, &e));
    drop(io_parse_idx(buf, len, "f", -1, -1, &e));
    IoBuf z;
    if (io_gunzip(buf, len, "f", &z, &e))
        io_buf_free(&z);
    Value v;
    if (io_parse_scalar(buf, len, "f", (sel & 1) ? "string" : "double", &v, &e))
        val_release(v);

    Mtd md;
    mtd_init(&md);
    mtd_parse(buf, len, "f.mtd", &md, &e);
    mtd_free(&md);
    return 0;
}
