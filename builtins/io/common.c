/* SPDX-License-Identifier: Apache-2.0
 * What every matrix file format shares: error messages, whole-file input
 * with transparent gzip, dimension checks and number parsing. The formats
 * live one per file beside this one (see io_formats.h for their layouts).
 * Pure functions with no global mutable state, so any thread may call them. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../base/numparse.h"
#include "../../base/sparse.h"


/* strerror_r is XSI (returns int) or GNU (returns char *) depending on the
 * feature macros; _Generic accepts either. */
static const char *xsi_result(int r, char *buf) { return r == 0 ? buf : "unknown error"; }
static const char *gnu_result(char *r, char *buf) { (void)buf; return r; }

const char *io_strerror(int err, char *buf, size_t cap)
{
    buf[0] = 0;
    return _Generic(strerror_r(err, buf, cap), int: xsi_result, char *: gnu_result)(strerror_r(err, buf, cap), buf);
}

/* Copies [s, e) into dst for quoting inside a message, shortened with "..."
 * so one absurd field cannot swamp the message. */
const char *io_snippet(const char *s, const char *e, char *dst, size_t cap)
{
    size_t n = (size_t)(e - s), max = cap - 1;
    if (n > max) {
        memcpy(dst, s, max - 3);
        memcpy(dst + max - 3, "...", 3);
        n = max;
    } else {
        memcpy(dst, s, n);
    }
    dst[n] = 0;
    for (size_t i = 0; i < n; i++)  /* keep the message on one printable line */
        if ((unsigned char)dst[i] < 0x20)
            dst[i] = '?';
    return dst;
}

/* ================================================================
 * Whole-file input
 * ================================================================ */

void io_buf_free(IoBuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = 0;
}

/* Physical memory in bytes; a generous fallback where sysconf cannot say.
 * Building with -DIO_MAX_BYTES=N caps it (the fuzz target does, so that a
 * hostile header cannot make it allocate gigabytes). */
static uint64_t phys_mem_bytes(void)
{
#ifdef IO_MAX_BYTES
    return (uint64_t)(IO_MAX_BYTES);
#else
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return UINT64_C(1) << 40;
    return (uint64_t)pages * (uint64_t)psz;
#endif
}

/* True when buf starts with the gzip magic bytes 1f 8b. */
static bool io_is_gzip(const char *buf, size_t len)
{
    return len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b;
}

bool io_gunzip(const char *buf, size_t len, const char *name, IoBuf *out, DiagErr *e)
{
    out->p = NULL;
    out->len = 0;
    uint64_t limit = phys_mem_bytes();
    size_t cap = len < (SIZE_MAX / 4) ? len * 4 + 4096 : len;
    char *dst = malloc(cap + 1);
    if (!dst)
        return diag_fail(e, "%s: out of memory inflating gzip data", name);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15+16: gzip wrapper only, so a zlib stream is not silently accepted. */
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(dst);
        return diag_fail(e, "%s: cannot initialise zlib", name);
    }
    const unsigned char *in = (const unsigned char *)buf;
    size_t in_left = len, n = 0;
    bool ok = true;
    for (;;) {
        if (n == cap) {
            if (cap >= limit) {
                ok = diag_fail(e, "%s: gzip data inflates to more than this machine's memory", name);
                break;
            }
            size_t ncap = cap * 2;
            char *np = realloc(dst, ncap + 1);
            if (!np) {
                ok = diag_fail(e, "%s: out of memory inflating gzip data", name);
                break;
            }
            dst = np;
            cap = ncap;
        }
        /* zlib counts in uInt: feed at most 1 GiB at a time. */
        size_t chunk_in = in_left < (1u << 30) ? in_left : (1u << 30);
        size_t chunk_out = cap - n < (1u << 30) ? cap - n : (1u << 30);
        zs.next_in = (Bytef *)in;
        zs.avail_in = (uInt)chunk_in;
        zs.next_out = (Bytef *)dst + n;
        zs.avail_out = (uInt)chunk_out;
        int rc = inflate(&zs, Z_NO_FLUSH);
        size_t used = chunk_in - zs.avail_in;
        in += used;
        in_left -= used;
        n += chunk_out - zs.avail_out;
        if (rc == Z_STREAM_END) {
            /* A concatenation of gzip members is one file (gzip -c a b). */
            if (in_left >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
                inflateReset(&zs);
                continue;
            }
            break;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR && in_left == 0 && zs.avail_out != 0) {
            ok = diag_fail(e, "%s: truncated gzip data", name);
            break;
        }
        if (rc == Z_BUF_ERROR)
            continue;
        ok = diag_fail(e, "%s: corrupt gzip data (%s)", name, zs.msg ? zs.msg : "inflate failed");
        break;
    }
    inflateEnd(&zs);
    if (!ok) {
        free(dst);
        return false;
    }
    dst[n] = 0;
    out->p = dst;
    out->len = n;
    return true;
}

