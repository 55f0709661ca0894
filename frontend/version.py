"""``stagecraft.version`` (``tf.version``): the package's version.

>>> import stagecraft as tf
>>> tf.version.VERSION == tf.__version__
True
"""
from stagecraft import __version__ as VERSION  # noqa: N811 (TensorFlow's name)

__all__ = ["VERSION"]
