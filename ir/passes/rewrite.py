"""Shared plumbing of the graph passes: renaming operands, recursing into regions, reading
constants.

Passes never mutate: they build new ``Eqn``/``Graph`` records with ``dataclasses.replace``
and return the very same object when nothing changed (so a fixpoint loop can compare cheaply,
and a region shared by several equations is rewritten once). A value replaced by another is
recorded in a *substitution* ``{uid: operand}``; later operands and the graph's results are
renamed through it. Regions are closed, so a substitution never reaches into them.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import numpy as np

from stagecraft.ir.graph import Eqn, Graph, Literal, Value, make_attrs

Pass = Callable[[Graph], "tuple[bool, Graph]"]
Substitution = dict  # dict[int, Value | Literal], keyed by the replaced value's uid


def rename(x: Value | Literal, subst: Substitution) -> Value | Literal:
    """``x`` through ``subst`` (unchanged when it is a ``Literal`` or not replaced).

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.types import TensorType
    >>> a, b = Value(TensorType(dtypes.float32, ())), Value(TensorType(dtypes.float32, ()))
    >>> rename(a, {a.uid: b}) is b, rename(b, {a.uid: b}) is b
    (True, True)
    """
    if isinstance(x, Value):
        return subst.get(x.uid, x)
    return x


def rename_inputs(eqn: Eqn, subst: Substitution) -> Eqn:
    """``eqn`` with its operands renamed through ``subst`` (the same object if none changes).

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x, y = b.param(TensorType(dtypes.float32, ())), b.param(TensorType(dtypes.float32, ()))
    >>> (z,) = b.add("negative", [x], [x.type])
    >>> rename_inputs(b.eqns[0], {x.uid: y}).inputs[0] is y
    True
    """
    if not subst:
        return eqn
    inputs = tuple(rename(x, subst) for x in eqn.inputs)
    if all(a is b for a, b in zip(inputs, eqn.inputs)):
        return eqn
    return dataclasses.replace(eqn, inputs=inputs)


def rename_results(graph: Graph, subst: Substitution) -> tuple:
    """The results of ``graph`` renamed through ``subst``.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("f")
    >>> x, y = b.param(TensorType(dtypes.float32, ())), b.param(TensorType(dtypes.float32, ()))
    >>> rename_results(b.build([x, y]), {x.uid: y}) == (y, y)
    True
    """
    return tuple(rename(r, subst) for r in graph.results)


def rebuild(graph: Graph, changed: bool, eqns: list, results: tuple) -> tuple[bool, Graph]:
    """``(changed, graph')``: a new graph with ``eqns`` and ``results`` when ``changed`` (or
    when a result was renamed), else ``graph`` itself.

    >>> from stagecraft.ir.graph import GraphBuilder
    >>> g = GraphBuilder("f").build([])
    >>> rebuild(g, False, [], ()) == (False, g), rebuild(g, True, [], ())[1] is g
    (True, False)
    """
    changed = changed or any(a is not b for a, b in zip(results, graph.results))
    if not changed:
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(eqns), results)


def map_regions(eqn: Eqn, pass_fn: Pass, memo: dict) -> tuple[bool, Eqn]:
    """Applies ``pass_fn`` to each region of ``eqn``; ``memo`` (``id(region) -> (region,
    result)``, one per pass run) rewrites a region shared by several equations only once.

    >>> from stagecraft.ir.graph import Eqn
    >>> e = Eqn("negative", (), ())
    >>> map_regions(e, lambda g: (False, g), {})[1] is e
    True
    """
    if not eqn.regions:
        return False, eqn
    regions = []
    changed = False
    for region in eqn.regions:
        key = id(region)
        if key not in memo:
            memo[key] = (region, pass_fn(region))  # keeps `region` alive: its id stays unique
        c, new = memo[key][1]
        changed |= c
        regions.append(new)
    if not changed:
        return False, eqn
    return True, dataclasses.replace(eqn, regions=tuple(regions))


def renamed_eqns(graph: Graph, subst: Substitution, region_pass: Pass, memo: dict
                 ) -> Iterator[tuple[bool, Eqn]]:
    """The walk of a pass that replaces values: each equation of ``graph`` in order, its
    operands renamed through ``subst`` as it stands then (the pass adds to it as it goes), its
    regions rewritten by ``region_pass`` (:func:`map_regions`), with whether a region changed.

    >>> from stagecraft.ir import dtypes, types
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> scalar, b = types.TensorType(dtypes.int32, ()), GraphBuilder("g")
    >>> p, q = b.param(scalar, "p"), Value(scalar, "q")
    >>> b.add("abs", [p], [scalar]) and None
    >>> [(c, e.inputs == (q,)) for c, e in renamed_eqns(b.build([]), {p.uid: q}, None, {})]
    [(False, True)]
    """
    for eqn in graph.eqns:
        yield map_regions(rename_inputs(eqn, subst), region_pass, memo)


def map_equations(graph: Graph, fn: Callable[[Eqn], "tuple[bool, Eqn]"], memo: dict
                  ) -> tuple[bool, Graph]:
    """``(changed, graph')`` with ``fn`` applied to every equation, in regions first (each
    region's equations before the equation that owns it); ``memo`` as in :func:`map_regions`.

    >>> from stagecraft.ir.graph import GraphBuilder
    >>> g = GraphBuilder("f").build([])
    >>> map_equations(g, lambda e: (False, e), {}) == (False, g)
    True
    """
    changed = False
    eqns = []
    for eqn in graph.eqns:
        c, eqn = map_regions(eqn, lambda r: map_equations(r, fn, memo), memo)
        d, eqn = fn(eqn)
        changed |= c or d
        eqns.append(eqn)
    if not changed:
        return False, graph
    return True, Graph(graph.name, graph.params, tuple(eqns), graph.results)


def literal_array(x: Literal) -> np.ndarray:
    """A ``Literal`` as the NumPy scalar the reference backend computes with.

    >>> from stagecraft.ir import dtypes
    >>> literal_array(Literal.of(-0.0, dtypes.float32))
    np.float32(-0.0)
    """
    return np.asarray(x.value, x.type.dtype.np)[()]


def const_eqn(out: Value, value: np.ndarray, loc: str | None = None) -> Eqn:
    """A ``const`` equation defining ``out`` as ``value``.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.types import TensorType
    >>> const_eqn(Value(TensorType(dtypes.int32, ())), np.array(3, np.int32)).params
    {'value': array(3, dtype=int32)}
    """
    return Eqn("const", (), (out,), make_attrs({"value": value}), (), loc)


def same_type(a: Value | Literal, b: Value | Literal) -> bool:
    """Whether ``a`` may stand for ``b``: equal tensor types and the same ``ref``-ness.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.types import TensorType
    >>> t = TensorType(dtypes.float32, (2,))
    >>> same_type(Value(t), Value(t)), same_type(Value(t), Value(t, ref=True))
    (True, False)
    """
    return a.type == b.type and getattr(a, "ref", False) == getattr(b, "ref", False)


def fresh_copy(eqns: tuple, subst: Substitution) -> list:
    """Copies of ``eqns`` (a region's body being inlined) with new output values, renaming
    operands through ``subst``, which gains an entry for every copied output. Nested regions
    are closed, so they are shared, not copied.

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> from stagecraft.ir.types import TensorType
    >>> b = GraphBuilder("region")
    >>> x, y = b.param(TensorType(dtypes.float32, ())), b.param(TensorType(dtypes.float32, ()))
    >>> (z,) = b.add("exp", [x], [x.type])
    >>> subst = {x.uid: y}
    >>> (copy,) = fresh_copy(tuple(b.eqns), subst)
    >>> copy.inputs == (y,), copy.outputs[0] is not z, subst[z.uid] is copy.outputs[0]
    (True, True, True)
    """
    out = []
    for eqn in eqns:
        outputs = tuple(Value(o.type, o.hint, o.ref) for o in eqn.outputs)
        for old, new in zip(eqn.outputs, outputs):
            subst[old.uid] = new
        inputs = tuple(rename(x, subst) for x in eqn.inputs)
        out.append(dataclasses.replace(eqn, inputs=inputs, outputs=outputs))
    return out
