/* SPDX-License-Identifier: Apache-2.0
 * Spatial batch normalisation as upstream's builtins (COMPAT.md 5), which
 * upstream's nn layer batch_norm2d.dml calls:
 *   [out, emaMean, emaVar, cacheMean, cacheInvVar]
 *       = batch_norm2d(X, gamma, beta, emaMean, emaVar, mode, eps, mu)
 *   [dX, dgamma, dbeta]
 *       = batch_norm2d_backward(X, dout, gamma, eps, cacheMean, cacheInvVar)
 * X is N x C*H*W with each row channel-major (c, h, w); the per-channel
 * vectors are C x 1, and C is nrow(beta) (nrow(gamma) backward). Thread-safe:
 * all state comes from the Interp. */
#include "registry.h"

#include <math.h>
#include <strings.h>

/* Shapes shared by both passes: C channels of HW cells each. */
static Status bn_shape(Interp *I, const char *fn, const Matrix *X, int64_t C, int64_t *hw)
{
    if (C < 1 || X->cols % C != 0)
        return err_set(I, "%s(): ncol(X) = %lld is not a multiple of the %lld channels (nrow of the C x 1 "
                       "parameters)", fn, (long long)X->cols, (long long)C);
    *hw = X->cols / C;
    return ST_OK;
}

static Status bn_vec(Interp *I, const char *fn, const char *what, const Matrix *v, int64_t C)
{
    if (v->rows != C || v->cols != 1)
        return err_set(I, "%s(): %s must be %lld x 1 (one value per channel), got %lldx%lld", fn, what, (long long)C,
                       (long long)v->rows, (long long)v->cols);
    return ST_OK;
}

/* Per-channel mean and (biased) variance over the N rows and HW cells. */
static void channel_moments(const Matrix *X, int64_t C, int64_t hw, double *mean, double *var)
{
    double m = (double)X->rows * (double)hw;
    for (int64_t c = 0; c < C; c++) {
        double s = 0;
        for (int64_t n = 0; n < X->rows; n++) {
            const double *x = X->data + n * X->cols + c * hw;
            for (int64_t k = 0; k < hw; k++)
                s += x[k];
        }
        double mu = s / m, q = 0;
        for (int64_t n = 0; n < X->rows; n++) {
            const double *x = X->data + n * X->cols + c * hw;
            for (int64_t k = 0; k < hw; k++)
                q += (x[k] - mu) * (x[k] - mu);
        }
        mean[c] = mu;
        var[c] = q / m;
    }
}

static Status bi_batch_norm2d(Interp *I, const BArgs *a, Value *out)
{
    const char *fn = "batch_norm2d";
    if (a->nout != 5)
        return err_set(I, "batch_norm2d has 5 outputs");
    Matrix *X, *gamma, *beta, *emaMean, *emaVar;
    const char *mode;
    double eps, mu;
    TRY(arg_matrices(I, a, 0, 5, (Matrix **const[]){&X, &gamma, &beta, &emaMean, &emaVar}));
    TRY(arg_string(I, a, 5, NULL, &mode));
    TRY(arg_double(I, a, 6, 0, &eps));
    TRY(arg_double(I, a, 7, 0, &mu));
    int64_t C = beta->rows, hw = 0;
    TRY(bn_shape(I, fn, X, C, &hw));
    TRY(bn_vec(I, fn, "gamma", gamma, C));
    TRY(bn_vec(I, fn, "beta", beta, C));
    TRY(bn_vec(I, fn, "ema_mean", emaMean, C));
    TRY(bn_vec(I, fn, "ema_var", emaVar, C));
    bool train = strcasecmp(mode, "train") == 0;
    if (!train && strcasecmp(mode, "test") != 0)
        return err_set(I, "Incorrect mode: Expected either train or test, but found %s", mode);
    Value res[5];
    Matrix *outs[5];
    TRY(bi_alloc_outs(I, (const OutShape[]){{X->rows, X->cols, false}, {C, 1, false}, {C, 1, false},
                                            {C, 1, false}, {C, 1, false}}, 5, res, outs));
    Matrix *o = outs[0], **v = outs + 1;
    double *mean = v[2]->data, *inv = v[3]->data;
    if (train) {
        double *var = v[1]->data;   /* borrowed as scratch until the EMAs are formed */
        channel_moments(X, C, hw, mean, var);
        for (int64_t c = 0; c < C; c++) {
            inv[c] = 1 / sqrt(var[c] + eps);
            v[0]->data[c] = mu * emaMean->data[c] + (1 - mu) * mean[c];
            /* Upstream's CPU kernel folds the mean, not the variance, into
             * the variance EMA; we follow its DML reference layer and use the
             * variance, the documented intent. */
            var[c] = mu * emaVar->data[c] + (1 - mu) * var[c];
        }
    } else {
        for (int64_t c = 0; c < C; c++) {
            mean[c] = emaMean->data[c];
            inv[c] = 1 / sqrt(emaVar->data[c] + eps);
            v[0]->data[c] = emaMean->data[c];
            v[1]->data[c] = emaVar->data[c];
        }
    }
    for (int64_t n = 0; n < X->rows; n++) {
        for (int64_t c = 0; c < C; c++) {
            const double *x = X->data + n * X->cols + c * hw;
            double *y = o->data + n * X->cols + c * hw;
            double s = inv[c] * gamma->data[c], b = beta->data[c], m = mean[c];
            for (int64_t k = 0; k < hw; k++)
                y[k] = (x[k] - m) * s + b;
        }
    }
    bi_set_outs_take(a, out, res, 5);
    return ST_OK;
}

