"""A PNG decoder and encoder on NumPy and the standard library's zlib, for ``tf.image`` /
``tf.io`` ``decode_png`` / ``encode_png``.

Files are untrusted: every chunk's length and CRC is checked, the header's fields are
validated, the decoded size is limited (:data:`MAX_DECODED_BYTES`) before anything is
allocated, and decompression stops at the size the header implies, so a corrupt or hostile
file raises :class:`~stagecraft.errors.InvalidArgumentError` instead of crashing, hanging or
exhausting memory. All bit depths, colour types, the five filter types and Adam7 interlacing
are supported.
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from stagecraft.errors import InvalidArgumentError
from stagecraft.ops import image_codec_kernels

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The largest decoded image (bytes) a file may ask for; raise it for larger images.
MAX_DECODED_BYTES = 1 << 30

_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# Adam7: (row start, column start, row step, column step) of the seven passes
_ADAM7 = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
          (1, 0, 2, 1))


def _fail(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"decode_png: {message}")


def check_size(what: str, height: int, width: int, channels: int, itemsize: int) -> None:
    """Raises before allocating an image larger than :data:`MAX_DECODED_BYTES`."""
    size = height * width * channels * itemsize
    if size > MAX_DECODED_BYTES:
        raise InvalidArgumentError(
            f"{what}: the image is {width}x{height} with {channels} channels, {size} bytes "
            f"decoded, over the limit of {MAX_DECODED_BYTES} bytes. If the file is trusted, "
            f"raise stagecraft.ops.png_codec.MAX_DECODED_BYTES.")


def _chunks(data: bytes):
    """(type, payload) of each chunk, checking lengths and CRCs."""
    pos = len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise _fail("the file is truncated (it ends inside a chunk header, before IEND).")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if length > 0x7FFFFFFF:
            raise _fail(f"a chunk length ({length}) is over 2^31 - 1: the file is corrupt.")
        end = pos + 8 + length
        if end + 4 > len(data):
            raise _fail(f"the file is truncated inside a {kind!r} chunk ({length} bytes "
                        f"announced, {max(len(data) - pos - 8, 0)} present).")
        payload = data[pos + 8:end]
        crc, = struct.unpack(">I", data[end:end + 4])
        if zlib.crc32(kind + payload) & 0xFFFFFFFF != crc:
            raise _fail(f"the CRC of a {kind!r} chunk does not match its data: the file is "
                        f"corrupt.")
        if not kind.isalpha():
            raise _fail(f"invalid chunk type {kind!r}: the file is corrupt.")
        yield kind, payload
        if kind == b"IEND":
            return
        pos = end + 4


def _pass_sizes(height: int, width: int, interlaced: bool) -> list:
    if not interlaced:
        return [(0, 0, 1, 1, height, width)]
    out = []
    for r0, c0, dr, dc in _ADAM7:
        h = (height - r0 + dr - 1) // dr if height > r0 else 0
        w = (width - c0 + dc - 1) // dc if width > c0 else 0
        out.append((r0, c0, dr, dc, h, w))
    return out


def _unfilter(raw: np.ndarray, height: int, stride: int, bpp: int) -> np.ndarray:
    """The scanlines of one pass with their filters undone; raw is height x (1 + stride)."""
    kinds = raw.reshape(height, stride + 1)[:, 0]
    if kinds.size and int(kinds.max()) > 4:
        bad = int(np.argmax(kinds > 4))
        raise _fail(f"scanline {bad} has filter type {int(kinds[bad])}; PNG has types 0-4: "
                    f"the file is corrupt.")
    return image_codec_kernels.unfilter(np.ascontiguousarray(raw), height, stride, bpp)


def _samples(rows: np.ndarray, width: int, depth: int, samples: int) -> np.ndarray:
    """Unfiltered scanlines as an array [h, w, samples] of uint8 / uint16 (sub-byte values
    unpacked but not scaled)."""
    h = rows.shape[0]
    if depth == 16:
        vals = rows[:, :width * samples * 2].reshape(h, width * samples, 2).astype(np.uint16)
        return ((vals[..., 0] << 8) | vals[..., 1]).reshape(h, width, samples)
    if depth == 8:
        return rows[:, :width * samples].reshape(h, width, samples)
    bits = np.unpackbits(rows, axis=1)[:, :width * depth].reshape(h, width, depth)
    weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint8)
    return (bits * weights).sum(axis=-1, dtype=np.uint8).reshape(h, width, 1)


def decode(data: bytes, channels: int = 0, dtype: str = "uint8") -> np.ndarray:
    """The image in ``data`` as an array [height, width, channels] of ``dtype`` (uint8 or
    uint16). ``channels`` 0 keeps the file's (a palette gives RGB, or RGBA with a tRNS chunk;
    a tRNS chunk adds alpha to gray and RGB too); 1, 2, 3 or 4 converts."""
    data = bytes(data)
    if not data.startswith(SIGNATURE):
        raise _fail("not a PNG file (the 8-byte PNG signature is missing).")
    header = palette = trns = None
    idat: list = []
    seen_idat_end = False
    for kind, payload in _chunks(data):
        if header is None and kind != b"IHDR":
            raise _fail(f"the first chunk is {kind!r}, not IHDR: the file is corrupt.")
        if kind == b"IHDR":
            if header is not None or len(payload) != 13:
                raise _fail("a duplicate or malformed IHDR chunk.")
            header = struct.unpack(">IIBBBBB", payload)
        elif kind == b"PLTE":
            if len(payload) % 3 or not 3 <= len(payload) <= 768:
                raise _fail(f"the PLTE chunk has {len(payload)} bytes (3 per entry, 1-256 "
                            f"entries).")
            palette = np.frombuffer(payload, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            trns = payload
        elif kind == b"IDAT":
            if seen_idat_end:
                raise _fail("IDAT chunks must be consecutive.")
            idat.append(payload)
        elif kind == b"IEND":
            break
        elif not (kind[0] & 0x20):  # an unknown critical chunk (upper-case first letter)
            raise _fail(f"unknown critical chunk {kind!r}; this decoder cannot read it.")
        if idat and kind != b"IDAT":
            seen_idat_end = True
    width, height, depth, color, compression, filtering, interlace = header
    if not (1 <= width <= 0x7FFFFFFF and 1 <= height <= 0x7FFFFFFF):
        raise _fail(f"invalid image size {width}x{height}.")
    if color not in _DEPTHS or depth not in _DEPTHS[color]:
        raise _fail(f"invalid bit depth {depth} for colour type {color}.")
    if compression != 0 or filtering != 0 or interlace not in (0, 1):
        raise _fail(f"unknown compression ({compression}), filter ({filtering}) or interlace "
                    f"({interlace}) method.")
    if color == 3 and palette is None:
        raise _fail("a palette image without a PLTE chunk.")
    if not idat:
        raise _fail("no IDAT chunk: the file holds no image data.")
    samples = _SAMPLES[color]
    out_samples = {0: 1, 2: 3, 3: 3, 4: 2, 6: 4}[color] + (
        1 if trns is not None and color in (0, 2, 3) else 0)
    check_size("decode_png", height, width, max(out_samples, channels, 1), 2)
    bits = depth * samples
    bpp = max(1, bits // 8)
    passes = _pass_sizes(height, width, interlace == 1)
    expected = sum(h * (1 + (w * bits + 7) // 8) for *_, h, w in passes if h and w)
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(b"".join(idat), expected + 1)
    except zlib.error as e:
        raise _fail(f"the compressed image data is corrupt ({e}).") from None
    if len(raw) != expected:
        raise _fail(f"the image data holds {'more' if len(raw) > expected else 'fewer'} bytes "
                    f"than a {width}x{height} image needs ({len(raw)} vs {expected}): the file "
                    f"is corrupt or truncated.")
    raw_arr = np.frombuffer(raw, np.uint8)
    dtype_np = np.uint16 if depth == 16 else np.uint8
    image = np.zeros((height, width, samples), dtype_np)
    pos = 0
    for r0, c0, dr, dc, h, w in passes:
        if not (h and w):
            continue
        stride = (w * bits + 7) // 8
        rows = _unfilter(raw_arr[pos:pos + h * (stride + 1)], h, stride, bpp)
        pos += h * (stride + 1)
        image[r0::dr, c0::dc] = _samples(rows, w, depth, samples)
    return _convert(image, color, depth, palette, trns, channels, dtype)


def _convert(image: np.ndarray, color: int, depth: int, palette, trns, channels: int,
             dtype: str) -> np.ndarray:
    """Palette lookup, depth scaling, transparency, then the requested channels and dtype."""
    alpha = None
    if color == 3:
        idx = image[..., 0]
        if int(idx.max(initial=0)) >= len(palette):
            raise _fail(f"a pixel uses palette entry {int(idx.max())} of a {len(palette)}-entry"
                        f" palette.")
        rgb = palette[idx]
        if trns is not None:
            table = np.full(256, 255, np.uint8)
            table[:min(len(trns), 256)] = np.frombuffer(trns[:256], np.uint8)
            alpha = table[idx][..., None]
        image, depth = (np.concatenate([rgb, alpha], -1) if alpha is not None else rgb), 8
    else:
        if depth < 8:  # 1-, 2-, 4-bit gray scaled to 8 bits as libpng does
            image = (image.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(np.uint8)
        if trns is not None and color in (0, 2):
            need = 2 if color == 0 else 6
            if len(trns) < need:
                raise _fail(f"the tRNS chunk has {len(trns)} bytes; colour type {color} needs "
                            f"{need}.")
            key = np.asarray(struct.unpack(f">{need // 2}H", trns[:need]))
            if depth < 8:
                key = key * (255 // ((1 << depth) - 1))
            opaque = (1 << (16 if depth == 16 else 8)) - 1
            transparent = np.all(image == key.astype(image.dtype), axis=-1, keepdims=True)
            image = np.concatenate([image, np.where(transparent, 0, opaque).astype(
                image.dtype)], -1)
        depth = 16 if depth == 16 else 8
    return convert_channels(_depth(image, depth, dtype), channels, "decode_png")


def _depth(image: np.ndarray, depth: int, dtype: str) -> np.ndarray:
    if dtype == "uint16":
        return image.astype(np.uint16) * 257 if depth == 8 else image
    return (image >> 8).astype(np.uint8) if depth == 16 else image


def convert_channels(image: np.ndarray, channels: int, what: str) -> np.ndarray:
    """[h, w, c] (c in 1-4: gray, gray+alpha, RGB, RGBA) as ``channels`` (0 keeps c). RGB to
    gray uses the ITU-R BT.709 weights of libpng's default conversion."""
    c = image.shape[-1]
    if channels == 0 or channels == c:
        return image
    if channels not in (1, 2, 3, 4):
        raise ValueError(f"{what}: channels must be 0, 1, 2, 3 or 4, got {channels}.")
    color, alpha = (image[..., :c - 1], image[..., c - 1:]) if c in (2, 4) else (image, None)
    top = np.iinfo(image.dtype).max
    if channels in (1, 2) and color.shape[-1] == 3:
        w = np.asarray([6968, 23434, 2366], np.uint64)
        color = ((color.astype(np.uint64) * w).sum(-1, keepdims=True) + 16384 >> 15).astype(
            image.dtype)
    elif channels in (3, 4) and color.shape[-1] == 1:
        color = np.repeat(color, 3, axis=-1)
    if channels in (2, 4):
        alpha = alpha if alpha is not None else np.full(color.shape[:-1] + (1,), top,
                                                        image.dtype)
        return np.concatenate([color, alpha], -1)
    return np.ascontiguousarray(color)


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(
        ">I", zlib.crc32(kind + payload) & 0xFFFFFFFF)


