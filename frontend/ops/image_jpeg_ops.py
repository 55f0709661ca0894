"""JPEG for ``tf.image`` / ``tf.io`` through Pillow, the optional ``images`` extra (an
existing, fuzzed libjpeg binding rather than a hand-written codec): ``decode_jpeg``,
``encode_jpeg``, ``extract_jpeg_shape``, ``decode_and_crop_jpeg`` and the JPEG quality
augmentations ``adjust_jpeg_quality``, ``random_jpeg_quality`` and
``stateless_random_jpeg_quality``. The augmentations take image tensors, so inside
``@function`` (and ``tf.data`` map functions) they run the codec through ``py_function`` at
every call; they have no gradient (TensorFlow's have none either)."""
from __future__ import annotations

import io
from typing import Any

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.errors import InvalidArgumentError
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import image_bytes as _codecs
from stagecraft.ops import png_codec
from stagecraft.ops import random_ops as _r
from stagecraft.ops.image_dtype import convert_image_dtype
from stagecraft.state.random_generator import stateless_uniform

__all__ = ["decode_jpeg", "encode_jpeg", "extract_jpeg_shape", "decode_and_crop_jpeg", "adjust_jpeg_quality",
           "random_jpeg_quality", "stateless_random_jpeg_quality"]


def _pillow(fn: str) -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{fn} needs Pillow, an optional dependency of stagecraft: install "
                          f"it with pip install 'stagecraft[images]' (or pip install pillow). "
                          f"PNG, GIF and BMP need nothing extra.") from None
    return Image


