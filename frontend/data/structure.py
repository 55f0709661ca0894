"""The structure of dataset elements, as ``tf.data`` defines it: tuples, namedtuples and dicts
nest; everything else (a list included) is one component, converted to a tensor. An element is
kept as that structure of eager tensors; its ``element_spec`` is the same structure of
``TensorSpec``s."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir.shapes import TensorShape
from stagecraft.staging.tensor_spec import TensorSpec

__all__ = ["map_structure", "flatten", "pack", "normalize", "spec_of", "same_structure",
           "call_with_element", "to_numpy"]


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """Applies ``fn`` to the components of one or more elements of the same structure.

    >>> map_structure(lambda a, b: a + b, (1, {"k": 2}), (10, {"k": 20}))
    (11, {'k': 22})
    """
    first = structures[0]
    if isinstance(first, dict):
        return type(first)((k, map_structure(fn, *(s[k] for s in structures))) for k in first)
    if isinstance(first, tuple):
        parts = [map_structure(fn, *(s[i] for s in structures)) for i in range(len(first))]
        return type(first)(*parts) if _is_namedtuple(first) else tuple(parts)
    return fn(*structures)


def flatten(structure: Any) -> list:
    """The components of an element in order (dict values in key order, as ``tf.nest``).

    >>> flatten(({"b": 2, "a": 1}, [3, 4]))
    [1, 2, [3, 4]]
    """
    if isinstance(structure, dict):
        return [c for k in sorted(structure) for c in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [c for part in structure for c in flatten(part)]
    return [structure]


def pack(structure: Any, components: list) -> Any:
    """Rebuilds ``structure`` from ``components`` in ``flatten``'s order.

    >>> pack(({"b": 0, "a": 0}, 0), [1, 2, 3])
    ({'b': 2, 'a': 1}, 3)
    """
    it = iter(components)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            values = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, values[k]) for k in s)
        if isinstance(s, tuple):
            parts = [build(p) for p in s]
            return type(s)(*parts) if _is_namedtuple(s) else tuple(parts)
        return next(it)

    return build(structure)


def packer(structure: Any) -> Any:
    """A fast ``pack`` for one structure: a function of the components list (called per
    element by the sources, so a flat tuple or a single tensor skips the generic walk).

    >>> packer((0, 0))([1, 2]), packer(0)([3]), packer({"a": 0})([4])
    ((1, 2), 3, {'a': 4})
    """
    if isinstance(structure, tuple) and not _is_namedtuple(structure) and \
            not any(isinstance(p, (tuple, dict)) for p in structure):
        return tuple
    if not isinstance(structure, (tuple, dict)):
        return lambda components: components[0]
    return lambda components: pack(structure, components)


def same_structure(a: Any, b: Any) -> bool:
    """Whether two elements (or specs) nest the same way (same keys, same lengths)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b)
                and all(same_structure(a[k], b[k]) for k in a))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(same_structure(x, y) for x, y in zip(a, b)))
    return True


def normalize(value: Any, what: str) -> Any:
    """``value`` with every component converted to an eager tensor (a list is one component,
    as in TensorFlow: ``[1, 2]`` is a tensor of shape (2,), not two components)."""
    if type(value) is Tensor:
        return value
    if type(value) is tuple and all(type(x) is Tensor for x in value):
        return value  # what staged map functions return: nothing to convert

    def convert(x: Any) -> Tensor:
        if isinstance(x, Tensor):
            return x
        if x is None:
            raise TypeError(f"{what}: an element component is None; tf.data elements are "
                            f"tensors (or tuples/dicts of them).")
        return convert_to_tensor(x)
    return map_structure(convert, value)


def spec_of(element: Any) -> Any:
    """The ``TensorSpec`` structure of an element."""
    return map_structure(lambda t: TensorSpec(t.shape, t.dtype), element)


def relax(a: Any, b: Any) -> Any:
    """The most specific spec compatible with both specs (dims that differ become None)."""
    def common(x: TensorSpec, y: TensorSpec) -> TensorSpec:
        if x.shape.rank != y.shape.rank:
            return TensorSpec(TensorShape(None), x.dtype)
        dims = [d if d == e else None for d, e in zip(x.shape.as_list(), y.shape.as_list())]
        return TensorSpec(dims, x.dtype)
    return map_structure(common, a, b)


def call_with_element(fn: Callable[..., Any], element: Any) -> Any:
    """Calls a user function on an element as ``Dataset.map`` does: a tuple is unpacked into
    positional arguments, anything else (a dict, a tensor) is passed as one argument."""
    if isinstance(element, tuple) and not _is_namedtuple(element):
        return fn(*element)
    return fn(element)


def to_numpy(element: Any) -> Any:
    """The element as NumPy values (0-d tensors become NumPy scalars), as
    ``as_numpy_iterator`` yields them."""
    def value(t: Tensor) -> Any:
        v = t.numpy()
        return v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v
    return map_structure(value, element)


def component_value(t: Tensor) -> np.ndarray:
    """The NumPy array of an eager tensor component."""
    return np.asarray(t.numpy())


def from_value(value: np.ndarray) -> Tensor:
    """An eager tensor around a NumPy array whose dtype is already a stagecraft dtype."""
    return wrap(value)
