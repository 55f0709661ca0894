"""Image files to tensors and back, for ``tf.image`` / ``tf.io``: ``decode_png`` /
``encode_png``, ``decode_bmp``, ``decode_gif``, ``decode_image`` (by the file's magic bytes),
``is_jpeg``, and ``read_file`` / ``write_file`` (JPEG is in :mod:`.image_jpeg_ops`).

stagecraft has no string dtype, so where TensorFlow passes file contents as a ``tf.string``
tensor these functions take and return Python ``bytes`` (a 1-D uint8 array or eager tensor of
the bytes is accepted too), and decoded images are uint8/uint16 tensors. Decoding happens
when the function is called: inside ``@function`` on bytes known while tracing the image
becomes a constant of the graph (the same values TensorFlow computes when it runs); reading
and writing files inside ``@function`` is refused, since it would happen once at trace time
rather than at every call.
"""
from __future__ import annotations

from typing import Any

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import bmp_codec, gif_codec, png_codec
from stagecraft.ops.image_bytes import JPEG_MAGIC as _JPEG, contents as _contents, out as _out
from stagecraft.staging.graph_tensor import GraphTensor

__all__ = ["decode_png", "encode_png", "decode_bmp", "decode_gif", "decode_image", "is_jpeg",
           "read_file", "write_file"]


