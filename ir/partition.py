"""Partial evaluation of a graph: splitting it into the equations that do not depend on some of
its parameters (the *known* part) and the rest (the *unknown* part), as JAX's ``partial_eval``
splits a joint forward-and-backward function.

The known part returns the results it can compute plus the *residuals*: its values that the
unknown part uses. The unknown part takes the residuals and the parameters it uses. The
known part runs first and to the end, the unknown part later (a staged call's gradient runs
the known part in the forward call and the unknown part when the gradient is asked for, the
parameters left unknown being the output gradients).

Both parts keep the program order of their stateful equations. A split is refused
(:class:`SplitError`, with the reason) where running all known equations first could change
what a stateful equation does: an unknown equation touching a variable that a known one writes
(it would see the value the known part left at its end, or the value of a later run), unless
the caller accepts that for the variable (``late_reads``), or an unknown host effect
(``print``, ``py_function``, ``assert``) that precedes a known one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from stagecraft.ir.graph import Eqn, Graph, Value, is_stateful, walk_eqns

_HOST_EFFECTS = frozenset({"print", "py_function", "assert"})


class SplitError(ValueError):
    """The graph cannot be split as asked; the message says why."""


@dataclass(frozen=True)
class Split:
    """The two parts of a split graph.

    ``known``: parameters = the graph's parameters other than the unknown ones (in order);
    results = the graph's results at ``known_results``, then the residuals.
    ``unknown``: parameters = the graph's parameters at ``unknown_params`` (in order), then one
    per residual; results = the graph's other results, in order.
    """

    known: Graph
    unknown: Graph
    unknown_params: tuple    # indices into the graph's parameters that ``unknown`` takes
    num_residuals: int


def split_graph(graph: Graph, unknown: Sequence[int], known_results: Sequence[int],
                late_reads: Sequence[int] = ()) -> Split:
    """Splits ``graph`` into the equations independent of its parameters at ``unknown`` and
    the rest; the results at ``known_results`` must be independent of them. The unknown part
    may use the variable references at ``late_reads`` (parameter indices) as the known part
    leaves them.

    >>> from stagecraft.ir import parse
    >>> g = parse('''graph @f(%x: f32[], %s: f32[]) -> (f32[], f32[]) {
    ...   %y: f32[] = multiply %x, %x
    ...   %c: f32[] = cos %x
    ...   %g: f32[] = multiply %s, %c
    ...   return %y, %g
    ... }''')
    >>> s = split_graph(g, unknown=[1], known_results=[0])
    >>> print(s.known)
    graph @f_known(%x: f32[]) -> (f32[], f32[]) {
      %y: f32[] = multiply %x, %x
      %c: f32[] = cos %x
      return %y, %c
    }
    >>> print(s.unknown)
    graph @f_unknown(%s: f32[], %c: f32[]) -> (f32[]) {
      %g: f32[] = multiply %s, %c
      return %g
    }
    """
    unknown_set = set(unknown)
    late: set[int] = {graph.params[i].uid for i in unknown_set}  # values depending on them
    known_eqns: list[Eqn] = []
    unknown_eqns: list[Eqn] = []
    for eqn in graph.eqns:
        if any(isinstance(x, Value) and x.uid in late for x in eqn.inputs):
            unknown_eqns.append(eqn)
            late.update(o.uid for o in eqn.outputs)
        else:
            known_eqns.append(eqn)
    for i in known_results:
        r = graph.results[i]
        if isinstance(r, Value) and r.uid in late:
            raise SplitError(f"result {i} of @{graph.name} depends on the parameters left "
                             f"unknown, so the known part cannot compute it.")
    _check_effects(graph, known_eqns, unknown_eqns, {graph.params[i].uid for i in late_reads})

    # Constants the unknown part uses are copied into it rather than passed as residuals.
    consts = {o.uid: e for e in known_eqns if e.op == "const" for o in e.outputs}
    defined: set[int] = set()
    copied: list[Eqn] = []
    needed: dict[int, Value] = {}

    def use(x: object) -> None:
        if not isinstance(x, Value) or x.uid in defined or x.uid in needed:
            return
        if x.uid in consts:
            copied.append(consts[x.uid])
            defined.add(x.uid)
        else:
            needed[x.uid] = x

    for eqn in unknown_eqns:
        for x in eqn.inputs:
            use(x)
        defined.update(o.uid for o in eqn.outputs)
    rest = [r for i, r in enumerate(graph.results) if i not in set(known_results)]
    for r in rest:
        use(r)
    param_index = {p.uid: i for i, p in enumerate(graph.params)}
    taken = sorted(param_index[u] for u in needed if u in param_index)
    residuals = [v for u, v in needed.items() if u not in param_index]
    known = Graph(f"{graph.name}_known",
                  tuple(p for i, p in enumerate(graph.params) if i not in unknown_set),
                  tuple(known_eqns),
                  tuple(graph.results[i] for i in known_results) + tuple(residuals))
    late_part = _renamed(Graph(f"{graph.name}_unknown",
                               tuple(graph.params[i] for i in taken) + tuple(residuals),
                               tuple(copied + unknown_eqns), tuple(rest)))
    return Split(known, late_part, tuple(taken), len(residuals))


def _renamed(graph: Graph) -> Graph:
    """``graph`` with new values for its parameters and equation outputs, so that it shares
    no definition with the known part (a graph may call both)."""
    new: dict[int, Value] = {}

    def define(v: Value) -> Value:
        new[v.uid] = Value(v.type, v.hint, v.ref)
        return new[v.uid]

    def get(x: object) -> object:
        return new.get(x.uid, x) if isinstance(x, Value) else x

    params = tuple(define(p) for p in graph.params)
    eqns = []
    for e in graph.eqns:
        eqns.append(Eqn(e.op, tuple(get(x) for x in e.inputs),
                        tuple(define(o) for o in e.outputs), e.attrs, e.regions, e.loc))
    return Graph(graph.name, params, tuple(eqns), tuple(get(r) for r in graph.results))


def _check_effects(graph: Graph, known: list[Eqn], unknown: list[Eqn], late: set[int]) -> None:
    """Raises ``SplitError`` where running every known equation before every unknown one
    could change a stateful equation's effect (see the module docstring)."""
    stateful_unknown = [e for e in unknown if is_stateful(e)]
    if not stateful_unknown:
        return
    written = set().union(*(_written_refs(e) for e in known)) - late
    order = {id(e): i for i, e in enumerate(graph.eqns)}
    last_known_host = max((order[id(e)] for e in known if _host_effect(e)), default=-1)
    for e in stateful_unknown:
        touched = {x.uid for x in e.inputs if isinstance(x, Value) and x.ref}
        if touched & written:
            names = ", ".join(sorted(x.hint or "?" for x in e.inputs
                                     if isinstance(x, Value) and x.uid in touched & written))
            raise SplitError(f"a '{e.op}' equation of @{graph.name} that needs the parameters "
                             f"left unknown uses variables ({names}) that the known part "
                             f"writes; it must see them as they are at its place in the "
                             f"program.")
        if _host_effect(e) and order[id(e)] < last_known_host:
            raise SplitError(f"a '{e.op}' equation of @{graph.name} that needs the parameters "
                             f"left unknown has a host effect (print, py_function or assert) "
                             f"that must happen before a later one of the known part.")


def _written_refs(eqn: Eqn) -> set[int]:
    """The references an equation may write: an ``assign``'s target; every reference operand
    of an equation whose regions hold an ``assign``."""
    if eqn.op == "assign":
        return {eqn.inputs[0].uid}
    if eqn.regions and any(e.op == "assign" for g in eqn.regions for e in walk_eqns(g)):
        return {x.uid for x in eqn.inputs if isinstance(x, Value) and x.ref}
    return set()


def _host_effect(eqn: Eqn) -> bool:
    return eqn.op in _HOST_EFFECTS or any(
        e.op in _HOST_EFFECTS for g in eqn.regions for e in walk_eqns(g))