/* read() until n bytes or end of file; returns the count, -1 on error. */
ssize_t io_read_full(int fd, void *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)dst + got, n - got);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return (ssize_t)got;
}

bool io_read_file(const char *path, IoBuf *out, DiagErr *e)
{
    char eb[64];
    out->p = NULL;
    out->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return diag_fail(e, "cannot open '%s': %s", path, io_strerror(errno, eb, sizeof eb));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return diag_fail(e, "cannot read '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return diag_fail(e, "cannot read '%s': Is a directory", path);
    }
    /* Regular files: one allocation of the right size; pipes and other
     * streams grow the buffer as they go. */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size : 65536, n = 0;
    int err = 0;                /* errno of a failed read; 0: out of memory */
    char *buf = malloc(cap + 1);
    if (!buf)
        goto fail;
    for (;;) {
        ssize_t r = io_read_full(fd, buf + n, cap - n);
        if (r < 0) {
            err = errno;
            goto fail;
        }
        n += (size_t)r;
        if (n < cap)
            break;              /* end of file */
        /* A regular file read to its size may have grown: probe for more
         * before growing the buffer. */
        bool probing = S_ISREG(st.st_mode) && cap == (size_t)st.st_size;
        char probe;
        if (probing) {
            r = io_read_full(fd, &probe, 1);
            if (r < 0) {
                err = errno;
                goto fail;
            }
            if (r == 0)
                break;
        }
        size_t ncap = probing ? cap * 2 + 65536 : cap * 2;
        char *nb = realloc(buf, ncap + 1);
        if (!nb)
            goto fail;
        buf = nb;
        cap = ncap;
        if (probing)
            buf[n++] = probe;
    }
    close(fd);
    buf[n] = 0;
    if (io_is_gzip(buf, n)) {
        IoBuf z;
        bool ok = io_gunzip(buf, n, path, &z, e);
        free(buf);
        if (!ok)
            return false;
        *out = z;
        return true;
    }
    out->p = buf;
    out->len = n;
    return true;
fail:
    free(buf);
    close(fd);
    if (err)
        return diag_fail(e, "cannot read '%s': %s", path, io_strerror(err, eb, sizeof eb));
    return diag_fail(e, "cannot read '%s': file too large for memory", path);
}

/* ================================================================
 * Sizes
 * ================================================================ */

bool io_check_dims(int64_t rows, int64_t cols, const char *name, DiagErr *e)
{
    if (rows < 0 || cols < 0)
        return diag_fail(e, "%s: invalid dimensions %lld x %lld", name, (long long)rows, (long long)cols);
    if (cols != 0 && rows > INT64_MAX / 8 / cols)
        return diag_fail(e, "%s: a %lld x %lld matrix is too large", name, (long long)rows, (long long)cols);
    uint64_t bytes = (uint64_t)rows * (uint64_t)cols * 8u, mem = phys_mem_bytes();
    if (bytes > mem)
        return diag_fail(e, "%s: a %lld x %lld matrix needs %llu bytes, more than this machine's memory (%llu bytes)",
                       name, (long long)rows, (long long)cols, (unsigned long long)bytes,
                       (unsigned long long)mem);
    return true;
}

bool io_check_sparse(int64_t rows, int64_t cols, int64_t nnz, const char *name, DiagErr *e)
{
    if (rows < 0 || cols < 0)
        return diag_fail(e, "%s: invalid dimensions %lld x %lld", name, (long long)rows, (long long)cols);
    uint64_t bytes = sp_bytes(rows, nnz), mem = phys_mem_bytes();
    if (bytes > mem)
        return diag_fail(e,
                         "%s: a sparse %lld x %lld matrix with %lld entries needs %llu bytes, more than this "
                         "machine's memory (%llu bytes)",
                         name, (long long)rows, (long long)cols, (long long)nnz, (unsigned long long)bytes,
                         (unsigned long long)mem);
    return true;
}

