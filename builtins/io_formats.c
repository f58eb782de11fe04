/* SPDX-License-Identifier: Apache-2.0
 * The matrix file formats (see io_formats.h for each format's layout):
 * whole-file input with transparent gzip, the parsers over (buf, len), the
 * writers over FILE*, and atomic replacement of files through a temporary in
 * the same directory. Pure functions with no global mutable state, so any
 * thread may call them. Parsers never read past buf+len and never hand back a
 * partially filled matrix. */
#include "io_formats.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../runtime/print.h"

bool io_fail(IoErr *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

/* strerror_r is XSI (returns int) or GNU (returns char *) depending on the
 * feature macros; _Generic accepts either. */
static const char *xsi_result(int r, char *buf) { return r == 0 ? buf : "unknown error"; }
static const char *gnu_result(char *r, char *buf) { (void)buf; return r; }

const char *io_strerror(int err, char *buf, size_t cap)
{
    buf[0] = 0;
    return _Generic(strerror_r(err, buf, cap), int: xsi_result, char *: gnu_result)(strerror_r(err, buf, cap), buf);
}

static void mat_drop(Matrix *m)
{
    if (m)
        val_release(val_matrix_take(m));
}

/* Copies [s, e) into dst for quoting inside a message, shortened with "..."
 * so one absurd field cannot swamp the message. */
static const char *snippet(const char *s, const char *e, char *dst, size_t cap)
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

static inline bool is_blank(char c) { return c == ' ' || c == '\t'; }
static inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

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

bool io_is_gzip(const char *buf, size_t len)
{
    return len >= 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b;
}

bool io_gunzip(const char *buf, size_t len, const char *name, IoBuf *out, IoErr *e)
{
    out->p = NULL;
    out->len = 0;
    uint64_t limit = phys_mem_bytes();
    size_t cap = len < (SIZE_MAX / 4) ? len * 4 + 4096 : len;
    char *dst = malloc(cap + 1);
    if (!dst)
        return io_fail(e, "%s: out of memory inflating gzip data", name);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    /* 15+16: gzip wrapper only, so a zlib stream is not silently accepted. */
    if (inflateInit2(&zs, 15 + 16) != Z_OK) {
        free(dst);
        return io_fail(e, "%s: cannot initialise zlib", name);
    }
    const unsigned char *in = (const unsigned char *)buf;
    size_t in_left = len, n = 0;
    bool ok = true;
    for (;;) {
        if (n == cap) {
            if (cap >= limit) {
                ok = io_fail(e, "%s: gzip data inflates to more than this machine's memory", name);
                break;
            }
            size_t ncap = cap * 2;
            char *np = realloc(dst, ncap + 1);
            if (!np) {
                ok = io_fail(e, "%s: out of memory inflating gzip data", name);
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
            ok = io_fail(e, "%s: truncated gzip data", name);
            break;
        }
        if (rc == Z_BUF_ERROR)
            continue;
        ok = io_fail(e, "%s: corrupt gzip data (%s)", name, zs.msg ? zs.msg : "inflate failed");
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

bool io_read_file(const char *path, IoBuf *out, IoErr *e)
{
    char eb[64];
    out->p = NULL;
    out->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_fail(e, "cannot open '%s': %s", path, io_strerror(errno, eb, sizeof eb));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return io_fail(e, "cannot read '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return io_fail(e, "cannot read '%s': Is a directory", path);
    }
    /* Regular files: one allocation of the right size; pipes and other
     * streams grow the buffer as they go. */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size : 65536;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return io_fail(e, "cannot read '%s': file too large for memory", path);
    }
    size_t n = 0;
    for (;;) {
        if (n == cap) {
            if (S_ISREG(st.st_mode) && cap == (size_t)st.st_size) {
                /* The file may have grown: probe for more before growing. */
                char probe;
                ssize_t r = read(fd, &probe, 1);
                if (r == 0)
                    break;
                if (r < 0) {
                    if (errno == EINTR)
                        continue;
                    int err = errno;
                    free(buf);
                    close(fd);
                    return io_fail(e, "cannot read '%s': %s", path, io_strerror(err, eb, sizeof eb));
                }
                size_t ncap = cap * 2 + 65536;
                char *nb = realloc(buf, ncap + 1);
                if (!nb) {
                    free(buf);
                    close(fd);
                    return io_fail(e, "cannot read '%s': file too large for memory", path);
                }
                buf = nb;
                cap = ncap;
                buf[n++] = probe;
                continue;
            }
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return io_fail(e, "cannot read '%s': file too large for memory", path);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            free(buf);
            close(fd);
            return io_fail(e, "cannot read '%s': %s", path, io_strerror(err, eb, sizeof eb));
        }
        n += (size_t)r;
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
}

/* ================================================================
 * Sizes
 * ================================================================ */

bool io_check_dims(int64_t rows, int64_t cols, const char *name, IoErr *e)
{
    if (rows < 0 || cols < 0)
        return io_fail(e, "%s: invalid dimensions %lld x %lld", name, (long long)rows, (long long)cols);
    if (cols != 0 && rows > INT64_MAX / 8 / cols)
        return io_fail(e, "%s: a %lld x %lld matrix is too large", name, (long long)rows, (long long)cols);
    uint64_t bytes = (uint64_t)rows * (uint64_t)cols * 8u, mem = phys_mem_bytes();
    if (bytes > mem)
        return io_fail(e, "%s: a %lld x %lld matrix needs %llu bytes, more than this machine's memory (%llu bytes)",
                       name, (long long)rows, (long long)cols, (unsigned long long)bytes,
                       (unsigned long long)mem);
    return true;
}

Matrix *io_matrix_zero(int64_t rows, int64_t cols, const char *name, IoErr *e)
{
    if (!io_check_dims(rows, cols, name, e))
        return NULL;
    Matrix *m = mat_new_zero_raw(rows, cols);
    if (!m)
        io_fail(e, "%s: out of memory for a %lld x %lld matrix", name, (long long)rows, (long long)cols);
    return m;
}

/* Uninitialised variant, for parsers that fill every cell. */
static Matrix *matrix_raw(int64_t rows, int64_t cols, const char *name, IoErr *e)
{
    if (!io_check_dims(rows, cols, name, e))
        return NULL;
    Matrix *m = mat_new_raw(rows, cols);
    if (!m)
        io_fail(e, "%s: out of memory for a %lld x %lld matrix", name, (long long)rows, (long long)cols);
    return m;
}

int64_t io_nnz(const Matrix *m)
{
    int64_t n = 0, len = m->rows * m->cols;
    for (int64_t i = 0; i < len; i++)
        n += m->data[i] != 0.0;
    return n;
}

/* Checks a dimension declared in the call or .mtd (-1 = none) against the one
 * found in the file. */
static bool dim_agrees(const char *name, const char *what, int64_t declared, int64_t found, IoErr *e)
{
    if (declared >= 0 && declared != found)
        return io_fail(e, "%s: the file has %lld %s but %lld were declared", name, (long long)found, what,
                       (long long)declared);
    return true;
}

/* ================================================================
 * Numbers
 * ================================================================ */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* strtod on a NUL-terminated copy of [s, e): the whole text must be used. */
static bool parse_double_slow(const char *s, const char *e, double *out)
{
    size_t n = (size_t)(e - s);
    char small[128];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp)
        return false;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    double d = strtod(tmp, &end);
    bool ok = end == tmp + n && n > 0 && !is_space(tmp[0]);
    if (tmp != small)
        free(tmp);
    if (ok)
        *out = d;
    return ok;
}

/* Fast path (Clinger): a decimal with at most 19 significant digits whose
 * mantissa fits in 53 bits and whose power of ten is at most 22 is converted
 * exactly by one IEEE multiplication or division, which rounds correctly.
 * Everything else (long mantissas, big exponents, Infinity, NaN, hex) goes
 * through strtod, so results always equal strtod's. */
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
    bool digits = false;
    while (p < e && (unsigned)(*p - '0') < 10) {
        unsigned d = (unsigned)(*p - '0');
        digits = true;
        if (m || d) {
            if (nd == 19)
                return parse_double_slow(s, e, out);
            m = m * 10 + d;
            nd++;
        }
        p++;
    }
    if (p < e && *p == '.') {
        p++;
        while (p < e && (unsigned)(*p - '0') < 10) {
            unsigned d = (unsigned)(*p - '0');
            digits = true;
            if (m || d) {
                if (nd == 19)
                    return parse_double_slow(s, e, out);
                m = m * 10 + d;
                nd++;
            }
            exp10--;
            p++;
        }
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
        v = (double)m * POW10[exp10];
    else
        v = (double)m / POW10[-exp10];
    *out = neg ? -v : v;
    return true;
}

/* Integer in [s, e) with optional sign; no blanks, no overflow. */
static bool parse_i64(const char *s, const char *e, int64_t *out)
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
static bool parse_index(const char *s, const char *e, int64_t *out)
{
    if (parse_i64(s, e, out))
        return true;
    double d;
    if (!io_parse_double(s, e, &d) || d != floor(d) || fabs(d) > 9.0e15)
        return false;
    *out = (int64_t)d;
    return true;
}

/* ================================================================
 * Line scanning
 * ================================================================ */

typedef struct Lines {
    const char *p, *end;
    int64_t lineno;         /* number of the line last returned */
} Lines;

/* Next line as [*ls, *le) without its '\n' or trailing '\r'. */
static bool next_line(Lines *L, const char **ls, const char **le)
{
    if (L->p >= L->end)
        return false;
    const char *s = L->p;
    const char *nl = memchr(s, '\n', (size_t)(L->end - s));
    const char *e = nl ? nl : L->end;
    L->p = nl ? nl + 1 : L->end;
    if (e > s && e[-1] == '\r')
        e--;
    *ls = s;
    *le = e;
    L->lineno++;
    return true;
}

static bool line_is_blank(const char *s, const char *e)
{
    for (; s < e; s++)
        if (!is_space(*s))
            return false;
    return true;
}

/* Splits [s, e) at blanks into up to 'max' tokens; returns the total token
 * count (which may exceed max). */
static int split_blanks(const char *s, const char *e, const char **ts, const char **te, int max)
{
    int n = 0;
    while (s < e) {
        while (s < e && is_space(*s))
            s++;
        if (s == e)
            break;
        const char *t = s;
        while (s < e && !is_space(*s))
            s++;
        if (n < max) {
            ts[n] = t;
            te[n] = s;
        }
        n++;
    }
    return n;
}

/* ================================================================
 * CSV
 * ================================================================ */

void io_csv_opts_init(IoCsvOpts *o)
{
    memset(o, 0, sizeof *o);
    o->sep = ",";
    o->fill = true;
    o->fill_value = 0.0;
    o->rows = -1;
    o->cols = -1;
}

typedef struct CsvSep {
    const char *s;
    size_t n;
} CsvSep;

/* End of the field starting at p within a line ending at le: the position of
 * the next separator or le. A field whose first non-blank character is '"'
 * runs to its closing quote ("" inside is an escaped quote) first, so a
 * quoted field may contain the separator. */
static const char *field_end(const char *p, const char *le, CsvSep sep)
{
    const char *q = p;
    while (q < le && is_blank(*q))
        q++;
    if (q < le && *q == '"') {
        q++;
        while (q < le) {
            if (*q == '"') {
                if (q + 1 < le && q[1] == '"') {
                    q += 2;
                    continue;
                }
                q++;
                break;
            }
            q++;
        }
        p = q;
    }
    if (sep.n == 1) {
        char c = sep.s[0];
        while (p < le && *p != c)
            p++;
        return p;
    }
    while (p < le) {
        if ((size_t)(le - p) >= sep.n && memcmp(p, sep.s, sep.n) == 0)
            return p;
        p++;
    }
    return le;
}

static int64_t count_fields(const char *ls, const char *le, CsvSep sep)
{
    int64_t n = 1;
    const char *p = ls;
    for (;;) {
        p = field_end(p, le, sep);
        if (p >= le)
            return n;
        p += sep.n;
        n++;
    }
}

/* Value of one CSV field [s, e): NA strings, quotes, fill, numbers. */
static bool csv_cell(const char *s, const char *e, const IoCsvOpts *o, const char *name, int64_t line,
                     int64_t col, double *out, IoErr *err)
{
    while (s < e && is_blank(*s))
        s++;
    while (e > s && is_blank(e[-1]))
        e--;
    if (e - s >= 2 && *s == '"' && e[-1] == '"') {
        s++;
        e--;
        while (s < e && is_blank(*s))
            s++;
        while (e > s && is_blank(e[-1]))
            e--;
    }
    if (s == e) {
        if (!o->fill)
            return io_fail(err, "%s:%lld: field %lld is empty and fill is FALSE", name, (long long)line,
                           (long long)col);
        *out = o->fill_value;
        return true;
    }
    for (int k = 0; k < o->nna; k++) {
        size_t n = strlen(o->na[k]);
        if (n == (size_t)(e - s) && memcmp(s, o->na[k], n) == 0) {
            *out = NAN;
            return true;
        }
    }
    if (io_parse_double(s, e, out))
        return true;
    char sn[64];
    return io_fail(err, "%s:%lld: '%s' is not a number%s", name, (long long)line, snippet(s, e, sn, sizeof sn),
                   line == 1 && !o->header && (isalpha((unsigned char)*s) || *s == '_')
                       ? " (a header line? use header=TRUE)" : "");
}

Matrix *io_parse_csv(const char *buf, size_t len, const char *name, const IoCsvOpts *o, IoErr *e)
{
    CsvSep sep = {o->sep ? o->sep : ",", 0};
    sep.n = strlen(sep.s);
    if (sep.n == 0) {
        io_fail(e, "%s: the csv separator must not be empty", name);
        return NULL;
    }
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    int64_t header_cols = 0;    /* a header with no rows under it still gives the width */
    if (o->header) {
        if (next_line(&L, &ls, &le) && !line_is_blank(ls, le))
            header_cols = count_fields(ls, le, sep);
    }
    const char *data = L.p;
    int64_t first_line = L.lineno + 1;
    /* Trailing empty lines are not rows, unless the declared row count says
     * they are (a 1-column sparse csv writes a zero as an empty line): find
     * the last byte that is not a line break, then count the lines up to it
     * (memchr keeps this pass cheap). A line of blanks is a row. */
    const char *last = buf + len;
    while (last > data && (last[-1] == '\n' || last[-1] == '\r'))
        last--;
    int64_t rows = 0;
    if (last > data) {
        rows = 1;
        for (const char *q = data; (q = memchr(q, '\n', (size_t)(last - q))) != NULL; q++)
            rows++;
    }
    if (o->rows > rows) {
        int64_t more = 0;   /* empty lines after 'last' */
        const char *q = last;
        if (rows > 0 && q < buf + len && *q == '\r')
            q++;
        if (rows > 0 && q < buf + len && *q == '\n')
            q++;            /* the end of the last non-empty row */
        for (const char *t = q; t < buf + len; t++)
            more += *t == '\n';
        if (q < buf + len && buf[len - 1] != '\n')
            more++;
        if (rows + more >= o->rows) {
            rows = o->rows;
            last = buf + len;
        }
    }
    int64_t cols = 0;
    if (rows > 0) {
        Lines F = {data, last, 0};
        next_line(&F, &ls, &le);
        cols = count_fields(ls, le, sep);
    } else {
        cols = o->cols >= 0 ? o->cols : header_cols;
    }
    if (o->cols >= 0 && rows > 0 && cols != o->cols) {
        io_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)first_line, (long long)o->cols,
                (long long)cols);
        return NULL;
    }
    if (!dim_agrees(name, "rows", o->rows, rows, e))
        return NULL;
    Matrix *m = matrix_raw(rows, cols, name, e);
    if (!m)
        return NULL;
    Lines D = {data, last, first_line - 1};
    double *dst = m->data;
    /* Fast path for the common cell: a plain decimal "[-]digits[.digits]"
     * of at most 15 digits right before the separator (pixels, labels,
     * zeros, what write() produces). Exact, as in io_parse_double: m < 2^53
     * and one division by a power of ten. NA strings might look like such
     * numbers, so their presence turns it off. */
    bool fast = sep.n == 1 && o->nna == 0;
    char sep0 = sep.s[0];
    for (int64_t r = 0; r < rows; r++) {
        next_line(&D, &ls, &le);
        const char *p = ls;
        int64_t c = 0;
        for (;;) {
            if (fast && c < cols) {
                const char *q = p;
                bool neg = q < le && *q == '-';
                q += neg;
                const char *digits = q;
                uint64_t v = 0;
                unsigned d;
                int frac = 0;
                bool dot = false;
                while (q < le && (d = (unsigned)(*q - '0')) < 10) {
                    v = v * 10 + d;
                    q++;
                }
                if (q < le && *q == '.') {
                    const char *f = ++q;
                    dot = true;
                    while (q < le && (d = (unsigned)(*q - '0')) < 10) {
                        v = v * 10 + d;
                        q++;
                    }
                    frac = (int)(q - f);
                }
                int64_t ndig = (int64_t)(q - digits) - dot;   /* v may have wrapped if > 15 */
                if (ndig > 0 && ndig <= 15 && (q == le || *q == sep0)) {
                    double x = frac ? (double)v / POW10[frac] : (double)v;
                    dst[c++] = neg ? -x : x;
                    if (q == le)
                        break;
                    p = q + 1;
                    continue;
                }
            }
            const char *fe = field_end(p, le, sep);
            if (c < cols) {
                if (!csv_cell(p, fe, o, name, D.lineno, c + 1, dst + c, e)) {
                    mat_drop(m);
                    return NULL;
                }
            }
            c++;
            if (fe >= le)
                break;
            p = fe + sep.n;
        }
        if (c != cols) {
            io_fail(e, "%s:%lld: expected %lld fields, found %lld", name, (long long)D.lineno, (long long)cols,
                    (long long)c);
            mat_drop(m);
            return NULL;
        }
        dst += cols;
    }
    return m;
}

/* ================================================================
 * text: "i j v"
 * ================================================================ */

Matrix *io_parse_text(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, IoErr *e)
{
    Matrix *m = io_matrix_zero(rows, cols, name, e);
    if (!m)
        return NULL;
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    while (next_line(&L, &ls, &le)) {
        const char *ts[3], *te[3];
        int nt = split_blanks(ls, le, ts, te, 3);
        if (nt == 0 || *ts[0] == '%')
            continue;
        if (nt != 3) {
            bool comma = memchr(ls, ',', (size_t)(le - ls)) != NULL;
            io_fail(e, "%s:%lld: expected 3 fields 'i j v', found %d%s", name, (long long)L.lineno, nt,
                    comma ? " (a csv file? use format=\"csv\")" : "");
            goto fail;
        }
        int64_t i, j;
        double v;
        if (!parse_index(ts[0], te[0], &i)) {
            io_fail(e, "%s:%lld: row index '%s' is not an integer", name, (long long)L.lineno,
                    snippet(ts[0], te[0], sn, sizeof sn));
            goto fail;
        }
        if (!parse_index(ts[1], te[1], &j)) {
            io_fail(e, "%s:%lld: column index '%s' is not an integer", name, (long long)L.lineno,
                    snippet(ts[1], te[1], sn, sizeof sn));
            goto fail;
        }
        if (!io_parse_double(ts[2], te[2], &v)) {
            io_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                    snippet(ts[2], te[2], sn, sizeof sn));
            goto fail;
        }
        if (i == 0 && j == 0 && v == 0.0)
            continue;   /* the marker line an all-zero matrix is written as */
        if (i < 1 || i > rows) {
            io_fail(e, "%s:%lld: row index %lld out of range 1..%lld", name, (long long)L.lineno, (long long)i,
                    (long long)rows);
            goto fail;
        }
        if (j < 1 || j > cols) {
            io_fail(e, "%s:%lld: column index %lld out of range 1..%lld", name, (long long)L.lineno,
                    (long long)j, (long long)cols);
            goto fail;
        }
        m->data[(i - 1) * cols + (j - 1)] = v;
    }
    return m;
fail:
    mat_drop(m);
    return NULL;
}

