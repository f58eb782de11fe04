/* SPDX-License-Identifier: Apache-2.0
 * Tiny assertion helpers for the C unit tests (after Redis's testhelp.h).
 * A failed check prints "file:line: what" to stderr and the test goes on;
 * CHECK_DONE() prints exactly "N passed, N failed" and yields the exit
 * status (non-zero if anything failed). One test program per process, one
 * thread: the counters below are the only state, and they are the test's. */
#ifndef DML_TESTS_UNIT_CHECK_H
#define DML_TESTS_UNIT_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int check_passed_, check_failed_;

__attribute__((format(printf, 4, 5), unused))
static bool check_report_(bool ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        check_passed_++;
        return true;
    }
    check_failed_++;
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return false;
}

/* Doubles equal in value, sign of zero included; NaN equals NaN. */
__attribute__((unused))
static bool check_same_double_(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b && signbit(a) == signbit(b);
}

#define CHECK(cond) check_report_((cond) ? true : false, __FILE__, __LINE__, "%s", #cond)

#define CHECK_INT(a, b) do { \
        long long ca_ = (long long)(a), cb_ = (long long)(b); \
        check_report_(ca_ == cb_, __FILE__, __LINE__, "%s == %s (%lld vs %lld)", #a, #b, ca_, cb_); \
    } while (0)

#define CHECK_DBL(a, b) do { \
        double ca_ = (a), cb_ = (b); \
        check_report_(check_same_double_(ca_, cb_), __FILE__, __LINE__, "%s == %s (%.17g vs %.17g)", \
                      #a, #b, ca_, cb_); \
    } while (0)

#define CHECK_NEAR(a, b, tol) do { \
        double ca_ = (a), cb_ = (b); \
        check_report_(fabs(ca_ - cb_) <= (tol), __FILE__, __LINE__, "%s ~ %s (%.17g vs %.17g)", \
                      #a, #b, ca_, cb_); \
    } while (0)

#define CHECK_STR(a, b) do { \
        const char *ca_ = (a), *cb_ = (b); \
        check_report_(ca_ && cb_ && strcmp(ca_, cb_) == 0, __FILE__, __LINE__, "%s == %s (\"%s\" vs \"%s\")", \
                      #a, #b, ca_ ? ca_ : "(null)", cb_ ? cb_ : "(null)"); \
    } while (0)

#define CHECK_DONE() \
    (printf("%d passed, %d failed\n", check_passed_, check_failed_), check_failed_ ? 1 : 0)

#endif
