"""``tf.einsum``: the equation is parsed once (explicit or implicit output, ``...`` for
broadcast dimensions, repeated subscripts for diagonals) and lowered to existing ops, so it is
as fast as the ops it becomes and differentiable through them: a diagonal is a product with an
identity mask and a sum, subscripts no longer needed are summed out, and each pair of operands
(left to right) is contracted with one batched ``matmul`` between a transpose and a reshape of
each side."""
from __future__ import annotations

import string
from typing import Any, Sequence

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m

__all__ = ["einsum"]

_LETTERS = frozenset(string.ascii_letters)


def _error(equation: str, problem: str) -> ValueError:
    return ValueError(f"einsum: invalid equation {equation!r}: {problem}.")


def _split_term(equation: str, term: str, what: str) -> tuple[str, str, bool]:
    """``(letters before '...', letters after, has '...')`` of one subscript term."""
    if term.count("...") > 1:
        raise _error(equation, f"{what} {term!r} has more than one '...'")
    before, dots, after = term.partition("...")
    bad = sorted({c for c in before + after if c not in _LETTERS})
    if bad:
        raise _error(equation, f"{what} {term!r} contain {bad[0]!r}; subscripts are letters "
                               f"a-z, A-Z and one optional '...'")
    return before, after, bool(dots)


def _labels(equation: str, term: str, rank: int, ell: int, k: int) -> list:
    """Labels of operand ``k``'s dimensions: letters, and ``("...", i)`` for the i-th of the
    ``ell`` broadcast dimensions counted from the right end of the ellipsis."""
    before, after, dots = _split_term(equation, term, f"the subscripts of operand {k}")
    named = len(before) + len(after)
    if (not dots and named != rank) or named > rank:
        raise _error(equation, f"operand {k} has rank {rank} but its subscripts {term!r} name "
                               f"{named} dimension{'s' if named != 1 else ''}"
                               + ("" if dots else "; add '...' to cover the others"))
    e = rank - named
    return list(before) + [("...", ell - e + i) for i in range(e)] + list(after)


def _dims(x: Tensor) -> list:
    """The dims of ``x``: ints where known, scalar tensors where not."""
    known = x.shape.as_list()
    if None not in known:
        return known
    dynamic = _a.shape(x)
    return [d if d is not None else dynamic[i] for i, d in enumerate(known)]


def _product(dims: Sequence[Any]) -> Any:
    out: Any = 1
    for d in dims:
        out = d * out if isinstance(out, int) and isinstance(d, int) else _m.multiply(out, d)
    return out


def _take_diagonals(x: Tensor, labels: list, equation: str) -> tuple[Tensor, list]:
    """Repeated labels of one operand reduced to their diagonal ("ii->i")."""
    while True:
        seen = {}
        for q, lab in enumerate(labels):
            if lab in seen:
                break
            seen[lab] = q
        else:
            return x, labels
        p = seen[lab]
        n, m = x.shape[p], x.shape[q]
        if n is None or m is None or n != m:
            raise _error(equation, f"subscript {lab!r} repeats over dimensions of sizes {n} and "
                                   f"{m}; a diagonal needs equal, known sizes")
        mask = np.zeros([n if i in (p, q) else 1 for i in range(len(labels))])
        mask[tuple(np.arange(n) if i in (p, q) else 0 for i in range(len(labels)))] = 1
        x = _m.reduce_sum(_m.multiply(x, _m.cast(mask, x.dtype)), axis=q)
        labels = labels[:q] + labels[q + 1:]


def _sum_out(x: Tensor, labels: list, keep: set) -> tuple[Tensor, list]:
    axes = [i for i, lab in enumerate(labels) if lab not in keep]
    if not axes:
        return x, labels
    return _m.reduce_sum(x, axis=axes), [lab for lab in labels if lab in keep]


def _arrange(x: Tensor, labels: list, order: list) -> Tensor:
    perm = [labels.index(lab) for lab in order]
    return x if perm == list(range(len(perm))) else _a.transpose(x, perm)


def _drop_broadcast(x: Tensor, labels: list, other: Tensor, other_labels: list):
    """Shared labels of size 1 here and another size there: the dimension broadcasts, so it
    leaves this side (the other side keeps or sums it)."""
    drop = [i for i, lab in enumerate(labels) if lab in other_labels and x.shape[i] == 1
            and other.shape[other_labels.index(lab)] != 1]
    if not drop:
        return x, labels
    return _a.squeeze(x, drop), [lab for i, lab in enumerate(labels) if i not in drop]


