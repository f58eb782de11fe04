/* SPDX-License-Identifier: Apache-2.0
 * base/diag.c: how characters are counted, which line is found, where the
 * caret goes (UTF-8, wide characters, tabs, control bytes, long lines), the
 * whole rendered diagnostic, the error record, and the progress sink. */
#include "base/diag.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_chars(void)
{
    int32_t cp;
    CHECK_INT(diag_char("a", 1, &cp), 1);
    CHECK_INT(cp, 'a');
    CHECK_INT(diag_char("\xC3\xA9", 2, &cp), 2);            /* é */
    CHECK_INT(cp, 0xE9);
    CHECK_INT(diag_char("\xE6\x97\xA5", 3, &cp), 3);        /* 日 */
    CHECK_INT(cp, 0x65E5);
    CHECK_INT(diag_char("\xF0\x9F\x98\x80", 4, &cp), 4);    /* U+1F600 */
    CHECK_INT(cp, 0x1F600);
    /* Invalid: one character per byte. */
    CHECK_INT(diag_char("\xC3", 1, &cp), 1);                /* truncated */
    CHECK_INT(cp, -1);
    CHECK_INT(diag_char("\xC3(", 2, &cp), 1);               /* no continuation */
    CHECK_INT(diag_char("\x80", 1, &cp), 1);                /* stray continuation */
    CHECK_INT(cp, -1);
    CHECK_INT(diag_char("\xC0\xAF", 2, &cp), 1);            /* overlong */
    CHECK_INT(diag_char("\xE0\x80\xAF", 3, &cp), 1);        /* overlong */
    CHECK_INT(diag_char("\xED\xA0\x80", 3, &cp), 1);        /* surrogate */
    CHECK_INT(diag_char("\xF4\x90\x80\x80", 4, &cp), 1);    /* beyond U+10FFFF */

    CHECK_INT(diag_cp_width('x'), 1);
    CHECK_INT(diag_cp_width(0xE9), 1);
    CHECK_INT(diag_cp_width(0x0301), 0);     /* combining acute */
    CHECK_INT(diag_cp_width(0x65E5), 2);
    CHECK_INT(diag_cp_width(0xAC00), 2);     /* Hangul */
    CHECK_INT(diag_cp_width(0x1F600), 2);
    CHECK_INT(diag_cp_width(0xFF21), 2);     /* fullwidth A */
}

static void test_lines(void)
{
    const char *t = "\xEF\xBB\xBF" "one\r\ntwo\n\nlast";
    size_t n;
    const char *l = diag_line(t, strlen(t), 1, &n);
    CHECK(l && n == 3 && memcmp(l, "one", 3) == 0);        /* BOM and \r left out */
    l = diag_line(t, strlen(t), 2, &n);
    CHECK(l && n == 3 && memcmp(l, "two", 3) == 0);
    l = diag_line(t, strlen(t), 3, &n);
    CHECK(l && n == 0);
    l = diag_line(t, strlen(t), 4, &n);
    CHECK(l && n == 4 && memcmp(l, "last", 4) == 0);
    CHECK(diag_line(t, strlen(t), 5, &n) == NULL);
    CHECK(diag_line(t, strlen(t), 0, &n) == NULL);
    CHECK(diag_line("", 0, 1, &n) != NULL && n == 0);
}

/* The excerpt of 'line' with the caret under character 'col'. */
static char *excerpt(const char *line, int col)
{
    size_t n = strlen(line);
    size_t len = diag_excerpt(NULL, 0, line, n, col);
    char *s = malloc(len + 1);
    CHECK_INT(diag_excerpt(s, len + 1, line, n, col), len);
    return s;
}

#define CHECK_EXCERPT(line, col, want) do { \
        char *got_ = excerpt(line, col); \
        CHECK_STR(got_, want); \
        free(got_); \
    } while (0)

