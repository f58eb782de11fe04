/* SPDX-License-Identifier: Apache-2.0
 * The builtin families: one line per family table, in lookup order (the
 * first row with a name wins). Each X(f) is a table bi_f_table[] defined in
 * the file its comment names, ended by a row with name == NULL. A new
 * family is a new line here and nothing else: registry.h declares the
 * tables and registry.c looks them up from this list, and
 * tests/unit/test_registry_list.c checks it against the sources. */
#ifndef DML_BUILTINS_FAMILIES_H
#define DML_BUILTINS_FAMILIES_H

#define BUILTIN_FAMILIES(X) \
    X(core)                /* core.c: print, stop, assert, toString, as.*, nrow/ncol/length, ifelse, time, is.na, ... */ \
    X(construct)           /* construct.c: matrix, rand, seq, sample, diag, table, toOneHot, outer, replace, lower.tri */ \
    X(elementwise)         /* elementwise.c: exp, log, round, trig, sigmoid, min/max, pmin/pmax, xor, bitw* */ \
    X(aggregate)           /* aggregate.c: sum, mean, var, sd, prod, trace, row and column aggregates, cum* */ \
    X(reorg)               /* reorg.c: t, rev, unique, cbind/append/rbind, removeEmpty, order */ \
    X(linalg)              /* linalg.c: solve, inv, det, cholesky, eigen, lu, qr, svd */ \
    X(io)                  /* readwrite.c: read, readMM, write (the formats: io/) */ \
    X(list)                /* list.c: list, remove */ \
    X(dnn)                 /* dnn.c: conv2d and backward, max/avg pooling and backward, bias_add, bias_multiply */ \
    X(stats)               /* statistics.c: moment, cov, median, quantile, cdf/icdf, pnorm ... qt, aggregate, contains */ \
    X(paramserv)           /* paramserv/paramserv.c: paramserv */ \
    X(interp)              /* interp_bi.c: exists, eval, evalList */ \
    X(plot)                /* plot.c: plot */ \
    X(help)                /* help.c: help, ls, describe */ \
    X(dnn_norm)            /* dnn_norm.c: batch_norm2d, backward */ \
    X(dnn_lstm)            /* dnn_lstm.c: lstm, lstm_backward */ \
    X(distinct)            /* distinct.c: countDistinct and its variants */ \
    X(fft)                 /* fft.c: fft, ifft, *_linearized, stft */ \
    X(misc_natives)        /* misc_natives.c: roll, ppred, compress, decompress, local */ \
    X(sqrtm)               /* sqrtm.c: sqrtMatrixJava */ \
    X(frame)               /* frame.c: as.frame, typeof, colnames, applySchema */ \
    X(transform)           /* transform.c: transformencode, transformapply, transformdecode, transformcolmap */ \
    X(frame_clean)         /* frame_clean.c: detectSchema, dropInvalidType, dropInvalidLength, map */ \
    X(tokenize)            /* tokenize.c: tokenize */ \
    X(einsum)              /* einsum.c: einsum */ \
    X(unsupported_natives) /* unsupported_natives.c: upstream natives dml refuses, with why */ \
    X(compat_ctor)         /* compat_ctor.c: frame, tensor; federated and sql refused */ \
    X(frame_text)          /* frame_text.c: correctTypos, dmv, cooccurrenceMatrix, mdedup */

#endif
