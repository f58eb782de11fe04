/* SPDX-License-Identifier: Apache-2.0
 * paramserv argument checking (PARAMSERV.md 2-4, 9): every argument is
 * checked, and every "file::fn" function resolved and its signature
 * verified, before a single thread starts. Messages follow upstream where
 * upstream has one (its negative tests compare the text). */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "params.h"
#include "ps.h"

static const PsParam *const params = ps_params;

/* The PsConfig fields the rows name. */
static void *field(PsConfig *c, int i) { return ps_param_field(c, i); }
static int64_t *field_i64(PsConfig *c, int i) { return field(c, i); }

static const char *type_upper(Value v)
{
    switch (v.kind) {
    case VAL_MATRIX: return "MATRIX";
    case VAL_LIST: return "LIST";
    case VAL_FRAME: return "FRAME";
    default: return "SCALAR";
    }
}

static const char *vtype_upper(Value v)
{
    switch (v.kind) {
    case VAL_INT: return "INT64";
    case VAL_DOUBLE: return "FP64";
    case VAL_BOOL: return "BOOLEAN";
    case VAL_STRING: return "STRING";
    default: return "UNKNOWN";
    }
}

static Status need(Interp *I, const BArgs *a, int i, const char *name, bool is_missing_word)
{
    if (arg_given(a, i))
        return ST_OK;
    if (is_missing_word)
        return err_set(I, "Named parameter '%s' is missing. Please specify the input.", name);
    return err_set(I, "Named parameter '%s' missing. Please specify the input.", name);
}

static Status want_kind(Interp *I, const BArgs *a, int i, const char *name, ValKind k)
{
    Value v = a->v[i];
    if (v.kind == k)
        return ST_OK;
    const char *want = k == VAL_LIST ? "LIST" : "MATRIX";
    return err_set(I, "Input to PARAMSERV::%s must be of type '%s'. It should not be of type '%s'.", name, want,
                   type_upper(v));
}

/* Frames are not supported in paramserv: not in the model (ps_check_model
 * says so), nor anywhere in hyperparams, which the wire codec could not
 * ship to MPI workers. */
static Status no_frames(Interp *I, Value v, const char *name, int depth)
{
    if (v.kind == VAL_FRAME)
        return err_set(I, "frames are not supported in paramserv (found one in '%s')", name);
    if (v.kind == VAL_LIST && depth < 64)
        for (int64_t i = 0; i < v.l->n; i++)
            TRY(no_frames(I, v.l->items[i], name, depth + 1));
    return ST_OK;
}

static Status want_int(Interp *I, const BArgs *a, int i, const char *name, int64_t dflt, int64_t *out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    Value v = a->v[i];
    if (v.kind == VAL_INT) {
        *out = v.i;
        return ST_OK;
    }
    if (v.kind == VAL_DOUBLE && isfinite(v.d) && v.d == floor(v.d)) {
        /* Whole numbers past the int64 range saturate, as upstream's
         * (long) cast does (batchsize=1e300: one batch per worker); the
         * cast itself would be undefined there. */
        *out = v.d >= 0x1p63 ? INT64_MAX : v.d < -0x1p63 ? INT64_MIN : (int64_t)v.d;
        return ST_OK;
    }
    if (v.kind == VAL_STRING) {
        char *end;
        long long x = strtoll(v.s->s, &end, 10);
        if (*v.s->s && !*end) {
            *out = x;
            return ST_OK;
        }
    }
    return err_set(I, "Input to PARAMSERV::%s must be of type 'SCALAR', 'INT64'. It should not be of type '%s', '%s'.",
                   name, type_upper(v), vtype_upper(v));
}

static Status want_string(Interp *I, const BArgs *a, int i, const char *name, const char *dflt, const char **out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    if (a->v[i].kind != VAL_STRING)
        return err_set(I, "Function PARAMSERV should provide a string value for %s parameter.", name);
    *out = a->v[i].s->s;
    return ST_OK;
}

/* Resolve "nsKey::fname": a namespace key registered by a source() statement
 * ("./path.dml", also without "./"), ".defaultNS" for the main script, a
 * source alias visible in the main script, or a bare name (main script). */
