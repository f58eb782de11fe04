/* SPDX-License-Identifier: Apache-2.0
 * The fixed order in which a BSP (or SBP) round's payloads are added
 * (issue 25): a pairwise tree over the worker numbers 0..k-1 (under
 * dispatch=DYNAMIC, over the round's task numbers). A node covers the
 * workers [lo, hi); it is split at lo + p, p the largest power of two
 * below hi - lo, so the nodes are the aligned blocks of 1, 2, 4, ...
 * workers: ((w1 + w2) + (w3 + w4)) + ((w5 + w6) + w7) for k = 7. A node
 * whose workers do not push this round is left out (its sibling stands
 * for the parent: no 0 is ever added, so -0 stays -0).
 *
 * Every backend adds in this order: the local threads' server, rank 0 and
 * the worker ranks under Open MPI, which add their own workers' pushes
 * and their children's partial sums on the way to rank 0
 * (tp_mpi_tree.c). A group of workers sharing a rank is one node of the
 * tree, so where a sum is made never changes its bits. */
#include <stdlib.h>

#include "ps.h"

int64_t ps_tree_mid(int64_t lo, int64_t hi)
{
    int64_t n = hi - lo, p = 1;
    while (p * 2 < n)
        p *= 2;
    return lo + p;
}

Status ps_tree_sum_take(Interp *I, Value *slots, int64_t lo, int64_t hi, Value *out)
{
    *out = val_none();
    if (hi - lo <= 0)
        return ST_OK;
    if (hi - lo == 1) {
        *out = slots[lo];
        slots[lo] = val_none();
        return ST_OK;
    }
    int64_t mid = ps_tree_mid(lo, hi);
    Value pair[2];
    Status st = ps_tree_sum_take(I, slots, lo, mid, &pair[0]);
    if (st == ST_OK)
        st = ps_tree_sum_take(I, slots, mid, hi, &pair[1]);
    else
        pair[1] = val_none();
    if (st != ST_OK) {
        val_release(pair[0]);
        val_release(pair[1]);
        for (int64_t i = lo; i < hi; i++) {
            val_release(slots[i]);
            slots[i] = val_none();
        }
        return ST_ERR;
    }
    if (pair[0].kind == VAL_NONE || pair[1].kind == VAL_NONE) {
        *out = pair[0].kind == VAL_NONE ? pair[1] : pair[0];
        return ST_OK;
    }
    return ps_list_sum_take(I, pair, 2, out);
}

int64_t ps_tree_groups(int64_t k, int64_t ranks, int64_t *first)
{
    /* Start from the root and split the largest group (the leftmost of
     * equals) into the tree's two children until there are 'ranks'
     * groups or every group is one worker. */
    int64_t n = 1;
    first[0] = 0;
    while (n < ranks && n < k) {
        int64_t best = -1, bestlen = 1;
        for (int64_t g = 0; g < n; g++) {
            int64_t len = (g + 1 < n ? first[g + 1] : k) - first[g];
            if (len > bestlen) {
                best = g;
                bestlen = len;
            }
        }
        if (best < 0)
            break;
        int64_t lo = first[best], hi = best + 1 < n ? first[best + 1] : k;
        for (int64_t g = n; g > best + 1; g--)
            first[g] = first[g - 1];
        first[best + 1] = ps_tree_mid(lo, hi);
        n++;
    }
    return n;
}

bool ps_tree_off(void)
{
    const char *s = getenv("DML_PS_TREE");
    return s && s[0] == '0' && s[1] == '\0';
}
