"""``TensorArray``: a list of same-dtype tensors written one index at a time, usable as a loop
variable. Eagerly it is a Python list; while tracing, one tensor of shape ``[n, *element]`` (the
buffer), which a staged loop carries.

The element shape, when not given, is learned from the first write (TensorFlow's
``infer_shape=True``): a fixed-size array then gets all its rows at once (zeros), so writes
replace rows (``row_update``) and its length never changes; a ``dynamic_size`` array grows
with zero rows up to the written index. A loop whose body makes the first write starts from a
buffer allocated before it: the loop traces the body once to learn the element shape
(:func:`allocate_for_loop`, and AutoGraph's loops the same way). Gradients flow through every
write, read, stack, unstack, gather and scatter: they are ordinary ops on the buffer.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.eager.bind import bind
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.ops import OPS
from stagecraft.ir.shapes import TensorShape
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.types import TensorType
from stagecraft.ops.array_ops import gather, ones_like, reshape, shape, stack, unstack, zeros
from stagecraft.ops.math_ops import add, cast, greater, maximum, reduce_max, where
from stagecraft.staging.func_graph import building, FuncGraph
from stagecraft.staging.graph_tensor import graph_tensor


class TensorArray:
    """A functional array of tensors: ``write`` returns the updated array (keep the result).

    >>> import stagecraft as tf
    >>> ta = tf.TensorArray(tf.float32, size=2)
    >>> ta = ta.write(0, 1.0).write(1, 2.0)
    >>> ta.stack().numpy().tolist(), int(ta.size())
    ([1.0, 2.0], 2)

    Inside ``@function`` the size may be a tensor and the element shape is learned from the
    first write:

    >>> @tf.function(input_signature=[tf.TensorSpec([None, 2])])
    ... def squares(x):
    ...     n = tf.shape(x)[0]
    ...     ta = tf.TensorArray(tf.float32, size=n)
    ...     for i in tf.range(n):
    ...         ta = ta.write(i, x[i] * x[i])
    ...     return ta.stack()
    >>> squares(tf.constant([[1., 2.], [3., 4.]])).numpy().tolist()
    [[1.0, 4.0], [9.0, 16.0]]
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
        if size is not None and not isinstance(size, (int, Tensor)) or isinstance(size, bool):
            raise TypeError(f"TensorArray: size must be an int or a scalar int tensor, got "
                            f"{size!r}.")
        if STATE.get().graph is None:
            n = 0 if size is None else int(size)
            self._items = [None] * n
            self._size: Any = n
            return
        if isinstance(size, Tensor) and type(size) is Tensor:
            size = int(size)
        # The length: rows allocated at the first write (all of them for a fixed size; the
        # initial ones for a dynamic size).
        self._size = 0 if size is None else size
        if self._element_shape.is_fully_defined():
            self._buffer = self._zeros(self._element_shape.as_list())

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

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

    # ------------------------------------------------------------------ staged buffer
    def _zeros(self, element_dims: Sequence[Any], rows: Any = None) -> Tensor:
        """Zeros for ``rows`` (default: the array's size) elements of ``element_dims`` (ints
        or scalar int tensors)."""
        return zeros([self._size if rows is None else rows] + list(element_dims), self._dtype)

    def _allocate_like(self, t: Tensor) -> Tensor:
        """The buffer of an array whose first write is ``t`` (dims unknown while tracing are
        read from ``t`` when the function runs)."""
        if t.shape.rank is None:
            raise ValueError("TensorArray: the first value written has an unknown rank, so the "
                             "array's element shape cannot be learned; pass element_shape= "
                             "when creating the TensorArray.")
        return self._zeros(_dims_of(t))

    def _allocated(self, element_shape: TensorShape) -> "TensorArray":
        """This array (nothing written yet) with its buffer for elements of ``element_shape``:
        the state a staged loop starts from when its body makes the first write."""
        if self._buffer is not None or self._items is not None:
            return self
        if not element_shape.is_fully_defined():
            raise ValueError(
                f"TensorArray: a loop writes this array first, with elements of shape "
                f"{element_shape}, which is not fully known when tracing, so its buffer cannot "
                f"be allocated before the loop. Write one element before the loop, or make the "
                f"element shape static (e.g. an input_signature with those sizes).")
        return self._new(buffer=self._zeros(element_shape.as_list()), element_shape=element_shape)

    def _index(self, index: Any, what: str) -> Tensor:
        i = convert_to_tensor(index)
        if i.dtype not in _dt.INTS or i.shape.rank not in (0, None):
            raise TypeError(f"TensorArray.{what}: the index must be a scalar int32/int64, got "
                            f"{i.dtype.name} of shape {i.shape}.")
        return i

    def _grown(self, buf: Tensor, length: Any) -> Tensor:
        """``buf`` with zero rows appended so that it has at least ``length`` rows (a dynamic
        array written past its end, as TensorFlow does)."""
        n = shape(buf)[0]
        rows = self._zeros(_dims_of(buf)[1:], rows=maximum(cast(length, n.dtype), n))
        # buf placed into the first rows of zeros: the op's gradient needs only the row count,
        # not buf, so a loop's gradient does not keep every (differently sized) buffer.
        return bind(OPS["strided_slice_grad"], buf, rows, n, spec=(("slice", None, "$0", None),))

    # --------------------------------------------------------------------------- API
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
        index = self._index(index, "write")
        buf = self._buffer if self._buffer is not None else self._allocate_like(t)
        if self._dynamic:
            buf = self._grown(buf, add(index, 1))
        return self._new(buffer=bind(OPS["row_update"], buf, index, t), element_shape=shape)

    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at ``index``."""
        if self._items is not None:
            i = int(index)
            if not 0 <= i < len(self._items) or self._items[i] is None:
                raise InvalidArgumentError(f"TensorArray: could not read index {i}: it has not "
                                           f"been written (size {len(self._items)}).")
            return self._items[i]
        return self._stacked()[self._index(index, "read")]

    def _stacked(self) -> Tensor:
        if self._buffer is None:
            raise ValueError("TensorArray: the element shape is unknown because nothing was "
                             "written yet; write an element first or pass element_shape= when "
                             "creating it.")
        return self._buffer

    def stack(self, name: str | None = None) -> Tensor:
        """All elements stacked along a new first dimension."""
        if self._items is None:
            return self._stacked()
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
        """The elements at ``indices``, stacked."""
        return gather(self.stack(), indices)

    def concat(self, name: str | None = None) -> Tensor:
        """The elements joined along their first dimension (all have the same shape here)."""
        stacked = self.stack()
        if stacked.shape.rank is not None and stacked.shape.rank < 2:
            raise ValueError("TensorArray.concat: the elements are scalars; use stack().")
        return reshape(stacked, [-1] + _dims_of(stacked)[2:])

    def unstack(self, value: Any, name: str | None = None) -> "TensorArray":
        """An array holding the rows of ``value``."""
        t = self._value_rows(value, "unstack")
        if self._items is not None:
            return self._new(items=list(unstack(t)), element_shape=t.shape[1:])
        return self._new(buffer=t, element_shape=t.shape[1:])

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> "TensorArray":
        """The array with row ``k`` of ``value`` written at ``indices[k]`` (distinct indices).

        >>> import stagecraft as tf
        >>> ta = tf.TensorArray(tf.float32, size=3).scatter([2, 0], [[1.], [2.]])
        >>> ta.read(2).numpy().tolist(), ta.read(0).numpy().tolist()
        ([1.0], [2.0])
        """
        t = self._value_rows(value, "scatter")
        idx = convert_to_tensor(indices)
        if idx.dtype not in _dt.INTS or idx.shape.rank not in (1, None):
            raise TypeError(f"TensorArray.scatter: indices must be a 1-D int32/int64 tensor, "
                            f"got {idx.dtype.name} of shape {idx.shape}.")
        shape = self._element_shape.merge_with(t.shape[1:])
        if self._items is not None:
            ta = self._new(items=self._items, element_shape=shape)
            for i, row in zip(idx.numpy().tolist(), unstack(t)):
                ta = ta.write(i, row)
            return ta
        if not self._dtype.is_floating and not self._dtype.is_integer:
            raise TypeError(f"TensorArray.scatter inside @function needs a numeric dtype, not "
                            f"{self._dtype.name}; write the elements one by one instead.")
        buf = self._buffer if self._buffer is not None else self._zeros(_dims_of(t)[1:])
        if self._dynamic:
            buf = self._grown(buf, add(reduce_max(idx), 1))
        scatter = OPS["gather_grad"]   # the adjoint of gather: adds rows into zeros like buf
        rows = bind(scatter, t, idx, buf, axis=0, batch_dims=0)
        hit = greater(bind(scatter, ones_like(t), idx, buf, axis=0, batch_dims=0), 0)
        return self._new(buffer=where(hit, rows, buf), element_shape=shape)

    def _value_rows(self, value: Any, what: str) -> Tensor:
        t = convert_to_tensor(value, self._dtype) if not isinstance(value, Tensor) else value
        if t.dtype != self._dtype:
            raise TypeError(f"TensorArray.{what}: cannot use a {t.dtype.name} value in a "
                            f"TensorArray of {self._dtype.name}; cast it first.")
        if t.shape.rank == 0:
            raise ValueError(f"TensorArray.{what}: the value must have rank >= 1 (one element "
                             f"per row), got a scalar.")
        if t.shape.rank is not None and not self._element_shape.is_compatible_with(t.shape[1:]):
            raise ValueError(f"TensorArray.{what}: rows of shape {t.shape[1:]} are not "
                             f"compatible with the array's element shape {self._element_shape}.")
        return t

    def size(self, name: str | None = None) -> Tensor:
        """The number of elements, as an int32 tensor."""
        if self._items is not None:
            return convert_to_tensor(len(self._items))
        if self._buffer is None:
            return convert_to_tensor(self._size)
        return shape(self._buffer)[0]

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


def _dims_of(t: Tensor) -> list:
    """``t``'s dims: ints where known when tracing, ``tf.shape(t)[i]`` elsewhere."""
    dims = t.shape.as_list()
    if None not in dims:
        return dims
    s = shape(t)
    return [d if d is not None else s[i] for i, d in enumerate(dims)]