static Status resolve_fn(Interp *I, const char *spec, const char *argname, const FuncDef **out)
{
    const Program *p = I->prog;
    const char *sep = strstr(spec, "::");
    const char *fname = sep ? sep + 2 : spec;
    const Module *m = p->main;
    if (sep) {
        size_t kl = (size_t)(sep - spec);
        char *key = strndup(spec, kl);
        m = program_find_module(p, key);
        if (!m)
            m = module_find_alias(p->main, key);
        if (!m && I->frame && I->frame->fn)
            m = module_find_alias(I->frame->fn->mod, key);
        if (!m) {
            Status st = err_set(I, "namespace %s is undefined. (%s=\"%s\": no source() statement registered it)",
                                key, argname, spec);
            free(key);
            return st;
        }
        free(key);
    }
    const FuncDef *f = module_find_func(m, fname);
    if (!f)
        return err_set(I, "function %s (%s=\"%s\") is undefined in namespace %s", fname, argname, spec, m->key);
    *out = f;
    return ST_OK;
}

static const Param *find_param(const FuncDef *f, const char *name)
{
    for (int i = 0; i < f->decl->nparams; i++)
        if (strcmp(f->decl->params[i].name, name) == 0)
            return &f->decl->params[i];
    return NULL;
}

/* Every parameter of 'f' must be one paramserv binds (by name), or have a
 * default; bound ones must have the right data type. */
static Status check_params(Interp *I, const FuncDef *f, const char *spec, const char *const *names,
                           const TypeKind *types, int n, bool have_hyper)
{
    for (int i = 0; i < f->decl->nparams; i++) {
        const Param *p = &f->decl->params[i];
        int j = 0;
        while (j < n && strcmp(names[j], p->name) != 0)
            j++;
        if (j == n || (strcmp(p->name, "hyperparams") == 0 && !have_hyper)) {
            if (p->dflt)
                continue;
            if (j < n)
                return err_set(I, "The '%s' function declares a parameter 'hyperparams' but paramserv() got no "
                               "hyperparams argument.", spec);
            return err_set(I, "The '%s' function has a parameter '%s' that paramserv cannot bind (it binds %s%s%s%s "
                           "by name).", spec, p->name, names[0], n > 1 ? ", " : "", n > 1 ? names[1] : "",
                           n > 2 ? ", ..." : "");
        }
        if (p->type != types[j]) {
            const char *tn = types[j] == TY_LIST ? "LIST" : types[j] == TY_MATRIX ? "MATRIX" : "SCALAR";
            return err_set(I, "The '%s' function should provide an input of '%s' type named '%s'.", spec, tn, p->name);
        }
    }
    return ST_OK;
}

static Status check_upd(Interp *I, const FuncDef *f, const char *spec, bool have_hyper)
{
    static const char *const need_names[] = {"features", "labels", "model"};
    static const TypeKind need_types[] = {TY_MATRIX, TY_MATRIX, TY_LIST};
    for (int i = 0; i < 3; i++) {
        const Param *p = find_param(f, need_names[i]);
        if (!p || p->type != need_types[i])
            return err_set(I, "The '%s' function should provide an input of '%s' type named '%s'.", spec,
                           need_types[i] == TY_LIST ? "LIST" : "MATRIX", need_names[i]);
    }
    static const char *const names[] = {"model", "features", "labels", "hyperparams"};
    static const TypeKind types[] = {TY_LIST, TY_MATRIX, TY_MATRIX, TY_LIST};
    TRY(check_params(I, f, spec, names, types, 4, have_hyper));
    if (f->decl->nouts != 1)
        return err_set(I, "The output of the '%s' function should provide one list containing the gradients.", spec);
    if (f->decl->outs[0].type != TY_LIST)
        return err_set(I, "The output of the '%s' function should be type of list.", spec);
    return ST_OK;
}

static Status check_agg(Interp *I, const FuncDef *f, const char *spec, bool have_hyper)
{
    static const char *const names[] = {"model", "gradients", "hyperparams"};
    static const TypeKind types[] = {TY_LIST, TY_LIST, TY_LIST};
    TRY(check_params(I, f, spec, names, types, 3, have_hyper));
    if (f->decl->nouts != 1)
        return err_set(I, "The output of the '%s' function should provide one list containing the updated model.",
                       spec);
    if (f->decl->outs[0].type != TY_LIST)
        return err_set(I, "The output of the '%s' function should be type of list.", spec);
    return ST_OK;
}

static Status check_val(Interp *I, const FuncDef *f, const char *spec, bool have_hyper)
{
    static const char *const names[] = {"model", "val_features", "val_labels", "hyperparams"};
    static const TypeKind types[] = {TY_LIST, TY_MATRIX, TY_MATRIX, TY_LIST};
    TRY(check_params(I, f, spec, names, types, 4, have_hyper));
    if (f->decl->nouts != 2)
        return err_set(I, "The output of the '%s' function should provide the loss and the accuracy in that order",
                       spec);
    if (f->decl->outs[0].type != TY_SCALAR || f->decl->outs[1].type != TY_SCALAR)
        return err_set(I, "The outputs of the '%s' function should both be scalars", spec);
    return ST_OK;
}

