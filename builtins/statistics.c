/* SPDX-License-Identifier: Apache-2.0
 * Statistics builtins: moment, cov, median, quantile, interQuartileMean
 * (weights are frequencies, as upstream), the distribution functions cdf,
 * icdf, pnorm/qnorm, pexp/qexp, pchisq/qchisq, pf/qf, pt/qt, grouped
 * aggregate() and contains(). Distribution functions work cell-wise on a
 * matrix target too. Thread-safe. */
#include "registry.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* ======================= vectors with optional weights =================== */

/* Borrow X (and W) as vectors of equal length. */
static Status vec_args(Interp *I, const BArgs *a, int ix, int iw, Matrix **x, Matrix **w)
{
    TRY(arg_matrix(I, a, ix, x));
    *w = NULL;
    if (iw >= 0) {
        TRY(arg_matrix(I, a, iw, w));
        if (mat_len(*w) != mat_len(*x))
            return err_set(I, "%s(): weights must have as many cells as the input: %lldx%lld vs %lldx%lld",
                           a->def->name, LL((*w)->rows), LL((*w)->cols), LL((*x)->rows), LL((*x)->cols));
    }
    if ((*x)->cols != 1 && (*x)->rows != 1)
        return err_set(I, "%s(): input must be a vector, got %lldx%lld", a->def->name, LL((*x)->rows),
                       LL((*x)->cols));
    return ST_OK;
}

/* moment(X, k) / moment(X, W, k): k-th central moment (population) */
static Status bi_moment(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *w;
    int64_t k;
    bool weighted = arg_given(a, 2);
    TRY(vec_args(I, a, 0, weighted ? 1 : -1, &x, &w));
    TRY(arg_int(I, a, weighted ? 2 : 1, 0, &k));
    if (k < 2 || k > 4)
        return err_set(I, "moment(): central moment order must be 2, 3 or 4, got %lld", LL(k));
    int64_t n = mat_len(x);
    double sw = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        double wi = w ? w->data[i] : 1.0;
        sw += wi;
        sx += wi * x->data[i];
    }
    double mu = sx / sw, m = 0;
    for (int64_t i = 0; i < n; i++) {
        double wi = w ? w->data[i] : 1.0, d = x->data[i] - mu;
        m += wi * (k == 2 ? d * d : k == 3 ? d * d * d : d * d * d * d);
    }
    *out = val_double(m / sw);
    return ST_OK;
}

/* cov(X, Y) / cov(X, Y, W): sample covariance */
static Status bi_cov(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *y, *w = NULL;
    TRY(vec_args(I, a, 0, 1, &x, &y));
    if (arg_given(a, 2))
        TRY(vec_args(I, a, 0, 2, &x, &w));
    int64_t n = mat_len(x);
    double sw = 0, sx = 0, sy = 0;
    for (int64_t i = 0; i < n; i++) {
        double wi = w ? w->data[i] : 1.0;
        sw += wi;
        sx += wi * x->data[i];
        sy += wi * y->data[i];
    }
    double mx = sx / sw, my = sy / sw, c = 0;
    for (int64_t i = 0; i < n; i++)
        c += (w ? w->data[i] : 1.0) * (x->data[i] - mx) * (y->data[i] - my);
    *out = val_double(c / (sw - 1));
    return ST_OK;
}

typedef struct VW { double v, w; } VW;

static int cmp_vw(const void *pa, const void *pb)
{
    double x = ((const VW *)pa)->v, y = ((const VW *)pb)->v;
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

/* Sorted (value, weight) pairs of X[, W]; weights are truncated to counts. */
static Status sorted_vw(Interp *I, const Matrix *x, const Matrix *w, VW **out, double *sumw)
{
    int64_t n = mat_len(x);
    VW *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    if (!p)
        return err_oom(I, n, 2);
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        p[i].v = x->data[i];
        p[i].w = w ? floor(w->data[i]) : 1.0;
        s += p[i].w;
    }
    qsort(p, (size_t)n, sizeof *p, cmp_vw);
    *out = p;
    *sumw = s;
    return ST_OK;
}

