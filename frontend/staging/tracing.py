"""Tracing: running a Python function on placeholder tensors inside a ``FuncGraph``, which
records the ops it calls, into a graph (TensorFlow's ``func_graph_from_py_func``).
``ConcreteFunction.from_traced`` turns the result into a callable graph function; ``Function``
(``function.py``) decides when to trace.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, NamedTuple

import numpy as np

from stagecraft.eager import nest
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir.graph import Graph, Value
from stagecraft.ir.types import TensorType
from stagecraft.ir.verify import CHECKS, check_traced
from stagecraft.staging.func_graph import FuncGraph, building
from stagecraft.staging.graph_tensor import graph_tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.state.variables import Variable


class Slot:
    """A leaf of a traced structure: the position of a tensor (or variable) in the flat inputs
    or outputs.

    >>> Slot(2)
    <slot 2>
    """

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"<slot {self.index}>"


_KEEP = object()  # "no relaxation" (a relaxed dims of None means an unknown rank)


def _placeholders(structure: Any, fg: FuncGraph, hint: str, flat: list,
                  relax: Any = _KEEP) -> Any:
    """Replaces tensor leaves by placeholder GraphTensors (variables by reference inputs)."""
    if isinstance(structure, dict):
        # Placeholders in sorted-key order (the order of the cache key and of _flat_tensors),
        # the dict itself in the caller's order.
        built = {k: _placeholders(structure[k], fg, f"{hint}_{k}", flat, _sub(relax, k))
                 for k in sorted_keys(structure)}
        return type(structure)((k, built[k]) for k in structure)
    if isinstance(structure, tuple) and hasattr(type(structure), "_fields"):
        return type(structure)(*[_placeholders(v, fg, f"{hint}_{i}", flat, _sub(relax, i))
                                 for i, v in enumerate(structure)])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_placeholders(v, fg, f"{hint}_{i}", flat, _sub(relax, i))
                               for i, v in enumerate(structure))
    if isinstance(structure, Variable):
        p = fg.add_input(TensorType(structure.dtype, structure._shape), hint, ref=True)
        fg._var_refs[id(structure)] = p
        fg.ref_objects[p.uid] = structure
        flat.append(structure)
        return structure
    if isinstance(structure, (Tensor, np.ndarray, TensorSpec)):
        t = structure if not isinstance(structure, np.ndarray) else convert_to_tensor(structure)
        dims = t.shape.dims_tuple if relax is _KEEP else relax
        p = fg.add_input(TensorType(t.dtype, dims), _safe(hint))
        flat.append(structure)
        return graph_tensor(p, fg)
    return structure


def sorted_keys(d: dict) -> list:
    """A dict's keys in the canonical order shared by trace keys, placeholders and calls
    (insertion order is irrelevant to the cache, so it must be to the flat inputs too)."""
    return sorted(d, key=repr)


def _sub(relax: Any, k: Any) -> Any:
    return relax if relax is _KEEP else relax[k]


def _safe(hint: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "arg"


def _output_structure(outputs: Any, fg: FuncGraph, results: list) -> Any:
    """Turns returned tensors into graph results and slots (None stays None; Python numbers
    become constants; variables are read)."""
    def leaf(x: Any) -> Any:
        if x is None:
            return None
        if isinstance(x, Variable):
            x = x.read_value()
        if isinstance(x, (bool, int, float, np.generic, np.ndarray)):
            x = convert_to_tensor(x)
        if not isinstance(x, Tensor):
            raise TypeError(f"To be compatible with tf.function, Python functions must return "
                            f"zero or more Tensors or ExtensionTypes or None values; in "
                            f"compilation of {fg.name}, found return value of type "
                            f"{type(x).__name__}, which is not a Tensor: {x!r}.")
        operand = fg.operand(x)
        if not isinstance(operand, Value):
            operand = fg.operand(convert_to_tensor(x))
        results.append(operand)
        return Slot(len(results) - 1)
    return nest.map_structure(leaf, outputs)


class TracedGraph(NamedTuple):
    """What one trace made: the graph, the ``FuncGraph`` that built it (captures, variables),
    the output structure (``Slot`` leaves), the flat tensor and variable inputs, the
    arguments as traced, the Python names of the positional arguments and AutoGraph's report
    of what ran staged."""
    graph: Graph
    func_graph: FuncGraph
    structure: Any
    flat_inputs: list
    arguments: tuple
    arg_names: list
    report: Any


def trace_graph(python_function: Callable, args: tuple, kwargs: dict, name: str,
                variable_policy: str = "allow", relax: Any = None) -> TracedGraph:
    """Runs ``python_function`` on placeholders for the tensors in ``args``/``kwargs`` inside
    a new ``FuncGraph`` and returns the graph it recorded (``ConcreteFunction.from_traced``
    makes it callable). ``relax`` gives the placeholders' dims (``(positional, keyword)``
    as ``Function``'s relaxed key has them); None keeps each tensor's own shape.

    >>> import stagecraft as tf
    >>> traced = trace_graph(lambda x: x * 2.0, (tf.constant([1.0]),), {}, "double")
    >>> print(traced.graph)
    graph @double(%x: f32[1]) -> (f32[1]) {
      %0: f32[1] = multiply %x, 2.0:f32
      return %0
    }
    """
    fg = FuncGraph(name, variable_policy=variable_policy)
    fg.enclosing = STATE.get().graph
    flat_inputs: list = []
    names = param_names(python_function, len(args))
    sym_args = [_placeholders(a, fg, names[i], flat_inputs,
                              _KEEP if relax is None else relax[0][i])
                for i, a in enumerate(args)]
    sym_kwargs = {k: _placeholders(kwargs[k], fg, k, flat_inputs,
                                   _KEEP if relax is None else relax[1][k])
                  for k in sorted_keys(kwargs)}
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.operators.trace_report import recording
    with recording() as report, building(fg):  # what AutoGraph's statements did in this trace
        outputs = python_function(*sym_args, **sym_kwargs)
        results: list = []
        structure = _output_structure(outputs, fg, results)
    graph = fg.build(results)
    if CHECKS[0]:   # stagecraft.config.enable_checks(True)
        check_traced(graph)
    return TracedGraph(graph, fg, structure, flat_inputs, (args, kwargs), names, report)


def param_names(fn: Callable, n: int) -> list[str]:
    """Names for the first ``n`` positional arguments: the Python parameter names."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    return [names[i] if i < len(names) else f"{var}_{i}" for i in range(n)]
