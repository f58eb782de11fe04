/* SPDX-License-Identifier: Apache-2.0
 * The I/O builtins read(), readMM() and the write() statement: binding of
 * their arguments, merging with the "<file>.mtd" metadata (a value given in
 * both places must agree), choosing the format, and atomic writing of the
 * data file and its .mtd. The formats themselves live in io/, one file each, the
 * JSON in mtd.c. Thread-safe: all state comes from the Interp and the stack. */
#include "registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../base/strbuf.h"
#include "../runtime/loader.h"
#include "io/io_formats.h"
#include "mtd.h"

/* Parameter positions of read(); must follow the 'params' string below. */
enum {
    R_FILE, R_FORMAT, R_DATA_TYPE, R_VALUE_TYPE, R_ROWS, R_COLS, R_NNZ, R_HEADER, R_SEP, R_FILL,
    R_DEFAULT, R_NA_STRINGS, R_SCHEMA, R_ROWS_IN_BLOCK, R_COLS_IN_BLOCK,
};
/* Parameter positions of write(). */
enum { W_X, W_FILE, W_FORMAT, W_HEADER, W_SEP, W_SPARSE, W_DESCRIPTION, W_INDSEP };

/* Upstream separates several naStrings in one string with U+00B7 '·'. */
#define NA_SEP "\xC2\xB7"

static char *mtd_path_of(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 5);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, ".mtd", 5);
    }
    return p;
}

/* Loads "<path>.mtd" into *m when it exists; a missing file is no error. */
static Status load_mtd(Interp *I, const char *mtd_path, Mtd *m, bool *found)
{
    struct stat st;
    *found = false;
    if (stat(mtd_path, &st) != 0 && errno == ENOENT)
        return ST_OK;
    IoBuf b;
    DiagErr e;
    if (!io_read_file(mtd_path, &b, &e))
        return err_take(I, &e);
    bool ok = mtd_parse(b.p, b.len, mtd_path, m, &e);
    io_buf_free(&b);
    if (!ok)
        return err_take(I, &e);
    *found = true;
    return ST_OK;
}

/* ---- merging call arguments with the metadata ---- */

/* The effective string: the call's (if given), which must then agree
 * (case-insensitively: "CSV" is "csv") with the metadata's. */
static Status merge_str(Interp *I, const BArgs *a, int i, const char *key, const char *from_mtd,
                        const char *mtd_path, bool exact, const char **out)
{
    const char *call = NULL;
    if (arg_given(a, i))
        TRY(arg_string(I, a, i, NULL, &call));
    if (call && from_mtd && (exact ? strcmp(call, from_mtd) : strcasecmp(call, from_mtd)) != 0)
        return err_set(I, "read(): %s is \"%s\" in the call but \"%s\" in '%s'", key, call, from_mtd, mtd_path);
    *out = call ? call : from_mtd;
    return ST_OK;
}

static Status merge_int(Interp *I, const BArgs *a, int i, const char *key, int64_t from_mtd, const char *mtd_path,
                        int64_t *out)
{
    int64_t call = -1;
    if (arg_given(a, i)) {
        TRY(arg_int(I, a, i, -1, &call));
        if (call < 0)
            return err_set(I, "read(): %s must not be negative, got %lld", key, (long long)call);
    }
    if (call >= 0 && from_mtd >= 0 && call != from_mtd)
        return err_set(I, "read(): %s is %lld in the call but %lld in '%s'", key, (long long)call,
                       (long long)from_mtd, mtd_path);
    *out = call >= 0 ? call : from_mtd;
    return ST_OK;
}

static Status merge_bool(Interp *I, const BArgs *a, int i, const char *key, int from_mtd, const char *mtd_path,
                         bool dflt, bool *out)
{
    if (arg_given(a, i)) {
        bool call;
        TRY(arg_bool(I, a, i, dflt, &call));
        if (from_mtd >= 0 && (int)call != from_mtd)
            return err_set(I, "read(): %s is %s in the call but %s in '%s'", key, call ? "TRUE" : "FALSE",
                           from_mtd ? "TRUE" : "FALSE", mtd_path);
        *out = call;
        return ST_OK;
    }
    *out = from_mtd >= 0 ? from_mtd != 0 : dflt;
    return ST_OK;
}