/* Upstream pickValue: the value at cumulative weight ceil(q * W); for the
 * median of an even total weight, the mean of the two middle values. */
static double pick_value(const VW *p, int64_t n, double sumw, double q, bool average)
{
    if (n == 0)
        return NAN;
    average = average && fmod(sumw, 2.0) == 0;
    double pos = ceil(q * sumw), t = 0;
    int64_t i = -1;
    do {
        i++;
        t += p[i].w;
    } while (t < pos && i < n - 1);
    if (average && t == pos) {
        int64_t j = i + 1;
        while (j < n && p[j].w == 0) j++;
        if (j < n)
            return (p[i].v + p[j].v) / 2;
    }
    return p[i].v;
}

static Status quantile_common(Interp *I, const BArgs *a, Value *out, bool median)
{
    Matrix *x, *w = NULL;
    int ip = median ? -1 : 1;
    if (median) {
        TRY(vec_args(I, a, 0, arg_given(a, 1) ? 1 : -1, &x, &w));
    } else {
        /* quantile(X, p) or quantile(X, W, p) */
        if (arg_given(a, 2)) {
            TRY(vec_args(I, a, 0, 1, &x, &w));
            ip = 2;
        } else {
            TRY(vec_args(I, a, 0, -1, &x, &w));
        }
    }
    VW *p;
    double sw;
    TRY(sorted_vw(I, x, w, &p, &sw));
    int64_t n = mat_len(x);
    if (median) {
        *out = val_double(pick_value(p, n, sw, 0.5, true));
        free(p);
        return ST_OK;
    }
    Value pv = a->v[ip];
    if (pv.kind == VAL_MATRIX) {
        Matrix *m = mat_alloc(I, pv.m->rows, pv.m->cols);
        if (!m) {
            free(p);
            return ST_ERR;
        }
        for (int64_t i = 0; i < mat_len(m); i++) {
            double q = pv.m->data[i];
            if (!(q >= 0 && q <= 1)) {
                free(p);
                mat_release(m);
                return err_set(I, "Quantile to be computed must be between 0 and 1, got %g", q);
            }
            m->data[i] = pick_value(p, n, sw, q, false);
        }
        free(p);
        *out = val_matrix_take(m);
        return ST_OK;
    }
    double q;
    if (arg_double(I, a, ip, 0, &q) != ST_OK) {
        free(p);
        return ST_ERR;
    }
    if (!(q >= 0 && q <= 1)) {
        free(p);
        return err_set(I, "Quantile to be computed must be between 0 and 1, got %g", q);
    }
    *out = val_double(pick_value(p, n, sw, q, false));
    free(p);
    return ST_OK;
}

/* median(X) / median(X, W) */
static Status bi_median(Interp *I, const BArgs *a, Value *out) { return quantile_common(I, a, out, true); }
/* quantile(X, p) / quantile(X, W, p); p scalar or a matrix of probabilities */
static Status bi_quantile(Interp *I, const BArgs *a, Value *out) { return quantile_common(I, a, out, false); }

/* interQuartileMean(X) / interQuartileMean(X, W) */
static Status bi_interQuartileMean(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *w;
    TRY(vec_args(I, a, 0, arg_given(a, 1) ? 1 : -1, &x, &w));
    VW *p;
    double sw;
    TRY(sorted_vw(I, x, w, &p, &sw));
    int64_t n = mat_len(x);
    if (n == 0) {
        free(p);
        *out = val_double(NAN);
        return ST_OK;
    }
    double q25d = 0.25 * sw, q75d = 0.75 * sw;
    double q25i = ceil(q25d), q75i = ceil(q75d);
    double t = 0;
    int64_t i = -1;
    while (i < n - 1 && t < q25i) {
        i++;
        t += p[i].w;
    }
    double rs = (t - q25d) * p[i < 0 ? 0 : i].v;
    while (i < n - 1 && t < q75i) {
        i++;
        t += p[i].w;
        rs += p[i].v * p[i].w;
    }
    rs -= (t - q75d) * p[i < 0 ? 0 : i].v;
    free(p);
    *out = val_double(rs / (sw * 0.5));
    return ST_OK;
}

