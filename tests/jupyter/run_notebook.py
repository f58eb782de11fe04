# SPDX-License-Identifier: Apache-2.0
"""Runs the example notebook headless with nbclient on the DML kernel and
checks its outputs: no cell failed, the training cell's progress came as a
line rewritten in place (\\r), the history plot is an inline PNG that
decodes and is not blank, and the trained model's accuracy.
Usage: python3 run_notebook.py NOTEBOOK   (JUPYTER_PATH names the kernelspec)
Prints "ok NAME" / "FAIL NAME" lines, then "N passed, N failed"."""
import base64
import os
import re
import struct
import sys
import zlib

import nbformat
from nbclient import NotebookClient

TIMEOUT = int(float(os.environ.get("KERNEL_TIMEOUT", "60")) * 5)
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6), "unexpected PNG format"
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def rendered(text):
    """The lines a terminal (or a notebook) shows for text with \\r."""
    out = []
    for line in text.split("\n"):
        cur, screen = 0, []
        for seg_i, seg in enumerate(line.split("\r")):
            if seg_i:
                cur = 0
            for ch in seg:
                if cur < len(screen):
                    screen[cur] = ch
                else:
                    screen.append(ch)
                cur += 1
        out.append("".join(screen).rstrip())
    return [l for l in out if l]


def main():
    path = sys.argv[1]
    os.environ["DML_PROGRESS_AFTER"] = "0"     # the progress line from the first batch on
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="dml",
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    try:
        client.execute()
        check("notebook runs", True)
    except Exception as e:                       # a cell error, a timeout
        check("notebook runs", False, str(e)[:2000])
    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    errors = [o for o in outs if o.output_type == "error"]
    check("no cell failed", not errors, str(errors[:1]))

    train = [c for c in nb.cells if c.cell_type == "code" and "paramserv(" in c.source][0]
    err = "".join(o.text for o in train.outputs if o.output_type == "stream" and o.name == "stderr")
    shown = rendered(err)
    epochs = [l for l in shown if re.match(r"^\[paramserv\] epoch \d+/8", l) and "batches/s" not in l]
    check("progress line rewritten in place (\\r)", "\r" in err, repr(err[:300]))
    check("one line per epoch once rendered", len(epochs) == 8 and len(shown) == 8, repr(shown))
    res = [o for o in train.outputs if o.output_type == "execute_result"]
    check("history shown as text and HTML",
          res and res[0].data["text/plain"].startswith("[8 x 5 matrix]") and
          "<caption>8 x 5 matrix</caption>" in res[0].data.get("text/html", ""), str(res[:1])[:500])

    pics = [o for o in outs if o.output_type == "display_data" and "image/png" in o.data]
    check("an inline PNG", len(pics) == 1)
    if pics:
        w, h, bpp, rows = png_pixels(base64.b64decode(pics[0].data["image/png"]))
        colors = set()
        dark = 0
        for r in rows:
            for i in range(0, w * bpp, bpp):
                colors.add(r[i:i + 3])
                dark += sum(r[i:i + 3]) < 600
        check("the PNG decodes and is not blank (%dx%d, %d colours, %d drawn pixels)" % (w, h, len(colors), dark),
              w >= 100 and h >= 100 and len(colors) > 10 and dark > 1000)
        check("SVG next to it", "<svg" in pics[0].data.get("image/svg+xml", ""))

    text = "".join(o.text for o in outs if o.output_type == "stream" and o.name == "stdout")
    m = re.search(r"final validation accuracy: ([0-9.]+)", text)
    check("accuracy printed", m is not None, text[-500:])
    if m:
        check("trained model's accuracy >= 0.9 (%s)" % m.group(1), float(m.group(1)) >= 0.9)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
