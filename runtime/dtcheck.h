/* SPDX-License-Identifier: Apache-2.0
 * Static data-type change check of if/else branches and loop bodies (see
 * dtcheck.c), run by the resolver before anything executes. */
#ifndef DML_RUNTIME_DTCHECK_H
#define DML_RUNTIME_DTCHECK_H

#include "program.h"

/* Checks the bound statements of a script chunk (fn NULL; slots: the top
 * frame's) or of function fn's body (slots: its frame). The first 'nknown'
 * slots may already hold values (variables of earlier REPL inputs). Also
 * settles which variables each parfor loop's candidate results are.
 * False on the first error, recorded in *err. */
bool dtcheck_body(const SlotTable *slots, const FuncDecl *fn, Node *const *stmts, int n, int nknown, DiagErr *err);

#endif
