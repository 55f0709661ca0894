"""``PassManager``: runs a pipeline of passes to a fixpoint; ``optimize`` runs the default one.

Every pass is a function ``graph -> (changed, graph)``. The manager reruns the whole pipeline
until no pass reports a change (at most ``max_iterations`` rounds, so a pair of passes undoing
each other cannot loop forever) and, when given a ``verify`` callback (tests pass
``stagecraft.ir.verify.verify``), calls it on the graph after every pass; an error it raises
names the pass that produced the graph.
"""
from __future__ import annotations

from typing import Callable, Sequence

from stagecraft.ir.graph import Graph
from stagecraft.ir.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from stagecraft.ir.passes.eliminate_dead_code import eliminate_dead_code
from stagecraft.ir.passes.eliminate_dead_loop_vars import eliminate_dead_loop_vars
from stagecraft.ir.passes.eliminate_unused_operands import eliminate_unused_operands
from stagecraft.ir.passes.fold_constant_cond import fold_constant_cond
from stagecraft.ir.passes.fold_constants import fold_constants
from stagecraft.ir.passes.merge_equal_loop_vars import merge_equal_loop_vars
from stagecraft.ir.passes.rewrite import Pass
from stagecraft.ir.passes.simplify_algebra import simplify_algebra

DEFAULT_PIPELINE: tuple[Pass, ...] = (
    fold_constants,
    fold_constant_cond,
    simplify_algebra,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    eliminate_unused_operands,
    eliminate_dead_loop_vars,
    merge_equal_loop_vars,
)


class PassManager:
    """Runs ``passes`` in order, repeatedly, until none changes the graph.

    A ``PassManager`` is itself a pass: calling it returns ``(changed, graph)``.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * (tf.constant(2.0) - 1.0)
    >>> g = f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph
    >>> changed, g2 = PassManager(DEFAULT_PIPELINE)(g)
    >>> print(g2)
    graph @f(%x: f32[]) -> (f32[]) {
      return %x
    }
    """

    def __init__(self, passes: Sequence[Pass], verify: Callable[[Graph], object] | None = None,
                 max_iterations: int = 8):
        self.passes = tuple(passes)
        self.verify = verify
        self.max_iterations = max_iterations

    def __call__(self, graph: Graph) -> tuple[bool, Graph]:
        if self.verify is not None:
            self._verify(graph, "the input")
        changed_any = False
        for _ in range(self.max_iterations):
            changed = False
            for p in self.passes:
                c, graph = p(graph)
                changed |= c
                if self.verify is not None:
                    self._verify(graph, getattr(p, "__name__", repr(p)))
            if not changed:
                break
            changed_any = True
        return changed_any, graph

    run = __call__

    def _verify(self, graph: Graph, after: str) -> None:
        try:
            self.verify(graph)
        except Exception as e:
            e.add_note(f"(in the graph produced by {after} in the pass pipeline)")
            raise

    def __repr__(self) -> str:
        names = ", ".join(getattr(p, "__name__", repr(p)) for p in self.passes)
        return f"PassManager([{names}])"


_DEFAULT = PassManager(DEFAULT_PIPELINE)


def optimize(graph: Graph) -> Graph:
    """``graph`` after the default pipeline (constant folding, constant ``cond`` folding,
    algebraic simplification, CSE, dead-code elimination, unused control-flow operands and dead
    loop variables) run to a fixpoint.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return tf.exp(x) + tf.exp(x) * tf.constant(1.0)
    >>> print(optimize(f.get_concrete_function(tf.TensorSpec([], tf.float32)).graph))
    graph @f(%x: f32[]) -> (f32[]) {
      %0: f32[] = exp %x
      %1: f32[] = add %0, %0
      return %1
    }
    """
    return _DEFAULT(graph)[1]