/* ================================================================
 * MatrixMarket
 * ================================================================ */

static bool tok_is(const char *s, const char *e, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(e - s) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != word[i])
            return false;
    }
    return true;
}

/* Next line that is neither blank nor a '%' comment. */
static bool next_data_line(Lines *L, const char **ls, const char **le)
{
    while (next_line(L, ls, le)) {
        const char *s = *ls;
        while (s < *le && is_space(*s))
            s++;
        if (s < *le && *s != '%')
            return true;
    }
    return false;
}

enum { MM_GENERAL, MM_SYMMETRIC, MM_SKEW };

Matrix *io_parse_mm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, IoErr *e)
{
    Lines L = {buf, buf + len, 0};
    const char *ls, *le, *ts[6], *te[6];
    char sn[64];
    if (!next_line(&L, &ls, &le) || split_blanks(ls, le, ts, te, 6) < 1 || !tok_is(ts[0], te[0], "%%matrixmarket")) {
        io_fail(e, "%s:1: missing '%%%%MatrixMarket' header", name);
        return NULL;
    }
    int nt = split_blanks(ls, le, ts, te, 6);
    if (nt != 5 || !tok_is(ts[1], te[1], "matrix")) {
        io_fail(e, "%s:1: expected '%%%%MatrixMarket matrix <format> <field> <symmetry>'", name);
        return NULL;
    }
    bool array;
    if (tok_is(ts[2], te[2], "coordinate"))
        array = false;
    else if (tok_is(ts[2], te[2], "array"))
        array = true;
    else {
        io_fail(e, "%s:1: unsupported MatrixMarket format '%s'", name, snippet(ts[2], te[2], sn, sizeof sn));
        return NULL;
    }
    bool pattern = false;
    if (tok_is(ts[3], te[3], "pattern"))
        pattern = true;
    else if (!tok_is(ts[3], te[3], "real") && !tok_is(ts[3], te[3], "integer") && !tok_is(ts[3], te[3], "double")) {
        io_fail(e, "%s:1: unsupported MatrixMarket field '%s'", name, snippet(ts[3], te[3], sn, sizeof sn));
        return NULL;
    }
    if (pattern && array) {
        io_fail(e, "%s:1: a 'pattern' matrix must be in coordinate format", name);
        return NULL;
    }
    int sym;
    if (tok_is(ts[4], te[4], "general"))
        sym = MM_GENERAL;
    else if (tok_is(ts[4], te[4], "symmetric"))
        sym = MM_SYMMETRIC;
    else if (tok_is(ts[4], te[4], "skew-symmetric"))
        sym = MM_SKEW;
    else {
        io_fail(e, "%s:1: unsupported MatrixMarket symmetry '%s'", name, snippet(ts[4], te[4], sn, sizeof sn));
        return NULL;
    }
    if (!next_data_line(&L, &ls, &le)) {
        io_fail(e, "%s: missing the size line", name);
        return NULL;
    }
    int want = array ? 2 : 3;
    int64_t sz[3] = {0, 0, 0};
    nt = split_blanks(ls, le, ts, te, 3);
    if (nt != want) {
        io_fail(e, "%s:%lld: expected the size line '%s', found %d fields", name, (long long)L.lineno,
                array ? "rows cols" : "rows cols nnz", nt);
        return NULL;
    }
    for (int k = 0; k < want; k++)
        if (!parse_i64(ts[k], te[k], &sz[k]) || sz[k] < 0) {
            io_fail(e, "%s:%lld: '%s' is not a valid size", name, (long long)L.lineno,
                    snippet(ts[k], te[k], sn, sizeof sn));
            return NULL;
        }
    if (!dim_agrees(name, "rows", rows, sz[0], e) || !dim_agrees(name, "columns", cols, sz[1], e))
        return NULL;
    rows = sz[0];
    cols = sz[1];
    if (sym != MM_GENERAL && rows != cols) {
        io_fail(e, "%s:%lld: a symmetric matrix must be square, not %lld x %lld", name, (long long)L.lineno,
                (long long)rows, (long long)cols);
        return NULL;
    }
    Matrix *m = io_matrix_zero(rows, cols, name, e);
    if (!m)
        return NULL;
    int64_t expect, got = 0;
    if (array) {
        /* Column-major; symmetric storage lists only the lower triangle
         * (skew: strictly lower). */
        expect = sym == MM_GENERAL ? rows * cols : sym == MM_SYMMETRIC ? rows * (rows + 1) / 2 : rows * (rows - 1) / 2;
        int64_t i = 0, j = 0;
        if (sym == MM_SKEW)
            i = 1;
        while (got < expect && next_data_line(&L, &ls, &le)) {
            nt = split_blanks(ls, le, ts, te, 1);
            double v;
            if (nt != 1) {
                io_fail(e, "%s:%lld: expected 1 value, found %d", name, (long long)L.lineno, nt);
                goto fail;
            }
            if (!io_parse_double(ts[0], te[0], &v)) {
                io_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                        snippet(ts[0], te[0], sn, sizeof sn));
                goto fail;
            }
            m->data[i * cols + j] = v;
            if (sym == MM_SYMMETRIC)
                m->data[j * cols + i] = v;
            else if (sym == MM_SKEW)
                m->data[j * cols + i] = -v;
            got++;
            if (++i == rows) {
                j++;
                i = sym == MM_GENERAL ? 0 : sym == MM_SYMMETRIC ? j : j + 1;
            }
        }
    } else {
        expect = sz[2];
        while (got < expect && next_data_line(&L, &ls, &le)) {
            int nf = pattern ? 2 : 3;
            nt = split_blanks(ls, le, ts, te, 3);
            if (nt != nf) {
                io_fail(e, "%s:%lld: expected %d fields '%s', found %d", name, (long long)L.lineno, nf,
                        pattern ? "i j" : "i j v", nt);
                goto fail;
            }
            int64_t i, j;
            double v = 1.0;
            if (!parse_index(ts[0], te[0], &i) || !parse_index(ts[1], te[1], &j)) {
                io_fail(e, "%s:%lld: indices must be integers", name, (long long)L.lineno);
                goto fail;
            }
            if (!pattern && !io_parse_double(ts[2], te[2], &v)) {
                io_fail(e, "%s:%lld: '%s' is not a number", name, (long long)L.lineno,
                        snippet(ts[2], te[2], sn, sizeof sn));
                goto fail;
            }
            if (i < 1 || i > rows) {
                io_fail(e, "%s:%lld: row index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)i, (long long)rows);
                goto fail;
            }
            if (j < 1 || j > cols) {
                io_fail(e, "%s:%lld: column index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)j, (long long)cols);
                goto fail;
            }
            m->data[(i - 1) * cols + (j - 1)] = v;
            if (sym == MM_SYMMETRIC)
                m->data[(j - 1) * cols + (i - 1)] = v;
            else if (sym == MM_SKEW && i != j)
                m->data[(j - 1) * cols + (i - 1)] = -v;
            got++;
        }
    }
    if (got < expect) {
        io_fail(e, "%s: expected %lld entries, found %lld", name, (long long)expect, (long long)got);
        goto fail;
    }
    if (next_data_line(&L, &ls, &le)) {
        io_fail(e, "%s:%lld: more entries than the %lld declared", name, (long long)L.lineno, (long long)expect);
        goto fail;
    }
    return m;
fail:
    mat_drop(m);
    return NULL;
}

/* ================================================================
 * binary (dml's own) and IDX
 * ================================================================ */

static const char BIN_MAGIC[8] = {'D', 'M', 'L', 'B', 'I', 'N', '1', 0};

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = (v << 8) | p[k];
    return v;
}

