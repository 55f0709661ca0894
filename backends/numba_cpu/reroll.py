"""Unrolled loops rolled up again: a piece of code repeated back to back, each copy taking
the previous copy's results, is emitted once, inside a ``for`` loop.

A Python loop unrolled by tracing (L2HMC's ten leapfrog steps) becomes ten calls of one
outlined function (see :mod:`.repeats`), with the equations between them. Every call site costs
Numba compile time (a graph function's code grows with the arguments of each call: arrays are
passed as nine fields each), so a run of ``count`` equal *periods* of equations becomes::

    c = <initial value>
    for _ in range(count):
        <the first period's code, reading c>
        c = <the value the next period reads>

A period qualifies when every later period has the same equations (ops, attributes, types,
literal operands, and the same outlined runs at the same places) and each operand of an
equation is, in every period at once, one of: a value made earlier in the same period (at the
same place), a value made by the previous period (at the same place; the first period reads a
value from before the loop there, its *initial* value), or the same value from before the loop
(*invariant*). Only the last period's values may be used after the loop. Periods hold no
stateful equations (variables, printing, random numbers) and no nested regions.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from stagecraft.backends.numba_cpu.repeats import _outlinable, _token
from stagecraft.ir.graph import Eqn, Literal, Value

MIN_COUNT = 3  # periods: two copies are not worth a loop


@dataclasses.dataclass
class Reroll:
    """``count`` periods of ``length`` equations from ``start``; ``carried`` lists, for each
    value a period hands to the next, (its initial value, the index of the equation making
    it relative to ``start``, the output index)."""

    start: int
    length: int
    count: int
    carried: list


def find_rerolls(eqns: Sequence[Eqn], uses: dict, repeats: dict) -> dict[int, Reroll]:
    """The loops to emit in ``eqns``, by start (``uses``: value uid -> indices of the
    equations using it, ``len(eqns)`` for "after them"; ``repeats``: the outlined runs by start,
    see :func:`.repeats.find_repeats`). Each period starts with an outlined run."""
    pos = {o.uid: (i, j) for i, e in enumerate(eqns) for j, o in enumerate(e.outputs)}
    found: dict[int, Reroll] = {}
    starts = sorted(repeats)
    done = 0
    for n, s in enumerate(starts):
        if s < done:
            continue
        nxt = next((t for t in starts[n + 1:] if repeats[t].group is repeats[s].group), None)
        if nxt is None:
            continue
        r = _longest(eqns, uses, repeats, pos, s, nxt - s)
        if r is not None:
            found[s] = r
            done = s + r.length * r.count
    return found


def _longest(eqns, uses, repeats, pos, start: int, length: int) -> Reroll | None:
    """The most periods of ``length`` from ``start`` that roll into a loop, if at least
    :data:`MIN_COUNT`."""
    if not all(_outlinable(e) for e in eqns[start:start + length]):
        return None
    for q in range(length):
        r = repeats.get(start + q)
        if r is not None and q + r.length > length:
            return None  # an outlined run would straddle two periods
    slots: dict = {}   # (q, input index) -> ("carried", rel, out) / ("invariant", identity)
    count = 1
    while start + (count + 1) * length <= len(eqns):
        if not _period_matches(eqns, repeats, pos, start, length, count, slots):
            break
        count += 1
    while count >= MIN_COUNT:
        r = _checked(eqns, uses, pos, start, length, count, slots)
        if r is not None:
            return r
        count -= 1
    return None


def _period_matches(eqns, repeats, pos, start, length, i, slots) -> bool:
    """Whether period ``i`` matches period 0, recording (and checking) each operand's kind."""
    base, here = start, start + i * length
    for q in range(length):
        a, b = eqns[base + q], eqns[here + q]
        if _token(a) != _token(b) or not _same_constant(a, b):
            return False
        ra, rb = repeats.get(base + q), repeats.get(here + q)
        if (ra is None) != (rb is None) or (ra is not None and (ra.group is not rb.group or
                                                                 ra.length != rb.length)):
            return False
        for k, (u, v) in enumerate(zip(a.inputs, b.inputs)):
            if isinstance(u, Literal) or isinstance(v, Literal):
                if not (isinstance(u, Literal) and isinstance(v, Literal)):
                    return False
                continue
            pu, pv = pos.get(u.uid), pos.get(v.uid)
            if pv is not None and pv[0] >= here:   # made in this period
                if pu is None or pu[0] < base or (pu[0] - base, pu[1]) != (pv[0] - here, pv[1]):
                    return False
                continue
            if pu is not None and pu[0] >= base:
                return False                       # made in period 0, not here
            if pv is not None and pv[0] >= here - length:
                kind = ("carried", pv[0] - (here - length), pv[1])
            elif pv is not None and pv[0] >= start:
                return False                       # from two or more periods back
            else:
                kind = ("invariant", v.uid)
                if v.uid != u.uid:
                    return False
            if slots.setdefault((q, k), kind) != kind:
                return False
    return True


def _same_constant(a: Eqn, b: Eqn) -> bool:
    """Whether two equations with equal tokens also make the same constant: the token leaves
    a constant's value out (an outlined run takes it as an argument), but the loop body is the
    first period's code, constants included."""
    if a.op != "const":
        return True
    x, y = (np.asarray(dict(e.attrs)["value"]) for e in (a, b))
    return x.dtype == y.dtype and x.shape == y.shape and \
        bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))


def _checked(eqns, uses, pos, start, length, count, slots) -> Reroll | None:
    """The loop of ``count`` periods, or None when a value of a period before the last is used
    after the loop or an initial value is also read otherwise."""
    end = start + count * length
    for i in range(start, end - length):
        for o in eqns[i].outputs:
            if any(u >= end for u in uses.get(o.uid, ())):
                return None
    carried: dict[int, tuple] = {}
    invariant = {kind[1] for kind in slots.values() if kind[0] == "invariant"}
    for (q, k), kind in slots.items():
        if kind[0] != "carried":
            continue
        init = eqns[start + q].inputs[k]
        if not isinstance(init, Value) or init.uid in invariant:
            return None
        if carried.setdefault(init.uid, (init, kind[1], kind[2])) != (init, kind[1], kind[2]):
            return None                            # one initial value, two carried values
    return Reroll(start, length, count, list(carried.values()))


def loop_uses(eqns: Sequence[Eqn], uses: dict, r: Reroll) -> dict:
    """``uses`` for emitting the first period as the loop body: a value of it counts as used
    after the period when its counterpart in any period is used outside that period."""
    out = dict(uses)
    end = r.start + r.length
    for q in range(r.length):
        for j, v in enumerate(eqns[r.start + q].outputs):
            extra = set()
            for i in range(r.count):
                lo = r.start + i * r.length
                for u in uses.get(eqns[lo + q].outputs[j].uid, ()):
                    extra.add(r.start + (u - lo) if lo <= u < lo + r.length else end)
            out[v.uid] = extra
    return out
