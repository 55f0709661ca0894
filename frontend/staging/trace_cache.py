"""Trace-cache keys for ``function``: TensorFlow's TraceType rules.

Tensors and NumPy arrays key by (shape, dtype); variables by (shape, dtype, trainable, alias
position); Python scalars by **(type, value)** — a documented deviation from TensorFlow, where
``1``, ``1.0`` and ``True`` share one trace because they compare equal: stagecraft never hands a
trace baked with ``1`` to a call that passed ``1.0``; lists, tuples, namedtuples and dicts
element-wise (dict key order ignored); other objects by weak identity.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from stagecraft.ir.dtypes import DType, from_numpy
from stagecraft.ir.shapes import as_dims
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.state.variables import Variable


@dataclass(frozen=True)
class TensorKey:
    dims: tuple | None
    dtype: DType


@dataclass(frozen=True)
class VariableKey:
    dims: tuple | None
    dtype: DType
    trainable: bool
    alias: int


@dataclass(frozen=True)
class ObjectKey:
    ident: int
    type_name: str


def make_key(value: Any, aliases: dict, refs: list) -> Any:
    """The hashable key of one argument; ``aliases`` numbers variables by first appearance,
    ``refs`` collects weak references that must stay alive for the key to be valid."""
    if type(value) is Tensor:  # the common case first
        v = value._value
        return TensorKey(v.shape, from_numpy(v.dtype))
    if isinstance(value, Tensor) or isinstance(value, TensorSpec):
        return TensorKey(value.shape.dims_tuple, value.dtype)
    if isinstance(value, np.ndarray):
        return TensorKey(tuple(value.shape), from_numpy(value.dtype))
    if isinstance(value, Variable):
        alias = aliases.setdefault(id(value), len(aliases))
        return VariableKey(value._shape, value.dtype, value.trainable, alias)
    if value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        return ("literal", type(value).__name__, value)
    if hasattr(value, "__tf_tracing_type__"):
        key = value.__tf_tracing_type__(None)
        hash(key)
        return ("traced", key)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return ("namedtuple", type(value).__name__, type(value)._fields,
                tuple(make_key(v, aliases, refs) for v in value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(make_key(v, aliases, refs) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, make_key(value[k], aliases, refs))
                              for k in sorted(value, key=repr)))
    if isinstance(value, weakref.ref):
        raise TypeError(f"weakref.ref arguments are not supported by @function (got {value!r}); "
                        f"pass the object itself.")
    try:
        refs.append(weakref.ref(value))
        return ObjectKey(id(value), type(value).__name__)
    except TypeError:
        pass
    try:
        hash(value)
        return ("hashable", value)
    except TypeError:
        raise TypeError(f"Could not generate a generic TraceType for {value!r} of type "
                        f"{type(value).__name__}: @function arguments must be tensors, Python "
                        f"scalars, nested lists/tuples/dicts, or objects that are hashable or "
                        f"weak-referenceable.") from None


class WeakArgument:
    """An argument a trace was keyed on by identity (an ``ObjectKey``), as the trace keeps it:
    weakly, so that a ``ConcreteFunction`` does not keep its key objects alive (issue 15)."""

    __slots__ = ("ref", "type_name")

    def __init__(self, value: Any):
        self.ref = weakref.ref(value)
        self.type_name = type(value).__name__

    def __repr__(self) -> str:
        return f"<{self.type_name} object at {id(self):#x}, no longer alive>"


def _keyed_by_value(value: Any) -> bool:
    """Whether ``make_key`` keys the leaf ``value`` by its contents (tensors, specs, variables,
    literals, ``__tf_tracing_type__`` objects) rather than by identity."""
    return (isinstance(value, (Tensor, TensorSpec, np.ndarray, Variable, bool, int, float, str,
                               bytes, np.generic, weakref.ref)) or value is None
            or hasattr(value, "__tf_tracing_type__"))


def weaken(structure: Any) -> tuple[Any, bool]:
    """``structure`` (traced arguments: nested lists, tuples, namedtuples and dicts) with each
    object keyed by identity replaced by a ``WeakArgument``; and whether any was.

    >>> class Obj: pass
    >>> o = Obj(); weak, changed = weaken(([1, o], {"k": 2.0}))
    >>> changed, type(weak[0][1]).__name__, strengthen(weak) == ([1, o], {"k": 2.0})
    (True, 'WeakArgument', True)
    """
    changed = [False]

    def walk(value: Any) -> Any:
        if _keyed_by_value(value):
            return value
        if isinstance(value, tuple) and hasattr(type(value), "_fields"):
            return type(value)(*(walk(v) for v in value))
        if isinstance(value, (list, tuple)):
            return type(value)(walk(v) for v in value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        try:
            weak = WeakArgument(value)
        except TypeError:  # not weak-referenceable: keyed by hash and value, kept as it is
            return value
        changed[0] = True
        return weak

    out = walk(structure)
    return out, changed[0]


def strengthen(structure: Any) -> Any:
    """The inverse of ``weaken``: each ``WeakArgument`` replaced by its object, or left as it
    is (it prints as "no longer alive") when the object died."""
    if isinstance(structure, WeakArgument):
        obj = structure.ref()
        return structure if obj is None else obj
    if isinstance(structure, tuple) and hasattr(type(structure), "_fields"):
        return type(structure)(*(strengthen(v) for v in structure))
    if isinstance(structure, (list, tuple)):
        return type(structure)(strengthen(v) for v in structure)
    if isinstance(structure, dict):
        return {k: strengthen(v) for k, v in structure.items()}
    return structure


def is_subtype(key: Any, general: Any) -> bool:
    """True when a call with ``key`` may use a trace made for ``general`` (None dims match any
    size; unknown rank matches any rank)."""
    if isinstance(key, TensorKey) and isinstance(general, TensorKey):
        return key.dtype == general.dtype and _dims_sub(key.dims, general.dims)
    if isinstance(key, tuple) and isinstance(general, tuple):
        return len(key) == len(general) and all(is_subtype(a, b) for a, b in zip(key, general))
    return key == general


def _dims_sub(dims: tuple | None, general: tuple | None) -> bool:
    if general is None:
        return True
    if dims is None or len(dims) != len(general):
        return False
    return all(g is None or d == g for d, g in zip(dims, general))


def generalize(a: Any, b: Any) -> Any:
    """The most specific key both ``a`` and ``b`` are subtypes of, or None if there is none
    (different dtypes, Python values or structure)."""
    if isinstance(a, TensorKey) and isinstance(b, TensorKey):
        if a.dtype != b.dtype:
            return None
        if a.dims is None or b.dims is None or len(a.dims) != len(b.dims):
            return TensorKey(None, a.dtype)
        return TensorKey(tuple(x if x == y else None for x, y in zip(a.dims, b.dims)), a.dtype)
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return None
        out = []
        for x, y in zip(a, b):
            g = generalize(x, y)
            if g is None and not (x is None and y is None):
                return None
            out.append(g)
        return tuple(out)
    return a if a == b else None


def specificity(key: Any) -> int:
    """Smaller is more specific (fewer unknown dims/ranks)."""
    if isinstance(key, TensorKey):
        return 1000 if key.dims is None else sum(d is None for d in key.dims)
    if isinstance(key, tuple):
        return sum(specificity(k) for k in key)
    return 0


def spec_dims(key: Any) -> Any:
    return as_dims(key.dims) if isinstance(key, TensorKey) else None