static void store_le64(unsigned char *p, uint64_t v)
{
    for (int k = 0; k < 8; k++, v >>= 8)
        p[k] = (unsigned char)v;
}

static uint64_t load_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = 0; k < n; k++)
        v = (v << 8) | p[k];
    return v;
}

Matrix *io_parse_binary(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, IoErr *e)
{
    const unsigned char *u = (const unsigned char *)buf;
    if (len < 24 || memcmp(buf, BIN_MAGIC, 8) != 0) {
        io_fail(e, "%s: not a dml binary matrix file (missing the DMLBIN1 header)", name);
        return NULL;
    }
    uint64_t r = load_le64(u + 8), c = load_le64(u + 16);
    if (r > (uint64_t)INT64_MAX || c > (uint64_t)INT64_MAX) {
        io_fail(e, "%s: corrupt header (dimensions out of range)", name);
        return NULL;
    }
    if (!dim_agrees(name, "rows", rows, (int64_t)r, e) || !dim_agrees(name, "columns", cols, (int64_t)c, e))
        return NULL;
    if (!io_check_dims((int64_t)r, (int64_t)c, name, e))
        return NULL;
    uint64_t need = r * c * 8;
    if (len - 24 != need) {
        io_fail(e, "%s: a %llu x %llu matrix needs %llu data bytes, the file has %llu", name,
                (unsigned long long)r, (unsigned long long)c, (unsigned long long)need,
                (unsigned long long)(len - 24));
        return NULL;
    }
    Matrix *m = matrix_raw((int64_t)r, (int64_t)c, name, e);
    if (!m)
        return NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (need)
        memcpy(m->data, u + 24, need);
#else
    for (uint64_t k = 0; k < r * c; k++) {
        uint64_t bits = load_le64(u + 24 + 8 * k);
        memcpy(&m->data[k], &bits, 8);
    }
#endif
    return m;
}

