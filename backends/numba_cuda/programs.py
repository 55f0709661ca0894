"""Replays of staged GPU calls whose control flow varies from call to call (loops that run a
different number of times, conds that take the other branch): a *program* of graphs, one per
block of the recorded work, driven by one predicate copy per test.

A recording (``recording.py``) made with ``Recording.stable_blocks`` keeps every value that
flows out of a ``while`` loop or a ``cond`` in buffers of its own (``runtime.loop_entry``,
``loop_next``, ``cond_entry``, ``branch_exit``): a loop's carried values and the variables it
assigns, a cond's results and the variables its branches assign. It is cut into *blocks* after
each test (:class:`recording.Branch`) and at the end of each cond (:class:`recording.Join`). A
block's work depends only on how it was entered (the test's site and the value read, or the
cond it follows), because the host code between two cuts runs straight through; and the values
it reads from other blocks are in fixed buffers or made by a block on every path to it. Every
later pass through a block, entered the same way, must then issue exactly the first pass's
work on the first pass's buffers:

- a block's own allocations stand for the first pass's ones, position by position, and the
  work must be the same step by step (as :func:`recording.difference` compares two calls);
- a step may read a value made in another block only if that block's loop passes and cond
  branches enclose its own (:func:`_visible`): a value made in one loop pass and read in the
  next, or made in a loop and read after it, is not carried in fixed buffers, and whichever
  value a replay's path made would be another than the recorded one.

The program then replays the first pass's graph of each block, its buffers of later passes
redirected to the first pass's ones (``recording.Relocate``: a cond branch first taken in a
loop's second pass reads that pass's values), and follows the recorded edges: after a block
that ends in a test, one copy to the host reads its guards (error flags, sizes)
and its branch value, which picks the next block; a block that ends a cond goes on without a
read. A value no recorded call read (a branch never taken, a guard reading another value)
ends the replay as invalid, and the call runs plainly.

>>> import numpy as np
>>> from stagecraft.backends.numba_cuda import memory, recording
>>> from stagecraft.backends.numba_cuda.staged import runtime
>>> from stagecraft.backends.numba_cuda.kernels.shape import copy_view
>>> def count_down(n):   # a host function like a generated one: while n > 0: n = n - 1
...     (c,) = runtime.loop_entry((n,))
...     while True:
...         runtime.loop_head(1)
...         if not runtime.predicate(runtime.run("greater", [c, zero], ({}, "")), 1, loop=True):
...             break
...         (c,) = runtime.loop_next((c,), (runtime.run("subtract", [c, one], ({}, "")),))
...     return c
>>> zero, one = memory.to_device(np.int32(0)), memory.to_device(np.int32(1))
>>> n = memory.to_device(np.int32(3))
>>> with recording.recording() as rec:
...     rec.stable_blocks = True
...     out = count_down(n)
>>> program = build(rec, [out]).compile()
>>> program.blocks, sorted(program.edges.values())   # (before, loop test, pass, after)
(4, [1, 1, 2, 3])
>>> memory.copy_into(n, memory.to_device(np.int32(7)))
>>> program.launch(), int(memory.to_host(program.results[0]))
(True, 0)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from stagecraft.backends.numba_cuda import graphs, guards
from stagecraft.backends.numba_cuda.graphs import NotReplayable
from stagecraft.backends.numba_cuda.recording import (Allocations, Branch, Guard, HostStep,
                                                      Join, Recording, Relocate, held_arrays,
                                                      same)


@dataclass
class _Block:
    """One pass through a block: how it was entered (``(site, value bytes)`` after a test,
    ``("join", site)`` after a cond, ``()`` for the call's first block), its items, the
    allocation steps it made, and the Branch or Join that ends it (None: the call's end)."""
    entry: tuple
    items: list
    allocs: range
    end: Branch | Join | None
    scope: tuple = ()   # the loop passes and cond branches it runs in (see _blocks)

    @property
    def branch(self) -> Branch | None:
        return self.end if isinstance(self.end, Branch) else None


class Program:
    """The distinct blocks of a recording and the branches between them; ``compile()``
    makes their graphs, then ``launch()`` replays a call and says whether every block read
    what a recorded pass read (its guards, and a branch value that was recorded);
    ``results`` are the buffers holding the call's results after a launch. Made by
    :func:`build`."""

    def __init__(self, blocks: list[_Block], edges: dict, results: tuple, tokens: "_Locator"):
        self._blocks = blocks
        self.entries = [b.entry for b in blocks]
        self.edges = edges            # (block, branch value bytes) -> next block
        self.results = results
        self._tokens = tokens
        self._graphs: list = []
        self._reads: list = []
        self.size = sum(not isinstance(i, (Guard, Join)) for b in blocks for i in b.items)

    def compile(self) -> "Program":
        """Makes the graphs (CUDA graphs on a GPU); returns the program. A block that ends
        a cond or starts a loop pass goes on to one next block without a host read, so each
        block's graph also holds the blocks that follow it so, up to the next test: one
        launch and one read per test."""
        self._graphs, self._reads = [], []
        # (a block only a cond's end or a loop's next pass leads to is in its chains' graphs)
        starts = {0} | {b for (k, _), b in self.edges.items() if self._blocks[k].branch}
        for k in range(len(self._blocks)):
            if k not in starts:
                self._graphs.append(None)
                self._reads.append(None)
                continue
            chain = self._chain(k)
            # (what the other blocks' graphs touch stays: the call-wide error flag is set in
            # the first block and read after every test)
            others = [a for j, b in enumerate(self._blocks) if j not in chain
                      for i in b.items for a in held_arrays(i)]
            items = guards.merge(
                [i for j in chain for i in self._blocks[j].items if not isinstance(i, Join)],
                tuple(self.results) + tuple(others))
            last = self._blocks[chain[-1]]
            width = last.branch.value.nbytes if last.branch is not None else 0
            expected = b"".join(g.value.tobytes() for g in items
                                if isinstance(g, Guard) and g is not last.branch)
            self._graphs.append(graphs.graph(items))
            # (what the guards must read, the branch's width, the block that ends the chain
            # and whether it ends the call)
            self._reads.append((expected, width, chain[-1], last.end is None))
        return self

    def _chain(self, k: int) -> list[int]:
        chain = [k]
        while isinstance(self._blocks[chain[-1]].end, Join) and len(chain) <= len(self._blocks):
            chain.append(self.edges[(chain[-1], b"")])
        return chain

    @property
    def blocks(self) -> int:
        """How many distinct blocks the program has."""
        return len(self._blocks)

    def launch(self) -> bool:
        block = 0
        while True:
            got = self._graphs[block].read()
            expected, width, last, ends = self._reads[block]
            cut = len(got) - width
            if got[:cut] != expected:
                return False
            if ends:
                return True
            block = self.edges.get((last, got[cut:]))
            if block is None:   # (a branch no recorded call took)
                return False

    def difference(self, other: "Program") -> str | None:
        """The first way this program and ``other`` (of another call) differ in a block both
        ran (None: the same work there), as ``recording.difference`` compares two calls."""
        theirs = {e: b for e, b in zip(other.entries, other._blocks)}
        for k, (entry, block) in enumerate(zip(self.entries, self._blocks)):
            if entry not in theirs:
                continue
            reason = _differs(block.items, theirs[entry].items, self._tokens, other._tokens)
            if reason is not None:
                return f"block {k}: {reason}"
        if not same(self.results, other.results, self._tokens, other._tokens):
            return "the results are other buffers"
        return None


def build(rec: Recording, results: Sequence[Any]) -> Program:
    """The program replaying ``rec`` (recorded with ``stable_blocks``), whose call returned the
    device arrays ``results``; ``compile()`` makes its graphs. Raises NotReplayable when a
    later pass through a block issues other work than the first, or when a step reads a
    value made outside the loop passes and cond branches it runs in (see :func:`_blocks`)."""
    if rec.spoiled is not None:
        raise NotReplayable(rec.spoiled)
    if any(isinstance(i, HostStep) for i in rec.items):
        raise NotReplayable("it prints or asserts, and its loops run a varying number of times "
                            "(a replay found invalid then could not take the print back)")
    passes = _blocks(rec)
    where = Allocations(rec.allocations)
    made_in = {step: k for k, b in enumerate(passes) for step in b.allocs}
    first: dict[tuple, int] = {}      # entry -> the pass that is its block's first
    canon: dict[int, int] = {}        # allocation step -> the first pass's step it stands for
    model = _Locator(where, canon)
    order = []                        # per pass: its first pass
    for k, block in enumerate(passes):
        j = first.setdefault(block.entry, k)
        if len(block.allocs) != len(passes[j].allocs):
            raise NotReplayable(f"a loop's passes allocate {len(passes[j].allocs)} and "
                                f"{len(block.allocs)} buffers")
        canon.update(zip(block.allocs, passes[j].allocs))
        reads = _Locator(where, canon, lambda step, k=k: _visible(passes, made_in, step, k))
        reason = _differs(passes[j].items, block.items, model, reads)
        if reason is not None:
            raise NotReplayable(f"a loop's passes issue different work ({reason})")
        order.append(j)
    out = _Locator(where, canon, lambda step: _visible(passes, made_in, step, len(passes) - 1))
    if not same(tuple(results), tuple(results), out, out) or out.stale:
        raise NotReplayable("a result was made in a loop pass or cond branch, not carried out "
                            "of it")
    distinct = sorted(set(order))
    index = {j: i for i, j in enumerate(distinct)}
    edges = {(index[order[k]], block.branch.value.tobytes() if block.branch else b""):
             index[order[k + 1]] for k, block in enumerate(passes[:-1])}
    # (a block's items with every later pass's buffer replaced by the first pass's one it
    # stands for, which a replay writes: a cond branch first taken in a loop's second pass
    # reads that pass's values)
    redirect = Relocate(where, {step: rec.allocations[first] for step, first in canon.items()
                                if first != step})
    blocks = []
    for j in distinct:
        items = [redirect.item(i) for i in passes[j].items]
        blocks.append(dataclasses.replace(passes[j], items=items, end=passes[j].end and items[-1]))
    names = {step: (passes[j].entry, n) for j in distinct
             for n, step in enumerate(passes[j].allocs)}
    tokens = {step: names[first_step] for step, first_step in canon.items()}
    return Program(blocks, edges, redirect.walk(tuple(results)), _Locator(where, tokens))


def _visible(passes: list, made_in: dict, step: int, k: int) -> bool:
    """Whether pass ``k`` may read allocation ``step``: made by itself, or by a pass whose
    loop passes and cond branches all enclose pass ``k`` (its scope is a prefix of ``k``'s),
    so that whichever path a replay takes to pass ``k``, that pass ran just before in the
    same loop pass and branch. (A value a loop's body makes and the code after the loop reads
    would not be: with no trip, the code after the loop reads another.)"""
    d = made_in.get(step, k)
    scope = passes[d].scope
    return d == k or passes[k].scope[:len(scope)] == scope


def _blocks(rec: Recording) -> list[_Block]:
    """``rec`` cut after each of its branches and joins, each block with its *scope*: the
    loop passes and cond branches it runs in, outermost first, each a number of its own
    (a loop test that reads True starts a pass, which the loop's next head ends; a cond test
    starts a branch, which its Join ends). A loop's cond region runs between its head and
    its test, outside its passes."""
    blocks, items, entry, start = [], [], (), 0
    scope: list[tuple] = []   # (site, loop, number)
    for item in rec.items:
        items.append(item)
        if not isinstance(item, (Branch, Join)):
            continue
        blocks.append(_Block(entry, items, range(start, item.allocs), item, tuple(scope)))
        if isinstance(item, Join) and item.head:
            if scope and scope[-1][:2] == (item.site, True):
                scope.pop()   # (the end of the loop's last pass)
            entry = ("head", item.site)
        elif isinstance(item, Join):
            if not scope or scope[-1][1]:
                raise NotReplayable("its recorded conds and loops do not nest (a join without "
                                    "its cond)")
            scope.pop()
            entry = ("join", item.site)
        else:
            if not item.loop or item.value.any():
                scope.append((item.site, item.loop, len(blocks)))
            entry = (item.site, item.value.tobytes())
        items, start = [], item.allocs
    blocks.append(_Block(entry, items, range(start, len(rec.allocations)), None, tuple(scope)))
    return blocks


class _Locator:
    """Locates a buffer as ``recording.Allocations.locate`` does, naming an allocation by
    ``names[step]`` (the first pass's step it stands for, or a program's token for it); with
    ``visible``, notes in ``stale`` a read of an allocation it says no.""" 

    def __init__(self, where: Allocations, names: dict,
                 visible: Callable[[int], bool] | None = None):
        self.where, self.names, self.visible = where, names, visible
        self.stale = False

    def locate(self, array: Any) -> tuple:
        spot = self.where.locate(array)
        if spot[0] != "alloc":
            return spot
        if self.visible is not None and not self.visible(spot[1]):
            self.stale = True
        return ("alloc", self.names.get(spot[1], spot[1])) + spot[2:]


def _fields(item: Any) -> tuple:
    """What must agree between two passes of a step (a branch's value may differ: it picks
    the next block; a launch's packed form follows from the rest)."""
    if isinstance(item, Branch):
        return (item.array, item.site)
    if isinstance(item, Join):
        return (item.site,)
    return tuple(getattr(item, f) for f in item.__dataclass_fields__ if f != "prepared")


def _differs(model: list, later: list, where_model: Any, where_later: Any) -> str | None:
    """How a pass's items differ from its block's first pass's (None: the same work)."""
    if len(model) != len(later):
        return f"{len(model)} and {len(later)} launches or copies"
    for step, (x, y) in enumerate(zip(model, later), 1):
        kind = type(x).__name__.lower()
        if type(x) is not type(y) or not same(_fields(x), _fields(y), where_model, where_later):
            return f"step {step} ({kind}) differs"
        if getattr(where_later, "stale", False):
            return (f"step {step} ({kind}) reads a value made in another loop pass or cond "
                    f"branch, not carried out of it")
    return None