def unwritten(v: Any) -> bool:
    """Whether ``v`` is a TensorArray being traced that has no buffer yet (nothing written and
    no element_shape given)."""
    return isinstance(v, TensorArray) and v._items is None and v._buffer is None


def allocate_for_loop(body: Callable, loop_vars: Sequence[Any]) -> list:
    """``loop_vars`` of a staged ``while_loop`` with every unwritten TensorArray given its
    buffer: the body is traced once in a scratch graph to learn what it writes (the element
    shape), as TensorFlow infers it from the first write.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(n):
    ...     ta = tf.TensorArray(tf.float32, size=n)
    ...     _, ta = tf.while_loop(lambda i, ta: i < n,
    ...                           lambda i, ta: (i + 1, ta.write(i, tf.fill([2], 1.0))),
    ...                           (0, ta))
    ...     return ta.stack()
    >>> f(tf.constant(2)).numpy().tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    loop_vars = list(loop_vars)
    pending = [i for i, v in enumerate(loop_vars) if unwritten(v)]
    fg = STATE.get().graph
    if not pending or fg is None:
        return loop_vars
    scratch = FuncGraph("scratch", parent=fg)

    def placeholder(v: Any) -> Any:
        if isinstance(v, TensorArray) and v._buffer is not None:
            return v._from_components([placeholder(v._buffer)])
        if isinstance(v, TensorArray):
            return v
        t = v if isinstance(v, Tensor) else convert_to_tensor(v)
        return graph_tensor(scratch.add_input(TensorType(t.dtype, t.shape.dims_tuple)), scratch)

    with building(scratch):
        out = body(*[placeholder(v) for v in loop_vars])
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    for i in pending:
        w = out[i] if i < len(out) else None
        if isinstance(w, TensorArray) and w._buffer is not None:
            loop_vars[i] = loop_vars[i]._allocated(w.element_shape)
    return loop_vars
