/* SPDX-License-Identifier: Apache-2.0
 * Winograd F(4x4, 5x5) for the three passes of conv2d (dnn_winograd.c),
 * called by dnn_kernels.c before its im2col path. Each returns 0 when it
 * computed the call, -1 when out of memory, and 1 when it did not take it
 * (not a shape or channel count it pays for, no images, or an Inf or NaN
 * among the operands): the caller then runs im2col. In single precision
 * (blas_single()) the tiles, transforms and products are float. Same
 * arguments as dnn_conv2d, dnn_conv2d_backward_filter and
 * dnn_conv2d_backward_data. */
#ifndef DML_BUILTINS_DNN_WINOGRAD_H
#define DML_BUILTINS_DNN_WINOGRAD_H

#include "dnn_kernels.h"

int dnn_wg_forward(const DnnGeom *g, const double *X, const double *Wt, double *out);
int dnn_wg_backward_filter(const DnnGeom *g, const double *X, const double *dout, double *dW);
int dnn_wg_backward_data(const DnnGeom *g, const double *Wt, const double *dout, double *dX);

#endif