/* ======================== distribution functions ======================== */

/* Regularised lower incomplete gamma P(s, x). */
static double gamma_p(double s, double x)
{
    if (x <= 0)
        return 0;
    if (isinf(x))
        return 1;
    double lg = lgamma(s);
    if (x < s + 1) {
        double ap = s, sum = 1.0 / s, del = sum;
        for (int n = 0; n < 10000; n++) {
            ap += 1;
            del *= x / ap;
            sum += del;
            if (fabs(del) < fabs(sum) * 1e-17)
                break;
        }
        return sum * exp(-x + s * log(x) - lg);
    }
    /* continued fraction for Q, Lentz */
    double b = x + 1 - s, c = 1 / DBL_MIN, d = 1 / b, h = d;
    for (int i = 1; i < 10000; i++) {
        double an = -i * (i - s);
        b += 2;
        d = an * d + b;
        if (fabs(d) < DBL_MIN) d = DBL_MIN;
        c = b + an / c;
        if (fabs(c) < DBL_MIN) c = DBL_MIN;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-17)
            break;
    }
    return 1 - exp(-x + s * log(x) - lg) * h;
}

/* Continued fraction of the incomplete beta function (Lentz). */
static double betacf(double a, double b, double x)
{
    double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
    if (fabs(d) < DBL_MIN) d = DBL_MIN;
    d = 1 / d;
    double h = d;
    for (int m = 1; m < 10000; m++) {
        int m2 = 2 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1 + aa * d;
        if (fabs(d) < DBL_MIN) d = DBL_MIN;
        c = 1 + aa / c;
        if (fabs(c) < DBL_MIN) c = DBL_MIN;
        d = 1 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1 + aa * d;
        if (fabs(d) < DBL_MIN) d = DBL_MIN;
        c = 1 + aa / c;
        if (fabs(c) < DBL_MIN) c = DBL_MIN;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-16)
            break;
    }
    return h;
}

/* Regularised incomplete beta I_x(a, b). */
static double beta_i(double a, double b, double x)
{
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2))
        return bt * betacf(a, b, x) / a;
    return 1 - bt * betacf(b, a, 1 - x) / b;
}

/* Inverse standard normal CDF: Wichura's AS241 (PPND16), ~1e-16 relative. */
static double norm_inv(double p)
{
    if (p <= 0) return p == 0 ? -INFINITY : NAN;
    if (p >= 1) return p == 1 ? INFINITY : NAN;
    double q = p - 0.5, r, v;
    if (fabs(q) <= 0.425) {
        r = 0.180625 - q * q;
        return q * (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r +
                         45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r +
                      133.14166789178437745) * r + 3.387132872796366608) /
               (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r +
                    21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r +
                 42.313330701600911252) * r + 1.0);
    }
    r = q < 0 ? p : 1 - p;
    r = sqrt(-log(r));
    if (r <= 5) {
        r -= 1.6;
        v = (((((((r * 7.7454501427834140764e-4 + .0227238449892691845833) * r + .24178072517745061177) * r +
                 1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r +
              4.6303378461565452959) * r + 1.42343711074968357734) /
            (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + .0151986665636164571966) * r +
                 .14810397642748007459) * r + .68976733498510000455) * r + 1.6763848301838038494) * r +
              2.05319162663775882187) * r + 1.0);
    } else {
        r -= 5;
        v = (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + .0012426609473880784386) * r +
                 .026532189526576123093) * r + .29656057182850489123) * r + 1.7848265399172913358) * r +
              5.4637849111641143699) * r + 6.6579046435011037772) /
            (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
                 7.868691311456132591e-4) * r + .0148753612908506148525) * r + .13692988092273580531) * r +
              .59983220655588793769) * r + 1.0);
    }
    return q < 0 ? -v : v;
}

typedef enum Dist { D_NORMAL, D_EXP, D_CHISQ, D_F, D_T } Dist;
typedef struct DistP { Dist d; double mean, sd, rate, df, df1, df2; } DistP;

