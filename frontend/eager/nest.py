"""Flattening and rebuilding nested structures (lists, tuples, namedtuples, dicts by sorted
key), the way ``tf.nest`` does. Composite values (a TensorArray being traced) flatten to the
tensors they are made of."""
from __future__ import annotations

from typing import Any, Callable, Iterator


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure: Any) -> list:
    """The leaves of ``structure`` in order (dict values by sorted key).

    >>> flatten([1, {'b': 3, 'a': 2}, (4,)])
    [1, 2, 3, 4]
    """
    return list(_leaves(structure))


def _components(x: Any) -> list | None:
    """The tensors a composite value (a staged TensorArray) is made of, or None for a leaf."""
    fn = getattr(x, "_nest_components", None)
    return fn() if fn is not None else None


def _leaves(x: Any) -> Iterator[Any]:
    comps = _components(x)
    if comps is not None:
        yield from comps
    elif isinstance(x, dict):
        for k in sorted(x):
            yield from _leaves(x[k])
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    else:
        yield x


def pack_sequence_as(structure: Any, flat: list) -> Any:
    """Rebuilds ``structure`` with the leaves taken in order from ``flat``."""
    it = iter(flat)
    out = _pack(structure, it)
    if next(it, _END) is not _END:
        raise ValueError("pack_sequence_as: more values than the structure has leaves.")
    return out


_END = object()


def _pack(x: Any, it: Iterator[Any]) -> Any:
    comps = _components(x)
    if comps is not None:
        return x._from_components([next(it) for _ in comps])
    if isinstance(x, dict):
        values = {k: _pack(x[k], it) for k in sorted(x)}
        return type(x)((k, values[k]) for k in x) if type(x) is not dict else \
            {k: values[k] for k in x}
    if _is_namedtuple(x):
        return type(x)(*[_pack(v, it) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_pack(v, it) for v in x)
    try:
        return next(it)
    except StopIteration:
        raise ValueError("pack_sequence_as: fewer values than the structure has leaves.") \
            from None


def map_structure(fn: Callable[..., Any], structure: Any) -> Any:
    """Applies ``fn`` to every leaf, keeping the structure."""
    return pack_sequence_as(structure, [fn(v) for v in flatten(structure)])
