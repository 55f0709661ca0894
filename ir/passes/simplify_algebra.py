"""Algebraic simplification: local rewrites that replace an equation's output by an operand.

Each rewrite is a small function named for what it matches and produces, registered for the
ops it rewrites (``@rewrite("multiply", tags=...)``, as PyTensor's ``@node_rewriter([Mul])``):
the pass calls an equation's rules only, so a rule never re-checks its op. A rewrite returns the operand that equals the equation's output bit for
bit (for every input, NaN, infinities and signed zeros included) or ``None``. The pass only
accepts a ``Value`` of exactly the output's type, so a rewrite never changes a shape through
broadcasting nor a dtype; the replaced equation is dropped (it is a stateless primitive).

Rewrites deliberately left out because they are not exact for floats:

* ``x + 0.0 -> x``: ``-0.0 + 0.0`` is ``+0.0``. Only ``x + (-0.0)`` is folded for floats
  (``x + 0`` always for integers);
* ``x - (-0.0) -> x``: it is ``x + 0.0`` (same reason); ``x - 0.0`` is exact and is folded;
* ``0 - x -> -x``: ``0.0 - 0.0`` is ``+0.0`` but ``-(0.0)`` is ``-0.0``;
* ``x * 0 -> 0``, ``0 / x -> 0``: NaN and infinity give NaN, negative ``x`` gives ``-0.0``;
* ``x - x -> 0``, ``x / x -> 1``: NaN and infinity (and ``0 / 0``);
* ``x // 1 -> x`` and ``x % 1 -> 0`` for floats (they floor); both are exact for integers;
* reassociation (``(x * a) * b -> x * (a * b)``, ``(x + a) + b``): rounding differs;
* ``log(exp(x)) -> x``, ``sqrt(square(x)) -> abs(x)``: overflow and rounding;
* ``x * 1 -> x`` and ``x / 1 -> x`` hold, and so do ``-(-x) -> x`` (integers wrap around
  symmetrically) and ``x ** 1 -> x``; those are included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from stagecraft.ir.graph import Eqn, Graph, Literal, Value, const_value
from stagecraft.ir.ops import OPS
from stagecraft.ir.passes.rewrite import (literal_array, rebuild, renamed_eqns, rename_results,
                                          same_type)


class Facts:
    """What the rewrites may ask about operands: their constant value and defining equation
    (within the graph being rewritten)."""

    def __init__(self) -> None:
        self.consts: dict[int, np.ndarray] = {}
        self.producers: dict[int, Eqn] = {}

    def record(self, eqn: Eqn) -> None:
        for o in eqn.outputs:
            self.producers[o.uid] = eqn
        if eqn.op == "const":
            self.consts[eqn.outputs[0].uid] = np.asarray(const_value(eqn))

    def const(self, x: Value | Literal) -> np.ndarray | None:
        """The constant value of ``x``, or None when it is not a constant."""
        if isinstance(x, Literal):
            return np.asarray(literal_array(x))
        return self.consts.get(x.uid)

    def producer(self, x: Value | Literal, op: str | None = None) -> Eqn | None:
        """The equation defining ``x`` (when its op is ``op``, if given)."""
        if not isinstance(x, Value):
            return None
        e = self.producers.get(x.uid)
        return e if e is not None and (op is None or e.op == op) else None


Rewrite = Callable[[Eqn, Facts], "Value | Literal | None"]


@dataclass(frozen=True)
class Registered:
    fn: Rewrite
    tags: frozenset
    ops: tuple[str, ...]


REWRITES: list[Registered] = []                 # in registration order
BY_OP: dict[str, list[Registered]] = {}        # op name -> its rules, in that order


def rewrite(*ops: str, tags: tuple[str, ...] = ()) -> Callable[[Rewrite], Rewrite]:
    """Registers a local rewrite of the equations of ``ops`` under ``tags`` (all are also
    tagged ``"algebra"``).

    >>> r = next(r for r in REWRITES if r.fn is negate_twice_to_identity)
    >>> r.ops, sorted(r.tags), [q.fn.__name__ for q in BY_OP["negative"]]
    (('negative',), ['algebra', 'involution'], ['negate_twice_to_identity'])
    """
    def register(fn: Rewrite) -> Rewrite:
        entry = Registered(fn, frozenset(tags) | {"algebra"}, ops)
        REWRITES.append(entry)
        for op in ops:
            BY_OP.setdefault(op, []).append(entry)
        return fn
    return register


# ---------------------------------------------------------------------------- helpers

def _cannot_grow(other: tuple | None, keep: tuple | None) -> bool:
    """Whether broadcasting a shape ``other`` against ``keep`` leaves ``keep`` unchanged for
    every run-time shape either may have (unknown dims only match a 1)."""
    if other is None:
        return False
    if keep is None:
        return len(other) == 0
    if len(other) > len(keep):
        return False
    return all(d == 1 or (d is not None and d == k) for d, k in zip(reversed(other),
                                                                    reversed(keep)))


def _keeps_shape(c: np.ndarray, x: Value | Literal) -> bool:
    """Whether broadcasting constant ``c`` against ``x`` leaves ``x``'s shape unchanged."""
    return _cannot_grow(c.shape, x.type.shape)


