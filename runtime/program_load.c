/* SPDX-License-Identifier: Apache-2.0
 * The front door of the runtime (program.h, "loading"): a text is parsed
 * (parser/) and then resolved against the Program (resolve.c), for the main
 * script, a REPL chunk or a REPL expression. Apart from both, so that the
 * resolver and the loader never call back up into their caller. */
#include "program.h"

#include <string.h>

#include "../base/arena.h"
#include "../base/diag.h"
#include "../parser/parse.h"
#include "resolve.h"

/* Parses the text the Program keeps as 'file' and resolves its statements
 * into the main module (as a REPL chunk when 'repl'). */
static bool load_into_main(Program *p, const char *file, const char *text, size_t len, bool repl, Node ***stmts,
                           int *n, bool *incomplete, DiagErr *err)
{
    ParseOut po = {0};
    if (!parse_source(p->arena, file, text, len, PARSE_PROGRAM, &po)) {
        if (incomplete)
            *incomplete = po.incomplete;
        *err = po.err;
        return false;
    }
    program_warn_skipped(p, po.skipped, po.nskipped);
    if (!resolve_chunk(p, p->main, po.stmts, po.n, repl, err))
        return false;
    *stmts = po.stmts;
    *n = po.n;
    return true;
}

void program_warn_skipped(const Program *p, const Loc *v, int n)
{
    /* upstream's words (ANTLR's console listener), our position format */
    for (int i = 0; i < n; i++)
        diag_note(&p->sink, DIAG_WARNING,
                  "%s:%d:%d: warning: token recognition error at: '.' (the character is skipped)\n",
                  v[i].file, v[i].line, v[i].col);
}

bool program_load_main(Program *p, const char *path, const char *text, size_t len, Node ***stmts, int *n,
                       DiagErr *err)
{
    const char *file = program_add_text(p, path, text, len);
    if (!file)
        return diag_fail(err, "out of memory");
    p->main->path = file;
    const char *slash = strrchr(path, '/');
    p->main->dir = slash ? arena_strndup(p->arena, path, (size_t)(slash - path)) : ".";
    if (!p->main->dir)
        return diag_fail(err, "out of memory");
    return load_into_main(p, file, text, len, false, stmts, n, NULL, err);
}

bool program_load_chunk(Program *p, const char *name, const char *text, size_t len, Node ***stmts, int *n,
                        bool *incomplete, DiagErr *err)
{
    *incomplete = false;
    const char *file = program_add_text(p, name, text, len);
    if (!file)
        return diag_fail(err, "out of memory");
    return load_into_main(p, file, text, len, true, stmts, n, incomplete, err);
}

bool program_load_expr(Program *p, const char *name, const char *text, size_t len, Node **expr, DiagErr *err)
{
    const char *file = program_add_text(p, name, text, len);
    if (!file)
        return diag_fail(err, "out of memory");
    ParseOut po = {0};
    if (!parse_source(p->arena, file, text, len, PARSE_EXPR, &po)) {
        *err = po.err;
        return false;
    }
    program_warn_skipped(p, po.skipped, po.nskipped);
    if (!resolve_expr(p, p->main, po.expr, err))
        return false;
    *expr = po.expr;
    return true;
}
