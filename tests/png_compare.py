#!/usr/bin/env python3
"""png_compare.py — a second PNG reader for the web test (8-bit RGB / RGBA, not interlaced;
zlib only, no imaging library), and the comparisons it needs:

  png_compare.py size PNG                      prints "W H"
  png_compare.py diff A.png B.png TOL X Y W H  prints how many pixels of the box at (X, Y)
      in A differ by more than TOL (any of R, G, B) from the box at (0, 0) in B
      (B is the reference frame, A a screenshot holding it at X, Y)
  png_compare.py crop A.png X Y W H OUT.png    writes that box of A to OUT.png
"""
import struct, sys, zlib


def load(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n', path + ': not a PNG'
    pos, idat = 8, b''
    while pos < len(data):
        n, typ = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if typ == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body[:13])
            assert depth == 8 and interlace == 0 and ctype in (2, 6), path + ': unsupported PNG'
            bpp = {6: 4, 2: 3}[ctype]
        elif typ == b'IDAT':
            idat += body
        pos += 12 + n
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride): line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride): line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (a + prev[i]) // 2) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                c = prev[i - bpp] if i >= bpp else 0
                u = prev[i]
                p = a + u - c
                pa, pb, pc = abs(p - a), abs(p - u), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else u if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    # RGB only, row by row
    return w, h, [bytes(r[i] for x in range(w) for i in range(x * bpp, x * bpp + 3)) for r in rows]


def write(path, w, h, rows):
    raw = b''.join(b'\x00' + r for r in rows)
    def chunk(t, b):
        return struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
                           + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == 'size':
        w, h, _ = load(args[0])
        print(w, h)
    elif mode == 'diff':
        (aw, ah, a), (bw, bh, b) = load(args[0]), load(args[1])
        tol, x0, y0, w, h = map(int, args[2:7])
        assert x0 + w <= aw and y0 + h <= ah and w <= bw and h <= bh, 'box outside an image'
        n = 0
        for y in range(h):
            ra, rb = a[y0 + y], b[y]
            for x in range(w):
                i, j = (x0 + x) * 3, x * 3
                if abs(ra[i] - rb[j]) > tol or abs(ra[i + 1] - rb[j + 1]) > tol or abs(ra[i + 2] - rb[j + 2]) > tol:
                    n += 1
        print(n)
    elif mode == 'crop':
        aw, ah, a = load(args[0])
        x0, y0, w, h = map(int, args[1:5])
        write(args[5], w, h, [a[y0 + y][x0 * 3:(x0 + w) * 3] for y in range(h)])
    else:
        sys.exit('png_compare.py: unknown mode ' + mode)


if __name__ == '__main__':
    main()
