"""``stagecraft.io`` (``tf.io``): reading and writing files and image codecs.

stagecraft has no string dtype: file contents are Python ``bytes`` where TensorFlow has string
tensors (see :mod:`stagecraft.ops.image_codecs`). JPEG needs Pillow, the ``images`` extra.

>>> import stagecraft as tf
>>> tf.io.decode_png(tf.io.encode_png(tf.ones([1, 2, 3], tf.uint8))).shape
TensorShape([1, 2, 3])
"""
from stagecraft.ops.image_codecs import (decode_bmp, decode_gif, decode_image, decode_png,
                                         encode_png, is_jpeg, read_file, write_file)
from stagecraft.ops.image_jpeg_ops import (decode_and_crop_jpeg, decode_jpeg, encode_jpeg,
                                           extract_jpeg_shape)

__all__ = ["decode_bmp", "decode_gif", "decode_image", "decode_jpeg", "decode_png",
           "encode_jpeg", "encode_png", "is_jpeg", "read_file", "write_file",
           "decode_and_crop_jpeg", "extract_jpeg_shape"]
