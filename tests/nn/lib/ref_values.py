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


def sigm(x):
    return 1 / (1 + math.exp(-x))


def recurrent_inputs(N, T, D, M, G):
    """X (N x T*D), W ((D+M) x G*M), b (1 x G*M), out0 (N x M) as lists of rows."""
    Xf = cells(N*T*D, math.sin)
    Wf = cells((D+M)*G*M, lambda k: 0.5*math.cos(k))
    bf = cells(G*M, lambda k: k/10)
    o0 = cells(N*M, math.sin)
    X = [Xf[n*T*D:(n+1)*T*D] for n in range(N)]
    W = [Wf[i*G*M:(i+1)*G*M] for i in range(D+M)]
    h0 = [o0[n*M:(n+1)*M] for n in range(N)]
    return X, W, bf, h0


def gates(x, h, W, b, cols):
    """a[j] = sum_i cbind(x, h)[i] * W[i][j] + b[j] for the given columns j."""
    z = x + h
    return [sum(z[i]*W[i][j] for i in range(len(z))) + b[j] for j in cols]


def gru(N, T, D, M):
    """GRU, gates reset, update, candidate; reset applied before the recurrent product.
    Returns the outputs of all steps, N rows of T*M."""
    X, W, b, h0 = recurrent_inputs(N, T, D, M, 3)
    out = []
    for n in range(N):
        h = h0[n]
        row = []
        for t in range(T):
            x = X[n][t*D:(t+1)*D]
            r = [sigm(v) for v in gates(x, h, W, b, range(0, M))]
            z = [sigm(v) for v in gates(x, h, W, b, range(M, 2*M))]
            rh = [r[j]*h[j] for j in range(M)]
            nn = [math.tanh(v) for v in gates(x, rh, W, b, range(2*M, 3*M))]
            h = [(1 - z[j])*nn[j] + z[j]*h[j] for j in range(M)]
            row += h
        out += row
    return out


def lstm(X, W, b, h0, c0, D, M):
    """LSTM over the rows of X (lists), gates i, f, o, g. Returns outputs of all
    steps (row lists) and the final cell states."""
    outs, cs = [], []
    for n in range(len(X)):
        h, c = h0[n], c0[n]
        T = len(X[n]) // D
        row = []
        for t in range(T):
            x = X[n][t*D:(t+1)*D]
            a = gates(x, h, W, b, range(4*M))
            i = [sigm(v) for v in a[0:M]]
            f = [sigm(v) for v in a[M:2*M]]
            o = [sigm(v) for v in a[2*M:3*M]]
            g = [math.tanh(v) for v in a[3*M:4*M]]
            c = [f[j]*c[j] + i[j]*g[j] for j in range(M)]
            h = [o[j]*math.tanh(c[j]) for j in range(M)]
            row += h
        outs.append(row)
        cs.append(c)
    return outs, cs


def bilstm(N, T, D, M):
    """Bidirectional LSTM: W = cbind(W_forward, W_backward) ((D+M) x 8M), b likewise,
    out0 = c0 = cbind(forward, backward) state (N x 2M). Output of step t is
    cbind(forward h_t, backward h_t), the backward direction running from step T
    down to 1. Returns all outputs (N rows of T*2M) and the final c (N x 2M)."""
    Xf = cells(N*T*D, math.sin)
    Wf = cells((D+M)*8*M, lambda k: 0.5*math.cos(k))
    bf = cells(8*M, lambda k: k/10)
    s0 = cells(N*2*M, math.sin)
    X = [Xf[n*T*D:(n+1)*T*D] for n in range(N)]
    Wrows = [Wf[i*8*M:(i+1)*8*M] for i in range(D+M)]
    h0 = [s0[n*2*M:(n+1)*2*M] for n in range(N)]
    c0 = [[0.5*v for v in r] for r in h0]
    Wa = [r[:4*M] for r in Wrows]
    Wb = [r[4*M:] for r in Wrows]
    Xr = [sum([x[t*D:(t+1)*D] for t in reversed(range(T))], []) for x in X]
    of, cf = lstm(X, Wa, bf[:4*M], [r[:M] for r in h0], [r[:M] for r in c0], D, M)
    ob, cb = lstm(Xr, Wb, bf[4*M:], [r[M:] for r in h0], [r[M:] for r in c0], D, M)
    out, cfin = [], []
    for n in range(N):
        for t in range(T):
            out += of[n][t*M:(t+1)*M] + ob[n][(T-1-t)*M:(T-t)*M]
        cfin += cf[n] + cb[n]
    return out, cfin


GC_EDGES = [(1, 2), (2, 3), (3, 1), (1, 3), (2, 1), (4, 1)]
GC_WEIGHTS = [1, 0.5, 2, 1.5, 1, 0.25]