def _is_all(c: np.ndarray | None, value: float, negative_zero: bool | None = None) -> bool:
    if c is None or c.size == 0 or c.dtype.kind not in "iuf":
        return False
    if not bool(np.all(c == value)):
        return False
    if negative_zero is not None and c.dtype.kind == "f":
        return bool(np.all(np.signbit(c) == negative_zero))
    return True


def _binary_identity(eqn: Eqn, facts: Facts, value: float, *, left: bool,
                     negative_zero: bool | None = None) -> Value | Literal | None:
    """``x op c -> x`` (and ``c op x -> x`` when ``left``) for constants ``c`` all ``value``."""
    x, y = eqn.inputs
    candidates = [(x, y)] + ([(y, x)] if left else [])
    for keep, other in candidates:
        c = facts.const(other)
        if _is_all(c, value, negative_zero) and _keeps_shape(c, keep):
            return keep
    return None


def _zero_sign(eqn: Eqn, sign_for_floats: bool) -> bool | None:
    return sign_for_floats if eqn.outputs[0].type.dtype.is_floating else None


# --------------------------------------------------------------------------- rewrites

@rewrite("add", tags=("identity",))
def add_zero_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x + 0 -> x`` and ``0 + x -> x``; for floats only ``-0.0`` (``-0.0 + 0.0 = 0.0``)."""
    return _binary_identity(eqn, facts, 0, left=True, negative_zero=_zero_sign(eqn, True))


@rewrite("subtract", tags=("identity",))
def subtract_zero_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x - 0 -> x``; for floats only ``+0.0`` (``-0.0 - 0.0 = -0.0``)."""
    return _binary_identity(eqn, facts, 0, left=False, negative_zero=_zero_sign(eqn, False))


@rewrite("multiply", tags=("identity",))
def multiply_by_one_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x * 1 -> x`` and ``1 * x -> x``."""
    return _binary_identity(eqn, facts, 1, left=True)


@rewrite("divide", tags=("identity",))
def divide_by_one_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x / 1 -> x`` (integer true division changes the dtype and is not matched)."""
    return _binary_identity(eqn, facts, 1, left=False)


@rewrite("floordiv", tags=("identity",))
def integer_floordiv_by_one_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x // 1 -> x`` for integers (floats would be floored)."""
    if not eqn.outputs[0].type.dtype.is_integer:
        return None
    return _binary_identity(eqn, facts, 1, left=False)


@rewrite("pow", tags=("identity",))
def pow_of_one_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``x ** 1 -> x`` (IEEE ``pow(x, 1)`` is ``x``, NaN included)."""
    return _binary_identity(eqn, facts, 1, left=False)


@rewrite("negative", tags=("involution",))
def negate_twice_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``-(-x) -> x``."""
    inner = facts.producer(eqn.inputs[0], "negative")
    return inner.inputs[0] if inner is not None else None


