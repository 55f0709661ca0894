"""``TensorArray``: a list of same-dtype tensors written one index at a time, usable as a loop
variable. Eagerly it is a Python list; while tracing, one tensor of shape ``[n, *element]``
(written by slicing, so its length may change inside a ``while`` loop)."""
from __future__ import annotations

from typing import Any

from stagecraft.context import STATE
from stagecraft.convert import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.bind import bind
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops import OPS
from stagecraft.ir.shapes import TensorShape
from stagecraft.tensor import Tensor


class TensorArray:
    """A functional array of tensors: ``write`` returns the updated array (keep the result).

    >>> import stagecraft as tf
    >>> ta = tf.TensorArray(tf.float32, size=2)
    >>> ta = ta.write(0, 1.0).write(1, 2.0)
    >>> ta.stack().numpy().tolist(), int(ta.size())
    ([1.0, 2.0], 2)
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None):
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._element_shape = TensorShape(element_shape)
        self._items: list | None = None
        self._buffer: Tensor | None = None
        # A fixed length known when tracing, for a buffer made at the first write.
        self._size = size if isinstance(size, int) and not self._dynamic else None
        if STATE.get().graph is None:
            n = 0 if size is None else int(size)
            self._items = [None] * n
        elif self._element_shape.is_fully_defined():
            from stagecraft.array_ops import zeros
            n = size if isinstance(size, int) else 0
            self._buffer = zeros([n] + self._element_shape.as_list(), self._dtype)

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    def _new(self, items: list | None = None, buffer: Tensor | None = None,
             element_shape: TensorShape | None = None) -> "TensorArray":
        ta = object.__new__(TensorArray)
        ta._dtype, ta._dynamic = self._dtype, self._dynamic
        ta._element_shape = element_shape or self._element_shape
        ta._items, ta._buffer, ta._size = items, buffer, self._size
        return ta

    def _value(self, value: Any) -> Tensor:
        t = convert_to_tensor(value, self._dtype) if not isinstance(value, Tensor) else value
        if t.dtype != self._dtype:
            raise TypeError(f"TensorArray: cannot write a {t.dtype.name} value into a "
                            f"TensorArray of {self._dtype.name}; cast it first.")
        if not self._element_shape.is_compatible_with(t.shape):
            raise ValueError(f"TensorArray: element shape {t.shape} is not compatible with the "
                             f"array's element shape {self._element_shape}.")
        return t

    def write(self, index: Any, value: Any, name: str | None = None) -> "TensorArray":
        """The array with ``value`` at ``index`` (returns a new TensorArray)."""
        t = self._value(value)
        shape = self._element_shape.merge_with(t.shape)
        if self._items is not None:
            i = int(index)
            items = list(self._items)
            if i >= len(items):
                if not self._dynamic:
                    raise InvalidArgumentError(
                        f"TensorArray: tried to write to index {i} but the array is not "
                        f"resizeable and its size is {len(items)}. Pass dynamic_size=True.")
                items.extend([None] * (i + 1 - len(items)))
            items[i] = t
            return self._new(items=items, element_shape=shape)
        from stagecraft.array_ops import concat, expand_dims, tile, zeros_like
        buf = self._buffer
        if buf is None and self._size and t.shape.rank is not None:
            # The first write of a fixed-size array whose element shape was unknown until now:
            # the buffer gets all its rows (zeros), so writes replace rows instead of growing it.
            buf = tile(zeros_like(expand_dims(t, 0)), [self._size] + [1] * t.shape.rank)
        if buf is not None and not self._dynamic and buf.shape[0] is not None \
                and buf.shape[0] > 0:
            # A fixed size: one row written in a copy (an index out of range raises).
            index = convert_to_tensor(index)
            if index.dtype not in (_dt.int32, _dt.int64):
                raise TypeError(f"TensorArray.write: the index must be an integer, got "
                                f"{index.dtype.name}.")
            return self._new(buffer=bind(OPS["row_update"], buf, index, t),
                             element_shape=shape)
        row = expand_dims(t, 0)
        if buf is None:
            return self._new(buffer=row, element_shape=shape)
        return self._new(buffer=concat([buf[:index], row, buf[index + 1:]], 0),
                         element_shape=shape)

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at ``index``."""
        if self._items is not None:
            i = int(index)
            if not 0 <= i < len(self._items) or self._items[i] is None:
                raise InvalidArgumentError(f"TensorArray: could not read index {i}: it has not "
                                           f"been written (size {len(self._items)}).")
            return self._items[i]
        return self._stacked()[index]

    def _stacked(self) -> Tensor:
        if self._buffer is None:
            raise ValueError("TensorArray: the element shape is unknown because nothing was "
                             "written yet; pass element_shape= when creating it.")
        return self._buffer

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new first dimension."""
        if self._items is None:
            return self._stacked()
        from stagecraft.array_ops import stack, zeros
        missing = [i for i, t in enumerate(self._items) if t is None]
        if missing and not self._element_shape.is_fully_defined():
            raise InvalidArgumentError(f"TensorArray: elements {missing} were never written and "
                                       f"the element shape is unknown; write them or pass "
                                       f"element_shape=.")
        items = [zeros(self._element_shape.as_list(), self._dtype) if t is None else t
                 for t in self._items]
        if not items:
            return zeros([0] + (self._element_shape.as_list()
                                if self._element_shape.rank is not None else []), self._dtype)
        return stack(items)

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        from stagecraft.array_ops import gather
        return gather(self.stack(), indices)

    def concat(self, name: str | None = None) -> Tensor:
        from stagecraft.array_ops import concat, unstack
        return concat(unstack(self.stack()), 0)

    def unstack(self, value: Any, name: str | None = None) -> "TensorArray":
        """An array holding the rows of ``value``."""
        t = convert_to_tensor(value, self._dtype) if not isinstance(value, Tensor) else value
        if self._items is not None:
            from stagecraft.array_ops import unstack
            return self._new(items=list(unstack(t)), element_shape=t.shape[1:])
        return self._new(buffer=t, element_shape=t.shape[1:])

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements, as an int32 tensor."""
        if self._items is not None:
            return convert_to_tensor(len(self._items))
        from stagecraft.array_ops import shape
        return shape(self._stacked())[0]

    # Loop variables are flattened to tensors: a TensorArray being traced is its buffer.
    def _nest_components(self) -> list | None:
        return None if self._items is not None or self._buffer is None else [self._buffer]

    def _to_components(self) -> list:
        return [self._stacked()]

    def _component_shapes(self) -> list:
        # A fixed-size array keeps its length through a loop (writes replace rows); a dynamic
        # one may grow.
        n = None if self._dynamic or self._buffer is None else self._buffer.shape[0]
        return [TensorShape([n]).concatenate(self._element_shape)]

    def _from_components(self, components: list) -> "TensorArray":
        return self._new(buffer=components[0])