def graph_conv(n, Fi, Fo, self_loops):
    """GCN: out_i = sum over edges j -> i of w / sqrt(deg_j deg_i) * (X W)_j + b,
    deg_i = summed weight of the edges into i (self loops of weight 1 added)."""
    X = cells(n*Fi, math.sin)
    W = cells(Fi*Fo, lambda k: 0.5*math.cos(k))
    b = cells(Fo, lambda k: k/10)
    edges = list(zip(GC_EDGES, GC_WEIGHTS))
    if self_loops:
        edges += [((i, i), 1.0) for i in range(1, n + 1)]
    deg = [0.0] * (n + 1)
    for (s, t), w in edges:
        deg[t] += w
    XW = [[sum(X[i*Fi + k]*W[k*Fo + j] for k in range(Fi)) for j in range(Fo)] for i in range(n)]
    out = [list(b) for _ in range(n)]
    for (s, t), w in edges:
        c = w / math.sqrt(deg[s]*deg[t]) if deg[s] > 0 and deg[t] > 0 else 0.0
        for j in range(Fo):
            out[t-1][j] += c * XW[s-1][j]
    return sum(out, [])


def kind(r, c, k, scale=1.0, transpose=False):
    """The r x c matrix of kind k of lib/refinputs.dml (times scale, or its
    transpose when transpose is set: then r x c is the shape before it), as rows."""
    f = [math.sin, lambda v: 0.5*math.cos(v), lambda v: v/10][k - 1]
    A = [[scale*f(i*c + j + 1) for j in range(c)] for i in range(r)]
    return [list(col) for col in zip(*A)] if transpose else A


def bert_layer(B, T, H, d, I, eps):
    """One post-layer-norm BERT layer, no dropout, gelu (tanh form), token by token."""
    D = H*d
    S = kind(B, T*D, 1)
    WQ, WK, WV = kind(D, D, 2), kind(D, D, 2, transpose=True), kind(D, D, 1)
    WC, WI, WO = kind(D, D, 1, transpose=True), kind(D, I, 2), kind(I, D, 1)
    bQ, bK, bV = kind(1, D, 3)[0], kind(1, D, 3, -1)[0], kind(1, D, 3, 0.5)[0]
    bC, bI, bO = kind(1, D, 3)[0], kind(1, I, 3)[0], kind(1, D, 3, -1)[0]
    g1 = [1 + v for v in kind(1, D, 3)[0]]
    be1 = kind(1, D, 3)[0]
    g2 = [1 - v for v in kind(1, D, 3)[0]]
    be2 = kind(1, D, 3, -1)[0]
    lin = lambda x, W, b: [sum(x[i]*W[i][j] for i in range(len(x))) + b[j] for j in range(len(b))]

    def ln(x, g, b):
        mu = sum(x) / len(x)
        var = sum((v - mu)**2 for v in x) / len(x)
        return [g[j]*(x[j] - mu)/math.sqrt(var + eps) + b[j] for j in range(len(x))]

    gelu = lambda v: 0.5*v*(1 + math.tanh(math.sqrt(2/math.pi)*(v + 0.044715*v**3)))
    out = []
    for b in range(B):
        xs = [S[b][t*D:(t+1)*D] for t in range(T)]
        Q = [lin(x, WQ, bQ) for x in xs]
        K = [lin(x, WK, bK) for x in xs]
        V = [lin(x, WV, bV) for x in xs]
        ctx = [[0.0]*D for _ in range(T)]
        for h in range(H):
            for t in range(T):
                sc = [sum(Q[t][h*d + k]*K[u][h*d + k] for k in range(d)) / math.sqrt(d)
                      for u in range(T)]
                mx = max(sc)
                e = [math.exp(v - mx) for v in sc]
                pr = [v / sum(e) for v in e]
                for k in range(d):
                    ctx[t][h*d + k] = sum(pr[u]*V[u][h*d + k] for u in range(T))
        for t in range(T):
            h1 = ln([a + x for a, x in zip(lin(ctx[t], WC, bC), xs[t])], g1, be1)
            o = lin([gelu(v) for v in lin(h1, WI, bI)], WO, bO)
            out += ln([a + x for a, x in zip(o, h1)], g2, be2)
    return out


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
    show("gru N=2 T=3 D=2 M=2 out0=sin", gru(2, 3, 2, 2))
    X, W, b, h0 = recurrent_inputs(2, 3, 2, 2, 4)
    out, c = lstm(X, W, b, h0, [[0.5*v for v in r] for r in h0], 2, 2)
    show("lstm N=2 T=3 D=2 M=2 out0=sin c0=0.5*sin out (sequences)", sum(out, []))
    show("lstm N=2 T=3 D=2 M=2 c", sum(c, []))
    out, c = bilstm(2, 3, 2, 2)
    show("bilstm N=2 T=3 D=2 M=2 out (sequences)", out)
    show("bilstm N=2 T=3 D=2 M=2 c", c)
    show("graph_conv n=4 F_in=3 F_out=2 self loops", graph_conv(4, 3, 2, True))
    show("graph_conv n=4 F_in=3 F_out=2 no self loops", graph_conv(4, 3, 2, False))
    show("bert_layer B=2 T=3 H=2 d=2 I=5 eps=1e-5", bert_layer(2, 3, 2, 2, 5, 1e-5))
