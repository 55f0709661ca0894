"""``ConcreteFunction``: one traced graph plus what it captured, callable three ways: eagerly
through a backend (``_call_flat``, and ``_eager_caller``, the hot path's closure), from another
trace (``_emit_call``: a ``call`` equation) and under a tape (its forward-with-residuals graph,
one record whose backward is a staged function taking the residuals: ``function_grad``).
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.backends import compiling_as, get_backend
from stagecraft.eager import nest, placement
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.device_tensor import DeviceTensor, wrap_device
from stagecraft.eager.remote import is_remote, runtime
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir.graph import Graph
from stagecraft.staging import function_grad
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.staging.graph_tensor import GraphTensor, graph_tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.staging.trace_cache import strengthen, weaken
from stagecraft.staging.tracing import Slot, TracedGraph, sorted_keys
from stagecraft.state import random_state
from stagecraft.state.variables import Variable
from stagecraft.ir.passes.manager import optimize


class ConcreteFunction:
    """One traced graph function with its captured tensors and variables.

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: x * 2.0)
    >>> c = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    >>> c(tf.constant([1.0, 2.0])).numpy().tolist()
    [2.0, 4.0]
    """

    def __init__(self, graph: Graph, func_graph: FuncGraph, structured_outputs: Any,
                 flat_inputs: list, arguments: tuple, name: str, backend: str | None = None,
                 device: str | None = None, arg_names: Sequence[str] = (),
                 trace_report: Any = None):
        self.graph = graph
        self.name = name
        self._func_graph = func_graph
        self._outputs = structured_outputs
        self._arguments = arguments  # held weakly where keyed by identity (the setter)
        self._input_types = [p.type for p in func_graph.inputs]
        self._input_is_ref = [p.ref for p in func_graph.inputs]
        self.captured_inputs = [t for t, _ in func_graph.captures]
        self._captured_variables = [v for v, _ in func_graph.variables]
        self.created_variables = list(func_graph.created_variables)
        self.pending_inits = list(func_graph.pending_inits)
        self._backend_name = backend
        # "sync" for tf.function(jit_compile=True): compiled before the first call returns
        self._compile_mode: str | None = None
        self._executable = None
        self._optimized_graph: Graph | None = None  # made on first use (optimized_graph)
        # (the backward ConcreteFunction, which inputs get a gradient): see function_grad
        self._backward: tuple | None = None
        # the forward-with-residuals and backward functions, or why there are none (a str):
        # see function_grad.call_split
        self._split: Any = None
        self._arg_names = tuple(arg_names)  # Python names of the traced positional arguments
        self._trace_report = trace_report  # AutoGraph's decisions in this trace
        self._lock = threading.Lock()
        self._fast: Callable | None = None  # the hot path's closure (_eager_caller)
        # The device of this trace (None: the CPU). A GPU trace compiles its graph with the
        # "cuda" backend (staged GPU kernels, device arrays in and out) unless the function
        # asked for the reference interpreter, which runs on host copies (placement.host_call);
        # backend="cuda" runs every call on the GPU. A remote device's trace is shipped to its
        # worker, which compiles it with its own backend (stagecraft.distribute).
        self._device = device
        self._on_gpu = not is_remote(device) and (
            backend == "cuda" or device is not None and backend != "reference")

    @classmethod
    def from_traced(cls, traced: TracedGraph, name: str, backend: str | None = None,
                    device: str | None = None) -> "ConcreteFunction":
        """The concrete function of one trace (``tracing.trace_graph``).

        >>> import stagecraft as tf
        >>> from stagecraft.staging.tracing import trace_graph
        >>> traced = trace_graph(lambda x: x + 1.0, (tf.constant(1.0),), {}, "inc")
        >>> float(ConcreteFunction.from_traced(traced, "inc")(tf.constant(2.0)))
        3.0
        """
        return cls(traced.graph, traced.func_graph, traced.structure, traced.flat_inputs,
                   traced.arguments, name, backend, device, traced.arg_names, traced.report)

    # --------------------------------------------------------------- properties
    @property
    def _arguments(self) -> tuple:
        """``(args, kwargs)`` as traced. Objects the trace was keyed on by identity are held
        weakly (``trace_cache.weaken``), so that a trace does not keep them alive; one that
        died appears as a ``WeakArgument`` placeholder."""
        return strengthen(self._weak_arguments) if self._has_weak_arguments \
            else self._weak_arguments

    @_arguments.setter
    def _arguments(self, arguments: tuple) -> None:
        self._weak_arguments, self._has_weak_arguments = weaken(arguments)
        if not self._has_weak_arguments:
            self._weak_arguments = arguments  # nothing held weakly: keep the caller's structure

    @property
    def structured_outputs(self) -> Any:
        return nest.map_structure(
            lambda s: None if s is None else graph_tensor(self.graph.results[s.index],
                                                          self._func_graph), self._outputs)

    @property
    def structured_input_signature(self) -> tuple:
        """``(args, kwargs)`` as traced: a TensorSpec for each tensor, the value of each
        Python argument.

        >>> import stagecraft as tf
        >>> f = tf.function(lambda x, n: x * n)
        >>> f.get_concrete_function(tf.constant([1.0]), 2).structured_input_signature
        ((TensorSpec(shape=(1,), dtype=stagecraft.float32, name=None), 2), {})
        """
        def spec(x: Any) -> Any:
            return TensorSpec(x.shape, x.dtype) if type(x) in (Tensor, DeviceTensor) else x
        return nest.map_structure(spec, self._arguments)

    @property
    def inputs(self) -> list:
        return [graph_tensor(p, self._func_graph) for p in self.graph.params]

    @property
    def outputs(self) -> list:
        return [graph_tensor(r, self._func_graph) for r in self.graph.results]

    @property
    def variables(self) -> tuple:
        return tuple(self._captured_variables)

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self._captured_variables if v.trainable)

    @property
    def executable(self) -> Any:
        if self._executable is None:
            with self._lock:
                if self._executable is None:
                    with compiling_as(self._compile_mode):
                        self._executable = get_backend(
                            "cuda" if self._on_gpu else self._backend_name).compile(
                            self.optimized_graph)
        return self._executable

    @property
    def optimized_graph(self) -> Graph:
        """``self.graph`` after ``stagecraft.ir.passes.optimize``: what the backend compiles
        (``self.graph`` itself stays as traced, for printing and for calls from other graphs)."""
        graph = self._optimized_graph
        if graph is None:
            graph = self._optimized_graph = optimize(self.graph)
        return graph

    def pretty_printed_signature(self) -> str:
        return str(self.graph).splitlines()[0]

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.pretty_printed_signature()}>"

    # --------------------------------------------------------------------- calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls with tensors matching the traced signature (positionally or by parameter /
        TensorSpec name); Python arguments may be omitted or must equal the values the function
        was traced with."""
        flat: list = []
        args, kwargs = self._bind_call(list(args), dict(kwargs))
        _match(self._arguments, (args, kwargs), flat, self.name)
        for i, (t, ty, ref) in enumerate(zip(flat, self._input_types, self._input_is_ref)):
            if ref:
                continue
            t = convert_to_tensor(t, ty.dtype) if not isinstance(t, Tensor) else t
            if t.dtype != ty.dtype or not TensorSpec(ty.shape, ty.dtype).is_compatible_with(t):
                raise TypeError(f"{self.name}: argument {i} has dtype {t.dtype.name} and shape "
                                f"{t.shape}, but the concrete function was traced for "
                                f"{TensorSpec(ty.shape, ty.dtype)}. Can not cast it; call the "
                                f"tf.function itself to trace a new signature.")
            flat[i] = t
        return self._call_flat(flat)

    def _bind_call(self, args: list, kwargs: dict) -> tuple[list, dict]:
        """Moves keyword arguments naming traced positional parameters into place and fills in
        omitted Python-valued parameters with their traced values."""
        pos_t, kw_t = self._arguments
        if len(args) > len(pos_t):
            raise TypeError(f"{self.name}: takes {len(pos_t)} positional arguments but "
                            f"{len(args)} were given.")
        for i in range(len(args), len(pos_t)):
            template = pos_t[i]
            names = [self._arg_names[i]] if i < len(self._arg_names) else []
            if isinstance(template, TensorSpec) and template.name:
                names.insert(0, template.name)
            given = next((n for n in names if n in kwargs), None)
            if given is not None:
                args.append(kwargs.pop(given))
            elif not _has_tensor(template):
                args.append(template)
            else:
                raise TypeError(f"{self.name}: missing required argument "
                                f"'{names[0] if names else i}'.")
        for k, template in kw_t.items():
            if k not in kwargs and not _has_tensor(template):
                kwargs[k] = template
        return args, kwargs

    def _call_flat(self, flat: Sequence[Any]) -> Any:
        args = list(flat) + self.captured_inputs + self._captured_variables
        state = STATE.get()
        if state.tapes:  # watched: the forward-with-residuals, recorded as one call
            outs = function_grad.call_split(self, state.tapes, args)
            if outs is not None:
                return nest.map_structure(lambda s: None if s is None else outs[s.index],
                                          self._outputs)
        if state.graph is not None:
            outs = self._emit_call(state.graph, args)
        else:
            saved = random_state.snapshot(args) if state.tapes else []
            values = [a if isinstance(a, Variable) else
                      (a._value if isinstance(a, Tensor) else convert_to_tensor(a)._value)
                      for a in args]
            if any(isinstance(a, GraphTensor) for a in args):
                raise TypeError(f"{self.name}: a symbolic tensor from a finished trace was "
                                f"passed to an eager call.")
            remote = self._device if is_remote(self._device) else placement.inputs_device(args)
            if is_remote(remote):
                # on a worker; also a trace made for the CPU (a SavedModel's) given remote values
                outs = runtime().call_function(self, args, remote)
            elif self._on_gpu:
                outs = [wrap_device(o) for o in self.executable(values)]
            elif self._device is None and not any(
                    type(a) is DeviceTensor or getattr(a, "_device", None) is not None
                    for a in args):
                outs = [wrap(o) for o in self.executable(values)]
            else:
                outs = placement.host_call(self.executable, values, self._device)
            if state.tapes:
                self._record(state.tapes, args, outs, saved)
        return nest.map_structure(lambda s: None if s is None else outs[s.index], self._outputs)

    def _call_eager(self, args: tuple) -> Any:
        """``_call_flat`` for the hot path (eager, no tape, every argument an eager Tensor)."""
        return self._eager_caller()(args)

    def _eager_caller(self) -> Callable[[tuple], Any]:
        """The hot path as one closure: captured values, the executable's entry and the output
        packing are worked out once, not per call (a call of a small function costs a few
        microseconds, so every attribute lookup counts)."""
        fast = self._fast
        if fast is not None:
            return fast
        extras = self.captured_inputs + self._captured_variables
        if any(isinstance(c, GraphTensor) for c in extras) or is_remote(self._device):
            return self._call_flat  # raises the slow path's error; or runs on a worker
        # "gpu": the staged GPU executable; "host": a CPU executable on host copies of GPU
        # values (placement.host_call); "cpu": the CPU executable.
        mode = "gpu" if self._on_gpu else "host" if self._device is not None or any(
            getattr(c, "_device", None) is not None or type(c) is DeviceTensor
            for c in extras) else "cpu"
        values = [c if isinstance(c, Variable) else convert_to_tensor(c)._value for c in extras]
        pack, run, device = _packer(self._outputs), self.executable, self._device
        if mode == "gpu":
            def call(args: tuple) -> Any:
                return pack([wrap_device(o) for o in run([a._value for a in args] + values)])
        elif mode == "host":
            def call(args: tuple) -> Any:
                return pack(placement.host_call(run, [a._value for a in args] + values, device))
        elif hasattr(run, "tensor_entry"):  # a compiled CPU executable: one generated entry
            only = self._outputs.index if type(self._outputs) is Slot else None
            entry = run.tensor_entry(len(self.graph.params) - len(values), values, wrap, only)
            call = entry if only is not None else lambda args: pack(entry(args))
        else:
            def call(args: tuple) -> Any:
                return pack([wrap(o) for o in run([a._value for a in args] + values)])
        self._fast = call
        return call

    def _emit_call(self, fg: FuncGraph, args: list) -> list:
        saved = random_state.snapshot(args) if STATE.get().tapes else []
        operands = [fg.ref_for(a) if isinstance(a, Variable) else fg.operand(a) for a in args]
        outs = fg.emit("call", operands, [r.type for r in self.graph.results],
                       {"name": self.name}, regions=[self.graph])
        tapes = STATE.get().tapes
        if tapes:
            self._record(tapes, [graph_tensor(o, fg) if not isinstance(a, Variable) else a
                                 for a, o in zip(args, operands)], outs, saved)
        return outs

    # ----------------------------------------------------------------- gradients
    def _record(self, tapes: tuple, args: list, outs: list, saved: list) -> None:
        """Records the call on ``tapes`` (one record; see ``function_grad``)."""
        function_grad.record_call(self, tapes, args, outs, saved)


