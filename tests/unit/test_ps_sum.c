/* SPDX-License-Identifier: Apache-2.0
 * Unit tests for the list sums of builtins/paramserv/partition.c that the
 * BSP server adds its workers' gradients with: ps_add_into against a
 * reference loop that adds the lists one after the other, bit for bit, over
 * lengths around the block size and the threading threshold, 0 to 5 lists,
 * 1 to 4 threads, with values whose sum depends on the order of the adds and
 * NaN/Inf/-0 sprinkled in; ps_list_sum_take adds in place only in matrices
 * nobody else holds, leaves its other operands alone, and reports lists of
 * other lengths and shapes (consuming everything, which ASan's leak check
 * sees). Prints "N passed, N failed"; exits non-zero on failure. */
#include "../../builtins/paramserv/ps.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

/* Values of very different magnitudes (so the order of the adds shows in
 * the result), now and then NaN, +-Inf or -0. */
static double rnd_value(void)
{
    uint64_t r = rnd();
    switch (r % 97) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return -0.0;
    default: break;
    }
    double m = (double)(r >> 11) / 9007199254740992.0 - 0.5;
    return ldexp(m, (int)(r % 61) - 30);
}

static void test_add_into(void)
{
    static const int64_t lens[] = {0, 1, 7, 511, 512, 513, 1 << 16, (1 << 16) + 3, 200003};
    static const int threads[] = {1, 2, 3, 4};
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int64_t len = lens[li];
        size_t bytes = sizeof(double) * (size_t)(len > 0 ? len : 1);
        double *ys[5], *x = malloc(bytes), *want = malloc(bytes), *x0 = malloc(bytes);
        for (int l = 0; l < 5; l++) {
            ys[l] = malloc(bytes);
            for (int64_t j = 0; j < len; j++)
                ys[l][j] = rnd_value();
        }
        for (int64_t j = 0; j < len; j++)
            x0[j] = rnd_value();
        for (int ny = 0; ny <= 5; ny++) {
            memcpy(want, x0, bytes);
            for (int l = 0; l < ny; l++)
                for (int64_t j = 0; j < len; j++)
                    want[j] += ys[l][j];
            for (size_t ti = 0; ti < sizeof threads / sizeof threads[0]; ti++) {
                Interp I;
                interp_init(&I, NULL, 1);
                I.in_parallel = true;
                I.blas_threads = threads[ti];
                memcpy(x, x0, bytes);
                ps_add_into(&I, x, (const double *const *)ys, ny, len);
                bool same = memcmp(x, want, sizeof(double) * (size_t)len) == 0;
                check_report_(same, __FILE__, __LINE__, "ps_add_into len %lld, %d lists, %d threads",
                              (long long)len, ny, threads[ti]);
                interp_destroy(&I);
            }
        }
        for (int l = 0; l < 5; l++)
            free(ys[l]);
        free(x);
        free(want);
        free(x0);
    }
}

static Matrix *mat_fill(int64_t r, int64_t c)
{
    Matrix *m = mat_new_raw(r, c);
    for (int64_t i = 0; i < r * c; i++)
        m->data[i] = rnd_value();
    return m;
}

/* A list of two matrices, 300x250 (threaded) and 1x3. */
static List *grads_new(void)
{
    List *l = list_new(2, false);
    list_push_take(l, val_matrix_take(mat_fill(300, 250)), NULL);
    list_push_take(l, val_matrix_take(mat_fill(1, 3)), NULL);
    return l;
}

static bool same_cells(const Matrix *a, const Matrix *b)
{
    return a->rows == b->rows && a->cols == b->cols &&
           memcmp(a->data, b->data, sizeof(double) * (size_t)mat_len(a)) == 0;
}