def _contract(x: Tensor, xl: list, y: Tensor, yl: list, keep: set) -> tuple[Tensor, list]:
    """x and y combined over their shared labels: kept ones are batch dimensions, the others
    are summed by one batched matmul."""
    x, xl = _drop_broadcast(x, xl, y, yl)
    y, yl = _drop_broadcast(y, yl, x, xl)
    x, xl = _sum_out(x, xl, keep | set(yl))
    y, yl = _sum_out(y, yl, keep | set(xl))
    batch = [lab for lab in xl if lab in yl and lab in keep]
    summed = [lab for lab in xl if lab in yl and lab not in keep]
    xfree = [lab for lab in xl if lab not in yl]
    yfree = [lab for lab in yl if lab not in xl]
    xd, yd = dict(zip(xl, _dims(x))), dict(zip(yl, _dims(y)))
    xm = _a.reshape(_arrange(x, xl, batch + xfree + summed),
                    [xd[b] for b in batch] + [_product([xd[f] for f in xfree]),
                                              _product([xd[s] for s in summed])])
    ym = _a.reshape(_arrange(y, yl, batch + summed + yfree),
                    [yd[b] for b in batch] + [_product([yd[s] for s in summed]),
                                              _product([yd[f] for f in yfree])])
    out = _m.matmul(xm, ym)
    batch_dims = [xd[b] if xd[b] != 1 else yd[b] for b in batch]
    return (_a.reshape(out, batch_dims + [xd[f] for f in xfree] + [yd[f] for f in yfree]),
            batch + xfree + yfree)


def _parse(equation: str, ranks: list) -> tuple[list, list]:
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _error(equation, "it has more than one '->'")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise _error(equation, f"it has subscripts for {len(terms)} operand"
                               f"{'s' if len(terms) != 1 else ''} but {len(ranks)} "
                               f"{'were' if len(ranks) != 1 else 'was'} given")
    ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t),
              default=0)
    labels = [_labels(equation, t, r, ell, k) for k, (t, r) in enumerate(zip(terms, ranks))]
    letters = [lab for ls in labels for lab in ls if isinstance(lab, str)]
    if arrow:
        before, after, dots = _split_term(equation, rhs, "the output subscripts")
        out = list(before) + ([("...", i) for i in range(ell)] if dots else []) + list(after)
        missing = [c for c in before + after if c not in letters]
        if missing:
            raise _error(equation, f"output subscript {missing[0]!r} appears in no input")
        if len(set(before + after)) != len(before + after):
            raise _error(equation, "an output subscript appears more than once")
        if ell and not dots and any(isinstance(lab, tuple) for ls in labels for lab in ls):
            raise _error(equation, "the inputs have '...' dimensions, so the output needs '...' "
                                   "too")
    else:   # implicit: '...' then the letters that appear once, in alphabetical order
        out = [("...", i) for i in range(ell)] + sorted(c for c in set(letters)
                                                        if letters.count(c) == 1)
    return labels, out


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """Tensor contraction by Einstein summation: ``"ij,jk->ik"`` is a matrix product; ``...``
    stands for broadcast dimensions; without ``->`` the output takes ``...`` and then the
    subscripts that appear once, in alphabetical order; a subscript repeated within an
    operand takes its diagonal.

    >>> import stagecraft as tf
    >>> a = tf.reshape(tf.range(6.0), [2, 3])
    >>> tf.einsum("ij,kj->ik", a, a).numpy().tolist()
    [[5.0, 14.0], [14.0, 50.0]]
    >>> tf.einsum("ii", tf.eye(3)).numpy()
    np.float32(3.0)
    >>> tf.einsum("...ij->...ji", tf.zeros([4, 2, 3])).shape
    TensorShape([4, 3, 2])
    """
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword argument {sorted(unknown)[0]!r}.")
    if not inputs:
        raise ValueError("einsum: give at least one operand after the equation.")
    xs = [convert_to_tensor(x) for x in inputs]
    if any(x.shape.rank is None for x in xs):
        raise ValueError("einsum: the ranks of the operands must be known.")
    labels, out = _parse(equation, [x.shape.rank for x in xs])
    operands = [_take_diagonals(x, ls, equation) for x, ls in zip(xs, labels)]
    acc, acc_labels = operands[0]
    for k in range(1, len(operands)):
        later = {lab for _, ls in operands[k + 1:] for lab in ls}
        y, yl = operands[k]
        acc, acc_labels = _contract(acc, acc_labels, y, yl, set(out) | later)
    acc, acc_labels = _sum_out(acc, acc_labels, set(out))
    missing = [lab for lab in out if lab not in acc_labels]
    if missing:   # a '...' dimension that every operand broadcast away (size 1)
        acc = _a.reshape(acc, _dims(acc) + [1] * len(missing))
        acc_labels = acc_labels + missing
    return _arrange(acc, acc_labels, out)
