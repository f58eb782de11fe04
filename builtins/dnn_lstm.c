/* SPDX-License-Identifier: Apache-2.0
 * The LSTM builtins upstream's nn layers call (COMPAT.md 6):
 *   [out, c, cache_out, cache_c, cache_ifog]
 *       = lstm(X, W, b, out0, c0, return_sequences)
 *   [dX, dW, db, dout0, dc0] = lstm_backward(X, W, b, out0, c0,
 *       return_sequences, dout, dc, cache_out, cache_c, cache_ifog)
 * X is N x T*D, W (D+M) x 4M (input rows, then recurrent rows), b 1 x 4M,
 * out0 and c0 N x M. Gate blocks in the order i, f, o, g (sigmoid, sigmoid,
 * sigmoid, tanh); c_t = f*c_(t-1) + i*g, out_t = o*tanh(c_t). The caches hold
 * per step (one row each) out_t, c_t and the activated gates, row-major, as
 * dml's nn/layers/lstm.dml does. Thread-safe: all state comes from the Interp. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/blas.h"

typedef struct LstmDims { int64_t N, T, D, M; } LstmDims;

static Status lstm_dims(Interp *I, const char *fn, const Matrix *X, const Matrix *W, const Matrix *b,
                        const Matrix *out0, const Matrix *c0, LstmDims *d)
{
    if (W->cols < 4 || W->cols % 4 != 0 || W->rows <= W->cols / 4)
        return err_set(I, "%s(): W must be (D+M) x 4M with D, M >= 1, got %lldx%lld", fn, (long long)W->rows,
                       (long long)W->cols);
    d->N = X->rows;
    d->M = W->cols / 4;
    d->D = W->rows - d->M;
    if (X->cols % d->D != 0 || X->cols == 0)
        return err_set(I, "%s(): ncol(X) = %lld is not a positive multiple of D = %lld (nrow(W) - ncol(W)/4)", fn,
                       (long long)X->cols, (long long)d->D);
    d->T = X->cols / d->D;
    if (b->rows != 1 || b->cols != 4 * d->M)
        return err_set(I, "%s(): b must be 1 x %lld, got %lldx%lld", fn, (long long)(4 * d->M), (long long)b->rows,
                       (long long)b->cols);
    if (out0->rows != d->N || out0->cols != d->M || c0->rows != d->N || c0->cols != d->M)
        return err_set(I, "%s(): out0 and c0 must be %lld x %lld, got %lldx%lld and %lldx%lld", fn, (long long)d->N,
                       (long long)d->M, (long long)out0->rows, (long long)out0->cols, (long long)c0->rows,
                       (long long)c0->cols);
    return ST_OK;
}

static Status need_shape(Interp *I, const char *fn, const char *what, const Matrix *m, int64_t r, int64_t c)
{
    if (m->rows != r || m->cols != c)
        return err_set(I, "%s(): %s must be %lld x %lld, got %lldx%lld", fn, what, (long long)r, (long long)c,
                       (long long)m->rows, (long long)m->cols);
    return ST_OK;
}

static double sigm(double z) { return 1 / (1 + exp(-z)); }

static Status bi_lstm(Interp *I, const BArgs *a, Value *out)
{
    const char *fn = "lstm";
    if (a->nout != 2 && a->nout != 5)
        return err_set(I, "The builtin function lstm has two outputs, but instead found: %d", a->nout);
    Matrix *X, *W, *b, *out0, *c0;
    bool seq;
    TRY(arg_matrices(I, a, 0, 5, (Matrix **const[]){&X, &W, &b, &out0, &c0}));
    TRY(arg_bool(I, a, 5, false, &seq));
    LstmDims d;
    TRY(lstm_dims(I, fn, X, W, b, out0, c0, &d));
    int64_t N = d.N, T = d.T, D = d.D, M = d.M;
    Value res[5];
    Matrix *m[5];
    TRY(bi_alloc_outs(I, (const OutShape[]){{N, seq ? T * M : M, false}, {N, M, false}, {T, N * M, false},
                                            {T, N * M, false}, {T, N * 4 * M, false}}, 5, res, m));
    Matrix *o = m[0], *c = m[1], *co = m[2], *cc = m[3], *cg = m[4];
    memcpy(c->data, c0->data, sizeof(double) * (size_t)(N * M));
    for (int64_t t = 0; t < T; t++) {
        double *z = cg->data + t * N * 4 * M;   /* pre-activations, then gates in place */
        for (int64_t n = 0; n < N; n++)
            memcpy(z + n * 4 * M, b->data, sizeof(double) * (size_t)(4 * M));
        const double *prev = t == 0 ? out0->data : co->data + (t - 1) * N * M;
        blas_dgemm(false, false, N, 4 * M, D, 1.0, X->data + t * D, X->cols, W->data, W->cols, 1.0, z, 4 * M);
        blas_dgemm(false, false, N, 4 * M, M, 1.0, prev, M, W->data + D * W->cols, W->cols, 1.0, z, 4 * M);
        double *h = co->data + t * N * M, *ct = cc->data + t * N * M;
        for (int64_t n = 0; n < N; n++) {
            double *g = z + n * 4 * M;
            for (int64_t j = 0; j < M; j++) {
                g[j] = sigm(g[j]);
                g[M + j] = sigm(g[M + j]);
                g[2 * M + j] = sigm(g[2 * M + j]);
                g[3 * M + j] = tanh(g[3 * M + j]);
                double cv = g[M + j] * c->data[n * M + j] + g[j] * g[3 * M + j];
                c->data[n * M + j] = cv;
                ct[n * M + j] = cv;
                h[n * M + j] = g[2 * M + j] * tanh(cv);
            }
        }
        if (seq) {
            for (int64_t n = 0; n < N; n++)
                memcpy(o->data + n * T * M + t * M, h + n * M, sizeof(double) * (size_t)M);
        }
    }
    if (!seq)
        memcpy(o->data, co->data + (T - 1) * N * M, sizeof(double) * (size_t)(N * M));
    bi_set_outs_take(a, out, res, 5);
    return ST_OK;
}