def _filter_rows(rows: np.ndarray, bpp: int, filter_type: int | None) -> bytes:
    """Filtered scanlines of one pass, each prefixed by its filter type: ``filter_type`` for
    all, or (None) per row the one with the smallest sum of absolute values (libpng's
    heuristic)."""
    h = rows.shape[0]
    x = rows.astype(np.int16)
    up = np.zeros_like(x)
    up[1:] = x[:-1]
    left = np.zeros_like(x)
    left[:, bpp:] = x[:, :-bpp]
    upleft = np.zeros_like(x)
    upleft[1:, bpp:] = x[:-1, :-bpp]
    p = left + up - upleft
    pa, pb, pc = np.abs(p - left), np.abs(p - up), np.abs(p - upleft)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, up, upleft))
    candidates = np.stack([x, x - left, x - up, x - ((left + up) >> 1), x - paeth]) & 0xFF
    if filter_type is None:
        signed = np.where(candidates > 127, 256 - candidates, candidates)
        best = np.argmin(signed.sum(axis=-1), axis=0)
    else:
        best = np.full(h, filter_type)
    filtered = candidates[best, np.arange(h)].astype(np.uint8)
    return np.concatenate([best.astype(np.uint8)[:, None], filtered], axis=1).tobytes()


def encode(image: np.ndarray, compression: int = -1, interlace: bool = False,
           filter_type: int | None = None) -> bytes:
    """PNG bytes for an array [height, width, channels] of uint8 or uint16 (channels 1-4).
    ``compression`` is zlib's level (-1 its default); ``interlace`` writes Adam7 passes;
    ``filter_type`` (0-4) forces one filter on every scanline instead of choosing per row."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[-1] not in (1, 2, 3, 4):
        raise ValueError(f"encode_png: image must be [height, width, channels] with 1-4 "
                         f"channels, got shape {list(image.shape)}.")
    if image.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"encode_png: image must be uint8 or uint16, got {image.dtype}. "
                        f"Convert it with tf.image.convert_image_dtype.")
    if not -1 <= compression <= 9:
        raise ValueError(f"encode_png: compression must be -1 (default) or 0-9, got "
                         f"{compression}.")
    h, w, c = image.shape
    if h == 0 or w == 0:
        raise ValueError(f"encode_png: the image is empty ({h}x{w}); PNG needs at least one "
                         f"pixel.")
    depth = 16 if image.dtype == np.uint16 else 8
    bpp = c * depth // 8
    raw = []
    for r0, c0, dr, dc, ph, pw in _pass_sizes(h, w, interlace):
        if ph and pw:
            part = image[r0::dr, c0::dc]
            rows = (part.astype(">u2").view(np.uint8) if depth == 16 else part).reshape(ph, -1)
            raw.append(_filter_rows(rows, bpp, filter_type))
    ihdr = struct.pack(">IIBBBBB", w, h, depth, {1: 0, 2: 4, 3: 2, 4: 6}[c], 0, 0,
                       int(interlace))
    return (SIGNATURE + _chunk(b"IHDR", ihdr)
            + _chunk(b"IDAT", zlib.compress(b"".join(raw), compression))
            + _chunk(b"IEND", b""))