/* read() until n bytes or end of file; returns the count, -1 on error. */
static ssize_t read_full(int fd, void *dst, size_t n)
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

Matrix *io_read_binary_file(const char *path, int64_t rows, int64_t cols, IoErr *e)
{
    char eb[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        io_fail(e, "cannot open '%s': %s", path, io_strerror(errno, eb, sizeof eb));
        return NULL;
    }
    struct stat st;
    unsigned char hdr[24];
    ssize_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = read_full(fd, hdr, sizeof hdr);
    /* Not a plain uncompressed file of ours: take the general road, which
     * inflates gzip and produces the right message for anything else. */
    if (got != (ssize_t)sizeof hdr || memcmp(hdr, BIN_MAGIC, 8) != 0) {
        close(fd);
        IoBuf b;
        if (!io_read_file(path, &b, e))
            return NULL;
        Matrix *m = io_parse_binary(b.p, b.len, path, rows, cols, e);
        io_buf_free(&b);
        return m;
    }
    Matrix *m = NULL;
    uint64_t r = load_le64(hdr + 8), c = load_le64(hdr + 16);
    if (r > (uint64_t)INT64_MAX || c > (uint64_t)INT64_MAX) {
        io_fail(e, "%s: corrupt header (dimensions out of range)", path);
        goto done;
    }
    if (!dim_agrees(path, "rows", rows, (int64_t)r, e) || !dim_agrees(path, "columns", cols, (int64_t)c, e) ||
        !io_check_dims((int64_t)r, (int64_t)c, path, e))
        goto done;
    uint64_t need = r * c * 8;
    if ((uint64_t)st.st_size - 24 != need) {
        io_fail(e, "%s: a %llu x %llu matrix needs %llu data bytes, the file has %llu", path,
                (unsigned long long)r, (unsigned long long)c, (unsigned long long)need,
                (unsigned long long)((uint64_t)st.st_size - 24));
        goto done;
    }
    m = matrix_raw((int64_t)r, (int64_t)c, path, e);
    if (!m)
        goto done;
    got = need ? read_full(fd, m->data, need) : 0;
    if (got < 0 || (uint64_t)got != need) {
        if (got < 0)
            io_fail(e, "cannot read '%s': %s", path, io_strerror(errno, eb, sizeof eb));
        else
            io_fail(e, "%s: the file shrank while being read", path);
        mat_drop(m);
        m = NULL;
        goto done;
    }
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    for (uint64_t k = 0; k < r * c; k++) {
        uint64_t bits = load_le64((const unsigned char *)&m->data[k]);
        memcpy(&m->data[k], &bits, 8);
    }
#endif
done:
    close(fd);
    return m;
}

