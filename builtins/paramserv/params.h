/* SPDX-License-Identifier: Apache-2.0
 * paramserv's parameters, declared once (issue 25). Each row of
 * PS_PARAMS gives a parameter's name, its kind, whether it is required,
 * the PsConfig field it is read into, its default, its checks and whether
 * the CALL message of the Open MPI transport carries it. From this one
 * list come the registry's parameter string (paramserv.c), the argument
 * indices and the reading and checking of a call (args.c), and the
 * encoding and checking of the options in a CALL (msg.c).
 *
 * ROW(ID, name, kind, need, field, dint, dstr, lo, hi, msg, wire)
 *   ID     the index is PS_A_<ID>, in the order of the rows
 *   kind   PK_*, below
 *   need   0 optional, 1 required ("Named parameter 'x' missing."),
 *          2 required ("Named parameter 'x' is missing.")
 *   field  the PsConfig member (PK_FED: none is read)
 *   dint   default of an integer or boolean
 *   dstr   default of a string; for PK_ENUM the values' names, each
 *          ended by '|', index i is enum value i
 *   lo hi  the range an integer must be in, checked after the options
 *          are read; msg the error when it is not (printf format, given
 *          the value as long long); lo > hi: no check here. For PK_ENUM,
 *          dint is the default's index and msg the error for an unknown
 *          name (given the name)
 *   wire   1: the CALL carries it (in row order), 0: it stays on rank 0
 *
 * The order of the checks follows upstream (args.c): presence, then the
 * kinds (data, functions, integers read early, booleans, strings), then
 * the option values, then the integers' ranges in row order; integers with
 * lo > hi and not read early are read in that last pass. */
#ifndef DML_BUILTINS_PARAMSERV_PARAMS_H
#define DML_BUILTINS_PARAMSERV_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    PK_LIST,        /* a list (model, hyperparams) */
    PK_MATRIX,      /* a matrix (the data) */
    PK_FUNC,        /* "ns::fn" naming a DML function */
    PK_MODE,        /* mode: picks the transport (transport.c) */
    PK_ENUM,        /* one of dstr's names */
    PK_STR,         /* any string */
    PK_INT,         /* an integer read with the kinds (upstream types it when it compiles the call) */
    PK_INT_LATE,    /* an integer read with the range checks */
    PK_SEED,        /* seed: an integer, -1 (the default) draws one from the caller's RNG */
    PK_BOOL,        /* TRUE/FALSE or "true"/"false" */
    PK_FED,         /* federated-only: refused */
};