static void test_list_sum(void)
{
    Interp I;
    interp_init(&I, NULL, 1);
    I.in_parallel = true;
    I.blas_threads = 2;

    /* Three lists; the first one's big matrix is held elsewhere too, so
     * that one is copied and the small one is added to in place. */
    List *g[3] = {grads_new(), grads_new(), grads_new()};
    List *copy[3];
    for (int l = 0; l < 3; l++)
        copy[l] = list_clone(g[l]);
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < 2; i++) {
            val_release(copy[l]->items[i]);
            copy[l]->items[i] = val_matrix_take(mat_clone(&I, g[l]->items[i].m));
        }
    Matrix *held = g[0]->items[0].m, *small = g[0]->items[1].m;
    obj_retain(&held->h);
    for (int l = 1; l < 3; l++)
        obj_retain(&g[l]->h);
    Value lists[3] = {val_list_take(g[0]), val_list_take(g[1]), val_list_take(g[2])};
    Value out;
    CHECK(ps_list_sum_take(&I, lists, 3, &out) == ST_OK);
    CHECK(lists[0].kind == VAL_NONE && lists[1].kind == VAL_NONE && lists[2].kind == VAL_NONE);
    for (int i = 0; i < 2; i++) {
        const Matrix *o = out.l->items[i].m;
        Matrix *want = mat_clone(&I, copy[0]->items[i].m);
        for (int l = 1; l < 3; l++)
            for (int64_t j = 0; j < mat_len(want); j++)
                want->data[j] += copy[l]->items[i].m->data[j];
        CHECK(same_cells(o, want));
        mat_release(want);
    }
    CHECK(out.l->items[0].m != held);           /* shared: copied */
    CHECK(same_cells(held, copy[0]->items[0].m)); /* ... and left alone */
    CHECK(out.l->items[1].m == small);          /* unshared: in place */
    for (int l = 1; l < 3; l++)
        for (int i = 0; i < 2; i++)
            CHECK(same_cells(g[l]->items[i].m, copy[l]->items[i].m));
    val_release(out);
    mat_release(held);
    for (int l = 1; l < 3; l++)
        list_release(g[l]);

    /* One list: itself. */
    List *one = grads_new();
    Value l1[1] = {val_list_take(one)};
    CHECK(ps_list_sum_take(&I, l1, 1, &out) == ST_OK);
    CHECK(out.l == one && l1[0].kind == VAL_NONE);
    val_release(out);

    /* Other lengths, other shapes: an error, everything consumed. */
    List *shorter = list_new(1, false);
    list_push_take(shorter, val_matrix_take(mat_fill(300, 250)), NULL);
    Value bad[2] = {val_list_take(grads_new()), val_list_take(shorter)};
    CHECK(ps_list_sum_take(&I, bad, 2, &out) == ST_ERR);
    CHECK_STR(I.err.msg, "paramserv: cannot add gradient lists of lengths 2 and 1");
    CHECK(bad[0].kind == VAL_NONE && bad[1].kind == VAL_NONE);
    err_clear(&I);
    List *other = list_new(2, false);
    list_push_take(other, val_matrix_take(mat_fill(300, 250)), NULL);
    list_push_take(other, val_matrix_take(mat_fill(3, 1)), NULL);
    Value bad2[2] = {val_list_take(grads_new()), val_list_take(other)};
    CHECK(ps_list_sum_take(&I, bad2, 2, &out) == ST_ERR);
    CHECK_STR(I.err.msg, "paramserv: gradient 2 is 1x3 in one push and 3x1 in another");
    err_clear(&I);

    /* ps_list_add_take: NONE + g clones g's list; acc + g adds in place. */
    List *g0 = grads_new(), *g1 = grads_new();
    Value acc;
    CHECK(ps_list_add_take(&I, val_none(), g0, &acc) == ST_OK);
    CHECK(acc.l != g0 && acc.l->items[0].m == g0->items[0].m);
    list_release(g0);
    Matrix *want = mat_clone(&I, acc.l->items[0].m);
    for (int64_t j = 0; j < mat_len(want); j++)
        want->data[j] += g1->items[0].m->data[j];
    CHECK(ps_list_add_take(&I, acc, g1, &acc) == ST_OK);
    CHECK(same_cells(acc.l->items[0].m, want));
    mat_release(want);
    val_release(acc);
    list_release(g1);

    for (int l = 0; l < 3; l++)
        list_release(copy[l]);
    interp_destroy(&I);
}

/* A list of one 1x1 matrix holding x. */
static Value one(double x)
{
    List *l = list_new(1, false);
    Matrix *m = mat_new_raw(1, 1);
    m->data[0] = x;
    list_push_take(l, val_matrix_take(m), NULL);
    return val_list_take(l);
}

/* The round's order (tree.c): pairwise up aligned blocks, absent slots
 * left out. Values where the order shows in the bits: 1e16 + 1 rounds the
 * 1 away, so ((a + b) + (c + d)) differs from ((a + b) + c) + d. */
static void test_tree_sum(void)
{
    Interp I;
    interp_init(&I, NULL, 1);
    CHECK(ps_tree_mid(0, 2) == 1 && ps_tree_mid(0, 5) == 4 && ps_tree_mid(0, 8) == 4 && ps_tree_mid(4, 7) == 6 &&
          ps_tree_mid(3, 5) == 4);
    /* (1e16 + 1) + (1 + 1) = 1e16 + 2 (exact); one after the other, each 1
     * rounds away (the doubles near 1e16 are 2 apart): 1e16. */
    double x[] = {1e16, 1, 1, 1};
    Value s[4];
    for (int i = 0; i < 4; i++)
        s[i] = one(x[i]);
    Value out;
    CHECK(ps_tree_sum_take(&I, s, 0, 4, &out) == ST_OK);
    CHECK(out.kind == VAL_LIST && out.l->items[0].m->data[0] == 1e16 + 2);
    val_release(out);
    for (int i = 0; i < 4; i++)
        CHECK(s[i].kind == VAL_NONE);
    /* Slot 1 absent: 1e16 + (1 + 1); slot 3 absent: (1e16 + 1) + 1. */
    for (int gap = 1; gap <= 3; gap += 2) {
        for (int i = 0; i < 4; i++)
            s[i] = i == gap ? val_none() : one(x[i]);
        CHECK(ps_tree_sum_take(&I, s, 0, 4, &out) == ST_OK);
        CHECK(out.kind == VAL_LIST && out.l->items[0].m->data[0] == (gap == 1 ? 1e16 + 2 : 1e16));
        val_release(out);
    }
    /* All absent: NONE. */
    Value none[3] = {val_none(), val_none(), val_none()};
    CHECK(ps_tree_sum_take(&I, none, 0, 3, &out) == ST_OK && out.kind == VAL_NONE);
    /* Groups: nodes of the tree, the largest split first. */
    int64_t f[4];
    CHECK(ps_tree_groups(8, 2, f) == 2 && f[0] == 0 && f[1] == 4);
    CHECK(ps_tree_groups(6, 2, f) == 2 && f[1] == 4);
    CHECK(ps_tree_groups(6, 3, f) == 3 && f[1] == 2 && f[2] == 4);
    CHECK(ps_tree_groups(5, 3, f) == 3 && f[1] == 2 && f[2] == 4);
    CHECK(ps_tree_groups(3, 4, f) == 3 && f[1] == 1 && f[2] == 2);
    CHECK(ps_tree_groups(7, 1, f) == 1 && f[0] == 0);
    interp_destroy(&I);
}

int main(void)
{
    test_add_into();
    test_list_sum();
    test_tree_sum();
    return CHECK_DONE();
}