bool io_name_is_idx(const char *path)
{
    size_t n = strlen(path);
    if (n >= 3 && strcmp(path + n - 3, ".gz") == 0)
        n -= 3;
    if (n >= 4 && memcmp(path + n - 4, ".idx", 4) == 0)
        return true;
    /* "-idx3-ubyte", ".idx1-ubyte", ... */
    if (n >= 11 && memcmp(path + n - 6, "-ubyte", 6) == 0 && (path[n - 11] == '-' || path[n - 11] == '.') &&
        memcmp(path + n - 10, "idx", 3) == 0 && path[n - 7] >= '1' && path[n - 7] <= '9')
        return true;
    return false;
}

Matrix *io_parse_idx(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, IoErr *e)
{
    const unsigned char *u = (const unsigned char *)buf;
    if (len < 4 || u[0] != 0 || u[1] != 0) {
        io_fail(e, "%s: not an IDX file (bad magic number)", name);
        return NULL;
    }
    int type = u[2], nd = u[3], esz;
    switch (type) {
    case 0x08: case 0x09: esz = 1; break;
    case 0x0B: esz = 2; break;
    case 0x0C: case 0x0D: esz = 4; break;
    case 0x0E: esz = 8; break;
    default:
        io_fail(e, "%s: unknown IDX element type 0x%02x", name, type);
        return NULL;
    }
    if (nd < 1) {
        io_fail(e, "%s: an IDX file needs at least one dimension", name);
        return NULL;
    }
    size_t hdr = 4 + 4 * (size_t)nd;
    if (len < hdr) {
        io_fail(e, "%s: truncated IDX header", name);
        return NULL;
    }
    int64_t n = (int64_t)load_be(u + 4, 4), d = 1;
    for (int k = 1; k < nd; k++) {
        int64_t dk = (int64_t)load_be(u + 4 + 4 * k, 4);
        if (dk != 0 && d > INT64_MAX / 16 / dk) {
            io_fail(e, "%s: IDX dimensions too large", name);
            return NULL;
        }
        d *= dk;
    }
    if (!dim_agrees(name, "rows", rows, n, e) || !dim_agrees(name, "columns", cols, d, e))
        return NULL;
    if (!io_check_dims(n, d, name, e))
        return NULL;
    uint64_t cells = (uint64_t)n * (uint64_t)d, need = cells * (uint64_t)esz;
    if (len - hdr != need) {
        io_fail(e, "%s: expected %llu bytes of IDX data, found %llu", name, (unsigned long long)need,
                (unsigned long long)(len - hdr));
        return NULL;
    }
    Matrix *m = matrix_raw(n, d, name, e);
    if (!m)
        return NULL;
    const unsigned char *p = u + hdr;
    double *dst = m->data;
    switch (type) {
    case 0x08:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = p[k];
        break;
    case 0x09:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (signed char)p[k];
        break;
    case 0x0B:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (int16_t)(uint16_t)load_be(p + 2 * k, 2);
        break;
    case 0x0C:
        for (uint64_t k = 0; k < cells; k++)
            dst[k] = (int32_t)(uint32_t)load_be(p + 4 * k, 4);
        break;
    case 0x0D:
        for (uint64_t k = 0; k < cells; k++) {
            uint32_t bits = (uint32_t)load_be(p + 4 * k, 4);
            float f;
            memcpy(&f, &bits, 4);
            dst[k] = f;
        }
        break;
    default:
        for (uint64_t k = 0; k < cells; k++) {
            uint64_t bits = load_be(p + 8 * k, 8);
            memcpy(&dst[k], &bits, 8);
        }
        break;
    }
    return m;
}