def _packer(outputs: Any) -> Callable[[list], Any]:
    """A function building the structured result from the flat outputs of one call."""
    if outputs is None:
        return lambda outs: None
    if type(outputs) is Slot:
        i = outputs.index
        return lambda outs: outs[i]
    if type(outputs) in (tuple, list) and all(type(o) is Slot for o in outputs):
        kind, idx = type(outputs), [o.index for o in outputs]
        return lambda outs: kind([outs[i] for i in idx])
    return lambda outs: nest.map_structure(lambda s: None if s is None else outs[s.index],
                                           outputs)


def _has_tensor(template: Any) -> bool:
    return any(isinstance(x, (Tensor, np.ndarray, TensorSpec, Variable))
               for x in nest.flatten(template))


def _match(template: Any, actual: Any, flat: list, name: str) -> None:
    """Checks a call against the traced arguments, collecting tensors/variables into ``flat``."""
    if isinstance(template, (Tensor, np.ndarray, TensorSpec, Variable)):
        flat.append(actual)
        return
    if isinstance(template, dict):
        if not isinstance(actual, dict) or set(actual) != set(template):
            raise TypeError(f"{name}: expected keyword arguments {sorted(template)}, got "
                            f"{sorted(actual) if isinstance(actual, dict) else actual!r}.")
        for k in sorted_keys(template):
            _match(template[k], actual[k], flat, name)
        return
    if isinstance(template, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(template):
            raise TypeError(f"{name}: expected {len(template)} arguments like {template!r}, got "
                            f"{actual!r}.")
        for t, a in zip(template, actual):
            _match(t, a, flat, name)
        return
    if not (actual is template or actual == template):
        raise TypeError(f"{name}: this concrete function was traced with the Python value "
                        f"{template!r}; it cannot be called with {actual!r}. Call the "
                        f"tf.function to trace a new concrete function for it.")