/* A boolean option: TRUE/FALSE, or the text "true"/"false" in any case (what
 * -nvargs modelAvg=true passes; upstream reads the option as text). Anything
 * else, 0 and 1 and "yes" included, is a type error rather than a silent
 * FALSE. */
static Status want_bool(Interp *I, const BArgs *a, int i, const char *name, bool dflt, bool *out)
{
    if (!arg_given(a, i)) {
        *out = dflt;
        return ST_OK;
    }
    Value v = a->v[i];
    if (v.kind == VAL_BOOL) {
        *out = v.b;
        return ST_OK;
    }
    if (v.kind == VAL_STRING && (strcasecmp(v.s->s, "true") == 0 || strcasecmp(v.s->s, "false") == 0)) {
        *out = strcasecmp(v.s->s, "true") == 0;
        return ST_OK;
    }
    return err_set(I, "Input to PARAMSERV::%s must be of type 'SCALAR', 'BOOLEAN'. It should not be of type '%s', "
                   "'%s'.", name, type_upper(v), vtype_upper(v));
}

/* Validation needs all three of val, val_features and val_labels. Upstream
 * silently skips it when one is missing; a half-given set is almost always a
 * typo, so it is an error naming what is missing. val_features and
 * val_labels without val stay legal (upstream's LeNet test passes them so). */
static Status check_val_args(Interp *I, const BArgs *a)
{
    bool f = arg_given(a, PS_A_VAL_FEATURES), l = arg_given(a, PS_A_VAL_LABELS), v = arg_given(a, PS_A_VAL);
    const char *missing, *given;
    if (f && !l)
        missing = "parameter 'val_labels'", given = "val_features";
    else if (l && !f)
        missing = "parameter 'val_features'", given = "val_labels";
    else if (v && !f)
        missing = "parameters 'val_features' and 'val_labels'", given = "val";
    else
        return ST_OK;
    return err_set(I, "Named %s missing. Please specify the input. (paramserv got %s=, and validation needs val, "
                   "val_features and val_labels together)", missing, given);
}

/* What upstream checks when it compiles the call: presence, then the
 * kinds of the data, the function names, the integers it types, the
 * booleans and the option strings (params.h). 'str' gets each string
 * option as given (NULL when not). */
static Status read_kinds(Interp *I, const BArgs *a, PsConfig *c, const char **str)
{
    /* Each argument's presence and then its data type, in the table's
     * order, as upstream checks them: a model given as a matrix is named
     * before a missing features= or upd=. */
    for (int i = 0; i < PS_NPARAMS; i++) {
        int kind = params[i].kind;
        if (params[i].need)
            TRY(need(I, a, i, params[i].name, params[i].need == 2));
        if ((kind != PK_LIST && kind != PK_MATRIX) || !arg_given(a, i))
            continue;
        TRY(want_kind(I, a, i, params[i].name, kind == PK_LIST ? VAL_LIST : VAL_MATRIX));
        if (kind == PK_LIST) {
            *(List **)field(c, i) = a->v[i].l;
            /* No frames anywhere in a list (the model's check says so for
             * the model): the wire codec could not ship them. */
            if (i != PS_A_MODEL)
                TRY(no_frames(I, a->v[i], params[i].name, 0));
        } else {
            *(Matrix **)field(c, i) = a->v[i].m;
        }
    }
    for (int i = 0; i < PS_NPARAMS; i++)
        if (params[i].kind == PK_FUNC)
            TRY(want_string(I, a, i, params[i].name, NULL, (const char **)field(c, i)));
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < PS_NPARAMS; i++) {
        if (params[i].kind == PK_INT) {
            /* k's default: one worker per core. */
            int64_t dflt = i == PS_A_K ? (ncores > 0 ? ncores : 1) : params[i].dint;
            TRY(want_int(I, a, i, params[i].name, dflt, field_i64(c, i)));
        } else if (params[i].kind == PK_SEED) {
            int64_t seed;
            TRY(want_int(I, a, i, params[i].name, params[i].dint, &seed));
            c->seed_given = seed >= 0;
            *(uint64_t *)field(c, i) = seed >= 0 ? (uint64_t)seed : rng_next(&I->rng);
        }
    }
    for (int i = 0; i < PS_NPARAMS; i++)
        if (params[i].kind == PK_BOOL)
            TRY(want_bool(I, a, i, params[i].name, params[i].dint != 0, (bool *)field(c, i)));
    for (int i = 0; i < PS_NPARAMS; i++) {
        int kind = params[i].kind;
        if (kind == PK_MODE || kind == PK_ENUM || kind == PK_STR)
            TRY(want_string(I, a, i, params[i].name, kind == PK_STR ? params[i].dstr : NULL, &str[i]));
        if (kind == PK_MODE || kind == PK_STR)
            *(const char **)field(c, i) = str[i];
    }
    return ST_OK;
}

