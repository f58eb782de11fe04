/* SPDX-License-Identifier: Apache-2.0
 * Deep structures made by data rather than by nesting in the source text:
 * each must end as a DML error with a position or run to completion, never
 * overflow the C stack (issue 10). The programs are generated here because
 * they are hundreds of kilobytes long. Each test names what it guards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/registry.h"
#include "check.h"
#include "run_src.h"

/* Runs 'src' as a whole program; returns NULL when it ran without error,
 * else the malloc'd diagnostic (load error or runtime error). */
static char *run_program(const char *src)
{
    char *msg;
    run_src(&(RunOpts){.name = "deep.dml"}, src, strlen(src), &msg);
    return msg;
}

/* prefix, then 'count' copies of 'unit', then suffix. */
static char *repeat(const char *prefix, const char *unit, long count, const char *suffix)
{
    size_t np = strlen(prefix), nu = strlen(unit), ns = strlen(suffix);
    char *s = malloc(np + nu * (size_t)count + ns + 1);
    if (!s)
        abort();
    memcpy(s, prefix, np);
    for (long i = 0; i < count; i++)
        memcpy(s + np + nu * (size_t)i, unit, nu);
    memcpy(s + np + nu * (size_t)count, suffix, ns + 1);
    return s;
}

static void expect_nesting_error(const char *what, char *src)
{
    char *err = run_program(src);
    check_report_(err && strstr(err, "nested too deeply") && strstr(err, "deep.dml:"), __FILE__, __LINE__,
                  "%s: want a positioned 'nested too deeply' error, got %s", what, err ? err : "success");
    free(err);
    free(src);
}

/* X[1][1]...[1], 10^5 long: the evaluator recursed once per index with no
 * stack check and crashed. */
static void test_index_chain_1e5(void)
{
    expect_nesting_error("index chain",
                         repeat("X = list(list(1))\ny = X", "[1]", 100000, "\nprint(toString(y))\n"));
}

/* 1+1+...+1 with 3*10^5 terms: bison reads it with a flat stack, and the
 * resolver then recursed once per operator and crashed. */
static void test_plus_chain_3e5(void)
{
    expect_nesting_error("plus chain", repeat("x = 1", "+1", 300000, "\nprint(x)\n"));
}

/* The same chain as a loop bound and as a call argument (other entries
 * into the resolver and the evaluator). */
static void test_chain_in_other_places(void)
{
    expect_nesting_error("chain in for", repeat("for (i in 1:(1", "+1", 300000, ")) print(i)\n"));
    expect_nesting_error("chain in call", repeat("print(-1", "-1", 300000, ")\n"));
}

/* A short chain still evaluates (the guard is about depth, not length). */
static void test_short_chain_runs(void)
{
    char *src = repeat("x = 0", "+1", 2000, "\nif (x != 2000) stop(\"wrong sum\")\n");
    char *err = run_program(src);
    CHECK(err == NULL);
    free(err);
    free(src);
}

/* L = list(L) 10^6 times: freeing it recursed once per level (L = 0 and
 * the end of the program crashed), and so did toString(). Copies (a left
 * index on a shared list, append, a list holding it) share the nesting and
 * are freed the same way. */
static void test_list_nested_1e6(void)
{
    char *err = run_program("L = list()\n"
                            "for (i in 1:1000000) L = list(L, i)\n"
                            "s = toString(L)\n"
                            "M = L\n"
                            "M[2] = 7\n"
                            "N = append(L, 3)\n"
                            "K = list(a=L, b=M, c=N)\n"
                            "L = 0\n"
                            "M = 0\n"
                            "N = 0\n"
                            "K = 0\n"
                            "K = list()\n"
                            "for (i in 1:1000000) K = list(K)\n");
    CHECK(err == NULL);
    if (err)
        fprintf(stderr, "%s\n", err);
    free(err);
}

int main(void)
{
    builtin_registry_install();
    test_index_chain_1e5();
    test_plus_chain_3e5();
    test_chain_in_other_places();
    test_short_chain_runs();
    test_list_nested_1e6();
    return CHECK_DONE();
}
