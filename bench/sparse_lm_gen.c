/* SPDX-License-Identifier: Apache-2.0
 * Writes a random sparse regression problem as libsvm to stdout, for
 * bench/sparse_lm.sh (issue 31): rows x cols features, each a non-zero with
 * probability 'density' (gaps between non-zeros drawn geometrically, so the
 * time is in proportion to the non-zeros), values uniform in [-1, 1), the
 * label y = X beta + noise with beta_j = sin(j) and noise uniform in
 * [-0.01, 0.01). Indices ascending, values with 6 significant digits.
 *   sparse_lm_gen rows cols density seed > X.svm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t st;

static double unif(void)
{
    uint64_t z = (st += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: sparse_lm_gen rows cols density seed\n");
        return 2;
    }
    long long rows = atoll(argv[1]), cols = atoll(argv[2]);
    double d = atof(argv[3]);
    st = (uint64_t)atoll(argv[4]);
    if (rows < 1 || cols < 1 || !(d > 0 && d <= 1)) {
        fprintf(stderr, "sparse_lm_gen: bad arguments\n");
        return 2;
    }
    double lq = log1p(-d);
    long long *idx = malloc((size_t)cols * sizeof *idx);
    double *val = malloc((size_t)cols * sizeof *val);
    char *line = malloc((size_t)cols * 24 + 64);
    if (!idx || !val || !line)
        return 1;
    for (long long i = 0; i < rows; i++) {
        long long n = 0, j = -1;
        double y = 0;
        for (;;) {
            /* the gap to the next non-zero: geometric with parameter d */
            double u = unif();
            j += d >= 1 ? 1 : 1 + (long long)floor(log1p(-u) / lq);
            if (j >= cols)
                break;
            double v = (double)(float)(2 * unif() - 1);
            char tmp[32];
            snprintf(tmp, sizeof tmp, "%.6g", v);
            v = atof(tmp);  /* the value as the file holds it */
            if (v == 0)
                continue;
            idx[n] = j;
            val[n++] = v;
            y += v * sin((double)(j + 1));
        }
        y += 0.02 * unif() - 0.01;
        int len = snprintf(line, 64, "%.10g", y);
        for (long long k = 0; k < n; k++)
            len += sprintf(line + len, " %lld:%.6g", idx[k] + 1, val[k]);
        line[len++] = '\n';
        fwrite(line, 1, (size_t)len, stdout);
    }
    free(idx);
    free(val);
    free(line);
    return fflush(stdout) == 0 ? 0 : 1;
}
