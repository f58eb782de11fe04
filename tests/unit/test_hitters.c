/* SPDX-License-Identifier: Apache-2.0
 * Unit tests of --stats (runtime/hitters.c, the matrix byte counters of
 * base/value.c, the CLI): the heavy-hitter table's exact layout on
 * made-up times, exact counts from several threads, a full table, the peak
 * matrix memory, and `dml run --stats N` on tests/stats/heavy_hitters.dml,
 * whose call counts are known (times are never asserted). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "runtime/hitters.h"
#include "base/value.h"

static void test_layout(void)
{
    static const char alpha[] = "alpha", b[] = "b", longer[] = "conv2d_backward_filter";
    Hitters *h = hitters_new();
    hitters_add(h, alpha, 2500000000u);
    hitters_add(h, alpha, 2500000000u);
    hitters_add(h, b, 1);
    StrBuf sb;
    sb_init(&sb);
    hitters_report(h, 10, &sb);
    CHECK(sb.p && strcmp(sb.p, "Heavy hitter instructions:\n"
                               " #  Instruction  Time(s)  Count\n"
                               " 1  alpha          5.000      2\n"
                               " 2  b              0.000      1\n") == 0);
    sb_free(&sb);

    /* Columns widen for long names and big counts; top cuts the list. */
    for (int i = 0; i < 123456; i++)
        hitters_add(h, longer, 100000);
    sb_init(&sb);
    hitters_report(h, 1, &sb);
    CHECK(sb.p && strcmp(sb.p, "Heavy hitter instructions:\n"
                               " #  Instruction             Time(s)   Count\n"
                               " 1  conv2d_backward_filter   12.346  123456\n") == 0);
    sb_free(&sb);
    hitters_free(h);
}

typedef struct Job {
    Hitters *h;
    const char *const *names;
} Job;

static void *adder(void *arg)
{
    Job *j = arg;
    for (int i = 0; i < 20000; i++)
        hitters_add(j->h, j->names[i % 3], 1000);
    return NULL;
}

/* Four threads, three names: every call is counted. */
static void test_threads(void)
{
    static const char *const names[3] = {"x", "y", "z"};
    Hitters *h = hitters_new();
    pthread_t t[4];
    Job j = {h, names};
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, adder, &j);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    StrBuf sb;
    sb_init(&sb);
    hitters_report(h, 10, &sb);
    /* Each thread: 6667 x, 6667 y, 6666 z, 1000 ns each. */
    CHECK(strstr(sb.p, " 1  x              0.027  26668\n") != NULL);
    CHECK(strstr(sb.p, " 2  y              0.027  26668\n") != NULL);
    CHECK(strstr(sb.p, " 3  z              0.027  26664\n") != NULL);
    sb_free(&sb);
    hitters_free(h);
}

/* More names than slots: the rest are summed as "(other)". */
static void test_full(void)
{
    enum { N = 1100 };
    static char names[N][8];
    Hitters *h = hitters_new();
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        hitters_add(h, names[i], 1);
    }
    hitters_add(h, names[0], 1000000000u);
    StrBuf sb;
    sb_init(&sb);
    hitters_report(h, 2, &sb);
    CHECK(strstr(sb.p, " 1  n0 ") != NULL);
    CHECK(strstr(sb.p, " 2  (other) ") && strstr(sb.p, "     76\n"));
    sb_free(&sb);
    hitters_free(h);
}

static void test_peak_memory(void)
{
    uint64_t live0, peak0, live1, peak1, live2, peak2;
    mat_mem_track(true);
    mat_mem_stats(&live0, &peak0);
    Matrix *m = mat_new_raw(100, 100);
    mat_mem_stats(&live1, &peak1);
    CHECK(live1 == live0 + 80000);
    CHECK(peak1 >= live1);
    mat_release(m);
    mat_mem_stats(&live2, &peak2);
    CHECK(live2 == live0);
    CHECK(peak2 == peak1);      /* the peak stays */
}

/* The row of 'name' in the table text: its count, or -1. Checks that the
 * time column is a number with three decimals. */
static long row_count(const char *text, const char *name)
{
    char pat[64];
    snprintf(pat, sizeof pat, "  %s ", name);
    const char *p = strstr(text, "Heavy hitter instructions:");
    if (!p || !(p = strstr(p, pat)))
        return -1;
    p += strlen(pat);
    double t;
    long c;
    int used = 0;
    if (sscanf(p, " %lf %ld%n", &t, &c, &used) != 2)
        return -1;
    const char *dot = strchr(p, '.');
    if (!dot || dot > p + used || strspn(dot + 1, "0123456789") != 3)
        return -1;
    return c;
}

static void test_cli(void)
{
    const char *dml = getenv("DML");
    if (!dml || !*dml)
        dml = "build/release/dml";
    if (access(dml, X_OK) != 0 || access("tests/stats/heavy_hitters.dml", R_OK) != 0) {
        fprintf(stderr, "test_cli: no %s or no tests/stats (run from the repository root)\n", dml);
        CHECK(0);
        return;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' run tests/stats/heavy_hitters.dml --stats 100", dml);
    FILE *f = popen(cmd, "r");
    static char out[65536];
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    CHECK(f && pclose(f) == 0);
    CHECK(strncmp(out, "SystemDS Statistics:\n", 21) == 0);
    const char *peak = strstr(out, "Peak matrix memory:\t\t");
    CHECK(peak && atof(peak + 21) > 0);
    CHECK(strstr(out, "Heavy hitter instructions:\n #  Instruction  Time(s)  Count\n") != NULL);
    CHECK_INT(row_count(out, "%*%"), 5);
    CHECK_INT(row_count(out, "sum"), 11);
    CHECK_INT(row_count(out, "rowSums"), 4);    /* on parfor's worker threads */
    CHECK_INT(row_count(out, "u-"), 1);
    CHECK_INT(row_count(out, "assert"), 3);
    CHECK_INT(row_count(out, "print"), -1);
    /* Ranks 1..6, nothing after the table. */
    const char *t = strstr(out, "Count\n");
    int rows = 0;
    for (const char *p = t ? t + 6 : ""; *p; p = strchr(p, '\n') + 1) {
        int rank = 0;
        CHECK(sscanf(p, " %d ", &rank) == 1 && rank == rows + 1);
        rows++;
        if (!strchr(p, '\n'))
            break;
    }
    CHECK_INT(rows, 6);

    /* --stats 2: two rows; plain --stats keeps the other lines. */
    snprintf(cmd, sizeof cmd, "'%s' run tests/stats/heavy_hitters.dml --stats 2", dml);
    f = popen(cmd, "r");
    n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    CHECK(f && pclose(f) == 0);
    t = strstr(out, "Count\n");
    CHECK(t && strstr(t, "\n 1  ") && strstr(t, "\n 2  ") && !strstr(t, "\n 3  "));
    CHECK(strstr(out, "Total execution time:") != NULL);
}

int main(void)
{
    test_layout();
    test_threads();
    test_full();
    test_peak_memory();
    test_cli();
    return CHECK_DONE();
}
