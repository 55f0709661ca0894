"""The Python operators of tensors and variables (``x + y``, ``x[i]``, ``x == y``, ...), each
one op, installed on ``stagecraft.eager.tensor.TensorOperators`` (the base of ``Tensor``,
``DeviceTensor``, ``GraphTensor`` and ``Variable``).

They live with the op wrappers because they call them: ``eager.tensor`` defines ``Tensor``
without importing any op, and importing ``stagecraft`` installs these.

>>> import stagecraft as tf
>>> (tf.constant([1.0, 2.0]) * 2 + 1)[1]
<stagecraft.Tensor: shape=(), dtype=float32, numpy=5.0>
"""
from __future__ import annotations


from stagecraft.eager.bind import bind as _bind
from stagecraft.eager.tensor import TensorOperators
from stagecraft.ir import OPS as _OPS
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

_ADD, _SUB, _MUL, _DIV = _OPS["add"], _OPS["subtract"], _OPS["multiply"], _OPS["divide"]


# The arithmetic operators bind their op directly: one call less on the hottest path.
def __add__(self, other): return _bind(_ADD, self, other)
def __radd__(self, other): return _bind(_ADD, other, self)
def __sub__(self, other): return _bind(_SUB, self, other)
def __rsub__(self, other): return _bind(_SUB, other, self)
def __mul__(self, other): return _bind(_MUL, self, other)
def __rmul__(self, other): return _bind(_MUL, other, self)
def __truediv__(self, other): return _bind(_DIV, self, other)
def __rtruediv__(self, other): return _bind(_DIV, other, self)
def __floordiv__(self, other): return _m.floordiv(self, other)
def __rfloordiv__(self, other): return _m.floordiv(other, self)
def __mod__(self, other): return _m.floormod(self, other)
def __rmod__(self, other): return _m.floormod(other, self)
def __pow__(self, other): return _m.pow(self, other)
def __rpow__(self, other): return _m.pow(other, self)
def __matmul__(self, other): return _m.matmul(self, other)
def __rmatmul__(self, other): return _m.matmul(other, self)
def __neg__(self): return _m.negative(self)
def __pos__(self): return self
def __abs__(self): return _m.abs(self)
def __invert__(self): return _m.invert_(self)
def __and__(self, other): return _m.and_(self, other)
def __rand__(self, other): return _m.and_(other, self)
def __or__(self, other): return _m.or_(self, other)
def __ror__(self, other): return _m.or_(other, self)
def __xor__(self, other): return _m.xor_(self, other)
def __rxor__(self, other): return _m.xor_(other, self)
def __lt__(self, other): return _m.less(self, other)
def __le__(self, other): return _m.less_equal(self, other)
def __gt__(self, other): return _m.greater(self, other)
def __ge__(self, other): return _m.greater_equal(self, other)
def __getitem__(self, key): return _a.getitem(self, key)

def __eq__(self, other):
    # Elementwise like TF 2; None and incompatible shapes or dtypes compare unequal.
    if other is None:
        return False
    try:
        return _m.equal(self, other)
    except (InvalidArgumentError, TypeError):
        return False

def __ne__(self, other):
    if other is None:
        return True
    try:
        return _m.not_equal(self, other)
    except (InvalidArgumentError, TypeError):
        return True



def install(cls: type) -> None:
    """Gives ``cls`` the operators of this module (``TensorOperators`` gets them on import).

    >>> class Box(TensorOperators):
    ...     pass
    >>> install(Box); Box.__add__ is __add__
    True
    """
    for name, fn in list(globals().items()):
        if name.startswith("__") and name.endswith("__") and callable(fn) and \
                getattr(fn, "__module__", None) == __name__:
            setattr(cls, name, fn)


install(TensorOperators)
