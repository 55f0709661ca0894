"""Finding repeated runs of equations, to compile each repeated piece once.

A Python loop unrolled by tracing (L2HMC's ten leapfrog steps, a layer applied to a list of
inputs) gives a graph where the same run of equations appears many times, in a row or not
(the same MLP applied in a loop's prologue, its body and its epilogue).  Numba's compile time
grows with the number of statements of a function (roughly 20 ms per call site), so the code
generator emits such a run once, as a function, and calls it at every occurrence.

Two runs *match* when their equations have the same ops, attributes, types and literal
operands, every operand made inside the run comes from the same relative position, and the
operands from outside the run correspond one to one (the same outside value in one run is the
same outside value in the other).  ``read`` and ``const`` equations are *transparent*: they emit
no real computation, so the caller keeps them and passes their values in.  Runs may not contain
stateful operations (variables, printing, asserts, random numbers) or nested regions.

The search is greedy: the group of matching, non-overlapping runs that saves the most compile
time (by measured costs) is outlined first; later groups lie wholly outside every earlier
group's occurrences or wholly inside its first occurrence (the one whose code is emitted, as
the function's body), so a function may call others.
"""
from __future__ import annotations

import bisect
import dataclasses
from typing import Sequence

from stagecraft.ir.graph import Eqn, Literal, Value
from stagecraft.ir.ops import OPS

TRANSPARENT = frozenset(("read", "const"))
MIN_BODY = 4          # equations with code per run: shorter runs are not worth a function
# Measured Numba costs (ms): a function of its own ~300, a call site ~20, an equation ~20.
# A group of runs is outlined only when that saves compile time.
FUNCTION_MS, CALL_MS, EQUATION_MS = 300, 20, 20
MAX_CANDIDATES = 48   # later occurrences of a run's first equation tried as its partners
MAX_PERIOD = 512      # equations per run at most (bounds the search)
_DEAD = -1            # segment of an occurrence whose code is not emitted


@dataclasses.dataclass(eq=False)
class Group:
    """Matching runs compiled as one function.  ``results`` are (index among the run's
    equations with code, output index) of the values some occurrence's later code uses;
    ``inner`` the occurrences of other groups inside the body (the first occurrence's
    equations with code), by index into it; ``count`` the occurrences."""

    results: list
    inner: dict
    count: int


@dataclasses.dataclass
class Occurrence:
    """One run of ``group``: ``length`` equations of the list it is found in."""

    group: Group
    length: int


def _outlinable(e: Eqn) -> bool:
    if e.op in TRANSPARENT:
        return True
    op = OPS.get(e.op)
    # row_update may be lowered to an in-place write, decided per equation (codegen).
    return op is not None and not op.stateful and not e.regions and e.op != "row_update"


def identities(eqns: Sequence[Eqn]) -> dict:
    """What the variable reads of ``eqns`` stand for: reads of one variable with no possible
    ``assign`` between them (no stateful equation or region) give the same value, so all of
    them are one operand ``("variable", ref uid, epoch)``; any other value ``x`` stands for
    itself, ``("value", x.uid)`` (left out of the dict)."""
    out: dict = {}
    epoch = 0
    for e in eqns:
        if e.op == "read":
            out[e.outputs[0].uid] = ("variable", e.inputs[0].uid, epoch)
        elif not _outlinable(e):
            epoch += 1
    return out


def outside_operands(run: Sequence[Eqn], ids: dict) -> dict:
    """The operands a run takes from outside (and from its read/const equations), by identity
    (``ids``: see :func:`identities`), in order of first use: identity -> the values that
    stand for it.  Matching runs list corresponding identities in the same order."""
    made = {o.uid for e in run if e.op not in TRANSPARENT for o in e.outputs}
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


