/* SPDX-License-Identifier: Apache-2.0
 * Diagnostics, the lowest layer: source positions, how columns are counted,
 * the lines of a source text, the caret display under an error, the error
 * record every layer fills, and the sink through which library code reports
 * progress and warnings instead of printing. It includes nothing of dml's,
 * so the scanner, the parser, the runtime, the builtins and the front ends
 * share one definition of each. No state: every function is thread-safe. */
#ifndef DML_BASE_DIAG_H
#define DML_BASE_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ==== positions ==== */

/* A position in a source file. 'file' points at the Program's copy of the
 * file name (or "<stdin>", "<repl>"). Lines and columns are 1-based; a
 * column counts characters, as diag_char() delimits them: one per UTF-8
 * code point, one per byte that is not part of a valid sequence, one per
 * tab. The scanner and every renderer count the same way. */
typedef struct Loc {
    const char *file;
    int line, col;          /* first character */
    int end_line, end_col;  /* last character (inclusive) */
} Loc;

/* The character starting at s[0] (n > 0 bytes left): returns its length in
 * bytes, 1 to 4. A byte that does not start a valid UTF-8 sequence
 * (overlong, surrogate, truncated, a stray continuation byte) is a
 * character of its own; *cp (when not NULL) gets the code point, or -1 for
 * such a byte. */
size_t diag_char(const char *s, size_t n, int32_t *cp);

/* Columns a terminal gives code point 'cp': 0 for combining marks and
 * zero-width characters, 2 for East Asian wide and emoji, else 1. A fixed
 * table, so the answer does not depend on the locale. */
int diag_cp_width(int32_t cp);

/* ==== source lines and carets ==== */

/* The 'line'-th line (1-based) of text[0..len): its first byte, with *n its
 * length without the '\n' (and without a '\r' before it). A UTF-8 byte
 * order mark at the start of the text is skipped, as the scanner skips it.
 * NULL when the text has fewer lines. */
const char *diag_line(const char *text, size_t len, int line, size_t *n);

/* A source line wider than this many terminal columns is shown as a window
 * of DIAG_WINDOW columns around the caret, with "..." where it was cut. */
#define DIAG_LINE_MAX 120
#define DIAG_WINDOW 100

/* The excerpt under a diagnostic's first line, without a final newline:
 *     <the source line>
 *     <spaces and tabs>^
 * each indented by four spaces. The caret sits under character 'col' of
 * line[0..n) (one past the end at most): the caret line copies the line's
 * tabs and gives every other character its terminal width, so the two line
 * up whatever the tab stops. Control characters and invalid UTF-8 show as
 * '?'. Writes at most cap-1 bytes and a NUL (snprintf-style) and returns the
 * length of the whole excerpt. */
size_t diag_excerpt(char *out, size_t cap, const char *line, size_t n, int col);

/* A whole diagnostic, malloc'd: "file:line:col: msg" (just "msg" when
 * 'file' is NULL), then, when 'src' is not NULL, a newline and the excerpt
 * of src[0..n) with the caret under 'col'; a final '\n' when 'nl'. NULL
 * when memory ran out (the caller falls back to a short first line). */
char *diag_render(const char *file, int line, int col, const char *msg, const char *src, size_t n,
                  bool nl);

/* ==== the error record ==== */

/* An error on its way up from a layer that has no Interp: the scanner and
 * parser, the loader and the resolver, the file-format parsers of
 * read()/write() (builtins/io/), the metadata
 * parser. It holds the message and the position only: the source line and
 * the caret are drawn when it is shown (diag_render_err), from the text the
 * Program keeps for the position's file. The message is held in place, so
 * recording an error allocates nothing (it works when memory has run out)
 * and a record needs no cleanup. The runtime's convention is the Status
 * and the Interp's error slot, which holds the same three things; err_take()
 * (runtime/interp.h) moves a record there in one call. */
/* The resolver's longest messages (a call's unknown arguments listed with
 * every parameter the builtin takes) run past 512 bytes. */
#define DIAG_MSG_MAX 1024
typedef struct DiagErr {
    char msg[DIAG_MSG_MAX];     /* without position; cut at DIAG_MSG_MAX-1 bytes */
    Loc loc;                    /* meaningful when 'has_loc' */
    bool has_loc;
} DiagErr;

/* Records the message (printf-style) and the position (none when 'loc' is
 * NULL). Returns false, so 'return diag_fail(e, ...)' reads naturally in a
 * function that returns bool. */
bool diag_fail(DiagErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool diag_fail_at(DiagErr *e, const Loc *loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool diag_vfail(DiagErr *e, const Loc *loc, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The record as users see it, malloc'd: diag_render of its message at its
 * position, with the excerpt of line e->loc.line of src[0..n) (the text of
 * the file e->loc.file names; none when 'src' is NULL or has no such line),
 * or the message alone when it has no position; a final '\n' when 'nl'.
 * The one renderer of error records: the front ends call it (through
 * program_render_err, runtime/program.h, when the text is a loaded file's).
 * When memory runs out, the first line alone; NULL when not even that fits. */
char *diag_render_err(const DiagErr *e, const char *src, size_t n, bool nl);

/* ==== the sink: progress lines and warnings ==== */

typedef enum DiagLevel {
    DIAG_PROGRESS,          /* one or more whole lines reporting progress */
    DIAG_WARNING,           /* whole lines: a warning the run goes on after */
    DIAG_STATUS,            /* a transient line rewritten in place ("\r\033[K..."): only
                             * sent when the sink's 'rewrite' is set */
    DIAG_ERROR,             /* whole lines: an error that cannot travel up as a Status (MPI
                             * start-up, just before the process aborts) */
} DiagLevel;

/* Where library code sends what a user should see while a run goes on.
 * 'write' gets the text exactly as it is to appear (newlines included) and
 * must be safe to call from any thread. A sink with no 'write' drops
 * everything: library code itself never prints. The front ends install one
 * that writes to stderr (cli/cli.c). */
typedef struct DiagSink {
    void (*write)(void *ctx, DiagLevel level, const char *text, size_t n);
    void *ctx;
    bool rewrite;           /* the destination is a terminal: status lines may be rewritten */
} DiagSink;

/* Formats a message (printf-style) and hands it to the sink; nothing when
 * the sink has no 'write'. */
void diag_note(const DiagSink *s, DiagLevel level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