static double dist_cdf(const DistP *p, double x)
{
    if (isnan(x)) return NAN;
    switch (p->d) {
    case D_NORMAL: return 0.5 * erfc(-(x - p->mean) / (p->sd * M_SQRT2));
    case D_EXP: return x <= 0 ? 0 : -expm1(-p->rate * x);
    case D_CHISQ: return x <= 0 ? 0 : gamma_p(p->df / 2, x / 2);
    case D_F:
        if (x <= 0) return 0;
        if (isinf(x)) return 1;
        return beta_i(p->df1 / 2, p->df2 / 2, p->df1 * x / (p->df1 * x + p->df2));
    case D_T: {
        if (isinf(x)) return x > 0 ? 1 : 0;
        /* tail = P(T > |x|); for small |x| use the complementary form so
         * df/(df+x^2) does not round to 1 */
        double x2 = x * x;
        double tail = x2 < p->df ? 0.5 * (1 - beta_i(0.5, p->df / 2, x2 / (p->df + x2)))
                                 : 0.5 * beta_i(p->df / 2, 0.5, p->df / (p->df + x2));
        return x > 0 ? 1 - tail : tail;
    }
    }
    return NAN;
}

/* Inverse of a continuous CDF by bracketing and bisection (monotone cdf). */
static double dist_inv(const DistP *p, double q)
{
    if (isnan(q) || q < 0 || q > 1) return NAN;
    switch (p->d) {
    case D_NORMAL: return p->mean + p->sd * norm_inv(q);
    case D_EXP: return q == 1 ? INFINITY : -log1p(-q) / p->rate;
    default: break;
    }
    bool pos = p->d != D_T;     /* support [0, inf) */
    if (q == 0) return pos ? 0 : -INFINITY;
    if (q == 1) return INFINITY;
    double lo = pos ? 0 : -1, hi = 1;
    while (dist_cdf(p, hi) < q && hi < 1e300) hi *= 2;
    while (!pos && dist_cdf(p, lo) > q && lo > -1e300) lo *= 2;
    for (int it = 0; it < 2000; it++) {
        double mid = 0.5 * (lo + hi);
        if (mid == lo || mid == hi) break;
        if (dist_cdf(p, mid) < q) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Parse the named distribution parameters; 'pnames' maps the parameter
 * slots of the calling builtin: target first, then any of mean sd rate df df1 df2 dist lower.tail. */
static Status dist_params(Interp *I, const BArgs *a, Dist fixed, DistP *p, bool *lower)
{
    char nb[32];
    int np = builtin_nparams(a->def);
    p->d = fixed;
    p->mean = 0; p->sd = 1; p->rate = 1; p->df = -1; p->df1 = -1; p->df2 = -1;
    *lower = true;
    for (int i = 1; i < np; i++) {
        builtin_param_name(a->def, i, nb, sizeof nb);
        if (!strcmp(nb, "dist")) {
            const char *s;
            TRY(arg_string(I, a, i, NULL, &s));
            if (!strcmp(s, "normal")) p->d = D_NORMAL;
            else if (!strcmp(s, "exp")) p->d = D_EXP;
            else if (!strcmp(s, "chisq")) p->d = D_CHISQ;
            else if (!strcmp(s, "f")) p->d = D_F;
            else if (!strcmp(s, "t")) p->d = D_T;
            else return err_set(I, "%s(): unknown distribution \"%s\" (expected normal, exp, chisq, f or t)",
                                a->def->name, s);
        } else if (!strcmp(nb, "lower.tail")) {
            TRY(arg_bool(I, a, i, true, lower));
        } else {
            double *slot = !strcmp(nb, "mean") ? &p->mean : !strcmp(nb, "sd") ? &p->sd
                         : !strcmp(nb, "rate") ? &p->rate : !strcmp(nb, "df") ? &p->df
                         : !strcmp(nb, "df1") ? &p->df1 : &p->df2;
            TRY(arg_double(I, a, i, *slot, slot));
        }
    }
    if ((int)p->d < 0)
        return err_set(I, "%s(): named parameter 'dist' missing", a->def->name);
    switch (p->d) {
    case D_NORMAL:
        if (!(p->sd > 0)) return err_set(I, "%s(): sd must be positive, got %g", a->def->name, p->sd);
        break;
    case D_EXP:
        if (!(p->rate > 0)) return err_set(I, "%s(): rate must be positive, got %g", a->def->name, p->rate);
        break;
    case D_CHISQ:
    case D_T:
        if (!(p->df > 0)) return err_set(I, "%s(): named parameter 'df' must be given and positive", a->def->name);
        break;
    case D_F:
        if (!(p->df1 > 0) || !(p->df2 > 0))
            return err_set(I, "%s(): named parameters 'df1' and 'df2' must be given and positive", a->def->name);
        break;
    }
    return ST_OK;
}

static Status dist_apply(Interp *I, const BArgs *a, Value *out, int fixed, bool inverse)
{
    DistP p;
    bool lower;
    TRY(dist_params(I, a, (Dist)fixed, &p, &lower));
    Value t = a->v[0];
    if (t.kind == VAL_MATRIX) {
        Matrix *m = mat_alloc(I, t.m->rows, t.m->cols);
        if (!m) return ST_ERR;
        for (int64_t i = 0; i < mat_len(m); i++) {
            double x = t.m->data[i];
            m->data[i] = inverse ? dist_inv(&p, lower ? x : 1 - x)
                                 : (lower ? dist_cdf(&p, x) : 1 - dist_cdf(&p, x));
        }
        *out = val_matrix_take(m);
        return ST_OK;
    }
    double x;
    TRY(arg_double(I, a, 0, 0, &x));
    if (inverse && !(x >= 0 && x <= 1))
        return err_set(I, "%s(): probability must be between 0 and 1, got %g", a->def->name, x);
    *out = val_double(inverse ? dist_inv(&p, lower ? x : 1 - x) : (lower ? dist_cdf(&p, x) : 1 - dist_cdf(&p, x)));
    return ST_OK;
}

/* cdf(target=q, dist=, mean=, sd=, rate=, df=, df1=, df2=, lower.tail=TRUE) */
static Status bi_cdf(Interp *I, const BArgs *a, Value *out)
{
    if (!arg_given(a, 1))
        return err_set(I, "cdf(): named parameter 'dist' missing");
    return dist_apply(I, a, out, -1, false);
}
/* icdf(target=p, dist=, ...) */
static Status bi_icdf(Interp *I, const BArgs *a, Value *out)
{
    if (!arg_given(a, 1))
        return err_set(I, "icdf(): named parameter 'dist' missing");
    return dist_apply(I, a, out, -1, true);
}
/* pnorm(target=q, mean=0, sd=1, lower.tail=TRUE) */
static Status bi_pnorm(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_NORMAL, false); }
/* qnorm(target=p, mean=0, sd=1) */
static Status bi_qnorm(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_NORMAL, true); }
/* pexp(target=q, rate=1, lower.tail=TRUE) */
static Status bi_pexp(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_EXP, false); }
/* qexp(target=p, rate=1) */
static Status bi_qexp(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_EXP, true); }
/* pchisq(target=q, df=, lower.tail=TRUE) */
static Status bi_pchisq(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_CHISQ, false); }
/* qchisq(target=p, df=) */
static Status bi_qchisq(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_CHISQ, true); }
/* pf(target=q, df1=, df2=, lower.tail=TRUE) */
static Status bi_pf(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_F, false); }
/* qf(target=p, df1=, df2=) */
static Status bi_qf(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_F, true); }
/* pt(target=q, df=, lower.tail=TRUE) */
static Status bi_pt(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_T, false); }
/* qt(target=p, df=) */
static Status bi_qt(Interp *I, const BArgs *a, Value *out) { return dist_apply(I, a, out, D_T, true); }