#define PS_PARAMS(ROW)                                                                                              \
    ROW(MODEL, "model", PK_LIST, 1, model, 0, NULL, 1, 0, NULL, 0)                                                  \
    ROW(FEATURES, "features", PK_MATRIX, 1, X, 0, NULL, 1, 0, NULL, 0)                                              \
    ROW(LABELS, "labels", PK_MATRIX, 1, Y, 0, NULL, 1, 0, NULL, 0)                                                  \
    ROW(VAL_FEATURES, "val_features", PK_MATRIX, 0, Xv, 0, NULL, 1, 0, NULL, 0)                                     \
    ROW(VAL_LABELS, "val_labels", PK_MATRIX, 0, Yv, 0, NULL, 1, 0, NULL, 0)                                         \
    ROW(UPD, "upd", PK_FUNC, 2, upd_spec, 0, NULL, 1, 0, NULL, 0)                                                   \
    ROW(AGG, "agg", PK_FUNC, 2, agg_spec, 0, NULL, 1, 0, NULL, 0)                                                   \
    ROW(VAL, "val", PK_FUNC, 0, val_spec, 0, NULL, 1, 0, NULL, 0)                                                   \
    ROW(MODE, "mode", PK_MODE, 0, mode, 0, NULL, 1, 0, NULL, 0)                                                     \
    ROW(UTYPE, "utype", PK_ENUM, 0, utype, 1, "BSP|ASP|SBP|SSP|", 1, 0,                                              \
      "Paramserv function: not support update type '%s'.", 1)                                                    \
    ROW(FREQ, "freq", PK_ENUM, 0, freq, 1, "BATCH|EPOCH|NBATCHES|", 1, 0,                                            \
      "Paramserv function: not support '%s' update frequency.", 1)                                               \
    ROW(EPOCHS, "epochs", PK_INT, 2, epochs, 0, NULL, 1, INT64_MAX,                                                  \
      "Paramserv function: The argument 'epochs' could not be less than or equal to 0.", 1)                      \
    ROW(BATCHSIZE, "batchsize", PK_INT, 0, batchsize, 64, NULL, 1, INT64_MAX,                                        \
      "Paramserv function: the number of argument 'batchsize' could not be less than or equal to 0.", 1)         \
    ROW(K, "k", PK_INT, 0, k, 0, NULL, 1, 4096,                                                                      \
      "Paramserv function: the number of workers 'k' must be between 1 and 4096, got %lld", 0)                   \
    ROW(SCHEME, "scheme", PK_ENUM, 0, scheme, 0, "DISJOINT_CONTIGUOUS|DISJOINT_ROUND_ROBIN|DISJOINT_RANDOM|"         \
      "OVERLAP_RESHUFFLE|", 1, 0, "Paramserv function: not support data partition scheme '%s'", 0)               \
    ROW(HYPER, "hyperparams", PK_LIST, 0, hyper, 0, NULL, 1, 0, NULL, 0)                                            \
    ROW(CKPT, "checkpointing", PK_ENUM, 0, ckpt, 0, "NONE|EPOCH|EPOCH10|", 1, 0,                                     \
      "Paramserv function: not support checkpointing '%s' (use NONE, EPOCH or EPOCH10)", 0)                     \
    ROW(SEED, "seed", PK_SEED, 0, seed, -1, NULL, 1, 0, NULL, 1)                                                    \
    ROW(MODELAVG, "modelAvg", PK_BOOL, 0, model_avg, 0, NULL, 1, 0, NULL, 1)                                        \
    ROW(NBATCHES, "nbatches", PK_INT_LATE, 0, nbatches, 1, NULL, 1, INT64_MAX,                                       \
      "Paramserv function: 'nbatches' must be at least 1, got %lld", 1)                                          \
    ROW(BACKUP, "num_backup_workers", PK_INT_LATE, 0, backup, 1, NULL, 1, 0, NULL, 0)                               \
    ROW(STALENESS, "staleness", PK_INT_LATE, 0, staleness, 1, NULL, 0, INT64_MAX,                                    \
      "Paramserv function: 'staleness' must be at least 0, got %lld", 0)                                         \
    ROW(CKPT_PATH, "checkpoint_path", PK_STR, 0, ckpt_path, 0, "paramserv.ckpt", 1, 0, NULL, 0)                     \
    ROW(VERBOSE, "verbose", PK_BOOL, 0, verbose, 1, NULL, 1, 0, NULL, 0)                                            \
    ROW(RUNTIME_BALANCING, "runtime_balancing", PK_FED, 0, fed, 0, NULL, 1, 0, NULL, 0)                             \
    ROW(WEIGHTING, "weighting", PK_FED, 0, fed, 0, NULL, 1, 0, NULL, 0)                                             \
    ROW(HE, "he", PK_FED, 0, fed, 0, NULL, 1, 0, NULL, 0)                                                          \
    ROW(DISPATCH, "dispatch", PK_ENUM, 0, dispatch, 0, "STATIC|DYNAMIC|", 1, 0,                                    \
        "Paramserv function: not support dispatch '%s' (use STATIC or DYNAMIC)", 1)                              \
    ROW(RECORD, "record", PK_STR, 0, record_path, 0, NULL, 1, 0, NULL, 0)                                          \
    ROW(REPLAY, "replay", PK_STR, 0, replay_path, 0, NULL, 1, 0, NULL, 0)                                          \
    ROW(SERVERS, "servers", PK_INT_LATE, 0, servers, 1, NULL, 1, 4096,                                             \
        "Paramserv function: the number of servers 'servers' must be between 1 and 4096, got %lld", 1)

/* PS_A_MODEL, PS_A_FEATURES, ...: a parameter's index in the call's
 * arguments (the registry binds them in row order). */
#define PS_X_ENUM(ID, ...) PS_A_##ID,
enum { PS_PARAMS(PS_X_ENUM) PS_NPARAMS };
#undef PS_X_ENUM

/* ",model,features,...": the registry's parameter string is this + 1. */
#define PS_X_NAME(ID, name, ...) "," name
#define PS_PARAM_NAMES PS_PARAMS(PS_X_NAME)

/* The rows as data (params.c). */
typedef struct PsParam {
    const char *name;
    int kind, need;
    size_t off;                 /* of the PsConfig field */
    int64_t dint;
    const char *dstr;
    int64_t lo, hi;
    const char *msg;
    bool wire;
} PsParam;
extern const PsParam ps_params[PS_NPARAMS];

struct PsConfig;
struct WIO;
/* Row i's field in c. */
void *ps_param_field(struct PsConfig *c, int i);
/* The index of s among an enum row's names ("A|B|C|"), or -1. */
int ps_enum_index(const char *names, const char *s);
/* Writes or reads the options a CALL carries (the rows with 'wire'), in
 * row order. */
void ps_options_xfer(struct WIO *x, struct PsConfig *c);
/* Whether the options a CALL carried are in their rows' ranges (an enum
 * names one of its values, an integer is in [lo, hi]). */
bool ps_options_valid(const struct PsConfig *c);

#endif