/* ---- naStrings: a string (several joined by '·') or a list of strings ---- */

typedef struct NaList {
    const char **v;
    int n;
    char *copy;     /* split copy of a joined string */
} NaList;

static void na_free(NaList *na)
{
    free(na->v);
    free(na->copy);
}

static Status na_split(Interp *I, const char *s, NaList *na);

/* naStrings of the call, else of the .mtd (mtd_na, may be NULL). */
static Status na_collect(Interp *I, const BArgs *a, const char *mtd_na, NaList *na)
{
    memset(na, 0, sizeof *na);
    if (!arg_given(a, R_NA_STRINGS))
        return mtd_na ? na_split(I, mtd_na, na) : ST_OK;
    Value v = a->v[R_NA_STRINGS];
    if (v.kind == VAL_LIST) {
        na->v = malloc(sizeof *na->v * (size_t)(v.l->n ? v.l->n : 1));
        if (!na->v)
            return err_set(I, "read(): out of memory");
        for (int64_t k = 0; k < v.l->n; k++) {
            if (v.l->items[k].kind != VAL_STRING) {
                na_free(na);
                return err_set(I, "read(): naStrings must hold strings, got %s",
                               val_kind_name(v.l->items[k].kind));
            }
            na->v[na->n++] = v.l->items[k].s->s;
        }
        return ST_OK;
    }
    if (v.kind != VAL_STRING)
        return err_set(I, "read(): argument 'naStrings' must be a string or a list of strings, got %s",
                       val_kind_name(v.kind));
    return na_split(I, v.s->s, na);
}

/* The strings of s, several joined by NA_SEP, into na (emptied first). */
static Status na_split(Interp *I, const char *s, NaList *na)
{
    memset(na, 0, sizeof *na);
    na->copy = strdup(s);
    size_t parts = 1;
    for (const char *p = s; (p = strstr(p, NA_SEP)) != NULL; p += 2)
        parts++;
    na->v = malloc(sizeof *na->v * parts);
    if (!na->copy || !na->v) {
        na_free(na);
        return err_set(I, "read(): out of memory");
    }
    char *p = na->copy;
    for (;;) {
        na->v[na->n++] = p;
        char *q = strstr(p, NA_SEP);
        if (!q)
            break;
        *q = 0;
        p = q + 2;
    }
    return ST_OK;
}

/* ---- read ---- */

/* Format from the call or the .mtd, else guessed from the file name: IDX by
 * its MNIST-style names, ".csv" as csv (upstream would fail on such a file
 * read as text), anything else text (upstream's default). */
static const char *guess_format(const char *path)
{
    if (io_name_is_idx(path))
        return "idx";
    size_t n = strlen(path);
    if ((n >= 4 && strcasecmp(path + n - 4, ".csv") == 0) || (n >= 7 && strcasecmp(path + n - 7, ".csv.gz") == 0))
        return "csv";
    if ((n >= 4 && strcasecmp(path + n - 4, ".mtx") == 0) || (n >= 7 && strcasecmp(path + n - 7, ".mtx.gz") == 0))
        return "mm";
    return "text";
}

static Status read_scalar(Interp *I, const char *path, const char *vt, Value *out)
{
    if (strcasecmp(vt, "int") && strcasecmp(vt, "integer") && strcasecmp(vt, "double") &&
        strcasecmp(vt, "boolean") && strcasecmp(vt, "string"))
        return err_set(I, "read(): unknown value_type \"%s\" (expected int, double, boolean or string)", vt);
    const char *canon = !strcasecmp(vt, "integer") ? "int" : vt;
    char lower[16];
    size_t k = 0;
    for (; canon[k] && k + 1 < sizeof lower; k++)
        lower[k] = (char)(canon[k] >= 'A' && canon[k] <= 'Z' ? canon[k] - 'A' + 'a' : canon[k]);
    lower[k] = 0;
    IoBuf b;
    DiagErr e;
    if (!io_read_file(path, &b, &e))
        return err_take(I, &e);
    bool ok = io_parse_scalar(b.p, b.len, path, lower, out, &e);
    io_buf_free(&b);
    return ok ? ST_OK : err_take(I, &e);
}