/* ================================================================
 * libsvm
 * ================================================================ */

/* Splits "idx<indsep>val" and parses both parts. */
static bool svm_pair(const char *s, const char *e, const char *indsep, int64_t *idx, double *v)
{
    size_t il = strlen(indsep);
    const char *colon = NULL;
    for (const char *q = s; q + il <= e && !colon; q++)
        if (memcmp(q, indsep, il) == 0)
            colon = q;
    return colon && parse_i64(s, colon, idx) && io_parse_double(colon + il, e, v);
}

/* Entries of a libsvm line are split by blanks or by the separator (upstream
 * writes ',' by default, other tools a space). */
static bool svm_sep(char c, char sep)
{
    return is_space(c) || c == sep;
}

Matrix *io_parse_libsvm(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols, IoErr *e)
{
    return io_parse_libsvm_sep(buf, len, name, rows, cols, ",", ":", e);
}

Matrix *io_parse_libsvm_sep(const char *buf, size_t len, const char *name, int64_t rows, int64_t cols,
                            const char *sepstr, const char *indsep, IoErr *e)
{
    char sep = sepstr && sepstr[0] ? sepstr[0] : ',';
    if (!indsep || !*indsep)
        indsep = ":";
    /* Pass 1: count the rows and, when cols is not given, find the largest
     * feature index; also validates every token, so pass 2 cannot fail. */
    Lines L = {buf, buf + len, 0};
    const char *ls, *le;
    char sn[64];
    int64_t nrows = 0, maxidx = 0;
    while (next_line(&L, &ls, &le)) {
        if (line_is_blank(ls, le))
            continue;
        const char *p = ls;
        bool first = true;
        while (p < le) {
            while (p < le && svm_sep(*p, sep))
                p++;
            if (p == le)
                break;
            const char *t = p;
            while (p < le && !svm_sep(*p, sep))
                p++;
            double v;
            if (first) {
                if (!io_parse_double(t, p, &v)) {
                    io_fail(e, "%s:%lld: label '%s' is not a number", name, (long long)L.lineno,
                            snippet(t, p, sn, sizeof sn));
                    return NULL;
                }
                first = false;
                continue;
            }
            int64_t idx;
            if (!svm_pair(t, p, indsep, &idx, &v)) {
                io_fail(e, "%s:%lld: expected 'index%svalue', found '%s'", name, (long long)L.lineno, indsep,
                        snippet(t, p, sn, sizeof sn));
                return NULL;
            }
            if (idx < 1 || (cols >= 0 && idx > cols - 1)) {
                io_fail(e, "%s:%lld: feature index %lld out of range 1..%lld", name, (long long)L.lineno,
                        (long long)idx, (long long)(cols >= 0 ? cols - 1 : INT64_MAX - 1));
                return NULL;
            }
            if (idx > maxidx)
                maxidx = idx;
        }
        nrows++;
    }
    if (!dim_agrees(name, "rows", rows, nrows, e))
        return NULL;
    if (cols < 0)
        cols = maxidx + 1;
    if (cols < 1) {
        io_fail(e, "%s: a libsvm matrix needs at least the label column", name);
        return NULL;
    }
    Matrix *m = io_matrix_zero(nrows, cols, name, e);
    if (!m)
        return NULL;
    L = (Lines){buf, buf + len, 0};
    int64_t r = 0;
    while (next_line(&L, &ls, &le)) {
        if (line_is_blank(ls, le))
            continue;
        double *row = m->data + r * cols;
        const char *p = ls;
        bool first = true;
        while (p < le) {
            while (p < le && svm_sep(*p, sep))
                p++;
            if (p == le)
                break;
            const char *t = p;
            while (p < le && !svm_sep(*p, sep))
                p++;
            double v = 0;
            int64_t idx = 0;
            if (first) {
                io_parse_double(t, p, &v);
                row[cols - 1] = v;
                first = false;
            } else {
                svm_pair(t, p, indsep, &idx, &v);
                row[idx - 1] = v;
            }
        }
        r++;
    }
    return m;
}

