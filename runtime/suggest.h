/* SPDX-License-Identifier: Apache-2.0
 * "Did you mean": picks, among candidate names offered one by one, the one
 * closest to a misspelt name (same letters in another case first, then the
 * smallest edit distance within a bound that grows with the name's length).
 * Pure; a Suggest lives on the caller's stack, so any thread may use one. */
#ifndef DML_RUNTIME_SUGGEST_H
#define DML_RUNTIME_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "interp.h"

typedef struct Suggest {
    const char *want;       /* the misspelt name (borrowed) */
    char best[96];          /* best candidate so far ("" for none) */
    int best_d;             /* its distance (0: differs only in case) */
} Suggest;

void suggest_init(Suggest *s, const char *want);
/* Considers 'cand' (copied when it is the best so far). */
void suggest_offer(Suggest *s, const char *cand);
/* The best candidate, or NULL when none is close enough. */
const char *suggest_best(const Suggest *s);

/* " (did you mean 'x1'?)" for an undefined variable 'name', from the
 * variables bound in 'f'; "" when none is close. Writes into buf. */
const char *suggest_variable(const CallFrame *f, const char *name, char *buf, size_t cap);

#endif
