"""User functions of a pipeline (``map``, ``filter``, ``reduce``, ``flat_map``'s), staged as
``tf.data`` stages them: traced into a graph function (AutoGraph converts their control
flow; Python side effects run while tracing only) and then called per element."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.data import structure
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.function import Function, function
from stagecraft.staging.tensor_spec import TensorSpec

__all__ = ["StagedFunction"]


class StagedFunction:
    """``fn`` as a ``tf.function`` (with ``reduce_retracing``, so elements whose shapes differ
    share one trace with None dims instead of one trace each), called with an element the way
    ``Dataset.map`` passes it.

    Elements that are a tensor or a flat tuple of tensors call the traced concrete function's
    eager entry directly: the pipeline runs outside any tape or device scope, as TensorFlow's
    dataset functions do, and skips ``Function.__call__``'s checks (a few microseconds per
    element)."""

    def __init__(self, fn: Callable[..., Any], what: str, unpack: bool = True):
        if not callable(fn):
            raise TypeError(f"Dataset.{what}: expected a function, got {type(fn).__name__}.")
        self.what = what
        self.unpack = unpack
        self.python = fn
        self.staged = fn if isinstance(fn, Function) else function(fn, reduce_retracing=True)
        self._concrete: Any = None  # the trace on the element spec, once output_spec ran
        self._direct: Callable[[tuple], Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self.unpack:
            (element,) = args
            direct = self._direct
            if direct is None and self._concrete is not None:  # compiled at the first element
                direct = self._direct = self._concrete._eager_caller()
            if direct is not None:
                if type(element) is Tensor:
                    return _pack_lists(direct((element,)))
                if type(element) is tuple and all(type(t) is Tensor for t in element):
                    return _pack_lists(direct(element))
            return _pack_lists(structure.call_with_element(self.staged, element))
        return _pack_lists(self.staged(*args))

    def output_spec(self, *input_specs: Any) -> Any:
        """Traces the function once on the input's ``TensorSpec`` structure (None dims stay
        unknown, so every element reuses this trace) and returns the output's specs."""
        if self.unpack:
            (spec,) = input_specs
            args = spec if isinstance(spec, tuple) and not hasattr(type(spec), "_fields") \
                else (spec,)
        else:
            args = input_specs
        concrete = self.staged.get_concrete_function(*args)
        if self.unpack and all(isinstance(a, TensorSpec) for a in args):
            self._concrete = concrete
        return structure.map_structure(_spec_of_output, _pack_lists(concrete.structured_outputs))


def _pack_lists(value: Any) -> Any:
    """A list returned by a dataset function is a tuple of components, as in TensorFlow."""
    return tuple(value) if isinstance(value, list) else value


def _spec_of_output(value: Any) -> Any:
    if value is None:
        raise TypeError("a tf.data function returned None; it must return tensors (or a "
                        "tuple/dict of them).")
    if not (hasattr(value, "shape") and hasattr(value, "dtype")):
        value = convert_to_tensor(value)
    return TensorSpec(value.shape, value.dtype)