bool io_check_sparse_dims(int64_t rows, int64_t cols, const char *name, DiagErr *e)
{
    return io_check_sparse(rows, cols, 0, name, e);
}

Matrix *io_matrix_from_csr(SpMat *s, const char *name, DiagErr *e)
{
    int64_t nnz = s->nnz;
    if (sp_prefer_sparse(s->rows, s->cols, nnz)) {
        int64_t rows = s->rows, cols = s->cols;
        Matrix *m = mat_new_sparse_take(s);
        if (!m)
            diag_fail(e, "%s: out of memory for a sparse %lld x %lld matrix", name, (long long)rows, (long long)cols);
        return m;
    }
    /* dense by the rule: expanded, when the dense matrix fits */
    Matrix *m = io_matrix_raw(s->rows, s->cols, name, e);
    if (m) {
        if (m->rows && m->cols)
            sp_to_dense(s, m->data);
        m->nnz = nnz;
    }
    sp_free(s);
    return m;
}

Matrix *io_matrix_settle(Matrix *m)
{
    if (m->sp || mat_len(m) == 0)
        return m;
    int64_t nnz = sp_count_nnz(m->data, mat_len(m));
    m->nnz = nnz;
    if (!sp_prefer_sparse(m->rows, m->cols, nnz))
        return m;
    Matrix *s = mat_new_sparse_take(sp_from_dense(m->data, m->rows, m->cols, nnz));
    if (!s)
        return m;   /* no memory for the CSR: the dense form is still right */
    mat_release(m);
    return s;
}

static Matrix *matrix_new(int64_t rows, int64_t cols, bool zero, const char *name, DiagErr *e)
{
    if (!io_check_dims(rows, cols, name, e))
        return NULL;
    Matrix *m = zero ? mat_new_zero_raw(rows, cols) : mat_new_raw(rows, cols);
    if (!m)
        diag_fail(e, "%s: out of memory for a %lld x %lld matrix", name, (long long)rows, (long long)cols);
    return m;
}

Matrix *io_matrix_zero(int64_t rows, int64_t cols, const char *name, DiagErr *e)
{
    return matrix_new(rows, cols, true, name, e);
}

/* Uninitialised variant, for parsers that fill every cell. */
Matrix *io_matrix_raw(int64_t rows, int64_t cols, const char *name, DiagErr *e)
{
    return matrix_new(rows, cols, false, name, e);
}

/* One "i j v" line. */
static void out_entry(Out *o, int64_t i, int64_t j, double v)
{
    out_int(o, i + 1);
    out_put(o, " ", 1);
    out_int(o, j + 1);
    out_put(o, " ", 1);
    out_double(o, v);
    out_put(o, "\n", 1);
}

int64_t out_ijv(Out *o, const Matrix *m)
{
    if (m->sp) {
        const SpMat *s = m->sp;
        for (int64_t i = 0; i < s->rows; i++)
            for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
                out_entry(o, i, s->colidx[p], s->vals[p]);
        return s->nnz;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < m->rows && m->cols > 0; i++) {
        const double *row = m->data + i * m->cols;
        for (int64_t j = 0; j < m->cols; j++) {
            if (row[j] == 0.0)
                continue;
            out_entry(o, i, j, row[j]);
            n++;
        }
    }
    return n;
}

void io_row_get(const Matrix *m, int64_t i, double *out)
{
    if (!m->sp) {
        memcpy(out, m->data + i * m->cols, (size_t)m->cols * sizeof *out);
        return;
    }
    const SpMat *s = m->sp;
    memset(out, 0, (size_t)m->cols * sizeof *out);
    for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++)
        out[s->colidx[p]] = s->vals[p];
}

int64_t io_nnz(const Matrix *m)
{
    if (m->sp)
        return m->sp->nnz;
    int64_t n = 0, len = m->rows * m->cols;
    for (int64_t i = 0; i < len; i++)
        n += m->data[i] != 0.0;
    return n;
}

