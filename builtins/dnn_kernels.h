/* SPDX-License-Identifier: Apache-2.0
 * Pure kernels for the DNN builtins (conv2d and its two backward passes, max
 * and average pooling and their backward passes, bias add/multiply) on plain
 * row-major double arrays. No Interp, no error reporting: the caller (dnn.c)
 * validates every shape first. No global state; any thread may call these
 * concurrently on distinct outputs. The dgemms run on as many threads as
 * BLAS is set to use; everything else runs on the calling thread.
 *
 * Layout (doc/builtins.md, "Deep learning"): a batch of N images of C channels of H x W
 * pixels is an N x (C*H*W) matrix, image n row-major in C,H,W order; a filter
 * bank is F x (C*R*S) in the same order; outputs are N x (F*P*Q) (conv) or
 * N x (C*P*Q) (pooling) with
 *     P = (H + 2*ph - R) / sh + 1,   Q = (W + 2*pw - S) / sw + 1. */
#ifndef DML_BUILTINS_DNN_KERNELS_H
#define DML_BUILTINS_DNN_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

/* Geometry of one DNN call. For pooling, F is unused and R x S is the pool
 * window. P and Q are filled in by dnn_geom_output(). 'batch' is the number
 * of images handed to one dgemm (their im2col columns side by side, or their
 * Winograd tiles); 0 lets the kernels choose (tests and benchmarks set it).
 * 'winograd' picks the convolution algorithm: 0 lets the kernels choose
 * (Winograd F(4x4,5x5) for deep 5x5 stride-1 layers, see dnn_winograd.c),
 * -1 always im2col + dgemm, 1 Winograd wherever dnn_winograd_fits(). */
typedef struct DnnGeom {
    int64_t N, C, H, W;
    int64_t F, R, S;
    int64_t sh, sw, ph, pw;
    int64_t P, Q;
    int64_t batch;
    int winograd;
} DnnGeom;

/* Computes g->P and g->Q from the formulas above. Returns false when either
 * would be < 1 (the window does not fit even once). Assumes R,S,sh,sw >= 1,
 * ph,pw >= 0 and no overflow (the caller bounds the values). */
bool dnn_geom_output(DnnGeom *g);

/* ---- convolution (BLAS-backed; scratch is malloc'd and freed inside).
 * Each returns 0, or -1 when scratch memory could not be allocated (the
 * output is then unspecified). ---- */

/* out[n, f,p,q] = sum_{c,r,s} Wt[f, c,r,s] * Xpad[n, c, p*sh+r-ph, q*sw+s-pw]
 * X: N x CHW, Wt: F x CRS, out: N x FPQ (fully written). */
int dnn_conv2d(const DnnGeom *g, const double *X, const double *Wt, double *out);

/* dW[f, c,r,s] = sum_{n,p,q} dout[n, f,p,q] * Xpad[n, c, p*sh+r-ph, q*sw+s-pw]
 * X: N x CHW, dout: N x FPQ, dW: F x CRS (fully written). */
int dnn_conv2d_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW);

/* dX[n, c,h,w] = sum over f,p,q,r,s with p*sh+r-ph = h, q*sw+s-pw = w of
 *                Wt[f, c,r,s] * dout[n, f,p,q]
 * Wt: F x CRS, dout: N x FPQ, dX: N x CHW (fully written). */
int dnn_conv2d_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX);

/* True when the Winograd F(4x4,5x5) path can compute all three passes of
 * this geometry: a 5x5 filter, stride 1, padding at most 4 (so that the data
 * gradient is itself a 5x5 convolution with non-negative padding). Its results
 * differ from im2col's in the last bits (relative error a few 1e-15 of the
 * sum of |terms|; tests/unit/test_dnn.c bounds it). */
bool dnn_winograd_fits(const DnnGeom *g);

/* ---- pooling (direct loops, no scratch) ---- */

/* out[n, c,p,q] = max of X[n, c,h,w] over the window cells inside the image
 * (h = p*sh-ph .. +R-1, w = q*sw-pw .. +S-1); padding cells are ignored, an
 * empty window gives -DBL_MAX, a NaN in the window gives NaN (Java Math.max).
 * X: N x CHW, out: N x CPQ. */
void dnn_max_pool(const DnnGeom *g, const double *X, double *out);

/* dX[n, c,h,w] = sum of dout[n, c,p,q] over the windows whose maximum is at
 * (h,w): the first maximum in row-major window order on ties, only in-image
 * cells considered. X: N x CHW, dout: N x CPQ, dX: N x CHW (fully written). */
void dnn_max_pool_backward(const DnnGeom *g, const double *X, const double *dout, double *dX);

/* out[n, c,p,q] = (sum of in-image window cells) / (R*S): padding counts as 0.
 * X: N x CHW, out: N x CPQ. */
void dnn_avg_pool(const DnnGeom *g, const double *X, double *out);

/* dX[n, c,h,w] = sum of dout[n, c,p,q] / (R*S) over the windows holding
 * (h,w). dout: N x CPQ, dX: N x CHW (fully written). */
void dnn_avg_pool_backward(const DnnGeom *g, const double *dout, double *dX);

/* ---- bias (rows x cols matrix, C channels of HW = cols/C cells each) ---- */

/* out[n, c*HW + k] = X[n, c*HW + k] + b[c]. out may alias X. */
void dnn_bias_add(const double *X, int64_t rows, int64_t cols, const double *b, int64_t C,
                  double *out);
/* out[n, c*HW + k] = X[n, c*HW + k] * b[c]. out may alias X. */
void dnn_bias_multiply(const double *X, int64_t rows, int64_t cols, const double *b, int64_t C,
                       double *out);

#endif
