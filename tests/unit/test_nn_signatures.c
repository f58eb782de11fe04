/* SPDX-License-Identifier: Apache-2.0
 * The nn library's interfaces against upstream's (issue 30): every function
 * of stdlib/nn that upstream's scripts/nn also defines must take the same
 * parameters (names, order, types, defaults) and return the same outputs
 * (names, order, types), so that a script written for upstream's layers
 * runs on ours. The table below holds upstream's signatures, a fact per
 * line; the test parses our files (run from the repository root, as
 * tests/run.sh does) and compares. Functions of ours that upstream lacks are
 * not listed and not checked. DML_NN_DUMP=1 prints our signatures in the
 * table's notation instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parser/parse.h"
#include "runtime/loader.h"

typedef struct Sig {
    const char *file;       /* under stdlib/nn/ */
    const char *func;
    const char *params;     /* "type name[=default], ..." */
    const char *outs;       /* "type name, ..." */
} Sig;

#include "nn_signatures.h"

/* ---- rendering our declarations in the table's notation ---- */

typedef struct Buf { char s[4096]; size_t n; } Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        b->n += (size_t)k < sizeof b->s - b->n ? (size_t)k : sizeof b->s - b->n - 1;
}

static const char *type_name(const Param *p)
{
    switch (p->type) {
    case TY_MATRIX: return "matrix";
    case TY_FRAME: return "frame";
    case TY_LIST: return "list";
    case TY_SCALAR: break;
    }
    switch (p->vtype) {
    case SCALAR_INT: return "int";
    case SCALAR_DOUBLE: return "double";
    case SCALAR_BOOLEAN: return "boolean";
    case SCALAR_STRING: return "string";
    case SCALAR_UNKNOWN: break;
    }
    return "scalar";
}

/* A default is a literal, possibly negated; anything else renders as "?". */
static void put_default(Buf *b, const Node *e)
{
    if (!e) {
        put(b, "?");
        return;
    }
    switch (e->kind) {
    case N_INT: put(b, "%lld", (long long)e->lit.i); break;
    case N_DOUBLE: put(b, "%.17g", e->lit.d); break;
    case N_BOOL: put(b, "%s", e->lit.b ? "TRUE" : "FALSE"); break;
    case N_STRING: put(b, "\"%.*s\"", (int)e->str.len, e->str.s); break;
    case N_UNARY:
        if (e->unary.op == UOP_NEG) {
            put(b, "-");
            put_default(b, e->unary.operand);
            break;
        }
        put(b, "?");
        break;
    default: put(b, "?"); break;
    }
}

static void put_params(Buf *b, const Param *ps, int n, bool defaults)
{
    for (int i = 0; i < n; i++) {
        put(b, "%s%s %s", i ? ", " : "", type_name(&ps[i]), ps[i].name);
        if (defaults && ps[i].dflt) {
            put(b, "=");
            put_default(b, ps[i].dflt);
        }
    }
}

typedef struct Parsed {
    const char *file;
    Arena *arena;
    ParseOut out;
    bool ok;
} Parsed;

static bool parse_file(Parsed *p, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "stdlib/nn/%s", file);
    size_t len = 0;
    char *text = loader_read_file(path, &len, NULL);
    p->file = file;
    p->arena = arena_new();
    memset(&p->out, 0, sizeof p->out);
    p->ok = text && p->arena && parse_source(p->arena, path, text, len, PARSE_PROGRAM, &p->out);
    if (!p->ok && text)
        fprintf(stderr, "%s: %s\n", path, p->out.err.msg);
    free(text);
    return p->ok;
}

static const FuncDecl *find_func(const Parsed *p, const char *name)
{
    for (int i = 0; i < p->out.n; i++) {
        const Node *s = p->out.stmts[i];
        if (s->kind == N_FUNCDEF && strcmp(s->func->name, name) == 0)
            return s->func;
    }
    return NULL;
}

int main(void)
{
    size_t nsig = sizeof nn_upstream / sizeof nn_upstream[0];
    bool dump = getenv("DML_NN_DUMP") != NULL;
    Parsed cur = {0};
    for (size_t i = 0; i < nsig; i++) {
        const Sig *sg = &nn_upstream[i];
        if (!cur.file || strcmp(cur.file, sg->file) != 0) {
            if (cur.arena)
                arena_free(cur.arena);
            if (!check_report_(parse_file(&cur, sg->file), __FILE__, __LINE__,
                               "stdlib/nn/%s parses", sg->file)) {
                continue;
            }
        }
        if (!cur.ok)
            continue;
        const FuncDecl *fd = find_func(&cur, sg->func);
        if (!check_report_(fd != NULL, __FILE__, __LINE__, "%s defines %s (upstream has it)",
                           sg->file, sg->func))
            continue;
        Buf ps = {{0}, 0}, os = {{0}, 0};
        put_params(&ps, fd->params, fd->nparams, true);
        put_params(&os, fd->outs, fd->nouts, false);
        if (dump)
            printf("    {\"%s\", \"%s\",\n     \"%s\",\n     \"%s\"},\n", sg->file, sg->func, ps.s, os.s);
        check_report_(strcmp(ps.s, sg->params) == 0, __FILE__, __LINE__,
                      "%s %s: parameters\n  ours:     (%s)\n  upstream: (%s)", sg->file, sg->func,
                      ps.s, sg->params);
        check_report_(strcmp(os.s, sg->outs) == 0, __FILE__, __LINE__,
                      "%s %s: outputs\n  ours:     (%s)\n  upstream: (%s)", sg->file, sg->func,
                      os.s, sg->outs);
    }
    if (cur.arena)
        arena_free(cur.arena);
    return CHECK_DONE();
}