/* ============================ grouped aggregate ========================== */

typedef enum GFn { G_SUM, G_COUNT, G_MEAN, G_VAR, G_CM, G_MIN, G_MAX } GFn;

/* aggregate(target=X, groups=G, fn="sum", weights=W, ngroups=k, order=) */
static Status bi_aggregate(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x, *g, *w = NULL;
    const char *fn;
    int64_t ng = -1, order = 0;
    TRY(arg_matrix(I, a, 0, &x));
    TRY(arg_matrix(I, a, 1, &g));
    TRY(arg_string(I, a, 2, NULL, &fn));
    if (arg_given(a, 3))
        TRY(arg_matrix(I, a, 3, &w));
    TRY(arg_int(I, a, 4, -1, &ng));
    TRY(arg_int(I, a, 5, 0, &order));
    GFn f;
    if (!strcmp(fn, "sum")) f = G_SUM;
    else if (!strcmp(fn, "count")) f = G_COUNT;
    else if (!strcmp(fn, "mean")) f = G_MEAN;
    else if (!strcmp(fn, "variance")) f = G_VAR;
    else if (!strcmp(fn, "centralmoment")) f = G_CM;
    else if (!strcmp(fn, "min")) f = G_MIN;
    else if (!strcmp(fn, "max")) f = G_MAX;
    else return err_set(I, "aggregate(): unknown fn \"%s\" (expected sum, count, mean, variance, centralmoment, "
                        "min or max)", fn);
    if (f == G_CM && (order < 2 || order > 4))
        return err_set(I, "aggregate(): fn=\"centralmoment\" needs order=2, 3 or 4");
    int64_t R = x->rows, C = x->cols;
    if (x->cols != 1 && x->rows == 1 && mat_len(g) == C) { R = C; C = 1; }  /* row-vector target */
    if (mat_len(g) != R)
        return err_set(I, "aggregate(): groups must have one entry per row of target (%lld), got %lldx%lld", LL(R),
                       LL(g->rows), LL(g->cols));
    if (w && (w->rows * w->cols) != R * C)
        return err_set(I, "aggregate(): weights must have the dimensions of target");
    int64_t k = 0;
    for (int64_t i = 0; i < R; i++) {
        double v = g->data[i];
        if (isnan(v)) continue;
        if (!(v >= 1 && v < 9.0e15))
            return err_set(I, "aggregate(): group ids must be positive integers, got %g", v);
        if ((int64_t)v > k) k = (int64_t)v;
    }
    if (arg_given(a, 4) && ng < 0)
        return err_set(I, "aggregate(): ngroups must be non-negative, got %lld", LL(ng));
    if (ng >= 0) k = ng;
    Matrix *m = mat_alloc(I, k, C);
    double *s0 = calloc((size_t)(k * C > 0 ? k * C : 1), sizeof *s0);
    double *s1 = calloc((size_t)(k * C > 0 ? k * C : 1), sizeof *s1);
    if (!m || !s0 || !s1) {
        free(s0); free(s1);
        mat_release(m);
        return err_oom(I, k, C);
    }
    /* pass 1: weight sums and weighted sums (min/max in s1) */
    for (int64_t j = 0; j < k * C; j++)
        s1[j] = f == G_MIN ? INFINITY : f == G_MAX ? -INFINITY : 0;
    for (int64_t i = 0; i < R; i++) {
        double gv = g->data[i];
        if (isnan(gv) || (int64_t)gv > k) continue;
        int64_t gi = (int64_t)gv - 1;
        for (int64_t j = 0; j < C; j++) {
            double v = x->data[i * C + j], wi = w ? w->data[i * C + j] : 1.0;
            double *a0 = &s0[gi * C + j], *a1 = &s1[gi * C + j];
            *a0 += wi;
            if (f == G_MIN) *a1 = v < *a1 ? v : *a1;
            else if (f == G_MAX) *a1 = v > *a1 ? v : *a1;
            else *a1 += wi * v;
        }
    }
    for (int64_t j = 0; j < k * C; j++) {
        switch (f) {
        case G_SUM: m->data[j] = s1[j]; break;
        case G_COUNT: m->data[j] = s0[j]; break;
        case G_MIN: case G_MAX: m->data[j] = s0[j] > 0 ? s1[j] : NAN; break;
        /* mean; upstream's CM_COV_Object reports an empty group's mean as its
         * initial running mean, 0 (pass 2 recomputes its own means) */
        default: m->data[j] = s0[j] == 0 ? 0 : s1[j] / s0[j]; break;
        }
    }
    if (f == G_VAR || f == G_CM) {
        double *mu = s1;
        for (int64_t j = 0; j < k * C; j++) mu[j] = s1[j] / s0[j];
        for (int64_t j = 0; j < k * C; j++) m->data[j] = 0;
        for (int64_t i = 0; i < R; i++) {
            double gv = g->data[i];
            if (isnan(gv) || (int64_t)gv > k) continue;
            int64_t gi = (int64_t)gv - 1;
            for (int64_t j = 0; j < C; j++) {
                double d = x->data[i * C + j] - mu[gi * C + j], wi = w ? w->data[i * C + j] : 1.0;
                double pw = f == G_VAR || order == 2 ? d * d : order == 3 ? d * d * d : d * d * d * d;
                m->data[gi * C + j] += wi * pw;
            }
        }
        for (int64_t j = 0; j < k * C; j++)
            m->data[j] = f == G_VAR ? (s0[j] == 1 ? 0 : m->data[j] / (s0[j] - 1)) : m->data[j] / s0[j];
    }
    free(s0);
    free(s1);
    *out = val_matrix_take(m);
    return ST_OK;
}

