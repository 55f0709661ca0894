"""A BMP decoder for ``tf.image.decode_bmp``: uncompressed 24- and 32-bit files (BGR(A) as
TensorFlow decodes them, 32-bit keeping the fourth byte as alpha), plus 1/4/8-bit palette
files (which TensorFlow reads as raw indices; here they go through the palette: gray for a
gray palette, else RGB). Bottom-up and top-down rows. The file is untrusted: offsets and
sizes are checked against its length and the decoded size is limited."""
from __future__ import annotations

import struct

import numpy as np

from stagecraft.errors import InvalidArgumentError
from stagecraft.ops import png_codec

_BI_RGB, _BI_BITFIELDS = 0, 3


def _fail(message: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"decode_bmp: {message}")


def decode(data: bytes, channels: int = 0) -> np.ndarray:
    """The image in ``data`` as [height, width, c] uint8; ``channels`` 0 keeps the file's c,
    otherwise it must equal it (as in TensorFlow)."""
    data = bytes(data)
    if len(data) < 26 or data[:2] != b"BM":
        raise _fail("not a BMP file (the 'BM' signature or the headers are missing).")
    offset, = struct.unpack("<I", data[10:14])
    header_size, = struct.unpack("<I", data[14:18])
    if header_size < 40 or 14 + header_size > len(data):
        raise _fail(f"unsupported or truncated info header ({header_size} bytes); only "
                    f"BITMAPINFOHEADER (40 bytes) and its successors are read.")
    width, height, planes, bpp, compression = struct.unpack("<iiHHI", data[18:34])
    top_down = height < 0
    height = abs(height)
    if width <= 0 or height == 0:
        raise _fail(f"invalid image size {width}x{height}.")
    if bpp not in (1, 4, 8, 24, 32):
        raise _fail(f"{bpp} bits per pixel is not supported (1, 4, 8, 24 and 32 are).")
    if compression not in (_BI_RGB, _BI_BITFIELDS) or (compression == _BI_BITFIELDS
                                                        and bpp != 32):
        raise _fail(f"compression method {compression} is not supported (only uncompressed "
                    f"files, and 32-bit bit fields in BGRA order).")
    if compression == _BI_BITFIELDS:
        masks = struct.unpack("<III", data[54:66]) if len(data) >= 66 else None
        if masks != (0x00FF0000, 0x0000FF00, 0x000000FF):
            raise _fail("only the standard 8-bit BGRA bit fields are supported.")
    out_channels = {24: 3, 32: 4}.get(bpp, 0)
    png_codec.check_size("decode_bmp", height, width, max(out_channels, 3), 1)
    stride = ((width * bpp + 31) // 32) * 4
    if offset < 14 + header_size or offset + stride * height > len(data):
        raise _fail(f"the pixel data (offset {offset}, {stride * height} bytes) lies outside "
                    f"the {len(data)}-byte file: it is truncated or corrupt.")
    rows = np.frombuffer(data, np.uint8, stride * height, offset).reshape(height, stride)
    if not top_down:
        rows = rows[::-1]
    if bpp >= 24:
        image = rows[:, :width * (bpp // 8)].reshape(height, width, bpp // 8)
        image = np.concatenate([image[..., 2::-1], image[..., 3:]], axis=-1)
    else:
        colors, = struct.unpack("<I", data[46:50])
        colors = colors or (1 << bpp)
        table_at = 14 + header_size
        if colors > 1 << bpp or table_at + 4 * colors > offset:
            raise _fail(f"the colour table ({colors} entries) does not fit before the pixel "
                        f"data.")
        table = np.frombuffer(data, np.uint8, 4 * colors, table_at).reshape(colors, 4)[:, 2::-1]
        bits = np.unpackbits(rows, axis=1)[:, :width * bpp].reshape(height, width, bpp)
        index = (bits * (1 << np.arange(bpp - 1, -1, -1)).astype(np.uint8)).sum(
            -1, dtype=np.uint8)
        if int(index.max(initial=0)) >= colors:
            raise _fail(f"a pixel uses colour {int(index.max())} of a {colors}-colour table.")
        image = table[index]
        if np.all(table[:, :1] == table):  # a gray palette: one channel
            image = image[..., :1]
    image = np.ascontiguousarray(image)
    if channels not in (0, image.shape[-1]):
        raise _fail(f"channels={channels} does not match the file's {image.shape[-1]} "
                    f"channels ({bpp} bits per pixel); pass channels=0.")
    return image