typedef struct ReadSpec {
    const char *path, *format;
    int64_t rows, cols;
    IoCsvOpts csv;
    const char *svm_sep, *svm_indsep;   /* libsvm; NULL for the defaults */
} ReadSpec;

/* Upstream reads a file that has no format and no .mtd as MatrixMarket when
 * its first line starts with "%%", whatever its name (COMPAT.md 8). */
static bool looks_like_mm(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char head[2] = {0, 0};
    bool mm = fread(head, 1, 2, f) == 2 && head[0] == '%' && head[1] == '%';
    fclose(f);
    return mm;
}

static Status read_matrix(Interp *I, const ReadSpec *s, Value *out)
{
    const char *f = s->format;
    bool text = !strcasecmp(f, "text") || !strcasecmp(f, "textcell") || !strcasecmp(f, "ijv");
    bool csv = !strcasecmp(f, "csv"), mm = !strcasecmp(f, "mm"), bin = !strcasecmp(f, "binary");
    bool svm = !strcasecmp(f, "libsvm"), idx = !strcasecmp(f, "idx");
    if (!text && !csv && !mm && !bin && !svm && !idx)
        return err_set(I, "read(): format \"%s\" is not supported (supported: text, csv, mm, binary, libsvm, idx)", f);
    if (text && (s->rows < 0 || s->cols < 0))
        return err_set(I, "read(): format \"text\" needs rows and cols (in the call or in '%s.mtd')", s->path);
    /* Hopeless dimensions fail before the file is even read: the dense
     * size for the formats read densely, the row pointers of the sparse
     * form for the others (their non-zeros decide the form). */
    DiagErr e;
    bool sparse_capable = text || mm || svm || bin;
    if (s->rows >= 0 && s->cols >= 0 &&
        !(sparse_capable ? io_check_sparse_dims(s->rows, s->cols, s->path, &e)
                         : io_check_dims(s->rows, s->cols, s->path, &e)))
        return err_take(I, &e);
    Matrix *m;
    if (bin) {
        m = io_read_binary_file(s->path, s->rows, s->cols, &e);
        if (!m)
            return err_take(I, &e);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    IoBuf b;
    if (!io_read_file(s->path, &b, &e))
        return err_take(I, &e);
    if (text)
        m = io_parse_text(b.p, b.len, s->path, s->rows, s->cols, &e);
    else if (csv)
        m = io_parse_csv(b.p, b.len, s->path, &s->csv, &e);
    else if (mm)
        m = io_parse_mm(b.p, b.len, s->path, s->rows, s->cols, &e);
    else if (svm)
        m = io_parse_libsvm_sep(b.p, b.len, s->path, s->rows, s->cols, s->svm_sep, s->svm_indsep, &e);
    else
        m = io_parse_idx(b.p, b.len, s->path, s->rows, s->cols, &e);
    io_buf_free(&b);
    if (!m)
        return err_take(I, &e);
    /* read dense (csv, mm's array format): held sparse when its non-zeros
     * say so; idx (images) stays dense */
    if (!idx)
        m = io_matrix_settle(m);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* The column types named by a schema "STRING,FP64,..." (malloc'd into
 * *out, their number in *n; *narrow, malloc'd too, marks FP32 and INT32). */
static Status parse_schema(Interp *I, const char *schema, FrameType **out, bool **narrow, int64_t *n)
{
    int64_t cnt = 1;
    for (const char *p = schema; *p; p++)
        cnt += *p == ',';
    FrameType *t = malloc((size_t)cnt * sizeof *t);
    bool *w = malloc((size_t)cnt * sizeof *w);
    if (!t || !w) {
        free(t);
        free(w);
        return err_set(I, "read(): out of memory");
    }
    int64_t k = 0;
    for (const char *p = schema;; k++) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        const char *s = p;
        while (len && (*s == ' ' || *s == '\t'))
            s++, len--;
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (!frame_type_parse(s, len, &t[k], &w[k])) {
            free(t);
            free(w);
            return err_set(I, "read(): the schema's value type %lld, '%.*s', is not one of STRING, FP64, INT64, "
                           "BOOLEAN (or FP32, INT32)", (long long)k + 1, (int)(len > 40 ? 40 : len), s);
        }
        if (!q)
            break;
        p = q + 1;
    }
    *out = t;
    *narrow = w;
    *n = k + 1;
    return ST_OK;
}

/* read(file, data_type="frame", ...): csv or text. */
static Status read_frame(Interp *I, const char *path, const char *format, const char *schema, IoFrameCsvOpts *o,
                         Value *out)
{
    bool text = !strcasecmp(format, "text");
    if (strcasecmp(format, "csv") && !text)
        return err_set(I, "read(): format \"%s\" is not supported for frames (supported: csv, text)", format);
    FrameType *types = NULL;
    bool *narrow = NULL;
    if (schema)
        TRY(parse_schema(I, schema, &types, &narrow, &o->nschema));
    o->schema = types;
    o->narrow = narrow;
    IoBuf b;
    DiagErr e;
    FrameBlock *f = NULL;
    if (io_read_file(path, &b, &e)) {
        if (text)
            f = io_parse_frame_text(b.p, b.len, path, o->rows, o->cols, types, narrow, o->nschema, &e);
        else
            f = io_parse_frame_csv(b.p, b.len, path, o, &e);
        io_buf_free(&b);
    }
    free(types);
    free(narrow);
    if (!f)
        return err_take(I, &e);
    *out = val_frame_take(f);
    return ST_OK;
}

/* read(file, format=, data_type=, value_type=, rows=, cols=, nnz=, header=,
 *      sep=, fill=, default=, naStrings=, schema=, rows_in_block=, cols_in_block=) */
static Status bi_read(Interp *I, const BArgs *a, Value *out)
{
    const char *path;
    TRY(arg_string(I, a, R_FILE, NULL, &path));
    char data_path[4096];
    if (loader_find_data(I->prog, path, data_path, sizeof data_path))
        path = data_path;       /* the examples' data, from any folder */
    char *mtd_path = mtd_path_of(path);
    if (!mtd_path)
        return err_set(I, "read(): out of memory");
    Mtd md;
    mtd_init(&md);
    NaList na = {0};
    bool found;
    Status st = load_mtd(I, mtd_path, &md, &found);
    const char *format = NULL, *dtype = NULL, *vtype = NULL, *sep = NULL;
    int64_t rows = -1, cols = -1, nnz = -1, rib = -1, cib = -1;
    bool header = false, fill = true;
    double dflt = 0.0;
    if (st == ST_OK)
        st = merge_str(I, a, R_FORMAT, "format", md.format, mtd_path, false, &format);
    if (st == ST_OK)
        st = merge_str(I, a, R_DATA_TYPE, "data_type", md.data_type, mtd_path, false, &dtype);
    if (st == ST_OK)
        st = merge_str(I, a, R_VALUE_TYPE, "value_type", md.value_type, mtd_path, false, &vtype);
    if (st == ST_OK)
        st = merge_str(I, a, R_SEP, "sep", md.sep, mtd_path, true, &sep);
    if (st == ST_OK)
        st = merge_int(I, a, R_ROWS, "rows", md.rows, mtd_path, &rows);
    if (st == ST_OK)
        st = merge_int(I, a, R_COLS, "cols", md.cols, mtd_path, &cols);
    if (st == ST_OK)
        st = merge_int(I, a, R_NNZ, "nnz", md.nnz, mtd_path, &nnz);
    if (st == ST_OK)
        st = merge_int(I, a, R_ROWS_IN_BLOCK, "rows_in_block", md.rows_in_block, mtd_path, &rib);
    if (st == ST_OK)
        st = merge_int(I, a, R_COLS_IN_BLOCK, "cols_in_block", md.cols_in_block, mtd_path, &cib);
    if (st == ST_OK)
        st = merge_bool(I, a, R_HEADER, "header", md.header, mtd_path, false, &header);
    if (st == ST_OK)
        st = merge_bool(I, a, R_FILL, "fill", md.fill, mtd_path, true, &fill);
    if (st == ST_OK)
        st = arg_double(I, a, R_DEFAULT, md.has_default ? md.dflt : 0.0, &dflt);
    if (st == ST_OK)
        st = na_collect(I, a, md.na_strings, &na);
    if (st != ST_OK)
        goto done;
    if (!dtype)
        dtype = "matrix";
    if (!strcasecmp(dtype, "scalar")) {
        st = read_scalar(I, path, vtype ? vtype : "double", out);
    } else if (!strcasecmp(dtype, "matrix")) {
        if (arg_given(a, R_SCHEMA)) {
            st = err_set(I, "read(): 'schema' applies only to frames, not to a matrix");
            goto done;
        }
        if (!format && !found && looks_like_mm(path))
            format = "mm";
        ReadSpec s = {path, format ? format : guess_format(path), rows, cols, {0}, sep, md.indsep};
        io_csv_opts_init(&s.csv);
        s.csv.header = header;
        if (sep)
            s.csv.sep = sep;
        s.csv.fill = fill;
        s.csv.fill_value = dflt;
        s.csv.na = na.v;
        s.csv.nna = na.n;
        s.csv.rows = rows;
        s.csv.cols = cols;
        st = read_matrix(I, &s, out);
    } else if (!strcasecmp(dtype, "frame")) {
        const char *schema = NULL;
        st = merge_str(I, a, R_SCHEMA, "schema", md.schema, mtd_path, false, &schema);
        IoFrameCsvOpts fo = {header, sep ? sep : ",", fill, na.v, na.n, rows, cols, NULL, 0, NULL};
        if (st == ST_OK)
            st = read_frame(I, path, format ? format : guess_format(path), schema, &fo, out);
    } else {
        st = err_set(I, "read(): unknown data_type \"%s\" (expected matrix, frame or scalar)", dtype);
    }
done:
    (void)nnz;  /* declared nnz is metadata only; it need not be exact */
    na_free(&na);
    mtd_free(&md);
    free(mtd_path);
    return st;
}

/* readMM(file): read(file, format="mm"). */
static Status bi_readMM(Interp *I, const BArgs *a, Value *out)
{
    const char *path;
    TRY(arg_string(I, a, 0, NULL, &path));
    ReadSpec s = {path, "mm", -1, -1, {0}, NULL, NULL};
    io_csv_opts_init(&s.csv);
    return read_matrix(I, &s, out);
}

/* ---- write ---- */

static const char *scalar_vtype(ValKind k)
{
    switch (k) {
    case VAL_BOOL: return "boolean";
    case VAL_INT: return "int";
    case VAL_STRING: return "string";
    default: return "double";
    }
}

/* "FP64,STRING,..." of a frame's columns (malloc'd; NULL when out of memory). */
static char *schema_string(const FrameBlock *f)
{
    StrBuf b;
    sb_init(&b);
    for (int64_t j = 0; j < f->cols; j++) {
        if (j)
            sb_putn(&b, ",", 1);
        sb_puts(&b, frame_col_type_name(&f->col[j]));
    }
    if (b.oom || (!b.p && !(b.p = calloc(1, 1)))) {
        sb_free(&b);
        return NULL;
    }
    return b.p;
}

/* Options of one write() call; 'fmt' is lower-case. */
typedef struct WriteOpts {
    const char *fmt, *format, *sep, *desc, *indsep;
    bool header, sparse, sep_given;
} WriteOpts;

static Status write_value(Interp *I, Value x, const char *path, const WriteOpts *o, int depth);

/* The folders on the way to 'path' that do not exist yet are made, as
 * upstream's writers (through Hadoop's FileSystem.create) do. */
static Status make_parent_dirs(Interp *I, const char *path)
{
    char eb[64];
    char *p = strdup(path);
    if (!p)
        return err_set(I, "write(): out of memory");
    for (char *q = p + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            Status st = err_set(I, "write(): cannot create the folder '%s': %s", p, io_strerror(errno, eb, sizeof eb));
            free(p);
            return st;
        }
        *q = '/';
    }
    free(p);
    return ST_OK;
}

/* write(list, f): as upstream, f.mtd describes the list and the folder f/
 * holds element i (from 0) as f/<i>_<name> ("<i>_null" when unnamed), each
 * written with its own .mtd; nested lists recurse. The folder is built
 * under a temporary name and swapped in whole with f.mtd: a failure on any
 * element leaves an older f/ as it was. */
static Status write_list(Interp *I, const List *l, const char *path, const WriteOpts *o, int depth)
{
    if (depth > 64)
        return err_set(I, "write(): lists nested too deeply");
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
        return err_set(I, "write(): cannot write a list to '%s': it exists and is not a folder", path);
    DiagErr e;
    char *dir = io_tmp_dir_open(path, &e);
    if (!dir)
        return err_take(I, &e);
    size_t plen = strlen(dir);
    Status res = ST_OK;
    for (int64_t i = 0; i < l->n && res == ST_OK; i++) {
        const char *nm = l->names ? l->names[i]->s : "null";
        size_t cap = plen + strlen(nm) + 32;
        char *ep = malloc(cap);
        if (!ep) {
            res = err_set(I, "write(): out of memory");
            break;
        }
        snprintf(ep, cap, "%s/%lld_%s", dir, (long long)i, nm);
        res = write_value(I, l->items[i], ep, o, depth + 1);
        free(ep);
    }
    Mtd md;
    mtd_init(&md);
    md.data_type = (char *)"list";
    md.value_type = (char *)"unknown";
    md.rows = l->n;
    md.cols = 1;
    md.format = (char *)o->fmt;
    md.description = (char *)o->desc;
    char *mtd_path = mtd_path_of(path);
    IoTmp meta = {0};
    if (res == ST_OK && (!mtd_stamp(&md) || !mtd_path))
        res = err_set(I, "write(): out of memory");
    if (res == ST_OK && !io_tmp_open(mtd_path, &meta, &e))
        res = err_take(I, &e);
    if (res == ST_OK && !mtd_write(meta.f, &md)) {
        char eb[64];
        int err = errno;
        res = err_set(I, "cannot write '%s': %s", mtd_path, io_strerror(err ? err : EIO, eb, sizeof eb));
    }
    if (res == ST_OK && interp_interrupted(I))
        res = eval_raise_interrupt(I, NULL);    /* the old folder stays */
    if (res == ST_OK) {
        if (!io_commit_dir(dir, path, &meta, mtd_path, &e))
            res = err_take(I, &e);
    } else {
        io_tmp_abort(&meta);
        io_remove_tree(dir);
        free(dir);
    }
    md.data_type = md.value_type = md.format = md.description = NULL;
    mtd_free(&md);
    free(mtd_path);
    return res;
}

/* The format and separators of write(x, ...) for x's kind: an error
 * naming what is supported when they do not fit. */
static Status check_write_format(Interp *I, Value x, const WriteOpts *o)
{
    const char *fmt = o->fmt;
    bool is_matrix = x.kind == VAL_MATRIX, is_frame = x.kind == VAL_FRAME;
    bool svm = !strcmp(fmt, "libsvm");
    bool frame_text = is_frame && !strcmp(fmt, "text");
    if (is_frame && strcmp(fmt, "csv") && !frame_text)
        return err_set(I, "write(): format \"%s\" is not supported for frames (supported: csv, text)", o->format);
    if (is_frame && !frame_text && !*o->sep)
        return err_set(I, "write(): the csv separator must not be empty");
    if (is_matrix && strcmp(fmt, "text") && strcmp(fmt, "csv") && strcmp(fmt, "mm") && strcmp(fmt, "binary") &&
        !svm)
        return err_set(I, "write(): format \"%s\" is not supported (supported: text, csv, mm, binary, libsvm)",
                       o->format);
    if (is_matrix && !strcmp(fmt, "csv") && !*o->sep)
        return err_set(I, "write(): the csv separator must not be empty");
    if (is_matrix && svm && (x.m->rows < 1 || x.m->cols < 1))
        return err_set(I, "Write of matrices with zero rows or columns not supported (%lldx%lld).",
                       (long long)x.m->rows, (long long)x.m->cols);
    const char *svm_sep = o->sep_given ? o->sep : ",";
    if (is_matrix && svm && (!*svm_sep || !*o->indsep))
        return err_set(I, "write(): the libsvm separators sep and indSep must not be empty");
    return ST_OK;
}

/* The .mtd record of x written as o says. Its strings point into the stack
 * or the arguments, except *schema (a frame's, malloc'd; NULL when out of
 * memory): the caller detaches them before mtd_free. */
static void write_metadata(Mtd *md, Value x, const WriteOpts *o, const char *svm_sep, char **schema)
{
    const char *fmt = o->fmt;
    bool is_matrix = x.kind == VAL_MATRIX, is_frame = x.kind == VAL_FRAME;
    md->data_type = (char *)(is_matrix ? "matrix" : is_frame ? "frame" : "scalar");
    md->value_type = (char *)(is_matrix ? "double" : is_frame ? NULL : scalar_vtype(x.kind));
    md->format = (char *)(is_matrix || is_frame ? fmt : "text");
    md->description = (char *)o->desc;
    *schema = NULL;
    if (is_frame) {
        md->rows = x.f->rows;
        md->cols = x.f->cols;
        if (strcmp(fmt, "text")) {
            md->header = o->header;
            md->sep = (char *)o->sep;
        }
        md->schema = *schema = schema_string(x.f);
    }
    if (is_matrix) {
        md->rows = x.m->rows;
        md->cols = x.m->cols;
        md->nnz = io_nnz(x.m);
        if (!strcmp(fmt, "binary"))
            md->rows_in_block = md->cols_in_block = 1000;
        if (!strcmp(fmt, "csv")) {
            md->header = o->header;
            md->sep = (char *)o->sep;
        }
        if (!strcmp(fmt, "libsvm")) {
            md->sep = (char *)svm_sep;
            md->indsep = (char *)o->indsep;
        }
    }
    md->author = md->created = NULL;
}

/* x's data in o's format to f; false when the stream reports an error
 * (errno tells which). */
static bool write_data(FILE *f, Value x, const WriteOpts *o, const char *svm_sep)
{
    const char *fmt = o->fmt;
    if (x.kind == VAL_FRAME && !strcmp(fmt, "text"))
        return io_write_frame_text(f, x.f);
    if (x.kind == VAL_FRAME) {
        IoCsvWriteOpts co = {o->header, o->sep, false};
        return io_write_frame_csv(f, x.f, &co);
    }
    if (x.kind != VAL_MATRIX)
        return io_write_scalar(f, x);
    if (!strcmp(fmt, "text"))
        return io_write_text(f, x.m);
    if (!strcmp(fmt, "csv")) {
        IoCsvWriteOpts co = {o->header, o->sep, o->sparse};
        return io_write_csv(f, x.m, &co);
    }
    if (!strcmp(fmt, "mm"))
        return io_write_mm(f, x.m);
    if (!strcmp(fmt, "binary"))
        return io_write_binary(f, x.m);
    return io_write_libsvm_sep(f, x.m, svm_sep, o->indsep);
}

/* Writes one matrix or scalar (or list) x to 'path' plus its .mtd. */
static Status write_value(Interp *I, Value x, const char *path, const WriteOpts *o, int depth)
{
    char eb[64];
    if (x.kind == VAL_LIST)
        return write_list(I, x.l, path, o, depth);
    if (x.kind == VAL_NONE)
        return err_set(I, "write(): nothing to write");
    TRY(check_write_format(I, x, o));
    const char *svm_sep = o->sep_given ? o->sep : ",";

    Mtd md;
    mtd_init(&md);
    char *schema;
    write_metadata(&md, x, o, svm_sep, &schema);
    Status st = ST_OK;
    if (!mtd_stamp(&md) || (x.kind == VAL_FRAME && !schema))
        st = err_set(I, "write(): out of memory");
    char *mtd_path = mtd_path_of(path);
    if (st == ST_OK && !mtd_path)
        st = err_set(I, "write(): out of memory");

    IoTmp data = {0}, meta = {0};
    DiagErr e;
    bool ok = st == ST_OK;
    if (ok)
        ok = io_tmp_open(path, &data, &e);
    if (ok) {
        errno = 0;
        bool wrote = write_data(data.f, x, o, svm_sep);
        int err = errno;
        if (!wrote) {
            diag_fail(&e, "cannot write '%s': %s", path, io_strerror(err ? err : EIO, eb, sizeof eb));
            io_tmp_abort(&data);
            ok = false;
        }
    }
    if (ok && !io_tmp_open(mtd_path, &meta, &e)) {
        io_tmp_abort(&data);
        ok = false;
    }
    if (ok && !mtd_write(meta.f, &md)) {
        int err = errno;
        diag_fail(&e, "cannot write '%s': %s", mtd_path, io_strerror(err ? err : EIO, eb, sizeof eb));
        io_tmp_abort(&meta);
        io_tmp_abort(&data);
        ok = false;
    }
    /* Both files complete on disk replace the old ones together, or not
     * at all; a Ctrl-C meanwhile leaves the old ones. */
    if (ok && interp_interrupted(I)) {
        io_tmp_abort(&meta);
        io_tmp_abort(&data);
        ok = false;
        st = eval_raise_interrupt(I, NULL);
    }
    if (ok)
        ok = io_commit_pair(&data, path, &meta, mtd_path, &e);
    if (st == ST_OK && !ok)
        st = err_take(I, &e);
    md.data_type = md.value_type = md.format = md.description = md.sep = md.indsep = md.schema = NULL;
    mtd_free(&md);
    free(mtd_path);
    free(schema);
    return st;
}

/* write(X, file, format="text", header=FALSE, sep=",", sparse=FALSE,
 *       description=, indSep=":"); X a matrix, scalar or list */
static Status bi_write(Interp *I, const BArgs *a, Value *out)
{
    (void)out;
    WriteOpts o = {0};
    const char *path;
    TRY(arg_string(I, a, W_FILE, NULL, &path));
    TRY(arg_string(I, a, W_FORMAT, "text", &o.format));
    TRY(arg_string(I, a, W_SEP, ",", &o.sep));
    TRY(arg_string(I, a, W_INDSEP, ":", &o.indsep));
    TRY(arg_bool(I, a, W_HEADER, false, &o.header));
    TRY(arg_bool(I, a, W_SPARSE, false, &o.sparse));
    o.sep_given = arg_given(a, W_SEP);
    if (arg_given(a, W_DESCRIPTION))
        TRY(arg_string(I, a, W_DESCRIPTION, NULL, &o.desc));
    char fmt[16];
    size_t k = 0;
    for (; o.format[k] && k + 1 < sizeof fmt; k++)
        fmt[k] = (char)(o.format[k] >= 'A' && o.format[k] <= 'Z' ? o.format[k] - 'A' + 'a' : o.format[k]);
    fmt[k] = 0;
    o.fmt = fmt;
    TRY(make_parent_dirs(I, path));
    return write_value(I, a->v[W_X], path, &o, 0);
}

const BuiltinDef bi_io_table[] = {
    {"read", bi_read,
     "file,format,data_type,value_type,rows,cols,nnz,header,sep,fill,default,naStrings,schema,rows_in_block,"
     "cols_in_block",
     1, BIND_NAMED, 1, 0},
    {"readMM", bi_readMM, "file", 1, BIND_NAMED, 1, BF_RT(RT_MATRIX)},
    {"write", bi_write, "X,file,format,header,sep,sparse,description,indSep", 2, BIND_NAMED, 1,
     BF_STATEMENT | BF_STMT_FIRST | BF_SPARSE},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