/* ================================================================
 * Scalars
 * ================================================================ */

bool io_parse_scalar(const char *buf, size_t len, const char *name, const char *value_type, Value *out,
                     IoErr *e)
{
    *out = val_none();
    if (memchr(buf, 0, len))
        return io_fail(e, "%s: contains a NUL byte", name);
    if (strcmp(value_type, "string") == 0) {
        /* The text as written; one final line break (an editor's) is dropped. */
        size_t n = len;
        if (n && buf[n - 1] == '\n')
            n--;
        if (n && buf[n - 1] == '\r')
            n--;
        Str *s = str_new(buf, n);
        if (!s)
            return io_fail(e, "%s: out of memory", name);
        *out = val_str_take(s);
        return true;
    }
    const char *s = buf, *t = buf + len;
    while (s < t && is_space(*s))
        s++;
    while (t > s && is_space(t[-1]))
        t--;
    char sn[64];
    if (s == t)
        return io_fail(e, "%s: the file is empty, expected a %s", name, value_type);
    if (strcmp(value_type, "boolean") == 0) {
        if (tok_is(s, t, "true")) {
            *out = val_bool(true);
            return true;
        }
        if (tok_is(s, t, "false")) {
            *out = val_bool(false);
            return true;
        }
        return io_fail(e, "%s: '%s' is not a boolean", name, snippet(s, t, sn, sizeof sn));
    }
    if (strcmp(value_type, "int") == 0) {
        int64_t i;
        if (!parse_index(s, t, &i))
            return io_fail(e, "%s: '%s' is not an integer", name, snippet(s, t, sn, sizeof sn));
        *out = val_int(i);
        return true;
    }
    if (strcmp(value_type, "double") == 0) {
        double d;
        if (!io_parse_double(s, t, &d))
            return io_fail(e, "%s: '%s' is not a number", name, snippet(s, t, sn, sizeof sn));
        *out = val_double(d);
        return true;
    }
    return io_fail(e, "%s: unknown value type '%s'", name, value_type);
}

/* ================================================================
 * Writers: a chunk buffer in front of the FILE, so each cell costs a few
 * stores instead of a stdio call.
 * ================================================================ */

typedef struct Out {
    FILE *f;
    char *buf;
    size_t n, cap;
    bool ok;
} Out;

static bool out_init(Out *o, FILE *f)
{
    o->f = f;
    o->cap = 1 << 16;
    o->n = 0;
    o->buf = malloc(o->cap);
    o->ok = o->buf != NULL;
    if (!o->ok)
        errno = ENOMEM;
    return o->ok;
}

static void out_flush(Out *o)
{
    if (o->ok && o->n && fwrite(o->buf, 1, o->n, o->f) != o->n)
        o->ok = false;
    o->n = 0;
}

static bool out_done(Out *o)
{
    out_flush(o);
    free(o->buf);
    return o->ok && !ferror(o->f);
}

static void out_put(Out *o, const char *s, size_t n)
{
    if (o->cap - o->n < n) {
        out_flush(o);
        if (n > o->cap) {
            if (o->ok && fwrite(s, 1, n, o->f) != n)
                o->ok = false;
            return;
        }
    }
    memcpy(o->buf + o->n, s, n);
    o->n += n;
}

static void out_str(Out *o, const char *s) { out_put(o, s, strlen(s)); }

static void out_int(Out *o, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof tmp - 1 - n++] = '-';
    out_put(o, tmp + sizeof tmp - n, (size_t)n);
}

static void out_double(Out *o, double d)
{
    /* Integers below 1e7 are what Java prints as "<digits>.0"; they are the
     * bulk of typical data (pixels, labels, counts) and this skips the
     * shortest-digits search. */
    if (d == d && fabs(d) >= 1.0 && fabs(d) < 1e7 && d == (double)(int64_t)d) {
        out_int(o, (int64_t)d);
        out_put(o, ".0", 2);
        return;
    }
    char tmp[40];
    int n = fmt_double_java(d, tmp);
    out_put(o, tmp, (size_t)n);
}

bool io_write_text(FILE *f, const Matrix *m)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    bool any = false;
    for (int64_t i = 0; i < m->rows; i++) {
        const double *row = m->data + i * m->cols;
        for (int64_t j = 0; j < m->cols; j++) {
            if (row[j] == 0.0)
                continue;
            out_int(&o, i + 1);
            out_put(&o, " ", 1);
            out_int(&o, j + 1);
            out_put(&o, " ", 1);
            out_double(&o, row[j]);
            out_put(&o, "\n", 1);
            any = true;
        }
    }
    if (!any)
        out_str(&o, "0 0 0\n");
    return out_done(&o);
}

