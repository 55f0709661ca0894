"""VJP rule of ``segment_reduce``, TensorFlow's rules for the segment ops: a sum sends each
segment's gradient to its rows (none to dropped rows with negative ids), a max or min to the
rows that hold the extreme value (split evenly among ties), a product to each row as the
product of the others (written to stay exact when rows are zero). ``RULES`` maps the op to its
rule; :mod:`stagecraft.autodiff.vjps` adds it to the table (this module does not import it, so
the two stay free of import cycles)."""
from __future__ import annotations

from stagecraft.eager.bind import bind
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m


def _rows_of(values: Tensor, ids: Tensor, sorted: bool) -> Tensor:  # noqa: A002
    """``values[ids]`` (one row per id), zero for negative ids (TensorFlow's
    _GatherDropNegatives)."""
    if sorted:
        return a.gather(values, ids)
    gathered = a.gather(values, m.maximum(ids, 0))
    keep = m.greater_equal(ids, 0)
    extra = gathered.shape.rank - ids.shape.rank
    keep = a.reshape(keep, a.concat([a.shape(ids), a.ones([extra], "int32")], 0)) \
        if extra else keep
    return m.where(keep, gathered, a.zeros_like(gathered))


def _segment(data: Tensor, ids: Tensor, num: Tensor, mode: str, sorted: bool,  # noqa: A002
             static: tuple) -> Tensor:
    return bind(OPS["segment_reduce"], data, ids, num, mode=mode, sorted=sorted, static=static)


def _segment_reduce(g, out, data, ids, num, mode, sorted, static):  # noqa: A002
    if mode == "sum":
        return _rows_of(g, ids, sorted), None, None
    if mode == "prod":
        is_zero = m.equal(data, 0)
        zeros = _segment(m.cast(is_zero, data.dtype), ids, num, "sum", sorted, static)
        g = m.where(m.greater(zeros, 1), a.zeros_like(g), g)
        nonzero = m.where(is_zero, a.ones_like(data), data)
        nonzero_prod = _segment(nonzero, ids, num, "prod", sorted, static)
        others = m.where(is_zero, _rows_of(nonzero_prod, ids, sorted),
                         m.divide(_rows_of(out, ids, sorted), nonzero))
        return m.multiply(_rows_of(g, ids, sorted), others), None, None
    selected = m.logical_and(m.equal(data, _rows_of(out, ids, sorted)),
                             _rows_of(a.ones_like(out, dtype="bool"), ids, sorted))
    counts = _segment(m.cast(selected, data.dtype), ids, num, "sum", sorted, static)
    share = _rows_of(m.divide(g, m.maximum(counts, 1)), ids, sorted)
    return m.where(selected, share, a.zeros_like(share)), None, None


RULES = {"segment_reduce": _segment_reduce}
