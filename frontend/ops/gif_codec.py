"""A GIF decoder (GIF87a/GIF89a, LZW, interlaced frames, local and global colour tables,
transparency) for ``tf.image.decode_gif``.

Frames are composed as TensorFlow's decoder does: each frame starts as a copy of the previous
one (black for the first), its rectangle (clipped to the screen) is painted with its colours,
and pixels of its transparent colour keep what was there; disposal methods are not applied.
The result is [num_frames, height, width, 3] uint8. The file is untrusted: every length is
checked, the decoded size is limited, LZW codes are validated, and a corrupt file raises
:class:`~stagecraft.errors.InvalidArgumentError`.
"""
from __future__ import annotations

import struct

import numpy as np

from stagecraft.errors import InvalidArgumentError
from stagecraft.ops import image_codec_kernels, png_codec


def _fail(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"decode_gif: {message}")


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise _fail(f"the file is truncated (it ends inside {what}).")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def sub_blocks(self, what: str) -> bytes:
        parts = []
        while True:
            n = self.take(1, what)[0]
            if n == 0:
                return b"".join(parts)
            parts.append(self.take(n, what))


def _lzw(data: bytes, min_size: int, count: int, frame: int) -> np.ndarray:
    """``count`` colour indices decoded from GIF's variable-width LZW."""
    if not 1 <= min_size <= 8:
        raise _fail(f"frame {frame}: LZW minimum code size {min_size} is outside 1-8.")
    out, status, n = image_codec_kernels.lzw(np.frombuffer(data, np.uint8), min_size, count)
    if status == 1:
        raise _fail(f"frame {frame}: the image data ends after {n} of {count} pixels: the "
                    f"file is truncated or corrupt.")
    if status:
        raise _fail(f"frame {frame}: an LZW code after pixel {n} is not defined yet: the file "
                    f"is corrupt.")
    return out


def _deinterlace(rows: np.ndarray) -> np.ndarray:
    h = rows.shape[0]
    order = [r for start, step in ((0, 8), (4, 8), (2, 4), (1, 2))
             for r in range(start, h, step)]
    out = np.empty_like(rows)
    out[order] = rows
    return out


def _colour_table(reader: _Reader, packed: int, what: str) -> np.ndarray:
    n = 2 << (packed & 7)
    return np.frombuffer(reader.take(3 * n, what), np.uint8).reshape(n, 3)


def decode(data: bytes) -> np.ndarray:
    """All frames of the GIF in ``data`` as [num_frames, height, width, 3] uint8."""
    reader = _Reader(bytes(data))
    if reader.take(6, "the header") not in (b"GIF87a", b"GIF89a"):
        raise _fail("not a GIF file (the GIF87a/GIF89a signature is missing).")
    width, height, packed, _, _ = struct.unpack("<HHBBB", reader.take(7, "the screen "
                                                                      "descriptor"))
    if width == 0 or height == 0:
        raise _fail(f"invalid screen size {width}x{height}.")
    global_table = _colour_table(reader, packed, "the global colour table") \
        if packed & 0x80 else None
    frames: list = []
    transparent = None
    while True:
        marker = reader.take(1, "a block introducer (the trailer 0x3B is missing)")[0]
        if marker == 0x3B:
            break
        if marker == 0x21:
            label = reader.take(1, "an extension")[0]
            body = reader.sub_blocks("an extension")
            if label == 0xF9 and len(body) >= 4:
                transparent = body[3] if body[0] & 1 else None
            continue
        if marker != 0x2C:
            raise _fail(f"unknown block 0x{marker:02X} at byte {reader.pos - 1}: the file is "
                        f"corrupt.")
        left, top, w, h, packed = struct.unpack("<HHHHB", reader.take(9, "an image "
                                                                          "descriptor"))
        table = _colour_table(reader, packed, "a local colour table") if packed & 0x80 \
            else global_table
        if table is None:
            raise _fail(f"frame {len(frames)} has no colour table (neither local nor global).")
        min_size = reader.take(1, "an image")[0]
        png_codec.check_size("decode_gif", height, width, 3 * (len(frames) + 1), 1)
        png_codec.check_size("decode_gif", h, w, 1, 1)
        indices = _lzw(reader.sub_blocks("an image"), min_size, w * h, len(frames))
        indices = indices.reshape(h, w)
        if packed & 0x40:
            indices = _deinterlace(indices)
        canvas = frames[-1].copy() if frames else np.zeros((height, width, 3), np.uint8)
        bottom, right = min(top + h, height), min(left + w, width)
        if top < bottom and left < right:
            part = indices[:bottom - top, :right - left]
            paint = part != transparent if transparent is not None else np.ones(
                part.shape, bool)
            if int(part[paint].max(initial=0)) >= len(table):
                raise _fail(f"frame {len(frames)} uses colour {int(part[paint].max())} of a "
                            f"{len(table)}-colour table.")
            region = canvas[top:bottom, left:right]
            region[paint] = table[part[paint]]
        frames.append(canvas)
        transparent = None  # a graphic control extension applies to the next image only
    if not frames:
        raise _fail("the file holds no image.")
    return np.stack(frames)
