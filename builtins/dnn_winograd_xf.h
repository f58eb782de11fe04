/* SPDX-License-Identifier: Apache-2.0
 * The point transforms of Winograd F(4x4, 5x5) on one vector type, included
 * by dnn_winograd_tmpl.h (no include guard on purpose) for each vector the
 * tile code runs on. Before the include the includer defines XF_V (the
 * vector type), the names XF_BTV, XF_AT4V and XF_G4V, and K(x) (a constant
 * as the element type); the header undefines the XF_ names at its end. */

/* o[k*os] = (B^T d)[k] for the 8 vectors d[k*s]: the rows of B^T pair up
 * as p + q and p - q (points +-1, +-2, +-1/2) */
WG_INLINE void XF_BTV(const XF_V *d, int s, XF_V *o, int os)
{
    XF_V d0 = d[0], d1 = d[s], d2 = d[2 * s], d3 = d[3 * s], d4 = d[4 * s], d5 = d[5 * s], d6 = d[6 * s],
        d7 = d[7 * s];
    XF_V p, q;
    o[0] = K(4.0) * (d0 - d6) + K(21.0) * (d4 - d2);
    p = K(17.0) * d4 - K(4.0) * (d2 + d6);
    q = K(17.0) * d3 - K(4.0) * (d1 + d5);
    o[os] = p + q;
    o[2 * os] = p - q;
    p = d2 - K(5.0) * d4 + K(4.0) * d6;
    q = K(2.0) * d1 - K(10.0) * d3 + K(8.0) * d5;
    o[3 * os] = p + q;
    o[4 * os] = p - q;
    p = K(8.0) * d2 - K(10.0) * d4 + K(2.0) * d6;
    q = K(4.0) * d1 - K(5.0) * d3 + d5;
    o[5 * os] = p + q;
    o[6 * os] = p - q;
    o[7 * os] = K(4.0) * (d7 - d1) + K(21.0) * (d3 - d5);
}

/* o[k*os] = (A^T m)[k], k < 4, for the 8 vectors m[k*s] */
WG_INLINE void XF_AT4V(const XF_V *m, int s, XF_V *o, int os)
{
    XF_V a = m[s] + m[2 * s], b = m[s] - m[2 * s], c = m[3 * s] + m[4 * s], d = m[3 * s] - m[4 * s];
    XF_V e = m[5 * s] + m[6 * s], f = m[5 * s] - m[6 * s];
    o[0] = m[0] + a + c + e;
    o[os] = b + K(2.0) * d + K(0.5) * f;
    o[2 * os] = a + K(4.0) * c + K(0.25) * e;
    o[3 * os] = b + K(8.0) * d + K(0.125) * f + m[7 * s];
}

/* o[k*os] = (G4 g)[k], k < 8, for the 4 vectors g[k*s]: G4 is G for a
 * 4-tap filter (the dout tile of the filter gradient) */
WG_INLINE void XF_G4V(const XF_V *g, int s, XF_V *o, int os)
{
    XF_V g0 = g[0], g1 = g[s], g2 = g[2 * s], g3 = g[3 * s];
    XF_V p = g0 + g2, q = g1 + g3;
    o[0] = K(0.25) * g0;
    o[os] = K(1.0 / 18) * (p + q);
    o[2 * os] = K(1.0 / 18) * (p - q);
    p = g0 + K(4.0) * g2;
    q = K(2.0) * g1 + K(8.0) * g3;
    o[3 * os] = K(1.0 / 360) * (p + q);
    o[4 * os] = K(1.0 / 360) * (p - q);
    p = K(16.0) * g0 + K(4.0) * g2;
    q = K(8.0) * g1 + K(2.0) * g3;
    o[5 * os] = K(1.0 / 45) * (p + q);
    o[6 * os] = K(1.0 / 45) * (p - q);
    o[7 * os] = K(0.25) * g3;
}

#undef XF_V
#undef XF_BTV
#undef XF_AT4V
#undef XF_G4V