bool io_write_csv(FILE *f, const Matrix *m, const IoCsvWriteOpts *opt)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    const char *sep = opt->sep ? opt->sep : ",";
    size_t sl = strlen(sep);
    if (opt->header) {
        for (int64_t j = 0; j < m->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            out_put(&o, "C", 1);
            out_int(&o, j + 1);
        }
        out_put(&o, "\n", 1);
    }
    for (int64_t i = 0; i < m->rows; i++) {
        const double *row = m->data + i * m->cols;
        for (int64_t j = 0; j < m->cols; j++) {
            if (j)
                out_put(&o, sep, sl);
            if (row[j] != 0.0)
                out_double(&o, row[j]);
            else if (!opt->sparse)
                out_put(&o, "0", 1);
        }
        out_put(&o, "\n", 1);
    }
    return out_done(&o);
}

bool io_write_mm(FILE *f, const Matrix *m)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    out_str(&o, "%%MatrixMarket matrix coordinate real general\n");
    out_int(&o, m->rows);
    out_put(&o, " ", 1);
    out_int(&o, m->cols);
    out_put(&o, " ", 1);
    out_int(&o, io_nnz(m));
    out_put(&o, "\n", 1);
    for (int64_t i = 0; i < m->rows; i++) {
        const double *row = m->data + i * m->cols;
        for (int64_t j = 0; j < m->cols; j++) {
            if (row[j] == 0.0)
                continue;
            out_int(&o, i + 1);
            out_put(&o, " ", 1);
            out_int(&o, j + 1);
            out_put(&o, " ", 1);
            out_double(&o, row[j]);
            out_put(&o, "\n", 1);
        }
    }
    return out_done(&o);
}

bool io_write_binary(FILE *f, const Matrix *m)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    unsigned char hdr[24];
    memcpy(hdr, BIN_MAGIC, 8);
    store_le64(hdr + 8, (uint64_t)m->rows);
    store_le64(hdr + 16, (uint64_t)m->cols);
    out_put(&o, (const char *)hdr, sizeof hdr);
    int64_t len = m->rows * m->cols;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (len)
        out_put(&o, (const char *)m->data, (size_t)len * 8);
#else
    for (int64_t k = 0; k < len; k++) {
        uint64_t bits;
        unsigned char le[8];
        memcpy(&bits, &m->data[k], 8);
        store_le64(le, bits);
        out_put(&o, (const char *)le, 8);
    }
#endif
    return out_done(&o);
}

bool io_write_libsvm(FILE *f, const Matrix *m)
{
    return io_write_libsvm_sep(f, m, ",", ":");
}

bool io_write_libsvm_sep(FILE *f, const Matrix *m, const char *sep, const char *indsep)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    size_t sl = strlen(sep), il = strlen(indsep);
    for (int64_t i = 0; i < m->rows && m->cols > 0; i++) {
        const double *row = m->data + i * m->cols;
        out_double(&o, row[m->cols - 1]);
        for (int64_t j = 0; j + 1 < m->cols; j++) {
            if (row[j] == 0.0)
                continue;
            out_put(&o, sep, sl);
            out_int(&o, j + 1);
            out_put(&o, indsep, il);
            out_double(&o, row[j]);
        }
        out_put(&o, "\n", 1);
    }
    return out_done(&o);
}

bool io_write_scalar(FILE *f, Value v)
{
    Out o;
    if (!out_init(&o, f))
        return false;
    switch (v.kind) {
    case VAL_BOOL: out_str(&o, v.b ? "TRUE" : "FALSE"); break;
    case VAL_INT: out_int(&o, v.i); break;
    case VAL_DOUBLE: out_double(&o, v.d); break;
    case VAL_STRING: out_put(&o, v.s->s, (size_t)v.s->len); break;
    default: o.ok = false; errno = EINVAL; break;
    }
    return out_done(&o);
}

/* ================================================================
 * Atomic replacement
 * ================================================================ */

/* The process umask, read without changing it: umask(2) both reads and
 * sets, which would race with other threads creating files. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return mask;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Umask:", 6) == 0) {
            mask = (mode_t)strtoul(line + 6, NULL, 8);
            break;
        }
    fclose(f);
    return mask;
}

bool io_tmp_open(const char *path, IoTmp *t, IoErr *e)
{
    char eb[64];
    t->f = NULL;
    t->tmp_path = NULL;
    size_t n = strlen(path);
    char *tmp = malloc(n + 12);
    if (!tmp)
        return io_fail(e, "cannot write '%s': out of memory", path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmpXXXXXX", 11);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int err = errno;
        free(tmp);
        return io_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    /* mkstemp makes the file 0600; give it the mode open(2) would have. */
    (void)fchmod(fd, 0666 & ~current_umask());
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int err = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return io_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    t->f = f;
    t->tmp_path = tmp;
    return true;
}

void io_tmp_abort(IoTmp *t)
{
    if (t->f)
        fclose(t->f);
    if (t->tmp_path) {
        unlink(t->tmp_path);
        free(t->tmp_path);
    }
    t->f = NULL;
    t->tmp_path = NULL;
}

bool io_tmp_close(IoTmp *t, const char *path, IoErr *e)
{
    char eb[64];
    errno = 0;
    bool ok = fflush(t->f) == 0 && !ferror(t->f);
    int err = errno;
    if (fclose(t->f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    t->f = NULL;
    if (!ok) {
        io_tmp_abort(t);
        return io_fail(e, "cannot write '%s': %s", path, io_strerror(err ? err : EIO, eb, sizeof eb));
    }
    return true;
}

bool io_tmp_rename(IoTmp *t, const char *path, IoErr *e)
{
    char eb[64];
    if (rename(t->tmp_path, path) != 0) {
        int err = errno;
        io_tmp_abort(t);
        return io_fail(e, "cannot write '%s': %s", path, io_strerror(err, eb, sizeof eb));
    }
    free(t->tmp_path);
    t->tmp_path = NULL;
    return true;
}

bool io_tmp_commit(IoTmp *t, const char *path, IoErr *e)
{
    return io_tmp_close(t, path, e) && io_tmp_rename(t, path, e);
}
