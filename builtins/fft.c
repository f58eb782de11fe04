/* SPDX-License-Identifier: Apache-2.0
 * Discrete Fourier transforms as upstream's natives (LibMatrixFourier,
 * LibMatrixSTFT), all multi-return [re, im]:
 *   fft(X)                 2-D transform (every row, then every column)
 *   ifft(re[, im])         its inverse (scaled by 1/(rows*cols))
 *   fft_linearized(X)      1-D transform of each row, a signal of ncol samples
 *   ifft_linearized(re[, im])
 *   stft(re[, im], windowSize, overlap)
 * Upstream's fft takes a real input only ("... only defined for real
 * inputs."); ifft takes an optional imaginary part. Lengths must be powers of
 * two, as upstream (radix-2 only). Forward sign exp(-2 pi i jk/n), as numpy.
 * Thread-safe: all state comes from the Interp. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/matrix.h"

static bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* Twiddle table for length n (a power of two): tw[k] = exp(-2 pi i k/n),
 * k < n/2, each from its own angle (no drift). NULL when out of memory. */
static double *fft_twiddles(int64_t n)
{
    int64_t h = n / 2 > 0 ? n / 2 : 1;
    double *tw = malloc(sizeof *tw * 2 * (size_t)h);
    if (!tw)
        return NULL;
    for (int64_t k = 0; k < n / 2; k++) {
        double ang = -2 * M_PI * (double)k / (double)n;
        tw[2 * k] = cos(ang);
        tw[2 * k + 1] = sin(ang);
    }
    return tw;
}

/* In-place radix-2 transform of the n (a power of two) contiguous complex
 * values re[], im[] with the table of fft_twiddles(n); the inverse one
 * conjugates the twiddles and scales by 1/n. */
static void fft_1d(double *re, double *im, int64_t n, const double *tw, bool inverse)
{
    for (int64_t i = 1, j = 0; i < n; i++) {        /* bit-reversal permutation */
        int64_t bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j |= bit;
        if (i < j) {
            double t = re[i];
            re[i] = re[j];
            re[j] = t;
            t = im[i];
            im[i] = im[j];
            im[j] = t;
        }
    }
    double sg = inverse ? -1 : 1;
    for (int64_t len = 2; len <= n; len <<= 1) {
        int64_t half = len / 2, tstep = n / len;
        for (int64_t i = 0; i < n; i += len)
            for (int64_t k = 0; k < half; k++) {
                double wr = tw[2 * k * tstep], wi = sg * tw[2 * k * tstep + 1];
                int64_t p = i + k, q = i + k + half;
                double xr = re[q] * wr - im[q] * wi, xi = re[q] * wi + im[q] * wr;
                re[q] = re[p] - xr;
                im[q] = im[p] - xi;
                re[p] += xr;
                im[p] += xi;
            }
    }
    if (inverse)
        for (int64_t i = 0; i < n; i++) {
            re[i] /= (double)n;
            im[i] /= (double)n;
        }
}

