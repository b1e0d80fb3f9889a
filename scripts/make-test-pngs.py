#!/usr/bin/python3
"""make-test-pngs.py - the PNG test files of tests/data/png/ and, beside
each, what torchvision's loader gives for it, Image.open(f).convert("RGB"),
as a binary PPM (tests/unit/test_png.c decodes each PNG with refurb and
compares).

Every kind refurb reads: gray 1, 2, 4, 8 bits, gray + alpha (8, 16), RGB
(8, 16), RGBA (8, 16), palette (1, 4, 8 bits, with and without tRNS,
one whose PLTE has fewer entries than its indices reach).
PIL writes the common ones; a small writer here makes the others (bit
depths PIL does not write).  Also gray16.png, which refurb refuses.

Usage: scripts/make-test-pngs.py [OUTDIR]   (default tests/data/png)
Needs /usr/bin/python3 with numpy and PIL.
"""

# --help before the imports a machine may lack (torch, torchvision, PIL)
import sys  # noqa: E402
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__.strip())
    raise SystemExit(0)
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(
        ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rows, width, height, depth, color_type, palette=None, trns=None):
    """rows: list of bytes, each a packed row (without the filter byte)."""
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 0)
    raw = b"".join(b"\0" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    if palette is not None:
        out += chunk(b"PLTE", bytes(palette))
    if trns is not None:
        out += chunk(b"tRNS", bytes(trns))
    out += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(out)


def pack_bits(values, depth):
    """Pack a row of small integers, most significant bits first."""
    per = 8 // depth
    out = bytearray()
    for i in range(0, len(values), per):
        byte = 0
        for k in range(per):
            v = values[i + k] if i + k < len(values) else 0
            byte |= v << (8 - depth * (k + 1))
        out.append(byte)
    return bytes(out)


def pattern(w, h, c, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    chans = [((x * (3 + k) + y * (5 - k)) % 256 + rng.integers(-15, 15, (h, w))) for k in range(c)]
    return np.clip(np.stack(chans, -1), 0, 255).astype(np.uint8)


def save_ppm(img, path):
    arr = np.asarray(img.convert("RGB"))
    with open(path, "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (arr.shape[1], arr.shape[0]))
        f.write(arr.tobytes())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data", "png")
    os.makedirs(out, exist_ok=True)
    w, h = 37, 23
    a = pattern(w, h, 4, 1)
    P = lambda name: os.path.join(out, name)  # noqa: E731
    Image.fromarray(a[..., :3]).save(P("rgb8.png"))
    Image.fromarray(a).save(P("rgba8.png"))
    Image.fromarray(a[..., 0]).save(P("gray8.png"))
    Image.fromarray(a[..., :2], "LA").save(P("la8.png"))
    Image.fromarray(a[..., :3]).convert("P", palette=Image.ADAPTIVE, colors=200).save(P("pal8.png"))
    Image.fromarray(a[..., :3]).convert("P", palette=Image.ADAPTIVE, colors=12).save(
        P("pal4trns.png"), transparency=3, bits=4)
    Image.fromarray(a[..., 0]).convert("1").save(P("gray1.png"))
    for depth in (2, 4):
        vals = (a[..., 1].astype(int) >> (8 - depth))
        write_png(P("gray%d.png" % depth), [pack_bits(list(r), depth) for r in vals],
                  w, h, depth, 0)
    pal = a[0, :2, :3].reshape(-1).tolist()  # 2 colours
    write_png(P("pal1.png"), [pack_bits(list(r), 1) for r in (a[..., 2] > 128).astype(int)],
              w, h, 1, 3, palette=pal, trns=[0])
    # a PLTE of 3 entries under 4-bit indices: PIL gives index k past
    # the table the gray (k, k, k) of its palette's initial ramp
    write_png(P("palshort.png"), [pack_bits(list(r), 4) for r in (a[..., 0] % 16)],
              w, h, 4, 3, palette=a[1, :3, :3].reshape(-1).tolist())
    wide = a.astype(">u2") * 257 + pattern(w, h, 4, 2)  # low bytes that must not matter
    write_png(P("rgb16.png"), [r.tobytes() for r in wide[..., :3]], w, h, 16, 2)
    write_png(P("rgba16.png"), [r.tobytes() for r in wide], w, h, 16, 6)
    write_png(P("la16.png"), [r.tobytes() for r in wide[..., :2]], w, h, 16, 4)
    write_png(P("gray16.png"), [r.tobytes() for r in wide[..., 0]], w, h, 16, 0)
    for name in sorted(os.listdir(out)):
        if name.endswith(".png") and name != "gray16.png":
            save_ppm(Image.open(P(name)), P(name[:-4] + ".ppm"))
    print("PNG test files in %s" % out)


if __name__ == "__main__":
    if sys.argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    main()