/* Then what it checks when the call runs: the option values, and the
 * integers' ranges in row order. */
static Status check_values(Interp *I, const BArgs *a, PsConfig *c, const char **str)
{
    TRY(ps_pick_transport(I, c->mode, &c->tp));
    /* Without k=, as many workers as the transport has: every worker rank
     * under mpirun (N-1), else one per core (read_kinds). */
    if (!arg_given(a, PS_A_K) && c->tp->default_k)
        c->k = c->tp->default_k();
    for (int i = 0; i < PS_NPARAMS; i++) {
        if (params[i].kind != PK_ENUM)
            continue;
        int v = str[i] ? ps_enum_index(params[i].dstr, str[i]) : (int)params[i].dint;
        if (v < 0)
            return err_set(I, params[i].msg, str[i]);
        *(int *)field(c, i) = v;
    }
    for (int i = 0; i < PS_NPARAMS; i++) {
        const PsParam *p = &params[i];
        if (p->kind == PK_INT_LATE)
            TRY(want_int(I, a, i, p->name, p->dint, field_i64(c, i)));
        else if (p->kind != PK_INT)
            continue;
        int64_t v = *field_i64(c, i);
        if (p->lo <= p->hi && (v < p->lo || v > p->hi))
            return err_set(I, p->msg, (long long)v);
        if (i == PS_A_K && c->tp->check)
            TRY(c->tp->check(I, c));
        if (i == PS_A_BACKUP && c->utype == PS_UTYPE_SBP && (c->backup < 0 || c->backup >= c->k))
            return err_set(I, "Invalid number of backup workers (with #workers=%lld): #backup-workers=%lld",
                           (long long)c->k, (long long)c->backup);
    }
    if (c->model_avg && c->utype == PS_UTYPE_ASP)
        return err_set(I, "Aggregation or validation service failed: modelAvg is not supported with utype ASP "
                       "(use BSP, SBP or SSP)");
    for (int i = 0; i < PS_NPARAMS; i++)
        if (params[i].kind == PK_FED && arg_given(a, i))
            return err_set(I, "paramserv: the federated-only arguments runtime_balancing, weighting and he are not "
                           "supported in LOCAL mode");
    return ST_OK;
}

/* The data and the model's contents are looked at last: upstream first
 * parses every option and resolves the functions, and only meets the model
 * when it copies it to the workers, so its negative tests (a model that is a
 * list of strings, say, with a bad utype) expect the option's message. */
static Status check_data(Interp *I, PsConfig *c)
{
    /* Upstream's copy of the model refuses only nested lists and frames; a
     * string or other scalar entry goes through to the functions. */
    for (int64_t i = 0; i < c->model->n; i++) {
        ValKind k = c->model->items[i].kind;
        if (k == VAL_LIST || k == VAL_FRAME)
            return err_set(I, "Copy list: does not support list or frame. (model entry %lld is a %s)",
                           (long long)i + 1, val_kind_name(k));
    }
    if (c->model->n == 0)
        return err_set(I, "paramserv: the model list is empty");
    if (c->X->rows != c->Y->rows)
        return err_set(I, "paramserv: features has %lld rows but labels has %lld", (long long)c->X->rows,
                       (long long)c->Y->rows);
    if (c->Xv && c->Yv && c->Xv->rows != c->Yv->rows)
        return err_set(I, "paramserv: val_features has %lld rows but val_labels has %lld", (long long)c->Xv->rows,
                       (long long)c->Yv->rows);
    /* A batch or a group of batches never exceeds the rows of the data (no
     * partition has more), so larger values are the same as the row count,
     * and batch arithmetic can no longer overflow (batchsize=2^63-1). */
    int64_t n = c->X->rows > 0 ? c->X->rows : 1;
    if (c->batchsize > n)
        c->batchsize = n;
    if (c->nbatches > n)
        c->nbatches = n;
    return ST_OK;
}

/* DML_PS_SLOW=W:F (doc/environment.md): worker W (1-based) sleeps F - 1
 * times each batch's compute time, so it takes F times as long. */