static Status bi_lstm_backward(Interp *I, const BArgs *a, Value *out)
{
    const char *fn = "lstm_backward";
    if (a->nout != 5)
        return err_set(I, "lstm_backward has 5 outputs");
    Matrix *X, *W, *b, *out0, *c0, *dout, *dc, *co, *cc, *cg;
    bool seq;
    TRY(arg_matrices(I, a, 0, 5, (Matrix **const[]){&X, &W, &b, &out0, &c0}));
    TRY(arg_bool(I, a, 5, false, &seq));
    TRY(arg_matrices(I, a, 6, 5, (Matrix **const[]){&dout, &dc, &co, &cc, &cg}));
    LstmDims d;
    TRY(lstm_dims(I, fn, X, W, b, out0, c0, &d));
    int64_t N = d.N, T = d.T, D = d.D, M = d.M;
    TRY(need_shape(I, fn, "dout", dout, N, seq ? T * M : M));
    TRY(need_shape(I, fn, "dc", dc, N, M));
    TRY(need_shape(I, fn, "cache_out", co, T, N * M));
    TRY(need_shape(I, fn, "cache_c", cc, T, N * M));
    TRY(need_shape(I, fn, "cache_ifog", cg, T, N * 4 * M));
    Value res[5];
    Matrix *m[5];
    TRY(bi_alloc_outs(I, (const OutShape[]){{N, T * D, false}, {D + M, 4 * M, true}, {1, 4 * M, true},
                                            {N, M, true}, {N, M, false}}, 5, res, m));
    double *dz = malloc(sizeof(double) * (size_t)(N * 4 * M));
    if (!dz) {
        err_oom(I, N, 4 * M);
        for (int i = 0; i < 5; i++)
            val_release(res[i]);
        return ST_ERR;
    }
    Matrix *dX = m[0], *dW = m[1], *db = m[2], *dnext = m[3], *dcn = m[4];
    memcpy(dcn->data, dc->data, sizeof(double) * (size_t)(N * M));
    for (int64_t t = T - 1; t >= 0; t--) {
        const double *gates = cg->data + t * N * 4 * M, *ct = cc->data + t * N * M;
        const double *prev = t == 0 ? out0->data : co->data + (t - 1) * N * M;
        const double *cprev = t == 0 ? c0->data : cc->data + (t - 1) * N * M;
        for (int64_t n = 0; n < N; n++) {
            const double *g = gates + n * 4 * M;
            double *z = dz + n * 4 * M;
            for (int64_t j = 0; j < M; j++) {
                double gi = g[j], gf = g[M + j], go = g[2 * M + j], gg = g[3 * M + j];
                double dh = dnext->data[n * M + j];
                if (seq)
                    dh += dout->data[n * T * M + t * M + j];
                else if (t == T - 1)
                    dh += dout->data[n * M + j];
                double tc = tanh(ct[n * M + j]);
                double dct = dcn->data[n * M + j] + dh * go * (1 - tc * tc);
                z[j] = dct * gg * gi * (1 - gi);
                z[M + j] = dct * cprev[n * M + j] * gf * (1 - gf);
                z[2 * M + j] = dh * tc * go * (1 - go);
                z[3 * M + j] = dct * gi * (1 - gg * gg);
                dcn->data[n * M + j] = dct * gf;
            }
        }
        /* dW += t([X_t, prev]) %*% dz; db += colSums(dz) */
        blas_dgemm(true, false, D, 4 * M, N, 1.0, X->data + t * D, X->cols, dz, 4 * M, 1.0, dW->data, 4 * M);
        blas_dgemm(true, false, M, 4 * M, N, 1.0, prev, M, dz, 4 * M, 1.0, dW->data + D * 4 * M, 4 * M);
        for (int64_t n = 0; n < N; n++)
            for (int64_t j = 0; j < 4 * M; j++)
                db->data[j] += dz[n * 4 * M + j];
        /* [dX_t, dnext] = dz %*% t(W) */
        blas_dgemm(false, true, N, D, 4 * M, 1.0, dz, 4 * M, W->data, W->cols, 0.0, dX->data + t * D, dX->cols);
        blas_dgemm(false, true, N, M, 4 * M, 1.0, dz, 4 * M, W->data + D * W->cols, W->cols, 0.0, dnext->data, M);
    }
    free(dz);
    /* outputs: dX, dW, db, dout0 (the gradient reaching out0), dc0 */
    bi_set_outs_take(a, out, res, 5);
    return ST_OK;
}

const BuiltinDef bi_dnn_lstm_table[] = {
    {"lstm", bi_lstm, "X,W,bias,out0,c0,return_sequences", 6, BIND_POS, 5, BF_MULTI},
    {"lstm_backward", bi_lstm_backward,
     "X,W,bias,out0,c0,return_sequences,dout,dc,cache_out,cache_c,cache_ifog", 11, BIND_POS, 5, BF_MULTI},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
