"""File contents as bytes, shared by the image codec modules (:mod:`.image_codecs` and
:mod:`.image_jpeg_ops`, which must not import each other): stagecraft has no string dtype, so
file contents are Python ``bytes``, or a 1-D uint8 array / eager tensor of them.

>>> contents(b"\\x89PNG", "decode_png")[:4]
b'\\x89PNG'
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.graph_tensor import GraphTensor

JPEG_MAGIC = b"\xff\xd8\xff"


def contents(contents: Any, fn: str) -> bytes:
    """File contents as bytes: bytes-like, or a 1-D uint8 array / eager tensor of them."""
    if isinstance(contents, (bytes, bytearray, memoryview)):
        return bytes(contents)
    if isinstance(contents, Tensor):
        if isinstance(contents, GraphTensor):
            raise TypeError(f"{fn}: contents is a symbolic tensor; stagecraft has no string "
                            f"dtype, so file contents must be Python bytes known while "
                            f"tracing. Decode outside the function, or pass the bytes as a "
                            f"Python value.")
        contents = contents.numpy()
    if isinstance(contents, np.ndarray) and contents.dtype == np.uint8 and contents.ndim == 1:
        return contents.tobytes()
    if isinstance(contents, np.ndarray) and contents.dtype.kind == "S" and contents.ndim == 0:
        return bytes(contents)
    raise TypeError(f"{fn}: contents must be bytes (stagecraft has no string dtype), got "
                    f"{type(contents).__name__}. Read a file with tf.io.read_file(path) or "
                    f"open(path, 'rb').read().")


def out(image: np.ndarray) -> Tensor:
    return convert_to_tensor(np.ascontiguousarray(image))
