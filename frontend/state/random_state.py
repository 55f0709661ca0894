"""The state of the random ops of traced functions.

A random op traced into a function gets a *site*: a small non-trainable variable holding its
seed triple (global seed, op seed, counter). The staged code reads the triple, draws from it,
and adds one to the counter, so each call of the compiled function (and each iteration of a
staged loop) draws new numbers, on every backend, as TensorFlow's stateful random ops do.

The op seed of a site follows TensorFlow's rules: an explicit ``seed=`` is used as is;
without one, a global seed gives the site its position among the trace's random ops (so two
functions with the same random ops draw the same sequences, and re-running a program repeats
them); with neither seed, the site's key is drawn from the operating system.
``tf.random.set_seed`` restarts every live site from its key under the new global seed, as if
the program were run again (TensorFlow keeps a traced function's stream running instead).

Gradients that replay a staged region (a ``cond`` branch, a recomputed loop, a staged call)
must see the random numbers of the forward run: ``snapshot`` keeps a site's triple before the
forward run and ``replay_inputs`` gives the replay a scratch copy of the site restored to it
(the replay advances the copy, never the site).
"""
from __future__ import annotations

import itertools
import secrets
import weakref
from typing import Any, Sequence

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.scopes import init_scope
from stagecraft.eager.tensor import Tensor
from stagecraft.state.variables import Variable

TRACE_SEED_BASE = 1 << 40  # op seeds of unseeded traced sites: apart from small user seeds
DEFAULT_GLOBAL_SEED = 87654321  # used when only an op seed is given, as in TensorFlow


class Seeds:
    """The global seed (``tf.random.set_seed``) and the eager streams' counters."""

    def __init__(self) -> None:
        self.global_seed: int | None = None
        self.op_counter = itertools.count()  # op seeds of unseeded ops under a global seed
        self.calls: dict[tuple[int, int], int] = {}  # (global, op) seed -> calls so far


SEEDS = Seeds()  # read by stagecraft.ops.random_ops and by the sites below

_SITES: "weakref.WeakValueDictionary[int, RandomState]" = weakref.WeakValueDictionary()
_SITE_COUNTS: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


class RandomState(Variable):
    """A random op site's seed triple (int64 [global seed, op seed, counter])."""

    def __init__(self, op_seed: int | None, index: int):
        self._op_seed, self._index = op_seed, index
        super().__init__(np.asarray(self._key() + (0,), np.int64), trainable=False,
                         name="random_state")
        self._scratch: RandomState | None = None

    def _key(self) -> tuple[int, int]:
        g, op = SEEDS.global_seed, self._op_seed
        if g is None and op is None:
            return (secrets.randbits(63), secrets.randbits(63))
        if op is None:
            op = TRACE_SEED_BASE + self._index
        return (DEFAULT_GLOBAL_SEED if g is None else g, int(op))

    def restart(self) -> None:
        """Back to counter 0 under the current global seed."""
        self.assign(np.asarray(self._key() + (0,), np.int64))

    def next_seed(self) -> Tensor:
        """The triple for this draw (read in the graph being traced), advancing the counter."""
        seed = self.read_value()
        self.assign_add(np.asarray([0, 0, 1], np.int64))
        return seed

    def scratch(self) -> "RandomState":
        """The copy that gradient replays advance (one per site, so traces stay cached)."""
        if self._scratch is None:
            with init_scope():
                self._scratch = RandomState.__new__(RandomState)
                Variable.__init__(self._scratch, self.numpy(), trainable=False,
                                  name="random_state_replay")
                self._scratch._op_seed, self._scratch._index = self._op_seed, self._index
                self._scratch._scratch = self._scratch
        return self._scratch


def site_state(root: Any, op_seed: int | None, index: int | None = None) -> RandomState:
    """A new site of the trace whose root graph is ``root`` (or at position ``index``, for a
    loaded function)."""
    if index is None:
        index = _SITE_COUNTS.get(root, 0)
        _SITE_COUNTS[root] = index + 1
    with init_scope():
        state = RandomState(op_seed, index)
    _SITES[id(state)] = state
    return state


def restart_sites() -> None:
    """Restarts every live site (``tf.random.set_seed``)."""
    for state in list(_SITES.values()):
        state.restart()


# ------------------------------------------------------------------ gradient replays

def snapshot(inputs: Sequence[Any]) -> list[tuple[RandomState, Any]]:
    """The sites among ``inputs`` with their current triples (a value, or a symbolic read
    when tracing): call it before the forward run that will be replayed."""
    sites = [x for x in inputs if type(x) is RandomState]
    if not sites:
        return []
    tracing = STATE.get().graph is not None
    return [(s, s.read_value() if tracing else convert_to_tensor(s.numpy())) for s in sites]


def replay_inputs(inputs: Sequence[Any], saved: list[tuple[RandomState, Any]]) -> list:
    """``inputs`` with each snapshotted site replaced by its scratch copy, restored to the
    snapshot (call it when the replay starts, i.e. in the backward pass)."""
    if not saved:
        return list(inputs)
    swap = {}
    for state, value in saved:
        copy = state.scratch()
        copy.assign(value)
        swap[id(state)] = copy
    return [swap.get(id(x), x) for x in inputs]


def is_replay_copy(x: Any) -> bool:
    """Whether ``x`` is a site's scratch copy (replays perform its writes)."""
    return type(x) is RandomState and x._scratch is x