static Status parse_slow(Interp *I, PsConfig *c)
{
    c->slow_worker = -1;
    c->slow_factor = 1;
    const char *env = getenv("DML_PS_SLOW");
    if (!env || !*env)
        return ST_OK;
    char *end = NULL;
    long long w = isdigit((unsigned char)env[0]) ? strtoll(env, &end, 10) : 0;
    double f = 0;
    bool ok = end && *end == ':' && isdigit((unsigned char)end[1]);
    if (ok) {
        const char *fs = end + 1;
        f = strtod(fs, &end);
        ok = *end == '\0' && isfinite(f) && f >= 1;
    }
    if (!ok || w < 1)
        return err_set(I, "DML_PS_SLOW='%s': expected W:F, a worker number W (1 to k) and a factor F >= 1 (worker W "
                       "then takes F times as long per batch)", env);
    if (w > c->k)
        return err_set(I, "DML_PS_SLOW='%s' names worker %lld, but this paramserv call has only k=%lld workers", env,
                       w, (long long)c->k);
    c->slow_worker = w - 1;
    c->slow_factor = f;
    return ST_OK;
}

Status ps_config(Interp *I, const BArgs *a, PsConfig *c)
{
    memset(c, 0, sizeof *c);
    bool any = false;
    for (int i = 0; i < a->n; i++)
        any = any || arg_given(a, i);
    if (!any)
        return err_set(I, "Should provide more arguments for function PARAMSERV");
    const char *str[PS_NPARAMS] = {0};
    TRY(read_kinds(I, a, c, str));
    TRY(check_values(I, a, c, str));
    TRY(parse_slow(I, c));
    c->trace = ps_trace_on();
    TRY(check_val_args(I, a));

    /* Then the functions, and last the data. */
    /* Every function is found before any signature is looked at (upstream
     * names a namespace never sourced first). */
    bool hyper = c->hyper != NULL;
    TRY(resolve_fn(I, c->upd_spec, "upd", &c->upd));
    TRY(resolve_fn(I, c->agg_spec, "agg", &c->agg));
    if (c->val_spec)
        TRY(resolve_fn(I, c->val_spec, "val", &c->val));
    TRY(check_upd(I, c->upd, c->upd_spec, hyper));
    TRY(check_agg(I, c->agg, c->agg_spec, hyper));
    if (c->val_spec)
        TRY(check_val(I, c->val, c->val_spec, hyper));
    TRY(check_data(I, c));
    TRY(ps_servers_check(I, c, arg_given(a, PS_A_K)));
    if (!c->val && c->Xv && c->verbose)
        diag_note(&I->sink, DIAG_WARNING, "[paramserv] warning: val_features and val_labels are given but no val "
                  "function: no validation\n");
    return ST_OK;
}

void ps_config_free(PsConfig *c)
{
    free(c->ckpt_sig);
    c->ckpt_sig = NULL;
    ps_record_free(c->rec);
    c->rec = NULL;
}

Status ps_check_agg_result(Interp *I, const PsConfig *c, const List *model, Value result)
{
    const char *fn = c->agg_spec ? c->agg_spec : c->agg->name;
    if (result.kind != VAL_LIST)
        return err_set(I, "The output of the '%s' function should be type of list.", fn);
    const List *r = result.l;
    if (r->n != model->n)
        return err_set(I, "agg function '%s' returned a list of length %lld for a model of %lld matrices",
                       fn, (long long)r->n, (long long)model->n);
    for (int64_t i = 0; i < r->n; i++) {
        if (model->items[i].kind != VAL_MATRIX) {
            /* A scalar in the model (upstream allows them): a scalar back. */
            ValKind k = r->items[i].kind;
            if (k == VAL_MATRIX || k == VAL_LIST || k == VAL_FRAME)
                return err_set(I, "agg function '%s' returned a %s as model entry %lld, which is a %s", fn,
                               val_kind_name(k), (long long)i + 1, val_kind_name(model->items[i].kind));
            continue;
        }
        const Matrix *want = model->items[i].m;
        if (r->items[i].kind != VAL_MATRIX)
            return err_set(I, "agg function '%s' returned a %s as model entry %lld, which is a "
                           "%lldx%lld matrix", fn, val_kind_name(r->items[i].kind), (long long)i + 1,
                           (long long)want->rows, (long long)want->cols);
        const Matrix *got = r->items[i].m;
        if (got->rows != want->rows || got->cols != want->cols)
            return err_set(I, "agg function '%s' returned a %lldx%lld matrix as model entry %lld, "
                           "which is %lldx%lld", fn, (long long)got->rows, (long long)got->cols,
                           (long long)i + 1, (long long)want->rows, (long long)want->cols);
    }
    return ST_OK;
}
