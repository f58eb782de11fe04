/* SPDX-License-Identifier: Apache-2.0
 * Interp: everything one thread needs to run DML. One per thread (the main
 * thread, each paramserv worker, the server, each parfor worker); they share
 * only the read-only Program. Every runtime function takes 'Interp *I' first.
 *
 * Errors are statuses: a fallible function returns Status and, on failure,
 * has put the message in I->err. Nothing here prints or exits. */
#ifndef DML_RUNTIME_INTERP_H
#define DML_RUNTIME_INTERP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/diag.h"
#include "../base/display.h"
#include "../parser/ast.h"
#include "matrix.h"
#include "rng.h"
#include "../base/value.h"

typedef enum Status { ST_OK = 0, ST_ERR = 1 } Status;

/* Return from the enclosing function when 'expr' fails. */
#define TRY(expr) do { Status try_s_ = (expr); if (try_s_ != ST_OK) return try_s_; } while (0)

typedef struct Program Program;
typedef struct FuncDef FuncDef;
typedef struct Stats Stats;

/* One activation: the variable slots of a function call or of the top level. */
typedef struct CallFrame {
    Value *slots;
    int nslots;
    const FuncDef *fn;      /* NULL for the top level */
    const struct SlotTable *names;  /* slot -> name (for exists(), messages) */
    Loc call_loc;           /* where this frame was called from */
    struct CallFrame *parent;
    uint64_t dead_outs;     /* outputs of fn the caller never reads (runtime/liveness.h) */
} CallFrame;

typedef struct ErrorSlot {
    char *msg;              /* malloc'd message, without position */
    Loc loc;                /* position of the failing construct */
    bool has_loc;
    char *trace;            /* malloc'd "  in f() at file:line:col\n" lines */
    size_t trace_len;
    int repeat;             /* times the last trace line repeated (runaway recursion) */
    bool interrupted;       /* the error is a Ctrl-C, not a script error */
} ErrorSlot;

typedef struct Interp {
    Program *prog;
    CallFrame *frame;       /* current call frame */
    int depth;              /* user-function call depth */
    ErrorSlot err;
    Rng rng;
    FILE *out;              /* where print() writes (stdout) */
    DiagSink sink;          /* progress lines and warnings (base/diag.h): library code
                             * never prints to stderr; none (dropped) unless the front
                             * end installs one; threads started for this Interp copy it */
    atomic_int *interrupt;  /* set asynchronously (SIGINT, paramserv abort); may be NULL */
    DisplaySink display;    /* pictures the front end shows itself (base/display.h); none
                             * unless it installs one; not copied to worker threads */
    int blas_threads;       /* BLAS threads this thread may use (1 on workers) */
    Stats *stats;           /* NULL unless --stats */
    struct Hitters *hh;     /* --stats heavy hitters (from Program.hh; hitters.h); NULL when off */
    bool in_parallel;       /* a parfor/paramserv worker: nested parfor runs sequentially */
    const char *stack_base; /* near the top of this thread's stack */
    size_t stack_limit;     /* bytes of stack DML may use before "stack overflow" */
} Interp;

/* Maximum user-function call depth before "stack overflow" is reported. */
#define INTERP_MAX_DEPTH 2000

/* Record the current frame as the top of the running thread's stack, which
 * is 'size' bytes (0: the main thread's, from RLIMIT_STACK). Called where a
 * thread starts running DML (interp_init does it for the calling thread). */
void interp_stack_init(Interp *I, size_t size);
/* True when the C stack is nearly used up: deep recursion or nesting is then
 * a DML error instead of a crash. */
static inline bool interp_stack_low(const Interp *I)
{
    const char *here = (const char *)__builtin_frame_address(0);
    return I->stack_limit && I->stack_base > here && (size_t)(I->stack_base - here) > I->stack_limit;
}
/* The error for interp_stack_low() (err.c). */
Status err_stack(Interp *I);

/* Initialise an interpreter over 'prog' with a top-level frame of no slots.
 * 'seed' seeds its RNG. */
void interp_init(Interp *I, Program *prog, uint64_t seed);
/* Releases the frames' values and the error slot. */
void interp_destroy(Interp *I);

/* ---- errors (err.c) ---- */
/* Set the error message (printf-style) without a position; the evaluator
 * stamps the position of the construct that failed. Always returns ST_ERR. */
Status err_set(Interp *I, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, with a position. */
Status err_at(Interp *I, const Loc *loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Set the error from a record made below the runtime (base/diag.h: the
 * parser, the file-format parsers): its message, and its position when it
 * has one. Always returns ST_ERR. */
Status err_take(Interp *I, const DiagErr *e);
/* If the pending error has no position yet, give it 'loc'. Returns ST_ERR. */
Status err_stamp(Interp *I, const Loc *loc);
/* Append a call-stack line "  in f() at file:line:col". */
void err_push_frame(Interp *I, const char *fname, const Loc *call_loc);
/* Close the call-stack trace (writes a pending "repeated N times" note);
 * the reporters call it before printing. */
void err_finish_trace(Interp *I);
/* "out of memory" for a matrix of rows x cols (or size overflow). */
Status err_oom(Interp *I, int64_t rows, int64_t cols);
/* Forget the pending error. */
void err_clear(Interp *I);
/* Move the pending error of 'from' into 'to' (used across threads). */
void err_move(Interp *to, Interp *from);
/* Format the pending error for the user:
 *   file:line:col: message\n  in f() at ...\n
 * Returns a malloc'd string. */
char *err_format(const Interp *I);
/* True when an interrupt (Ctrl-C) is pending; the evaluator turns it into an error. */
static inline bool interp_interrupted(const Interp *I)
{
    return I->interrupt && atomic_load_explicit(I->interrupt, memory_order_relaxed);
}

/* ---- running code ---- */
/* Evaluate an expression; *out receives an owned value. */
Status eval_expr(Interp *I, const Node *n, Value *out);
/* Execute a block of statements. */
Status exec_block(Interp *I, Node *const *stmts, int n);
/* Call a user function with argument values (borrowed) bound by position
 * then by name (names[i] NULL for positional). Results: 'nout' owned values
 * written to outs (nout may be less than the function's output count). */
Status eval_function(Interp *I, const FuncDef *fn, const Value *args, const char *const *names,
                   int nargs, Value *outs, int nout, const Loc *call_loc);
/* Call 'n' (an N_CALL) and write up to 'nout' owned results to outs (0: a
 * call used as a statement, its results discarded; where a call may stand
 * was settled when the program was resolved). */
Status eval_call(Interp *I, const Node *n, Value *outs, int nout);
/* Give the top-level frame room for every slot the program has declared
 * (the REPL grows the table between inputs). ST_ERR (out of memory, error
 * set) leaves the frame as it was: nothing may run in it then. */
Status exec_sync_top(Interp *I, CallFrame *top);
/* Set the interrupted error at 'loc'. */
Status eval_raise_interrupt(Interp *I, const Loc *loc);

#endif