/* Checks a dimension declared in the call or .mtd (-1 = none) against the one
 * found in the file. */
bool io_dim_agrees(const char *name, const char *what, int64_t declared, int64_t found, DiagErr *e)
{
    if (declared >= 0 && declared != found)
        return diag_fail(e, "%s: the file has %lld %s but %lld were declared", name, (long long)found, what,
                       (long long)declared);
    return true;
}

/* ================================================================
 * Numbers
 * ================================================================ */

const double io_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Everything the fast path leaves: Java's Double.parseDouble, as upstream's
 * readers use ("1d" and "Infinity" are numbers; "inf", "nan", "0x10" not). */
static bool parse_double_slow(const char *s, const char *e, double *out)
{
    return num_parse_double(s, (size_t)(e - s), out);
}

/* Reads the digits at *p into the mantissa *m, which has *nd significant
 * digits so far (leading zeros are not significant). Returns how many
 * digits it read, or -1 at a 20th significant digit (for the slow path). */
static inline int64_t mantissa_digits(const char **p, const char *e, uint64_t *m, int *nd)
{
    const char *q = *p;
    for (; q < e && (unsigned)(*q - '0') < 10; q++) {
        unsigned d = (unsigned)(*q - '0');
        if (*m || d) {
            if (*nd == 19)
                return -1;
            *m = *m * 10 + d;
            (*nd)++;
        }
    }
    int64_t k = q - *p;
    *p = q;
    return k;
}

/* Fast path (Clinger): a decimal with at most 19 significant digits whose
 * mantissa fits in 53 bits and whose power of ten is at most 22 is converted
 * exactly by one IEEE multiplication or division, which rounds correctly.
 * Everything else (long mantissas, big exponents, Infinity, NaN, hex, a
 * d/f suffix) goes through num_parse_double, whose values are strtod's. */
bool io_parse_double(const char *s, const char *e, double *out)
{
    while (s < e && is_space(*s))
        s++;
    while (e > s && is_space(e[-1]))
        e--;
    if (s == e)
        return false;
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    uint64_t m = 0;
    int nd = 0, exp10 = 0;
    int64_t k = mantissa_digits(&p, e, &m, &nd);
    if (k < 0)
        return parse_double_slow(s, e, out);
    bool digits = k > 0;
    if (p < e && *p == '.') {
        p++;
        k = mantissa_digits(&p, e, &m, &nd);
        if (k < 0)
            return parse_double_slow(s, e, out);
        digits |= k > 0;
        exp10 -= (int)k;
    }
    if (!digits)
        return parse_double_slow(s, e, out);
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < e && (*p == '+' || *p == '-')) {
            eneg = *p == '-';
            p++;
        }
        if (p == e || (unsigned)(*p - '0') >= 10)
            return false;
        int x = 0;
        while (p < e && (unsigned)(*p - '0') < 10) {
            if (x > 100000)
                return parse_double_slow(s, e, out);
            x = x * 10 + (*p - '0');
            p++;
        }
        exp10 += eneg ? -x : x;
    }
    if (p != e)
        return parse_double_slow(s, e, out);
    double v;
    if (m == 0)
        v = 0.0;
    else if (m > (UINT64_C(1) << 53) || exp10 > 22 || exp10 < -22)
        return parse_double_slow(s, e, out);
    else if (exp10 >= 0)
        v = (double)m * io_pow10[exp10];
    else
        v = (double)m / io_pow10[-exp10];
    *out = neg ? -v : v;
    return true;
}

/* Integer in [s, e) with optional sign; no blanks, no overflow. */
bool io_parse_i64(const char *s, const char *e, int64_t *out)
{
    if (s == e)
        return false;
    bool neg = false;
    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        s++;
    }
    if (s == e)
        return false;
    uint64_t v = 0;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d >= 10)
            return false;
        if (v > (UINT64_C(9223372036854775808) - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (!neg && v > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* An index field: an integer, or a number with an integral value ("3.0"),
 * since files written by other tools sometimes print indices as doubles. */
bool io_parse_index(const char *s, const char *e, int64_t *out)
{
    if (io_parse_i64(s, e, out))
        return true;
    double d;
    if (!io_parse_double(s, e, &d) || d != floor(d) || fabs(d) > 9.0e15)
        return false;
    *out = (int64_t)d;
    return true;
}