static void test_carets(void)
{
    CHECK_EXCERPT("x = y", 5, "    x = y\n        ^");
    CHECK_EXCERPT("x = y", 1, "    x = y\n    ^");
    /* A two-byte character is one column: the caret goes under 'y'. */
    CHECK_EXCERPT("x = \"h\xC3\xA9llo w\xC3\xB6rld\" + y", 21,
                  "    x = \"h\xC3\xA9llo w\xC3\xB6rld\" + y\n                        ^");
    /* Wide characters take two terminal columns each. */
    CHECK_EXCERPT("s = \"\xE6\x97\xA5\xE6\x9C\xAC\" + y", 12,
                  "    s = \"\xE6\x97\xA5\xE6\x9C\xAC\" + y\n                 ^");
    /* A combining mark is a character (y is the sixth) but takes no column. */
    CHECK_EXCERPT("e\xCC\x81 = y", 6, "    e\xCC\x81 = y\n        ^");
    /* Tabs are copied into the caret line, so any tab width lines up. */
    CHECK_EXCERPT("\tx\t= ]", 6, "    \tx\t= ]\n    \t \t  ^");
    /* Control bytes and invalid UTF-8 show as one '?' column. */
    CHECK_EXCERPT("a\x01" "b\x80" "c = )", 9, "    a?b?c = )\n            ^");
    /* One past the end (unexpected end of input); never further. */
    CHECK_EXCERPT("f(", 3, "    f(\n      ^");
    CHECK_EXCERPT("f(", 40, "    f(\n      ^");
    CHECK_EXCERPT("", 1, "    \n    ^");
    /* snprintf-style truncation. */
    char small[8];
    CHECK_INT(diag_excerpt(small, sizeof small, "x = y", 5, 5), 19);
    CHECK_STR(small, "    x =");
}

static void test_long_lines(void)
{
    /* 300 columns: "a0 a1 ... " with 'ZZ' near the middle. */
    char line[400];
    size_t n = 0;
    for (int i = 0; n < 150; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "a%d ", i % 10);
    size_t zz = n;
    n += (size_t)snprintf(line + n, sizeof line - n, "ZZ");
    while (n < 300)
        line[n++] = '-';
    line[n] = '\0';
    char *s = excerpt(line, (int)zz + 1);
    /* A window of DIAG_WINDOW columns, cut on both sides... */
    char *nl = strchr(s, '\n');
    CHECK(nl != NULL);
    if (nl) {
        CHECK_INT(nl - s, 4 + 3 + DIAG_WINDOW + 3);
        CHECK(memcmp(s, "    ...", 7) == 0 && memcmp(nl - 3, "...", 3) == 0);
        /* ...with the caret under ZZ. */
        const char *caret = strchr(nl, '^');
        CHECK(caret != NULL && caret - (nl + 1) < nl - s && s[caret - (nl + 1)] == 'Z' &&
              s[caret - (nl + 1) + 1] == 'Z');
        CHECK(strchr(caret, '\n') == NULL);
    }
    free(s);
    /* Near the start: cut at the end only. */
    s = excerpt(line, 2);
    CHECK(memcmp(s, "    a0 a1", 9) == 0);
    CHECK(strstr(s, "...\n    ^") == NULL && strstr(s, "...\n     ^") != NULL);
    free(s);
    /* At the end: cut at the start only, the caret just past the text. */
    s = excerpt(line, 301);
    nl = strchr(s, '\n');
    CHECK(nl && memcmp(s, "    ...", 7) == 0 && nl[-1] == '-' && nl - s == 4 + 3 + DIAG_WINDOW);
    CHECK(nl && (size_t)(strchr(nl, '^') - nl) == (size_t)(nl - s + 1));
    free(s);
    /* Lines up to DIAG_LINE_MAX columns are shown whole. */
    memset(line, 'b', DIAG_LINE_MAX);
    line[DIAG_LINE_MAX] = '\0';
    s = excerpt(line, DIAG_LINE_MAX);
    CHECK(strstr(s, "...") == NULL);
    free(s);
}

static void test_render(void)
{
    char *s = diag_render("f.dml", 2, 5, "undefined variable 'y'", "x = y", 5, true);
    CHECK_STR(s, "f.dml:2:5: undefined variable 'y'\n    x = y\n        ^\n");
    free(s);
    s = diag_render("f.dml", 2, 5, "boom", NULL, 0, true);
    CHECK_STR(s, "f.dml:2:5: boom\n");
    free(s);
    s = diag_render(NULL, 0, 0, "no position", NULL, 0, false);
    CHECK_STR(s, "no position");
    free(s);
    s = diag_render("f.dml", 1, 3, "syntax error: unexpected ')'", "x )", 3, false);
    CHECK_STR(s, "f.dml:1:3: syntax error: unexpected ')'\n    x )\n      ^");
    free(s);
}