/* contains(target=X, pattern=v): any cell equal to v (NaN matches NaN) */
static Status bi_contains(Interp *I, const BArgs *a, Value *out)
{
    Matrix *x;
    double pat;
    TRY(arg_matrix(I, a, 0, &x));
    if (!arg_given(a, 1))
        return err_set(I, "contains(): named parameter 'pattern' missing");
    TRY(arg_double(I, a, 1, 0, &pat));
    int64_t n = mat_len(x);
    bool found = false;
    if (isnan(pat)) {
        for (int64_t i = 0; i < n && !found; i++) found = isnan(x->data[i]);
    } else {
        for (int64_t i = 0; i < n && !found; i++) found = x->data[i] == pat;
    }
    *out = val_bool(found);
    return ST_OK;
}

const BuiltinDef bi_stats_table[] = {
    {"moment", bi_moment, "x,a,b", 2, BIND_POS, 1, 0},
    {"cov", bi_cov, "x,y,w", 2, BIND_POS, 1, 0},
    {"median", bi_median, "x,w", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"quantile", bi_quantile, "x,a,b", 2, BIND_POS, 1, 0},
    {"interQuartileMean", bi_interQuartileMean, "x,w", 1, BIND_POS, 1, BF_RT(RT_SCALAR)},
    {"cdf", bi_cdf, "target,dist,mean,sd,rate,df,df1,df2,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"icdf", bi_icdf, "target,dist,mean,sd,rate,df,df1,df2,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"pnorm", bi_pnorm, "target,mean,sd,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"qnorm", bi_qnorm, "target,mean,sd,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"pexp", bi_pexp, "target,rate,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"qexp", bi_qexp, "target,rate,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"pchisq", bi_pchisq, "target,df,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"qchisq", bi_qchisq, "target,df,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"pf", bi_pf, "target,df1,df2,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"qf", bi_qf, "target,df1,df2,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"pt", bi_pt, "target,df,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"qt", bi_qt, "target,df,lower.tail", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"aggregate", bi_aggregate, "target,groups,fn,weights,ngroups,order", 3, BIND_NAMED, 1, BF_NAMED_ONLY | BF_RT(RT_MATRIX)},
    {"groupedAggregate", bi_aggregate, "target,groups,fn,weights,ngroups,order", 3, BIND_NAMED, 1, BF_NAMED_ONLY},
    {"contains", bi_contains, "target,pattern", 1, BIND_NAMED, 1, BF_NAMED_ONLY},
    {NULL, NULL, NULL, 0, 0, 0, 0},
};
