"""Higher-order functions over the first axis: ``map_fn``, ``scan``, ``foldl``, ``foldr``.
Each is one ``while_loop`` over TensorArrays (eagerly a Python loop, staged one loop whose
body is ``fn`` traced once), so gradients flow through them as through any loop."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.eager import nest
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.tensor_array import TensorArray
from stagecraft.staging.while_loop import while_loop

__all__ = ["map_fn", "scan", "foldl", "foldr"]


def _elements(elems: Any) -> tuple[list, Any, Any]:
    """The flat element tensors, their structure, and the length of their first axis."""
    flat = [convert_to_tensor(e) for e in nest.flatten(elems)]
    if not flat:
        raise ValueError("the elements must hold at least one tensor")
    n = flat[0].shape[0]
    return flat, elems, n if n is not None else _a.shape(flat[0])[0]


def _item(flat: list, structure: Any, i: Any) -> Any:
    return nest.pack_sequence_as(structure, [_a.gather(t, i) for t in flat])


def scan(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: Any = None,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: str | None = None) -> Any:
    """The running results of ``acc = fn(acc, element)`` over the first axis of ``elems``
    (starting from ``initializer``, or from the first element), stacked.

    >>> import stagecraft as tf
    >>> tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3, 4])).numpy().tolist()
    [1, 3, 6, 10]
    """
    flat, structure, n = _elements(elems)
    order = (lambda i: _m.subtract(_m.subtract(n, 1), i)) if reverse else (lambda i: i)
    start = 0
    if initializer is None:
        acc = _item(flat, structure, order(convert_to_tensor(0)))
        start = 1
    else:
        acc = nest.map_structure(convert_to_tensor, initializer)
    acc_flat = nest.flatten(acc)
    arrays = [TensorArray(t.dtype, size=n) for t in acc_flat]
    if start:
        arrays = [ta.write(order(convert_to_tensor(0)), t) for ta, t in zip(arrays, acc_flat)]

    def body(i: Any, *state: Any) -> tuple:
        k = len(acc_flat)
        acc = nest.pack_sequence_as(structure if initializer is None else initializer,
                                    list(state[:k]))
        new = nest.flatten(fn(acc, _item(flat, structure, order(i))))
        written = [ta.write(order(i), t) for ta, t in zip(state[k:], new)]
        return (_m.add(i, 1), *[convert_to_tensor(t) for t in new], *written)

    out = while_loop(lambda i, *_: _m.less(i, n), body,
                     (convert_to_tensor(start), *acc_flat, *arrays))
    stacked = [ta.stack() for ta in out[1 + len(acc_flat):]]
    return nest.pack_sequence_as(structure if initializer is None else initializer, stacked)


def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: Any = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None, fn_output_signature: Any = None) -> Any:
    """``fn`` applied to each element along the first axis of ``elems`` (a tensor or a
    structure of them), the results stacked.

    >>> import stagecraft as tf
    >>> tf.map_fn(lambda x: x * x, tf.constant([1, 2, 3])).numpy().tolist()
    [1, 4, 9]
    """
    flat, structure, n = _elements(elems)
    first = fn(_item(flat, structure, convert_to_tensor(0)))
    first_flat = [convert_to_tensor(t) for t in nest.flatten(first)]
    arrays = [TensorArray(t.dtype, size=n).write(0, t) for t in first_flat]

    def body(i: Any, *arrays: Any) -> tuple:
        out = [convert_to_tensor(t) for t in nest.flatten(fn(_item(flat, structure, i)))]
        return (_m.add(i, 1), *[ta.write(i, t) for ta, t in zip(arrays, out)])

    out = while_loop(lambda i, *_: _m.less(i, n), body, (convert_to_tensor(1), *arrays))
    return nest.pack_sequence_as(first, [ta.stack() for ta in out[1:]])


def foldl(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: Any = None,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """The final ``acc = fn(acc, element)`` from the first element to the last.

    >>> import stagecraft as tf
    >>> int(tf.foldl(lambda a, x: a * 10 + x, tf.constant([1, 2, 3])))
    123
    """
    return nest.map_structure(lambda t: t[-1], scan(fn, elems, initializer))


def foldr(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: Any = None,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """The final ``acc = fn(acc, element)`` from the last element to the first.

    >>> import stagecraft as tf
    >>> int(tf.foldr(lambda a, x: a * 10 + x, tf.constant([1, 2, 3])))
    321
    """
    # a reversed scan writes each result at its element's index: the last is at 0
    return nest.map_structure(lambda t: t[0], scan(fn, elems, initializer, reverse=True))
