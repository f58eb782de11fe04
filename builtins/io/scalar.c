/* SPDX-License-Identifier: Apache-2.0
 * Scalars: the one-value files read() and write() use for scalar values. */
#include "internal.h"

bool io_parse_scalar(const char *buf, size_t len, const char *name, const char *value_type, Value *out,
                     DiagErr *e)
{
    *out = val_none();
    if (memchr(buf, 0, len))
        return diag_fail(e, "%s: contains a NUL byte", name);
    if (strcmp(value_type, "string") == 0) {
        /* The text as written; one final line break (an editor's) is dropped. */
        size_t n = len;
        if (n && buf[n - 1] == '\n')
            n--;
        if (n && buf[n - 1] == '\r')
            n--;
        Str *s = str_new(buf, n);
        if (!s)
            return diag_fail(e, "%s: out of memory", name);
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
        return diag_fail(e, "%s: the file is empty, expected a %s", name, value_type);
    if (strcmp(value_type, "boolean") == 0) {
        if (tok_is(s, t, "true")) {
            *out = val_bool(true);
            return true;
        }
        if (tok_is(s, t, "false")) {
            *out = val_bool(false);
            return true;
        }
        return diag_fail(e, "%s: '%s' is not a boolean", name, io_snippet(s, t, sn, sizeof sn));
    }
    if (strcmp(value_type, "int") == 0) {
        int64_t i;
        if (!io_parse_index(s, t, &i))
            return diag_fail(e, "%s: '%s' is not an integer", name, io_snippet(s, t, sn, sizeof sn));
        *out = val_int(i);
        return true;
    }
    if (strcmp(value_type, "double") == 0) {
        double d;
        if (!io_parse_double(s, t, &d))
            return diag_fail(e, "%s: '%s' is not a number", name, io_snippet(s, t, sn, sizeof sn));
        *out = val_double(d);
        return true;
    }
    return diag_fail(e, "%s: unknown value type '%s'", name, value_type);
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