static const char *upname(const BArgs *a, char *buf, size_t cap)
{
    const char *name = a->def->name;
    size_t k = 0;
    for (; name[k] && k + 1 < cap; k++)
        buf[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
    buf[k] = '\0';
    return buf;
}

/* The checks of upstream's validation, in its order; *im is NULL when no
 * imaginary part was given. */
static Status fft_inputs(Interp *I, const BArgs *a, bool takes_im, bool linearized, Matrix **re, Matrix **im)
{
    char up[32];
    *im = NULL;
    TRY(arg_matrix(I, a, 0, re));
    if ((*re)->rows == 0 || (*re)->cols == 0)
        return err_set(I, "The first argument to %s cannot be an empty matrix.", upname(a, up, sizeof up));
    if (arg_given(a, 1)) {
        if (!takes_im)
            return err_set(I, "Too many arguments. This FFT implementation is only defined for real inputs.");
        TRY(arg_matrix(I, a, 1, im));
        if ((*im)->rows == 0 || (*im)->cols == 0)
            return err_set(I, "The second argument to %s cannot be an empty matrix.", upname(a, up, sizeof up));
        if ((*im)->rows != (*re)->rows || (*im)->cols != (*re)->cols)
            return err_set(I, "The real and imaginary part of the provided matrix are of different dimensions. "
                           "(%lldx%lld vs %lldx%lld)", (long long)(*re)->rows, (long long)(*re)->cols,
                           (long long)(*im)->rows, (long long)(*im)->cols);
    }
    if (linearized && !pow2((*re)->cols))
        return err_set(I, "This %s implementation is only defined for matrices with columns that are powers of 2. "
                       "(ncol = %lld)", upname(a, up, sizeof up), (long long)(*re)->cols);
    if (!linearized && (!pow2((*re)->rows) || !pow2((*re)->cols)))
        return err_set(I, "This FFT implementation is only defined for matrices with dimensions that are powers "
                       "of 2. (%lldx%lld)", (long long)(*re)->rows, (long long)(*re)->cols);
    return ST_OK;
}

static Status fft_common(Interp *I, const BArgs *a, Value *out, bool inverse, bool linearized)
{
    Matrix *re, *im;
    TRY(fft_inputs(I, a, inverse, linearized, &re, &im));
    int64_t R = re->rows, C = re->cols;
    Value res[2];
    Matrix *o[2];
    TRY(bi_alloc_outs(I, (const OutShape[]){{R, C, false}, {R, C, true}}, 2, res, o));
    memcpy(o[0]->data, re->data, sizeof(double) * (size_t)(R * C));
    if (im)
        memcpy(o[1]->data, im->data, sizeof(double) * (size_t)(R * C));
    double *twr = fft_twiddles(C), *twc = linearized ? NULL : fft_twiddles(R);
    double *col = linearized ? NULL : malloc(sizeof *col * 2 * (size_t)R);
    if (!twr || (!linearized && (!twc || !col))) {
        free(twr);
        free(twc);
        free(col);
        val_release(res[0]);
        val_release(res[1]);
        return err_oom(I, R, C);
    }
    for (int64_t i = 0; i < R; i++)
        fft_1d(o[0]->data + i * C, o[1]->data + i * C, C, twr, inverse);
    /* columns: gathered into a contiguous buffer, transformed, scattered */
    for (int64_t j = 0; !linearized && j < C; j++) {
        for (int64_t i = 0; i < R; i++) {
            col[i] = o[0]->data[i * C + j];
            col[R + i] = o[1]->data[i * C + j];
        }
        fft_1d(col, col + R, R, twc, inverse);
        for (int64_t i = 0; i < R; i++) {
            o[0]->data[i * C + j] = col[i];
            o[1]->data[i * C + j] = col[R + i];
        }
    }
    free(twr);
    free(twc);
    free(col);
    bi_set_outs_take(a, out, res, 2);
    return ST_OK;
}

static Status bi_fft(Interp *I, const BArgs *a, Value *out) { return fft_common(I, a, out, false, false); }
static Status bi_ifft(Interp *I, const BArgs *a, Value *out) { return fft_common(I, a, out, true, false); }
static Status bi_fft_lin(Interp *I, const BArgs *a, Value *out) { return fft_common(I, a, out, false, true); }
static Status bi_ifft_lin(Interp *I, const BArgs *a, Value *out) { return fft_common(I, a, out, true, true); }

/* [re, im] = stft(re, windowSize, overlap) or stft(re, im, windowSize, overlap).
 * Each row of the input is cut into frames of windowSize samples that start
 * windowSize - overlap apart (the last one zero-padded), each frame
 * transformed (no window function, as upstream); the result has one frame per
 * row: (nrow * frames) x windowSize, the frames of input row 1 first. */
static Status bi_stft(Interp *I, const BArgs *a, Value *out)
{
    Matrix *re, *im = NULL;
    int64_t w, ov;
    TRY(arg_matrix(I, a, 0, &re));
    if (arg_given(a, 3)) {
        TRY(arg_matrix(I, a, 1, &im));
        TRY(arg_int(I, a, 2, 0, &w));
        TRY(arg_int(I, a, 3, 0, &ov));
    } else {
        if (arg_given(a, 1) && a->v[1].kind == VAL_MATRIX)
            return err_set(I, "stft(): with an imaginary part, give windowSize and overlap too: "
                           "stft(re, im, windowSize, overlap)");
        TRY(arg_int(I, a, 1, 0, &w));
        TRY(arg_int(I, a, 2, 0, &ov));
    }
    if (!pow2(w))
        return err_set(I, "This FFT implementation is only defined for matrices with dimensions that are powers "
                       "of 2. The window size (%lld) is not a power of two", (long long)w);
    if (w <= ov)
        return err_set(I, "Overlap can't be larger than or equal to the window size. (windowSize = %lld, "
                       "overlap = %lld)", (long long)w, (long long)ov);
    if (re->rows == 0 || re->cols == 0)
        return err_set(I, "The first argument to STFT cannot be an empty matrix.");
    if (im && (im->rows != re->rows || im->cols != re->cols))
        return err_set(I, "The real and imaginary part of the provided matrix are of different dimensions. "
                       "(%lldx%lld vs %lldx%lld)", (long long)re->rows, (long long)re->cols,
                       (long long)im->rows, (long long)im->cols);
    int64_t R = re->rows, C = re->cols, step, span;
    if (C <= ov)
        return err_set(I, "stft(): each row must be longer than the overlap (ncol = %lld, overlap = %lld)",
                       (long long)C, (long long)ov);
    /* A negative overlap leaves gaps between frames (as upstream); one so
     * large that the frame step overflows is refused. */
    if (__builtin_sub_overflow(w, ov, &step) || __builtin_sub_overflow(C, ov, &span))
        return err_set(I, "stft(): overlap %lld is out of range", (long long)ov);
    /* span > 0 and step > 0, so frames >= 1; sizes checked below */
    int64_t frames = (span - 1) / step + 1, nf, cells;
    if (__builtin_mul_overflow(frames, R, &nf) || __builtin_mul_overflow(nf, w, &cells))
        return err_oom(I, R * frames, w);
    Value res[2];
    Matrix *o[2];
    TRY(bi_alloc_outs(I, (const OutShape[]){{nf, w, true}, {nf, w, true}}, 2, res, o));
    double *tw = fft_twiddles(w);
    if (!tw) {
        val_release(res[0]);
        val_release(res[1]);
        return err_oom(I, nf, w);
    }
    for (int64_t h = 0; h < R; h++)
        for (int64_t f = 0; f < frames; f++) {
            int64_t row = h * frames + f, start = f * step;
            /* gaps (negative overlap) can put the last frames past the end */
            int64_t n = start >= C ? 0 : start + w <= C ? w : C - start;
            if (n > 0) {    /* (a frame past the end is not even addressed) */
                memcpy(o[0]->data + row * w, re->data + h * C + start, sizeof(double) * (size_t)n);
                if (im)
                    memcpy(o[1]->data + row * w, im->data + h * C + start, sizeof(double) * (size_t)n);
            }
            fft_1d(o[0]->data + row * w, o[1]->data + row * w, w, tw, false);
        }
    free(tw);
    bi_set_outs_take(a, out, res, 2);
    return ST_OK;
}

const BuiltinDef bi_fft_table[] = {
    {"fft", bi_fft, "re,im", 1, BIND_POS, 2, BF_MULTI},
    {"ifft", bi_ifft, "re,im", 1, BIND_POS, 2, BF_MULTI},
    {"fft_linearized", bi_fft_lin, "re,im", 1, BIND_POS, 2, BF_MULTI},
    {"ifft_linearized", bi_ifft_lin, "re,im", 1, BIND_POS, 2, BF_MULTI},
    {"stft", bi_stft, "re,im,windowSize,overlap", 3, BIND_POS, 2, BF_MULTI},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
