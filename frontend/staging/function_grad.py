"""Gradients of staged calls: a call of a ``ConcreteFunction`` is one tape record whose
backward pass is itself a staged graph function, traced once per concrete function. It
rematerializes the forward values it needs by replaying the forward graph under a tape
(``autodiff.replay``) instead of having the forward return its intermediates, so the forward
graph stays the single inference graph that backends compile.
"""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.autodiff.replay import inline_graph
from stagecraft.autodiff.tape import GradientTape
from stagecraft.eager import nest
from stagecraft.ops.array_ops import zeros_like
from stagecraft.staging import tracing
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.state import random_state
from stagecraft.state.variables import Variable


def record_call(concrete: Any, tapes: tuple, args: list, outs: list, saved: list) -> None:
    """Records a call of ``concrete`` on ``tapes``; its gradient replays the graph with the
    random sites of ``saved`` (``random_state.snapshot``) as they were before the call.

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: x * x)
    >>> x = tf.constant(3.0)
    >>> with tf.GradientTape() as tape:
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
    float_outs = [i for i, o in enumerate(outs) if o.dtype.is_floating]
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
            ordered, ti, vi = [], iter(tensors), iter(variables)
            for p in graph.params:
                ordered.append(next(vi) if p.ref else next(ti))
            with GradientTape(watch_accessed_variables=False) as tape:
                tape.watch([x for x in ordered if x.dtype.is_floating])
                results = inline_graph(graph, ordered, effects=False)
            targets = [r for r in results if r.dtype.is_floating]
            grads = tape.gradient(targets, ordered, output_gradients=seeds)
            mask[:] = [g is not None for g in grads]
            return [g for g in grads if g is not None]

        tensors = [a for a in args if not isinstance(a, Variable)]
        variables = [a for a in args if isinstance(a, Variable)]
        seeds = [o for o in concrete.outputs if o.dtype.is_floating]
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
