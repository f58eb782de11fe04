#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# Independent reference values for the forward-value tests of the nn layers
# that have no hand-worked example (tests/nn/values_*.dml). Written straight
# from the definitions with explicit loops in plain Python (no numpy), not
# from the DML code. Inputs are deterministic: the k-th cell (k = 1, 2, ...
# in row-major order) of X is sin(k), of W is 0.5*cos(k), of b is k/10, the
# same formulas the tests build with seq(). Run: python3 tests/nn/lib/ref_values.py
import math


def cells(n, f):
    return [f(k) for k in range(1, n + 1)]


def conv1(x, H, W, w, Hf, Wf, sh, sw, ph, pw):
    """Cross-correlation of one H x W map (flat, row-major) with one filter."""
    Ho = (H + 2*ph - Hf) // sh + 1
    Wo = (W + 2*pw - Wf) // sw + 1
    o = []
    for i in range(Ho):
        for j in range(Wo):
            s = 0.0
            for a in range(Hf):
                for bb in range(Wf):
                    r, c = i*sh + a - ph, j*sw + bb - pw
                    if 0 <= r < H and 0 <= c < W:
                        s += x[r*W + c] * w[a*Wf + bb]
            o.append(s)
    return o


def convT1(x, H, W, w, Hf, Wf, sh, sw, ph, pw, oph, opw):
    """Transposed convolution of one map: scatter x[i,j]*w, crop the padding."""
    Ho = sh*(H-1) - 2*ph + Hf + oph
    Wo = sw*(W-1) - 2*pw + Wf + opw
    o = [0.0] * (Ho * Wo)
    for i in range(H):
        for j in range(W):
            for a in range(Hf):
                for bb in range(Wf):
                    r, c = i*sh + a - ph, j*sw + bb - pw
                    if 0 <= r < Ho and 0 <= c < Wo:
                        o[r*Wo + c] += x[i*W + j] * w[a*Wf + bb]
    return o


def depthwise(N, C, Hin, Win, M, Hf, Wf, sh, sw, ph, pw):
    X = cells(N*C*Hin*Win, math.sin)
    W = cells(C*M*Hf*Wf, lambda k: 0.5*math.cos(k))
    b = cells(C*M, lambda k: k/10)
    HW, F = Hin*Win, Hf*Wf
    out = []
    for n in range(N):
        for c in range(C):
            x = X[(n*C + c)*HW:(n*C + c + 1)*HW]
            for m in range(M):
                w = W[(c*M + m)*F:(c*M + m + 1)*F]
                out += [v + b[c*M + m] for v in conv1(x, Hin, Win, w, Hf, Wf, sh, sw, ph, pw)]
    return out


def depthwise_T(N, C, Hin, Win, M, Hf, Wf, sh, sw, ph, pw, oph, opw):
    G = C // M
    X = cells(N*C*Hin*Win, math.sin)
    W = cells(G*M*Hf*Wf, lambda k: 0.5*math.cos(k))
    b = cells(G, lambda k: k/10)
    HW, F = Hin*Win, Hf*Wf
    out = []
    for n in range(N):
        for g in range(G):
            acc = None
            for m in range(M):
                c = g*M + m
                x = X[(n*C + c)*HW:(n*C + c + 1)*HW]
                w = W[(g*M + m)*F:(g*M + m + 1)*F]
                o = convT1(x, Hin, Win, w, Hf, Wf, sh, sw, ph, pw, oph, opw)
                acc = o if acc is None else [p + q for p, q in zip(acc, o)]
            out += [v + b[g] for v in acc]
    return out


def layer_norm(N, D, eps):
    X = cells(N*D, math.sin)
    g = cells(D, lambda k: 0.5*math.cos(k))
    b = cells(D, lambda k: k/10)
    out = []
    for n in range(N):
        row = X[n*D:(n+1)*D]
        mu = sum(row) / D
        var = sum((v - mu)**2 for v in row) / D
        out += [g[j]*(row[j] - mu)/math.sqrt(var + eps) + b[j] for j in range(D)]
    return out


def multi_attention(B, T, H, D):
    """context = softmax(Q_h K_h' / sqrt(D)) V_h per sequence and head; no dropout."""
    n = T*H*D
    Q = cells(B*n, math.sin)
    K = cells(B*n, lambda k: 0.5*math.cos(k))
    V = cells(B*n, lambda k: k/10)
    at = lambda X, i, t, h, d: X[i*n + t*H*D + h*D + d]
    ctx = [0.0] * (B*n)
    att = []
    for i in range(B):
        for h in range(H):
            for t in range(T):
                s = [sum(at(Q, i, t, h, d)*at(K, i, u, h, d) for d in range(D)) / math.sqrt(D)
                     for u in range(T)]
                mx = max(s)
                e = [math.exp(x - mx) for x in s]
                p = [x / sum(e) for x in e]
                att += p
                for d in range(D):
                    ctx[i*n + t*H*D + h*D + d] = sum(p[u]*at(V, i, u, h, d) for u in range(T))
    return ctx, att


def show(name, A):
    """Prints the values as a DML string literal, four numbers a line."""
    print("#", name, len(A), "values")
    parts = [" ".join(repr(v) for v in A[i:i+4]) for i in range(0, len(A), 4)]
    print("\n  + ".join('"' + p + (" " if i + 1 < len(parts) else "") + '"'
                          for i, p in enumerate(parts)))


if __name__ == "__main__":
    show("conv2d_depthwise cfg1 N=1 C=2 3x3 M=2 2x2 s1 p0",
         depthwise(1, 2, 3, 3, 2, 2, 2, 1, 1, 0, 0))
    show("conv2d_depthwise cfg2 N=2 C=2 3x4 M=1 2x3 s(2,1) p(1,1)",
         depthwise(2, 2, 3, 4, 1, 2, 3, 2, 1, 1, 1))
    show("conv2d_transpose_depthwise cfg1 N=1 C=2 2x2 M=2 2x2 s1 p0 op0",
         depthwise_T(1, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0))
    show("conv2d_transpose_depthwise cfg2 N=1 C=4 2x3 M=2 3x2 s(2,1) p(1,0) op(1,0)",
         depthwise_T(1, 4, 2, 3, 2, 3, 2, 2, 1, 1, 0, 1, 0))
    show("layer_norm N=2 D=4 eps=1e-5", layer_norm(2, 4, 1e-5))
    ctx, att = multi_attention(2, 3, 2, 2)
    show("multi_attention context B=2 T=3 H=2 D=2", ctx)
    show("multi_attention attention B=2 T=3 H=2 D=2", att)
