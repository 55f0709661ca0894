"""``for element in dataset:`` (or over ``iter(dataset)``) inside a staged function: a staged
loop that fetches each element from the host (``stagecraft/data/staged.py``), as TensorFlow's
AutoGraph loops over its dataset ops. The loop's body, ``break`` and ``return`` are staged
like any loop's; over a dataset, every call of the compiled function starts a new pass."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from stagecraft.converters.operators import trace_report as _report
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor

__all__ = ["is_dataset_source", "dataset_loop"]


def is_dataset_source(iterable: Any) -> bool:
    """Whether a ``for`` loop over ``iterable`` is a dataset loop (checked while tracing)."""
    from stagecraft.data.dataset import Dataset
    from stagecraft.data.staged import GraphIterator
    return isinstance(iterable, (Dataset, GraphIterator))


def dataset_loop(source: Any, extra_test: Callable | None, body: Callable,
                 get_state: Callable, set_state: Callable, names: Sequence[str], loc: str,
                 opts: dict | None = None) -> None:
    """Stages ``for element in source: body(element)`` in the function being traced."""
    from stagecraft.converters.operators.control_flow import _staged_while
    from stagecraft.data import staged, structure
    from stagecraft.ops.math_ops import logical_and

    iterator = source if isinstance(source, staged.GraphIterator) else \
        staged.GraphIterator(source)
    spec = iterator.element_spec
    current = staged.fetch(iterator.dataset, iterator.token)

    def get_state2() -> tuple:
        return tuple(current) + tuple(get_state())

    def set_state2(values: Sequence[Any]) -> None:
        current[:] = values[:len(current)]
        set_state(list(values[len(current):]))

    def test() -> Any:
        going = current[0]
        if extra_test is not None:
            extra = extra_test()
            extra = extra if isinstance(extra, Tensor) else convert_to_tensor(bool(extra))
            going = logical_and(going, extra)
        return going

    def body2() -> None:
        body(structure.pack(spec, current[1:]))
        current[:] = staged.fetch(iterator.dataset, iterator.token)

    _report.record("for", loc, "staged", names)
    element_names = ("has_element",) + tuple(f"element_{i}" for i in range(len(current) - 1))
    _staged_while(test(), test, body2, get_state2, set_state2, element_names + tuple(names),
                  loc, opts)
