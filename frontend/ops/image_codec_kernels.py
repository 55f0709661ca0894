"""The byte loops of the image decoders that cannot be vectorized, compiled with Numba: PNG's
Average and Paeth filters depend on the byte just decoded, and GIF's LZW on the string table
built so far (pure Python took 0.5 s for a 512x512 RGB PNG). Both are given buffers whose sizes
the caller checked, and check every table index they read, so corrupt data cannot make them
read or write out of bounds.
"""
from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, nogil=True)


@_jit
def unfilter(raw: np.ndarray, height: int, stride: int, bpp: int) -> np.ndarray:
    """PNG scanlines with their filters undone: ``raw`` holds ``height`` rows of a filter-type
    byte then ``stride`` bytes (the caller checked its length and the filter types)."""
    out = np.zeros((height, stride), np.uint8)
    zero = np.zeros(stride, np.uint8)
    for y in range(height):
        base = y * (stride + 1)
        kind = raw[base]
        prior = out[y - 1] if y > 0 else zero
        cur = out[y]
        for i in range(stride):
            v = np.int32(raw[base + 1 + i])
            a = np.int32(cur[i - bpp]) if i >= bpp else np.int32(0)
            b = np.int32(prior[i])
            if kind == 0:
                pred = np.int32(0)
            elif kind == 1:
                pred = a
            elif kind == 2:
                pred = b
            elif kind == 3:
                pred = (a + b) >> 1
            else:
                c = np.int32(prior[i - bpp]) if i >= bpp else np.int32(0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[i] = (v + pred) & 0xFF
    return out


@_jit
def lzw(data: np.ndarray, min_size: int, count: int) -> tuple:
    """GIF's LZW: ``(indices, status, n)``: ``count`` colour indices and status 0, or status 1
    (the data ends after ``n`` pixels), 2 (a code used before a string is defined) or 3 (a code
    beyond the table)."""
    out = np.zeros(count, np.uint8)
    prefix = np.zeros(4096, np.int32)
    suffix = np.zeros(4096, np.uint8)
    first = np.zeros(4096, np.uint8)
    length = np.zeros(4096, np.int32)
    clear = 1 << min_size
    end = clear + 1
    for i in range(clear):
        suffix[i] = i
        first[i] = i
        length[i] = 1
    size = min_size + 1
    next_code = end + 1
    prev = -1
    bits = 0
    nbits = 0
    pos = 0
    n = 0
    while n < count:
        while nbits < size:
            if pos >= data.size:
                return out, 1, n
            bits |= np.int64(data[pos]) << nbits
            pos += 1
            nbits += 8
        code = np.int32(bits & ((1 << size) - 1))
        bits >>= size
        nbits -= size
        if code == clear:
            size = min_size + 1
            next_code = end + 1
            prev = -1
            continue
        if code == end:
            break
        if prev == -1:
            if code >= clear:
                return out, 2, n
            out[n] = code
            n += 1
            prev = code
            continue
        if code < next_code:
            entry = code
            head = first[code]
        elif code == next_code:
            entry = -1
            head = first[prev]
        else:
            return out, 3, n
        if next_code < 4096:
            prefix[next_code] = prev
            suffix[next_code] = head
            first[next_code] = first[prev]
            length[next_code] = length[prev] + 1
            next_code += 1
            if next_code == (1 << size) and size < 12:
                size += 1
        if entry == -1:
            entry = next_code - 1
        # the string of `entry`, written backwards from its end; pixels past `count` dropped
        k = n + length[entry] - 1
        c = entry
        while k >= n:
            if k < count:
                out[k] = suffix[c]
            c = prefix[c]
            k -= 1
        n = min(n + length[entry], count)
        prev = code
    if n < count:
        return out, 1, n
    return out, 0, n
