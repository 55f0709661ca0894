"""Gradients of staged calls, split as TensorFlow's function gradients and JAX's
``partial_eval`` split them: a call of a ``ConcreteFunction`` whose inputs (or variables) a
tape watches runs a *forward-with-residuals* graph instead of the plain one, and is one tape
record whose backward pass is a staged graph taking those residuals.

Both graphs come from one *joint* trace, per concrete function and input shapes: replay the
forward graph under a tape (``autodiff.replay.inline_graph``, side effects included), then
``tape.gradient`` seeded by placeholders for the output gradients. ``ir.partition`` splits the
joint graph into the equations that do not depend on the seeds (the forward-with-residuals:
the outputs, every side effect - variable writes such as BatchNormalization's moving
statistics, random draws, prints, asserts - exactly once, and the residuals: its values the
rest uses) and the rest (the backward: residuals and seeds in, input gradients out). A
training step with a staged forward so costs one forward and one backward, as eagerly; the
plain forward stays the graph of calls that no tape watches (inference pays nothing).

The record's outputs are the call's outputs and the residuals, so an outer tape that records
the backward call (higher-order gradients) differentiates through the residuals too: a
gradient reaching the residuals is taken by rematerializing - the forward-with-residuals
graph's own gradient, traced by replaying it under a tape. The rematerializing gradient is
also the whole path for a function the split refuses (``ir.partition.SplitError``: a backward
equation would see variables the forward writes, e.g. random numbers redrawn in a ``cond``
branch's gradient) or cannot trace, with the reason logged once per function.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Callable, Iterator

from stagecraft.autodiff.replay import inline_graph
from stagecraft.autodiff.tape import GradientTape, key, trainable
from stagecraft.eager import nest, placement
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.remote import is_remote
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.partition import SplitError, split_graph
from stagecraft.ops.array_ops import zeros_like
from stagecraft.staging import tracing
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.staging.graph_tensor import graph_tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.state import random_state
from stagecraft.state.variables import Variable

logger = logging.getLogger("stagecraft")

# Whether watched calls run the forward-with-residuals (False: every call rematerializes, the
# design before the split; ``rematerializing()`` sets it, for comparisons).
_SPLIT = [True]


@contextlib.contextmanager
def rematerializing() -> Iterator[None]:
    """Within this block staged calls under a tape use the rematerializing gradient (the plain
    forward, then a backward pass that replays it): the reference the split is tested and
    measured against.

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: tf.sin(x))
    >>> x = tf.constant(1.0)
    >>> with rematerializing(), tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = f(x)
    >>> round(float(tape.gradient(y, x)), 4)
    0.5403
    """
    before = _SPLIT[0]
    _SPLIT[0] = False
    try:
        yield
    finally:
        _SPLIT[0] = before


def call_split(concrete: Any, tapes: tuple, args: list) -> list | None:
    """Runs a call of ``concrete`` on ``args`` (its full inputs: tensors, captures, variables)
    as the forward-with-residuals and records it on ``tapes``; returns the flat outputs, or
    None where the call should take the plain path (no tape watches it, a remote call, or
    the split is refused: then ``record_call`` rematerializes).

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: tf.reduce_sum(x * x))
    >>> x = tf.constant([1.0, 2.0])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = f(x)          # runs f's forward-with-residuals, records one call
    >>> tape.gradient(y, x).numpy().tolist()
    [2.0, 4.0]
    """
    fg = STATE.get().graph
    if fg is None:
        args = [a if isinstance(a, (Tensor, Variable)) else convert_to_tensor(a) for a in args]
        recorded = args
        if is_remote(concrete._device) or is_remote(placement.inputs_device(args)):
            return None
    else:
        recorded = [a if isinstance(a, Variable) else graph_tensor(fg.operand(a), fg)
                    for a in args]
    if not _SPLIT[0] or not _watched(tapes, recorded):
        return None
    split = _split_for(concrete, args)
    if split is None:
        return None
    return split.run(tapes, args, recorded)


def _watched(tapes: tuple, args: list) -> bool:
    """Whether a tape would record a call on ``args`` (see ``GradientTape.record_composite``)."""
    for tape in tapes:
        for a in args:
            if isinstance(a, Variable):
                if id(a) in tape._ids or a.trainable and tape._watch_accessed_variables:
                    return True
            elif trainable(a.dtype) and key(a) in tape._ids:
                return True
    return False


class _Split:
    """A concrete function's forward-with-residuals and backward functions and how a call's
    values reach their parameters. They are traced for the parameter types of its graph (the
    dims it was traced with, known or not), so every call of it shares them."""

    def __init__(self, concrete: Any, args: list):
        graph = concrete.graph
        tensors = [TensorSpec(p.type.shape, p.type.dtype) for p in graph.params if not p.ref]
        variables = [a for a in args if isinstance(a, Variable)]
        self.num_outputs = len(graph.results)
        self.float_outputs = [i for i, r in enumerate(graph.results) if trainable(r.type.dtype)]
        seeds = [TensorSpec(graph.results[i].type.shape, graph.results[i].type.dtype)
                 for i in self.float_outputs]
        mask: list = []

        def joint(tensors: list, variables: list, seeds: list) -> list:
            results, grads = _differentiate(graph, tensors, variables, seeds, True, mask)
            return list(results) + grads

        traced = tracing.trace_graph(joint, (tensors, variables, seeds), {},
                                     f"{concrete.name}_joint")
        jfg, jgraph = traced.func_graph, traced.graph
        n_in = len(tensors) + len(variables)
        # A variable the backward uses is read when it runs, as the rematerializing backward
        # reads it, except a random site's replay copy: the forward part sets it for this
        # call's backward, and another call could set it again before that runs.
        late = [i for i, p in enumerate(jgraph.params)
                if p.ref and not random_state.is_replay_copy(jfg.ref_objects.get(p.uid))]
        parts = split_graph(jgraph, unknown=range(n_in, n_in + len(seeds)),
                            known_results=range(self.num_outputs), late_reads=late)
        self.connected = list(mask)
        self.forward = _concrete(concrete, parts.known, jfg.inputs[:n_in], jfg.captures,
                                 jfg.variables, "forward")
        self.backward = _concrete(concrete, parts.unknown, parts.unknown.params, [], [],
                                  "backward")
        self.backward_takes = parts.unknown_params
        # (the joint graph's captures and variables, which follow its explicit inputs)
        self.extras = [t for t, _ in jfg.captures] + [v for v, _ in jfg.variables]

    def run(self, tapes: tuple, args: list, recorded: list) -> list:
        tensors = [a for a in args if not isinstance(a, Variable)]
        variables = [a for a in args if isinstance(a, Variable)]
        saved = random_state.snapshot(args)  # for a gradient through the residuals
        state = STATE.get()
        token = STATE.set(state.replace(tapes=()))  # recorded below, as one call
        try:
            flat = list(nest.flatten(self.forward._call_flat(tensors + variables)))
        finally:
            STATE.reset(token)
        outs, residuals = flat[:self.num_outputs], flat[self.num_outputs:]
        order = ([i for i, a in enumerate(args) if not isinstance(a, Variable)] +
                 [i for i, a in enumerate(args) if isinstance(a, Variable)])
        forward_args = tensors + variables + self.forward.captured_inputs + \
            self.forward._captured_variables

        def backward(gouts: list) -> list:
            if any(g is not None for g in gouts[self.num_outputs:]):
                # a gradient of the residuals (an outer tape): rematerialize
                grads = _backward_call(self.forward,
                                       random_state.replay_inputs(forward_args, saved),
                                       flat, gouts)
                by_arg: list = [None] * len(args)
                for i, g in zip(order, grads):
                    by_arg[i] = g
                return by_arg
            if not any(self.connected):
                return [None] * len(args)
            seeds = [zeros_like(outs[i]) if gouts[i] is None else gouts[i]
                     for i in self.float_outputs]
            full = tensors + variables + seeds + self.extras
            grads = iter(nest.flatten(self.backward._call_flat(
                [full[i] for i in self.backward_takes] + residuals)))
            return [next(grads) if c else None for c in self.connected]
        backward.takes_none = True  # None for the outputs no gradient reached (the residuals)
        for tape in tapes:
            tape.record_composite(recorded, outs + residuals, backward)
        return outs


def _split_for(concrete: Any, args: list) -> _Split | None:
    """The split of ``concrete`` (made on its first watched call), or None where it is refused
    (the reason logged then)."""
    split = concrete._split
    if split is None:
        try:
            split = _Split(concrete, args)
        except SplitError as e:
            split = f"{e}"
        except Exception as e:  # noqa: BLE001 - the rematerializing path reports it when used
            split = f"tracing its gradient failed ({type(e).__name__}: {e})"
        if isinstance(split, str):
            logger.warning("tf.function %s: its gradient rematerializes the forward pass (the "
                           "forward pass runs twice per training step) because %s",
                           concrete.name, split)
        concrete._split = split
    return split if isinstance(split, _Split) else None


def _concrete(concrete: Any, graph: Any, inputs: list, captures: list, variables: list,
              kind: str) -> Any:
    """A concrete function (of ``concrete``'s class, backend and device) for a part of the
    split: ``inputs`` are its explicit parameters; ``captures`` and ``variables`` (pairs as a
    ``FuncGraph`` keeps them) are passed by every call."""
    fg = FuncGraph(graph.name)
    fg.inputs, fg.captures, fg.variables = list(inputs), list(captures), list(variables)
    for v, p in variables:
        fg.ref_objects[p.uid] = v
    structure = [tracing.Slot(i) for i in range(len(graph.results))]
    part = type(concrete)(graph, fg, structure, [], ((), {}), f"{concrete.name}_{kind}",
                          concrete._backend_name, concrete._device)
    part._compile_mode = concrete._compile_mode
    return part


def _differentiate(graph: Any, tensors: list, variables: list, seeds: list, effects: bool,
                   mask: list) -> tuple[list, list]:
    """Replays ``graph`` on the call's inputs under a tape (with or without its side effects)
    and takes the gradient of its float results seeded by ``seeds``: ``(results, the
    gradients that are not None)``; ``mask`` receives which inputs have one."""
    ti, vi = iter(tensors), iter(variables)
    ordered = [next(vi) if p.ref else next(ti) for p in graph.params]
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([x for x in ordered if trainable(x.dtype)])
        results = inline_graph(graph, ordered, effects=effects)
    targets = [r for r in results if trainable(r.dtype)]
    grads = tape.gradient(targets, ordered, output_gradients=seeds)
    mask[:] = [g is not None for g in grads]
    return results, [g for g in grads if g is not None]


def record_call(concrete: Any, tapes: tuple, args: list, outs: list, saved: list) -> None:
    """Records a call of ``concrete`` that ran its plain forward on ``tapes``, with the
    rematerializing gradient: it replays the graph with the random sites of ``saved``
    (``random_state.snapshot``) as they were before the call.

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: x * x)
    >>> x = tf.constant(3.0)
    >>> with rematerializing(), tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = f(x)          # recorded here, as one call
    >>> float(tape.gradient(y, x))
    6.0
    """
    def backward(gouts: list) -> list:
        return _backward_call(concrete, random_state.replay_inputs(args, saved), outs, gouts)
    for tape in tapes:
        tape.record_composite(args, outs, backward)


def _backward_call(concrete: Any, args: list, outs: list, gouts: list) -> list:
    """Gradients for ``args`` given output gradients, via the staged backward function."""
    backward, connected = _backward_function(concrete, args)
    float_outs = [i for i, o in enumerate(outs) if trainable(o.dtype)]
    seeds = [zeros_like(outs[i]) if gouts[i] is None else gouts[i] for i in float_outs]
    tensors = [a for a in args if not isinstance(a, Variable)]
    variables = [a for a in args if isinstance(a, Variable)]
    grads = backward(tensors, variables, seeds) if connected else []
    it = iter(grads)
    return [next(it) if c else None for c in connected]


def _backward_function(concrete: Any, args: list) -> tuple[Callable, list]:
    """The backward graph function of ``concrete`` (traced once, kept on it) and which inputs
    receive a gradient."""
    if concrete._backward is None:
        graph = concrete.graph
        mask: list = []

        def backward(tensors: list, variables: list, seeds: list) -> list:
            return _differentiate(graph, tensors, variables, seeds, False, mask)[1]

        tensors = [a for a in args if not isinstance(a, Variable)]
        variables = [a for a in args if isinstance(a, Variable)]
        seeds = [o for o in concrete.outputs if trainable(o.dtype)]
        name = f"{concrete.name}_backward"
        traced = tracing.trace_graph(backward, (_specs(tensors), variables, _specs(seeds)), {},
                                     name)
        # A concrete function of the same class (``from_traced``: this module does not import
        # concrete_function, which imports it).
        backward_concrete = concrete.from_traced(traced, name, concrete._backend_name,
                                                 concrete._device)
        concrete._backward = (backward_concrete, list(mask))
    backward_concrete, mask = concrete._backward
    return (lambda t, v, s: nest.flatten(
        backward_concrete._call_flat(list(t) + list(v) + list(s)))), mask


def _specs(tensors: list) -> list:
    return [TensorSpec(t.shape, t.dtype) for t in tensors]