static Status bi_batch_norm2d_backward(Interp *I, const BArgs *a, Value *out)
{
    const char *fn = "batch_norm2d_backward";
    if (a->nout != 3)
        return err_set(I, "batch_norm2d_backward has 3 outputs");
    Matrix *X, *dout, *gamma, *cmean, *cinv;
    double eps;
    TRY(arg_matrices(I, a, 0, 3, (Matrix **const[]){&X, &dout, &gamma}));
    TRY(arg_double(I, a, 3, 0, &eps));  /* unused, as upstream */
    TRY(arg_matrix(I, a, 4, &cmean));
    TRY(arg_matrix(I, a, 5, &cinv));
    int64_t C = gamma->rows, hw = 0;
    TRY(bn_shape(I, fn, X, C, &hw));
    TRY(bn_vec(I, fn, "gamma", gamma, C));
    TRY(bn_vec(I, fn, "cache_mean", cmean, C));
    TRY(bn_vec(I, fn, "cache_inv_var", cinv, C));
    if (dout->rows != X->rows || dout->cols != X->cols)
        return err_set(I, "%s(): dout must have X's shape %lldx%lld, got %lldx%lld", fn, (long long)X->rows,
                       (long long)X->cols, (long long)dout->rows, (long long)dout->cols);
    Value res[3];
    Matrix *outs[3];
    TRY(bi_alloc_outs(I, (const OutShape[]){{X->rows, X->cols, false}, {C, 1, true}, {C, 1, true}}, 3, res,
                      outs));
    Matrix *dX = outs[0], *dg = outs[1], *db = outs[2];
    double m = (double)X->rows * (double)hw;
    for (int64_t c = 0; c < C; c++) {
        double mu = cmean->data[c], inv = cinv->data[c], g = gamma->data[c];
        double sdb = 0, sdg = 0, dvar = 0, sdn = 0, sc = 0;
        for (int64_t n = 0; n < X->rows; n++) {
            const double *x = X->data + n * X->cols + c * hw, *d = dout->data + n * X->cols + c * hw;
            for (int64_t k = 0; k < hw; k++) {
                double cx = x[k] - mu, dn = d[k] * g;
                sdb += d[k];
                sdg += cx * inv * d[k];
                dvar += -0.5 * cx * inv * inv * inv * dn;
                sdn += -dn * inv;
                sc += -2 * cx;
            }
        }
        double dmean = sdn + dvar * sc / m;
        db->data[c] = sdb;
        dg->data[c] = sdg;
        for (int64_t n = 0; n < X->rows; n++) {
            const double *x = X->data + n * X->cols + c * hw, *d = dout->data + n * X->cols + c * hw;
            double *y = dX->data + n * X->cols + c * hw;
            for (int64_t k = 0; k < hw; k++) {
                double cx = x[k] - mu;
                y[k] = d[k] * g * inv + dmean / m + 2 * cx * dvar / m;
            }
        }
    }
    bi_set_outs_take(a, out, res, 3);
    return ST_OK;
}

const BuiltinDef bi_dnn_norm_table[] = {
    {"batch_norm2d", bi_batch_norm2d, "input,scale,bias,runningMean,runningVar,mode,epsilon,momentum", 8, BIND_POS,
     5, BF_MULTI},
    {"batch_norm2d_backward", bi_batch_norm2d_backward, "input,dout,scale,epsilon,cache_mean,cache_inv_var", 6,
     BIND_POS, 3, BF_MULTI},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