static void test_records(void)
{
    DiagErr e;
    CHECK(!diag_fail(&e, "cannot open '%s': %s", "x.csv", "No such file or directory"));
    CHECK_STR(e.msg, "cannot open 'x.csv': No such file or directory");
    CHECK(!e.has_loc);
    Loc at = {.file = "f.dml", .line = 3, .col = 7, .end_line = 3, .end_col = 9};
    CHECK(!diag_fail_at(&e, &at, "unexpected %c", ')'));
    CHECK_STR(e.msg, "unexpected )");
    CHECK(e.has_loc && e.loc.line == 3 && e.loc.col == 7 && strcmp(e.loc.file, "f.dml") == 0);
    CHECK(!diag_fail(&e, "again"));
    CHECK(!e.has_loc && e.loc.file == NULL);
    /* Held in place: a long message is cut, never overflows. */
    char big[2 * DIAG_MSG_MAX];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    diag_fail(&e, "%s", big);
    CHECK_INT(strlen(e.msg), DIAG_MSG_MAX - 1);
}

/* A record is drawn only when shown: its position, the line of the text
 * given for its file, the caret; no position, the message alone; a text
 * without that line, the first line alone. */
static void test_render_records(void)
{
    const char *src = "x = 1\ny = x +\n";
    DiagErr e;
    Loc at = {.file = "f.dml", .line = 2, .col = 8, .end_line = 2, .end_col = 8};
    diag_fail_at(&e, &at, "syntax error: unexpected end of input");
    char *s = diag_render_err(&e, src, strlen(src), true);
    CHECK_STR(s, "f.dml:2:8: syntax error: unexpected end of input\n    y = x +\n           ^\n");
    free(s);
    s = diag_render_err(&e, src, strlen(src), false);
    CHECK_STR(s, "f.dml:2:8: syntax error: unexpected end of input\n    y = x +\n           ^");
    free(s);
    s = diag_render_err(&e, NULL, 0, true);
    CHECK_STR(s, "f.dml:2:8: syntax error: unexpected end of input\n");
    free(s);
    s = diag_render_err(&e, "x = 1", 5, false);
    CHECK_STR(s, "f.dml:2:8: syntax error: unexpected end of input");
    free(s);
    diag_fail(&e, "out of memory");
    s = diag_render_err(&e, src, strlen(src), true);
    CHECK_STR(s, "out of memory\n");
    free(s);
    /* A resolver message past 512 bytes (a call's unknown arguments and
     * every parameter the builtin takes) is kept whole. */
    char big[900];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    diag_fail_at(&e, &at, "%s", big);
    s = diag_render_err(&e, NULL, 0, false);
    CHECK_INT(strlen(s), strlen("f.dml:2:8: ") + sizeof big - 1);
    free(s);
}

typedef struct Captured {
    char text[4096];
    size_t n;
    DiagLevel last;
    int calls;
} Captured;

static void capture(void *ctx, DiagLevel level, const char *text, size_t n)
{
    Captured *c = ctx;
    memcpy(c->text + c->n, text, n);
    c->n += n;
    c->text[c->n] = '\0';
    c->last = level;
    c->calls++;
}

static void test_sink(void)
{
    Captured c = {0};
    DiagSink s = {capture, &c, false};
    diag_note(&s, DIAG_WARNING, "[paramserv] warning: %d of %s\n", 3, "four");
    CHECK_STR(c.text, "[paramserv] warning: 3 of four\n");
    CHECK(c.last == DIAG_WARNING && c.calls == 1);
    /* Longer than the formatter's stack buffer: still whole. */
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    c.n = 0;
    diag_note(&s, DIAG_PROGRESS, "%s\n", big);
    CHECK_INT(c.n, sizeof big);
    CHECK(c.last == DIAG_PROGRESS && c.text[sizeof big - 1] == '\n');
    /* No writer: nothing happens. */
    DiagSink none = {0};
    diag_note(&none, DIAG_WARNING, "dropped\n");
    diag_note(NULL, DIAG_WARNING, "dropped\n");
    CHECK_INT(c.calls, 2);
}

int main(void)
{
    test_chars();
    test_lines();
    test_carets();
    test_long_lines();
    test_render();
    test_records();
    test_render_records();
    test_sink();
    return CHECK_DONE();
}