def _dtype_name(dtype: Any, allowed: tuple, fn: str) -> str:
    d = _dt.as_dtype(dtype)
    if d.name not in allowed:
        raise TypeError(f"{fn}: dtype must be one of {', '.join(allowed)}, got {d.name}.")
    return d.name


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dt.uint8,
               name: str | None = None) -> Tensor:
    """A PNG image as a [height, width, channels] uint8 or uint16 tensor. ``channels`` 0 keeps
    the file's (gray 1, gray+alpha 2, RGB 3, RGBA 4; a palette gives RGB, or RGBA with
    transparency), 1/3/4 convert. 8-bit files read as uint16 are scaled by 257, 16-bit files
    read as uint8 keep their high byte (as TensorFlow). Corrupt files raise
    ``InvalidArgumentError``.

    >>> import stagecraft as tf
    >>> png = tf.image.encode_png(tf.constant([[[0], [255]]], tf.uint8))
    >>> tf.image.decode_png(png, channels=3).numpy().tolist()
    [[[0, 0, 0], [255, 255, 255]]]
    """
    if channels not in (0, 1, 2, 3, 4):
        raise ValueError(f"decode_png: channels must be 0, 1, 2, 3 or 4, got {channels}.")
    kind = _dtype_name(dtype, ("uint8", "uint16"), "decode_png")
    return _out(png_codec.decode(_contents(contents, "decode_png"), channels, kind))


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> bytes:
    """PNG bytes for a [height, width, channels] uint8 or uint16 image (1-4 channels);
    ``compression`` is zlib's level 0-9 (-1: its default). Returns Python ``bytes`` (TF: a
    string tensor).

    >>> import stagecraft as tf
    >>> tf.image.encode_png(tf.zeros([2, 2, 3], tf.uint8))[:4]
    b'\\x89PNG'
    """
    image = convert_to_tensor(image)
    if isinstance(image, GraphTensor):
        raise TypeError("encode_png: the image is a symbolic tensor; encoding makes Python "
                        "bytes (stagecraft has no string dtype), so call it outside "
                        "@function on the result.")
    return png_codec.encode(image.numpy(), int(compression))


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """A BMP image as a [height, width, channels] uint8 tensor (24-bit: RGB, 32-bit: RGBA,
    palette files through their palette). ``channels`` must be 0 or the file's count.

    >>> import stagecraft as tf
    >>> bmp = bytes.fromhex("424d3a000000000000003600000028000000010000000100000001001800"
    ...                     "0000000004000000c40e0000c40e000000000000000000000000ff00")
    >>> tf.io.decode_bmp(bmp).numpy().tolist()  # one red pixel
    [[[255, 0, 0]]]
    """
    if channels not in (0, 1, 3, 4):
        raise ValueError(f"decode_bmp: channels must be 0, 1, 3 or 4, got {channels}.")
    return _out(bmp_codec.decode(_contents(contents, "decode_bmp"), channels))


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Every frame of a GIF as a [num_frames, height, width, 3] uint8 tensor (each frame
    drawn over the previous one, transparent pixels keeping it, as TensorFlow composes them).

    >>> import stagecraft as tf
    >>> gif = bytes.fromhex("474946383761010001008000000000000000002c00000000010001000008"
    ...                     "0400010404003b")
    >>> tf.io.decode_gif(gif).shape
    TensorShape([1, 1, 1, 3])
    """
    return _out(gif_codec.decode(_contents(contents, "decode_gif")))


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """Whether the bytes start like a JPEG file (a bool scalar tensor).

    >>> import stagecraft as tf
    >>> bool(tf.io.is_jpeg(b"\\xff\\xd8\\xff\\xe0")), bool(tf.io.is_jpeg(b"GIF89a"))
    (True, False)
    """
    return convert_to_tensor(_contents(contents, "is_jpeg")[:3] == _JPEG)


def decode_image(contents: Any, channels: int | None = None, dtype: Any = _dt.uint8,
                 name: str | None = None, expand_animations: bool = True) -> Tensor:
    """Decodes a PNG, GIF, BMP or JPEG (chosen by its first bytes). PNG, BMP and JPEG give
    [height, width, channels]; GIF gives [num_frames, height, width, 3], or its first frame
    [height, width, 3] with ``expand_animations=False``. A float ``dtype`` scales to [0, 1]
    (``tf.image.convert_image_dtype``).

    >>> import stagecraft as tf
    >>> png = tf.image.encode_png(tf.constant([[[0], [255]]], tf.uint8))
    >>> tf.io.decode_image(png, dtype=tf.float32).numpy().tolist()
    [[[0.0], [1.0]]]
    """
    data = _contents(contents, "decode_image")
    d = _dt.as_dtype(dtype)
    if not (d.name in ("uint8", "uint16") or d.is_floating):
        raise TypeError(f"decode_image: dtype must be uint8, uint16 or a float type, got "
                        f"{d.name}.")
    c = 0 if channels is None else int(channels)
    if data.startswith(png_codec.SIGNATURE):
        image = decode_png(data, c, "uint8" if d.name == "uint8" else "uint16")
    elif data[:6] in (b"GIF87a", b"GIF89a"):
        if c not in (0, 3):
            raise ValueError(f"decode_image: a GIF has 3 channels; channels must be None, 0 or "
                             f"3, got {channels}.")
        image = decode_gif(data)
        if not expand_animations:
            image = image[0]
    elif data[:2] == b"BM":
        image = decode_bmp(data, c)
    elif data.startswith(_JPEG):
        from stagecraft.ops.image_jpeg_ops import decode_jpeg
        image = decode_jpeg(data, c)
    else:
        raise InvalidArgumentError(f"decode_image: unknown image format (the file starts with "
                                   f"{data[:8]!r}); JPEG, PNG, GIF and BMP are supported.")
    if image.dtype == d:
        return image
    from stagecraft.ops.image_dtype import convert_image_dtype
    return convert_image_dtype(image, d)


def _host_only(fn: str) -> None:
    if STATE.get().graph is not None:
        raise RuntimeError(f"{fn} inside @function would run once, while tracing, not at each "
                           f"call (stagecraft has no string tensors to carry file contents "
                           f"through a graph). Call it outside the function and pass the "
                           f"decoded tensor in.")


def read_file(filename: Any, name: str | None = None) -> bytes:
    """The contents of the file ``filename`` as Python ``bytes`` (TF: a string tensor).

    >>> import os, tempfile, stagecraft as tf
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> tf.io.write_file(path, b"abc"); tf.io.read_file(path)
    b'abc'
    """
    _host_only("tf.io.read_file")
    with open(_path(filename, "read_file"), "rb") as f:
        return f.read()


def write_file(filename: Any, contents: Any, name: str | None = None) -> None:
    """Writes ``contents`` (bytes, or a str written as UTF-8) to ``filename``, replacing it."""
    _host_only("tf.io.write_file")
    data = contents.encode() if isinstance(contents, str) else _contents(contents, "write_file")
    with open(_path(filename, "write_file"), "wb") as f:
        f.write(data)


def _path(filename: Any, fn: str) -> str:
    import os
    if isinstance(filename, (str, bytes, os.PathLike)):
        return os.fsdecode(filename)
    raise TypeError(f"tf.io.{fn}: filename must be a str or path, got "
                    f"{type(filename).__name__}.")