def _open_jpeg(contents: Any, fn: str) -> Any:
    """Pillow's lazily decoding image of the JPEG bytes (only the header is read)."""
    image_mod = _pillow(fn)
    data = _codecs.contents(contents, fn)
    if not data.startswith(_codecs.JPEG_MAGIC):
        raise InvalidArgumentError(f"{fn}: not a JPEG file (it does not start with FF D8 FF).")
    try:
        return image_mod.open(io.BytesIO(data), formats=["JPEG"])
    except Exception as e:  # Pillow raises several types on a corrupt header
        raise InvalidArgumentError(f"{fn}: the JPEG data is corrupt, truncated or too large "
                                   f"({type(e).__name__}: {e}).") from None


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> Tensor:
    """A JPEG image as a [height, width, channels] uint8 tensor, decoded by Pillow (the
    ``images`` extra; its libjpeg may round a few values differently from TensorFlow's).
    ``channels`` 0 keeps the file's (1 or 3), 1 or 3 convert; ``ratio`` 1, 2, 4 or 8 downscales
    while decoding. ``dct_method`` is a hint, as in TensorFlow.

    >>> import stagecraft as tf
    >>> jpeg = tf.io.encode_jpeg(tf.fill([8, 8, 3], tf.constant(200, tf.uint8)))
    >>> int(tf.reduce_max(tf.abs(tf.cast(tf.io.decode_jpeg(jpeg), tf.int32) - 200))) <= 2
    True
    """
    if channels not in (0, 1, 3):
        raise ValueError(f"decode_jpeg: channels must be 0, 1 or 3, got {channels}.")
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"decode_jpeg: ratio must be 1, 2, 4 or 8, got {ratio}.")
    if try_recover_truncated or acceptable_fraction != 1 or not fancy_upscaling:
        raise ValueError("decode_jpeg: try_recover_truncated, acceptable_fraction < 1 and "
                         "fancy_upscaling=False are not supported by the Pillow decoder; "
                         "leave them at their defaults.")
    im = _open_jpeg(contents, "decode_jpeg")
    width, height = im.size
    png_codec.check_size("decode_jpeg", height, width, 3, 1)
    try:
        if ratio > 1:
            im.draft(im.mode, (-(-width // ratio), -(-height // ratio)))
        want = {0: "L" if im.mode == "L" else "RGB", 1: "L", 3: "RGB"}[channels]
        array = np.asarray(im.convert(want))
    except Exception as e:  # Pillow raises OSError/SyntaxError/ValueError on corrupt data
        raise InvalidArgumentError(f"decode_jpeg: the JPEG data is corrupt or truncated "
                                   f"({type(e).__name__}: {e}).") from None
    return _codecs.out(array.reshape(array.shape[0], array.shape[1], -1))


def encode_jpeg(image: Any, format: str = "", quality: int = 95,  # noqa: A002
                progressive: bool = False, optimize_size: bool = False,
                chroma_downsampling: bool = True, density_unit: str = "in",
                x_density: int = 300, y_density: int = 300, xmp_metadata: str = "",
                name: str | None = None) -> bytes:
    """JPEG bytes (Python ``bytes``) for a [height, width, 1 or 3] uint8 image, by Pillow (the
    ``images`` extra). ``format`` '' follows the channels, 'grayscale' or 'rgb' forces one.

    >>> import stagecraft as tf
    >>> tf.io.encode_jpeg(tf.zeros([4, 4, 1], tf.uint8))[:3]
    b'\\xff\\xd8\\xff'
    """
    image_mod = _pillow("encode_jpeg")
    array = convert_to_tensor(image)
    if array.dtype != _dt.uint8 or array.shape.rank != 3 or array.shape[-1] not in (1, 3):
        raise ValueError(f"encode_jpeg: image must be a [height, width, 1 or 3] uint8 tensor, "
                         f"got {array.dtype.name} of shape {array.shape}.")
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"encode_jpeg: format must be '', 'grayscale' or 'rgb', got "
                         f"{format!r}.")
    if not 0 <= quality <= 100 or density_unit not in ("in", "cm"):
        raise ValueError(f"encode_jpeg: quality must be in 0-100 and density_unit 'in' or "
                         f"'cm'; got {quality} and {density_unit!r}.")
    values = array.numpy()
    channels = {"": values.shape[-1], "grayscale": 1, "rgb": 3}[format]
    if channels != values.shape[-1]:
        raise ValueError(f"encode_jpeg: format {format!r} needs {channels} channels, the image "
                         f"has {values.shape[-1]}.")
    im = image_mod.fromarray(np.ascontiguousarray(values[..., 0] if channels == 1 else values))
    out = io.BytesIO()
    per_inch = 2.54 if density_unit == "cm" else 1.0
    im.save(out, "JPEG", quality=int(quality), progressive=progressive, optimize=optimize_size,
            subsampling=2 if chroma_downsampling else 0,
            dpi=(x_density * per_inch, y_density * per_inch),
            **({"xmp": xmp_metadata.encode()} if xmp_metadata else {}))
    return out.getvalue()


def extract_jpeg_shape(contents: Any, output_type: Any = _dt.int32,
                       name: str | None = None) -> Tensor:
    """[height, width, channels] of a JPEG from its header, without decoding the pixels.

    >>> import stagecraft as tf
    >>> jpeg = tf.io.encode_jpeg(tf.zeros([3, 5, 3], tf.uint8))
    >>> tf.io.extract_jpeg_shape(jpeg).numpy().tolist()
    [3, 5, 3]
    """
    im = _open_jpeg(contents, "extract_jpeg_shape")
    width, height = im.size
    channels = {"L": 1, "CMYK": 4}.get(im.mode, 3)
    return convert_to_tensor(np.asarray([height, width, channels], _dt.as_dtype(
        output_type).np))


def decode_and_crop_jpeg(contents: Any, crop_window: Any, channels: int = 0, ratio: int = 1,
                         fancy_upscaling: bool = True, try_recover_truncated: bool = False,
                         acceptable_fraction: float = 1, dct_method: str = "",
                         name: str | None = None) -> Tensor:
    """``decode_jpeg`` then the window ``crop_window = [y, x, height, width]``, which must lie
    inside the image (``InvalidArgumentError`` otherwise).

    >>> import stagecraft as tf
    >>> jpeg = tf.io.encode_jpeg(tf.zeros([8, 8, 3], tf.uint8))
    >>> tf.io.decode_and_crop_jpeg(jpeg, [2, 1, 4, 3]).shape
    TensorShape([4, 3, 3])
    """
    window = np.asarray(convert_to_tensor(crop_window).numpy()).reshape(-1)
    if window.size != 4:
        raise ValueError(f"decode_and_crop_jpeg: crop_window must be [y, x, height, width], got "
                         f"{window.tolist()}.")
    image = decode_jpeg(contents, channels, ratio, fancy_upscaling,
                                try_recover_truncated, acceptable_fraction, dct_method)
    y, x, h, w = (int(v) for v in window)
    height, width = image.shape[0], image.shape[1]
    if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > height or x + w > width:
        raise InvalidArgumentError(f"decode_and_crop_jpeg: the crop window {window.tolist()} "
                                   f"is not inside the {height}x{width} image.")
    return image[y:y + h, x:x + w]


def _round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    data = encode_jpeg(image, quality=int(quality))
    return decode_jpeg(data, channels=image.shape[-1]).numpy()


def adjust_jpeg_quality(image: Any, jpeg_quality: Any, dct_method: str = "",
                        name: str | None = None) -> Tensor:
    """The image after a JPEG encode/decode at ``jpeg_quality`` (0-100): a [height, width, 1
    or 3] image of any dtype, returned in its dtype (through uint8, as TensorFlow does).

    >>> import stagecraft as tf
    >>> x = tf.fill([8, 8, 3], 0.5)
    >>> y = tf.image.adjust_jpeg_quality(x, 90)
    >>> y.dtype == tf.float32 and abs(float(tf.reduce_mean(y)) - 0.5) < 0.01
    True
    """
    _pillow("adjust_jpeg_quality")
    x = convert_to_tensor(image)
    if x.shape.rank != 3 or x.shape[-1] not in (1, 3, None):
        raise ValueError(f"adjust_jpeg_quality: image must be [height, width, 1 or 3], got "
                         f"shape {x.shape}.")
    quality = convert_to_tensor(jpeg_quality, _dt.int32)
    q = getattr(quality, "_value", None)
    if q is not None and not 0 <= int(q) <= 100:
        raise ValueError(f"adjust_jpeg_quality: jpeg_quality must be in 0-100, got {int(q)}.")
    pixels = convert_image_dtype(x, _dt.uint8, saturate=True)
    if STATE.get().graph is None:
        out = convert_to_tensor(_round_trip(pixels.numpy(), int(quality.numpy())))
    else:
        from stagecraft.ops.script_ops import py_function
        from stagecraft.staging.tensor_spec import TensorSpec
        out = py_function(lambda p, qq: _round_trip(p.numpy(), int(qq.numpy())),
                          [pixels, quality], TensorSpec(x.shape, _dt.uint8))
    return convert_image_dtype(out, x.dtype, saturate=True)


def _check_range(fn: str, lo: int, hi: int) -> None:
    if not 0 <= lo < hi <= 100:
        raise ValueError(f"{fn}: need 0 <= min_jpeg_quality < max_jpeg_quality <= 100, got "
                         f"{lo} and {hi}.")


def random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                        seed: int | None = None) -> Tensor:
    """``adjust_jpeg_quality`` at a quality drawn uniformly from [min, max).

    >>> import stagecraft as tf
    >>> tf.image.random_jpeg_quality(tf.zeros([4, 4, 3]), 70, 95, seed=1).shape
    TensorShape([4, 4, 3])
    """
    _check_range("random_jpeg_quality", min_jpeg_quality, max_jpeg_quality)
    q = _r.uniform([], min_jpeg_quality, max_jpeg_quality, _dt.int32, seed=seed)
    return adjust_jpeg_quality(image, q)


def stateless_random_jpeg_quality(image: Any, min_jpeg_quality: int, max_jpeg_quality: int,
                                  seed: Any) -> Tensor:
    """``random_jpeg_quality`` with the quality drawn from ``seed`` (a pair of ints) alone.

    >>> import stagecraft as tf
    >>> x = tf.random.uniform([8, 8, 3], seed=1)
    >>> a = tf.image.stateless_random_jpeg_quality(x, 10, 90, seed=[1, 2])
    >>> b = tf.image.stateless_random_jpeg_quality(x, 10, 90, seed=[1, 2])
    >>> bool(tf.reduce_all(a == b))
    True
    """
    _check_range("stateless_random_jpeg_quality", min_jpeg_quality, max_jpeg_quality)
    q = stateless_uniform([], seed, min_jpeg_quality, max_jpeg_quality, _dt.int32)
    return adjust_jpeg_quality(image, q)
