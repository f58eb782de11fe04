/* SPDX-License-Identifier: Apache-2.0
 * The abstract syntax tree. Every node carries its source location. Nodes and
 * their strings live in the arena of the Program that parsed them and are
 * freed with it. The parser fills the syntactic fields; resolve.c fills the
 * fields marked "resolved" once, before anything runs; after that the tree is
 * read-only and shared by every thread. */
#ifndef DML_PARSER_AST_H
#define DML_PARSER_AST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../base/arena.h"
#include "../base/diag.h"     /* Loc */
#include "../base/value.h"

typedef enum NodeKind {
#define NODE(name) N_##name,
#include "node_kinds.def"
#undef NODE
    N__COUNT
} NodeKind;

typedef enum BinOp {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_INTDIV, OP_MOD, OP_MATMUL,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE,
    OP_AND, OP_OR,          /* & | (elementwise, no short circuit) */
    OP_ANDAND, OP_OROR,     /* && || : parse, rejected by resolve */
    OP__COUNT
} BinOp;

typedef enum UnOp { UOP_NEG, UOP_PLUS, UOP_NOT } UnOp;

typedef struct Node Node;
typedef struct FuncDecl FuncDecl;
struct FuncDef;        /* runtime/program.h */
struct CallVariants;   /* runtime/program.h */
struct BuiltinDef;     /* runtime/builtin_api.h */

/* One part of an index expression X[rows, cols]. */
typedef enum IxKind { IX_ALL, IX_ONE, IX_RANGE } IxKind;
typedef struct IndexPart {
    IxKind kind;
    Node *lo, *hi;          /* IX_ONE: lo; IX_RANGE: lo and hi */
} IndexPart;

/* Left-hand side of an assignment: a variable, optionally indexed. */
typedef struct Lhs {
    const char *name;
    Loc loc;
    bool indexed;
    bool has_cols;          /* X[i] (no comma) vs X[i, j] */
    IndexPart rows, cols;
    int slot;               /* resolved: variable slot in the frame */
} Lhs;

/* A typed parameter or output of a function. */
typedef enum TypeKind { TY_SCALAR, TY_MATRIX, TY_FRAME, TY_LIST } TypeKind;
typedef enum ScalarType { SCALAR_UNKNOWN, SCALAR_INT, SCALAR_DOUBLE, SCALAR_BOOLEAN, SCALAR_STRING } ScalarType;
typedef struct Param {
    const char *name;
    TypeKind type;
    ScalarType vtype;       /* value type: for scalars the scalar type */
    Node *dflt;             /* default expression or NULL */
    Loc loc;
} Param;

struct FuncDecl {
    const char *name;
    Param *params; int nparams;
    Param *outs;   int nouts;
    Node **body;   int nbody;
    bool external;          /* externalFunction: parsed, rejected by resolve */
    Loc loc;
};

/* Option of a for/parfor header: name=value (value kept as an expression). */
typedef struct LoopOpt {
    const char *name;
    Node *value;
    Loc loc;
} LoopOpt;

struct Node {
    NodeKind kind;
    Loc loc;
    union {
        union { int64_t i; double d; bool b; } lit;
        struct { const char *s; int64_t len; Value v; } str; /* v: immortal Str, set by resolve */
        Value konst;
        struct { const char *name; int slot; } ident;
        struct { const char *name; } cmdarg;
        struct { BinOp op; Node *lhs, *rhs; } binary;
        struct { UnOp op; Node *operand; } unary;
        struct {
            const char *ns;         /* namespace alias or NULL */
            const char *name;
            Node **args; const char **argnames; int nargs;  /* argnames[i] NULL if positional */
            /* resolved: exactly one of fn/bi is set; argmap[i] is the
             * parameter index argument i binds to (NULL for variadic builtins) */
            struct FuncDef *fn;
            const struct BuiltinDef *bi;
            int *argmap;
            int nparams;            /* parameters of the callee (size of the bound array) */
            /* resolved, upstream-style DML builtin (m_f/s_f): fn/argmap hold
             * one variant, the run time picks by the first argument */
            const struct CallVariants *variants;
            /* resolved ([a, b] = f(...) in a function body, runtime/liveness.h):
             * bit i set when the caller never reads output i */
            uint64_t dead_outs;
        } call;
        struct { Node *target; IndexPart rows, cols; bool has_cols; } index;
        struct { Node **items; int n; } list;
        /* skip_out (resolved, runtime/liveness.h): i + 1 when this top-level
         * statement only computes output i of its function, else 0 */
        struct { Lhs target; Node *value; bool accum; int skip_out; } assign;
        struct { Lhs *targets; int n; Node *call; } multi;
        struct { Lhs target; const char *param; Node *dflt; } ifdef;
        struct { Node *e; } expr;
        struct { Node *cond; Node **then_b; int nthen; Node **else_b; int nelse; } ifs;
        struct {
            const char *var; int var_slot;   /* resolved */
            Node *from, *to, *by;            /* by NULL when absent */
            bool seq_form;                   /* header was seq(...) rather than a:b */
            LoopOpt *opts; int nopts;
            Node *cond;                      /* while */
            Node **body; int nbody;
            bool parfor;
            /* resolved (parfor only): slots the body writes, and whether
             * every write to that slot is an accumulation (+=) */
            int *written; bool *accum_only; int nwritten;
            /* resolved (parfor only, parfor_check.c), per written slot:
             * assigned in the body (a candidate result when it exists at
             * loop entry), and whether its accesses carry a dependency
             * between iterations when it holds a matrix or list there;
             * 'check' is the check option (default on). */
            bool *candidate, *dep_nonscalar; bool check;
        } loop;
        FuncDecl *func;
        struct { const char *path; const char *alias; } source;
    };
};

/* Debug name of a kind ("BINARY"). */
const char *ast_kind_name(NodeKind k);
/* Operator as written ("%*%"). */
const char *ast_binop_name(BinOp op);
/* Print the tree (for `dml run --dump-ast`). */
void ast_dump(Node **stmts, int n, FILE *f);

/* Builders used by the grammar actions: allocate in 'a', fill kind and loc. */
Node *ast_node(Arena *a, NodeKind kind, Loc loc);
/* lhs op rhs. */
Node *ast_binary(Arena *a, Loc loc, BinOp op, Node *lhs, Node *rhs);
/* op operand; UOP_NEG on an N_INT/N_DOUBLE literal folds into a negative
 * literal of that kind located at 'loc' (doc/language.md, "names"). */
Node *ast_unary(Arena *a, Loc loc, UnOp op, Node *operand);

#endif
