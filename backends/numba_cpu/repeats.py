"""Finding repeated runs of equations, to compile each repeated piece once.

A Python loop unrolled by tracing (L2HMC's ten leapfrog steps, a layer applied to a list of
inputs) gives a graph where the same run of equations appears many times in a row.  Numba's
compile time grows with the number of statements of a function (roughly 20 ms per call site),
so the code generator emits such a run once, as a function, and calls it once per repetition.

Two runs *match* when their equations have the same ops, attributes, types and literal
operands, every operand made inside the run comes from the same relative position, and the
operands from outside the run correspond one to one (the same outside value in one run is the
same outside value in the other).  ``read`` and ``const`` equations are *transparent*: they emit
no real computation, so the caller keeps them and passes their values in.  Runs may not contain
stateful operations (variables, printing, asserts, random numbers) or nested regions.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

from stagecraft.ir.graph import Eqn, Literal, Value
from stagecraft.ir.ops import OPS

TRANSPARENT = frozenset(("read", "const"))
MIN_BODY = 4          # equations with code per run: shorter runs are not worth a function
# Measured Numba costs (ms): a function of its own ~300, a call site ~20, an equation ~20.
# A run repeated `count` times is outlined only when that saves compile time.
FUNCTION_MS, CALL_MS, EQUATION_MS = 300, 20, 20
MAX_CANDIDATES = 48   # later occurrences of the first op tried as the start of the next run


@dataclasses.dataclass
class Repeat:
    """``count`` consecutive runs of ``period`` equations from ``start``; ``maps[m]`` sends
    each outside operand (uid) of the first run to the matching one of run ``m``."""

    start: int
    period: int
    count: int
    maps: list


def _outlinable(e: Eqn) -> bool:
    if e.op in TRANSPARENT:
        return True
    op = OPS.get(e.op)
    # row_update may be lowered to an in-place write, decided per equation (codegen).
    return op is not None and not op.stateful and not e.regions and e.op != "row_update"


def find_repeats(eqns: Sequence[Eqn]) -> dict[int, Repeat]:
    """The runs worth outlining, by start index (greedy from the left, most equations saved)."""
    pos: dict[int, tuple[int, int]] = {}
    for i, e in enumerate(eqns):
        for j, o in enumerate(e.outputs):
            pos[o.uid] = (i, j)
    attrs = [repr(e.attrs) for e in eqns]
    ok = [_outlinable(e) for e in eqns]
    occurrences: dict[str, list[int]] = {}
    for i, e in enumerate(eqns):
        occurrences.setdefault(e.op, []).append(i)
    found: dict[int, Repeat] = {}
    i = 0
    while i < len(eqns):
        best, best_gain = None, 0
        if ok[i] and eqns[i].op not in TRANSPARENT:
            later = [j for j in occurrences[eqns[i].op] if j > i][:MAX_CANDIDATES]
            for j in later:
                period = j - i
                if i + 2 * period > len(eqns):
                    break
                body = sum(1 for e in eqns[i:j] if e.op not in TRANSPARENT)
                if body < MIN_BODY or not all(ok[i:j]):
                    continue
                maps = [None]
                while i + (len(maps) + 1) * period <= len(eqns):
                    m = _match(eqns, attrs, pos, i, i + len(maps) * period, period)
                    if m is None:
                        break
                    maps.append(m)
                count = len(maps)
                gain = (count - 1) * body * EQUATION_MS - FUNCTION_MS - count * CALL_MS
                if count >= 2 and gain > best_gain:
                    best, best_gain = Repeat(i, period, len(maps), maps), gain
        if best is not None:
            found[i] = best
            i += best.period * best.count
        else:
            i += 1
    return found


def _match(eqns: Sequence[Eqn], attrs: list, pos: dict, a: int, b: int,
           period: int) -> dict | None:
    """The outside-operand correspondence (identity -> identity, see ``identities``) if run
    ``b`` matches run ``a``, else None."""
    ids_a = identities(eqns[a:a + period])
    ids_b = identities(eqns[b:b + period])
    fwd: dict = {}
    back: dict = {}
    for k in range(period):
        x, y = eqns[a + k], eqns[b + k]
        if x.op != y.op or len(x.inputs) != len(y.inputs) or \
                [o.type for o in x.outputs] != [o.type for o in y.outputs]:
            return None
        if x.op in TRANSPARENT:
            continue
        if attrs[a + k] != attrs[b + k] or not _outlinable(y):
            return None
        for u, v in zip(x.inputs, y.inputs):
            if isinstance(u, Literal) or isinstance(v, Literal):
                if not (isinstance(u, Literal) and isinstance(v, Literal) and u.type == v.type
                        and repr(u.value) == repr(v.value)):
                    return None
                continue
            pu, pv = _inside(eqns, pos, u, a, period), _inside(eqns, pos, v, b, period)
            if pu != pv:
                return None
            if pu is None:  # from outside the run (or a read/const): one-to-one
                iu, iv = ids_a.get(u.uid, ("value", u.uid)), ids_b.get(v.uid, ("value", v.uid))
                if u.type != v.type or fwd.setdefault(iu, iv) != iv or \
                        back.setdefault(iv, iu) != iu:
                    return None
    return fwd


def identities(run: Sequence[Eqn]) -> dict:
    """What the values read inside ``run`` stand for: every ``read`` of one variable in a run
    (which has no ``assign``) gives the variable's current value, so all of them are one
    operand ``("variable", ref uid)``; any other value ``x`` is ``("value", x.uid)``."""
    return {e.outputs[0].uid: ("variable", e.inputs[0].uid) for e in run if e.op == "read"}


def _inside(eqns: Sequence[Eqn], pos: dict, x: Value, start: int,
            period: int) -> tuple[int, int] | None:
    """(offset in the run, output index) of ``x``'s producer if the run computes it."""
    p = pos.get(x.uid)
    if p is None or not start <= p[0] < start + period or eqns[p[0]].op in TRANSPARENT:
        return None
    return p[0] - start, p[1]


def outside_operands(run: Sequence[Eqn]) -> dict:
    """The operands a run takes from outside (and from its read/const equations), by identity
    (see ``identities``), in order of first use: identity -> the values that stand for it."""
    made = {o.uid for e in run if e.op not in TRANSPARENT for o in e.outputs}
    ids = identities(run)
    out: dict = {}
    for e in run:
        if e.op in TRANSPARENT:
            continue
        for x in e.inputs:
            if isinstance(x, Value) and x.uid not in made:
                group = out.setdefault(ids.get(x.uid, ("value", x.uid)), [])
                if x not in group:
                    group.append(x)
    return out
