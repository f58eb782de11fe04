/* SPDX-License-Identifier: Apache-2.0
 * The table of paramserv's parameters (params.h) and what is derived from
 * it outside the argument checks (args.c): the options a CALL of the Open
 * MPI transport carries, and the checks a worker rank applies to them. */
#include <stddef.h>
#include <string.h>

#include "params.h"
#include "ps.h"
#include "wire.h"

#define PS_X_ROW(ID, name, kind, need, field, dint, dstr, lo, hi, msg, wire) \
    {name, kind, need, offsetof(PsConfig, field), dint, dstr, lo, hi, msg, wire},
const PsParam ps_params[PS_NPARAMS] = {PS_PARAMS(PS_X_ROW)};
#undef PS_X_ROW

/* The enum fields of PsConfig are stored through an int. */
_Static_assert(sizeof(PsUtype) == sizeof(int) && sizeof(PsFreq) == sizeof(int) && sizeof(PsScheme) == sizeof(int) &&
               sizeof(PsCkpt) == sizeof(int) && sizeof(PsDispatch) == sizeof(int), "paramserv enums are ints");

void *ps_param_field(PsConfig *c, int i)
{
    return (char *)c + ps_params[i].off;
}

static const void *cfield(const PsConfig *c, int i)
{
    return (const char *)c + ps_params[i].off;
}

int ps_enum_index(const char *names, const char *s)
{
    size_t n = strlen(s);
    int i = 0;
    for (const char *p = names; *p; i++) {
        const char *bar = strchr(p, '|');
        if ((size_t)(bar - p) == n && strncmp(p, s, n) == 0)
            return i;
        p = bar + 1;
    }
    return -1;
}

static int enum_count(const char *names)
{
    int n = 0;
    for (; *names; names++)
        n += *names == '|';
    return n;
}

void ps_options_xfer(WIO *x, PsConfig *c)
{
    for (int i = 0; i < PS_NPARAMS; i++) {
        if (!ps_params[i].wire)
            continue;
        switch (ps_params[i].kind) {
        case PK_ENUM: {
            int64_t v = *(int *)ps_param_field(c, i);
            wio_i64(x, &v);
            *(int *)ps_param_field(c, i) = (int)(v >= INT32_MIN && v <= INT32_MAX ? v : -1);
            break;
        }
        case PK_BOOL: {
            int64_t v = *(bool *)ps_param_field(c, i);
            wio_i64(x, &v);
            *(bool *)ps_param_field(c, i) = v != 0;
            break;
        }
        case PK_SEED: wio_u64(x, (uint64_t *)ps_param_field(c, i)); break;
        default: wio_i64(x, (int64_t *)ps_param_field(c, i)); break;
        }
    }
}

bool ps_options_valid(const PsConfig *c)
{
    for (int i = 0; i < PS_NPARAMS; i++) {
        const PsParam *p = &ps_params[i];
        if (!p->wire)
            continue;
        if (p->kind == PK_ENUM) {
            int v = *(const int *)cfield(c, i);
            if (v < 0 || v >= enum_count(p->dstr))
                return false;
        } else if ((p->kind == PK_INT || p->kind == PK_INT_LATE) && p->lo <= p->hi) {
            int64_t v = *(const int64_t *)cfield(c, i);
            if (v < p->lo || v > p->hi)
                return false;
        }
    }
    return true;
}

