#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Prints the 2^(k/128) table of runtime/vmath.c's vector exp: for k = 0..127,
# H = 2^(k/128) rounded to a double and T = 2^(k/128) / H - 1 rounded to a
# double, stored as the bits of T, then the bits of H less k/128 in the
# exponent field (k << 45), so that adding (ki << 45) for the whole ki gives
# the scale 2^(ki/128). These are the values glibc's exp (2.28 and later)
# computes with, which the vector exp must match bit for bit.
#   python3 tools/exp_table.py > table.inc
import struct
from decimal import Decimal, getcontext

getcontext().prec = 60


def bits(x):
    return struct.unpack('<Q', struct.pack('<d', x))[0]


def to_double(d):
    return float(format(d, '.40e'))     # correctly rounded


words = []
for k in range(128):
    v = Decimal(2) ** (Decimal(k) / Decimal(128))
    h = to_double(v)
    t = to_double(v / Decimal(h) - 1)
    words += [bits(t), (bits(h) - (k << 45)) & 0xffffffffffffffff]
for i in range(0, len(words), 4):
    print('    ' + ', '.join('0x%016xULL' % w for w in words[i:i + 4]) + ',')