class _Search:
    """The state of :func:`find_repeats` over one list of equations."""

    def __init__(self, eqns: Sequence[Eqn], results: Sequence):
        self.eqns = eqns
        n = len(eqns)
        self.pos = {o.uid: (i, j) for i, e in enumerate(eqns) for j, o in enumerate(e.outputs)}
        self.ids = identities(eqns)
        self.ok = [_outlinable(e) for e in eqns]
        self.transparent = [e.op in TRANSPARENT for e in eqns]
        self.code = [0]   # code[i]: equations with code before i
        for t in self.transparent:
            self.code.append(self.code[-1] + (not t))
        tokens: dict = {}
        self.token = [tokens.setdefault(_token(e), len(tokens)) for e in eqns]
        self.occurrences: dict[int, list[int]] = {}
        for i, t in enumerate(self.token):
            self.occurrences.setdefault(t, []).append(i)
        self.last_use = {}
        for i, e in enumerate(eqns):
            for x in e.inputs:
                if isinstance(x, Value):
                    self.last_use[x.uid] = i
        for r in results:   # the list's results are used after it
            if isinstance(r, Value):
                self.last_use[r.uid] = n
        self.seg = [0] * n        # 0: the list itself; k > 0: the body of the k-th group
        self.ext: dict[tuple[int, int], int] = {}
        self.diagonal: dict[int, tuple[int, int]] = {}  # b - a -> the last run matched on it

    def extension(self, a: int, b: int) -> int:
        """How many equations from ``a`` and from ``b`` match (at most ``b - a``)."""
        key = (a, b)
        if key not in self.ext:
            # A suffix of a match is a match: a run matched before on this diagonal covers a.
            start, end = self.diagonal.get(b - a, (0, 0))
            if start < a < end - 1:
                self.ext[key] = end - a
            else:
                self.ext[key] = _extend(self, a, b)
                self.diagonal[b - a] = (a, a + self.ext[key])
        return self.ext[key]

    def best(self) -> tuple[int, list[int], int] | None:
        """(gain, starts, length) of the most profitable group left, or None."""
        n = len(self.eqns)
        seg_end = [n] * (n + 1)
        for i in range(n - 2, -1, -1):
            seg_end[i] = seg_end[i + 1] if self.seg[i + 1] == self.seg[i] else i + 1
        found = None
        for a in range(n):
            if self.seg[a] == _DEAD or self.transparent[a] or not self.ok[a]:
                continue
            same = self.occurrences[self.token[a]]
            partners = []
            for b in same[bisect.bisect_right(same, a):]:
                if self.seg[b] != _DEAD:
                    partners.append(b)
                    if len(partners) == MAX_CANDIDATES:
                        break
            exts = []
            for b in partners:
                m = min(self.extension(a, b), seg_end[a] - a, seg_end[b] - b)
                if self.code[a + m] - self.code[a] >= MIN_BODY:
                    exts.append((b, m))
            for length in sorted({m for _, m in exts}):
                starts, end = [a], a + length
                for b, m in exts:
                    if m >= length and b >= end:
                        starts.append(b)
                        end = b + length
                body = self.code[a + length] - self.code[a]
                gain = (len(starts) - 1) * body * EQUATION_MS - FUNCTION_MS - \
                    len(starts) * CALL_MS
                if gain > 0 and (found is None or gain > found[0]):
                    found = (gain, starts, length)
        return found

    def results(self, starts: list[int], length: int) -> list[tuple[int, int]]:
        """The outputs (see :class:`Group`) any occurrence's later equations use."""
        out = []
        for k in range(length):
            if self.transparent[starts[0] + k]:
                continue
            for j in range(len(self.eqns[starts[0] + k].outputs)):
                if any(self.last_use.get(self.eqns[s + k].outputs[j].uid, -1) >= s + length
                       for s in starts):
                    out.append((self.code[starts[0] + k] - self.code[starts[0]], j))
        return out


def _token(e: Eqn) -> tuple:
    """What two matching equations have in common, whatever their operands' producers."""
    types = tuple(o.type for o in e.outputs)
    if e.op in TRANSPARENT:
        return e.op, types, len(e.inputs)
    return (e.op, repr(e.attrs), types,
            tuple((x.type, repr(x.value)) if isinstance(x, Literal) else None
                  for x in e.inputs))


def _extend(s: _Search, a: int, b: int) -> int:
    """The longest prefix of the runs from ``a`` and ``b`` that match (at most ``b - a``
    and :data:`MAX_PERIOD` equations)."""
    eqns, pos, ids, fwd, back = s.eqns, s.pos, s.ids, {}, {}
    limit = min(b - a, MAX_PERIOD, len(eqns) - b)
    for k in range(limit):
        if s.token[a + k] != s.token[b + k] or not s.ok[a + k] or not s.ok[b + k]:
            return k
        if s.transparent[a + k]:
            continue
        for u, v in zip(eqns[a + k].inputs, eqns[b + k].inputs):
            if isinstance(u, Literal):
                continue   # the tokens compared literal operands
            pu, pv = pos.get(u.uid), pos.get(v.uid)
            inside_u = pu is not None and pu[0] >= a and not s.transparent[pu[0]]
            inside_v = pv is not None and pv[0] >= b and not s.transparent[pv[0]]
            if inside_u or inside_v:
                if not (inside_u and inside_v and pu[0] - a == pv[0] - b and pu[1] == pv[1]):
                    return k
                continue
            iu, iv = ids.get(u.uid, ("value", u.uid)), ids.get(v.uid, ("value", v.uid))
            if u.type != v.type or fwd.setdefault(iu, iv) != iv or back.setdefault(iv, iu) != iu:
                return k
    return limit


def find_repeats(eqns: Sequence[Eqn], results: Sequence = ()) -> dict[int, Occurrence]:
    """The runs of ``eqns`` (computing ``results``) worth outlining, by start index (see the
    module docstring)."""
    s = _Search(eqns, results)
    placed: list[tuple[int, int, int, Group]] = []  # (container segment, start, length, group)
    bodies: list[tuple[int, Group | None]] = [(0, None)]  # segment -> (first equation, group)
    while True:
        found = s.best()
        if found is None:
            break
        _, starts, length = found
        group = Group(s.results(starts, length), {}, len(starts))
        for k, start in enumerate(starts):
            placed.append((s.seg[start], start, length, group))
            s.seg[start:start + length] = [len(bodies) if k == 0 else _DEAD] * length
        bodies.append((starts[0], group))
    top: dict[int, Occurrence] = {}
    for segment, start, length, group in placed:
        if segment == 0:
            top[start] = Occurrence(group, length)
            continue
        # Inside the body of an earlier group: count only the equations with code.
        first, outer = bodies[segment]
        outer.inner[s.code[start] - s.code[first]] = \
            Occurrence(group, s.code[start + length] - s.code[start])
    return top