@rewrite("logical_not", tags=("involution",))
def logical_not_twice_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``!!x -> x``."""
    inner = facts.producer(eqn.inputs[0], "logical_not")
    return inner.inputs[0] if inner is not None else None


@rewrite("cast", tags=("cast",))
def cast_to_same_dtype_to_identity(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``cast[dtype=d](x) -> x`` when ``x`` already has dtype ``d``."""
    x = eqn.inputs[0]
    return x if x.type.dtype == eqn.params["dtype"] else None


@rewrite("identity", "stop_gradient", tags=("identity",))
def identity_to_operand(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``identity(x) -> x`` and ``stop_gradient(x) -> x`` (gradients are taken before the
    graph is optimized; at run time both are the identity)."""
    return eqn.inputs[0]


@rewrite("reshape", "broadcast_to", tags=("shape",))
def reshape_to_same_shape_to_operand(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``reshape(x) -> x`` when ``x``'s shape is fully known and already the target."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    shape = x.type.shape
    known = shape is not None and all(d is not None for d in shape)
    return x if known and shape == out.type.shape else None


@rewrite("transpose", tags=("shape",))
def transpose_by_identity_permutation_to_operand(eqn: Eqn, facts: Facts
                                                 ) -> Value | Literal | None:
    """``transpose[perm=(0, 1, ..., n-1)](x) -> x``."""
    perm = eqn.params.get("perm")
    if perm is None or tuple(perm) != tuple(range(len(perm))):
        return None
    x = eqn.inputs[0]
    return x if x.type.rank == len(perm) else None


@rewrite("select", tags=("select",))
def select_of_constant_condition_to_branch(eqn: Eqn, facts: Facts) -> Value | Literal | None:
    """``select(True, x, y) -> x`` and ``select(False, x, y) -> y`` for an all-true or
    all-false constant condition that does not broadcast the chosen branch."""
    c, x, y = eqn.inputs
    cv = facts.const(c)
    if cv is None or cv.size == 0 or cv.dtype.kind != "b":
        return None
    keep = x if bool(np.all(cv)) else y if not bool(np.any(cv)) else None
    if keep is None or not _keeps_shape(cv, keep):
        return None
    other = y if keep is x else x
    return keep if _cannot_grow(other.type.shape, keep.type.shape) else None


# ------------------------------------------------------------------------------- pass

def simplify_algebra(graph: Graph, tags: frozenset | set | None = None) -> tuple[bool, Graph]:
    """``(changed, graph')`` after applying the registered rewrites (those carrying one of
    ``tags``, if given) to every stateless primitive, in regions too.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return tf.negative(tf.negative(x * 1.0)) + 0.0
    >>> print(simplify_algebra(f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph)[1])
    graph @f(%x: f32[]) -> (f32[]) {
      %0: f32[] = negative %x
      %1: f32[] = add %x, 0.0:f32
      return %1
    }

    The inner ``negative`` is now unused: ``eliminate_dead_code`` removes it. ``+ 0.0`` stays
    (``-0.0 + 0.0`` is ``0.0``).
    """
    rules = {op: tuple(r.fn for r in entries if tags is None or r.tags & set(tags))
             for op, entries in BY_OP.items()}
    return _simplify(graph, rules, {})


def _simplify(graph: Graph, rules: dict, memo: dict) -> tuple[bool, Graph]:
    subst: dict = {}
    facts = Facts()
    changed = False
    eqns = []
    for c, eqn in renamed_eqns(graph, subst, lambda r: _simplify(r, rules, memo), memo):
        changed |= c
        replacement = _apply(eqn, facts, rules)
        if replacement is not None:
            subst[eqn.outputs[0].uid] = replacement
            changed = True
            continue
        facts.record(eqn)
        eqns.append(eqn)
    return rebuild(graph, changed, eqns, rename_results(graph, subst))


def _apply(eqn: Eqn, facts: Facts, rules: dict) -> Value | None:
    op = OPS.get(eqn.op)
    if op is None or op.stateful or eqn.regions or len(eqn.outputs) != 1:
        return None
    out = eqn.outputs[0]
    for rule in rules.get(eqn.op, ()):
        r = rule(eqn, facts)
        if isinstance(r, Value) and same_type(r, out):
            return r
    return None
