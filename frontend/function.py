"""``function``: stages a Python function into graph functions, one per input signature.

``Function`` owns the trace cache and TensorFlow's tracing contract (retracing, the
variable-creation rules, methods); ``ConcreteFunction`` is one traced graph plus what it
captured, callable eagerly (through a backend), from another trace (as a ``call`` equation) and
differentiable (one tape record whose backward is itself a staged function).
"""
from __future__ import annotations

import collections
import functools
import inspect
import logging
import threading
import types
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from stagecraft import config, nest
from stagecraft.config import _RUN_FUNCTIONS_EAGERLY as _RUN_EAGERLY
from stagecraft.backends import get_backend
from stagecraft.context import STATE
from stagecraft.convert import convert_to_tensor
from stagecraft.device_tensor import DeviceTensor, wrap_device
from stagecraft import placement, random_state
from stagecraft.func_graph import FuncGraph, building
from stagecraft.graph_tensor import GraphTensor, graph_tensor
from stagecraft.ir.graph import Graph, Value
from stagecraft.ir.types import TensorType
from stagecraft.tensor import Tensor, wrap
from stagecraft.tensor_spec import TensorSpec
from stagecraft.trace_cache import (ObjectKey, TensorKey, generalize, is_subtype, make_key,
                                    specificity, strengthen, weaken)
from stagecraft.variables import Variable

logger = logging.getLogger("stagecraft")


class _Slot:
    """A leaf of a traced structure: the position of a tensor (or variable) in the flat inputs
    or outputs."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"<slot {self.index}>"


def _packer(outputs: Any) -> Callable[[list], Any]:
    """A function building the structured result from the flat outputs of one call."""
    if outputs is None:
        return lambda outs: None
    if type(outputs) is _Slot:
        i = outputs.index
        return lambda outs: outs[i]
    if type(outputs) in (tuple, list) and all(type(o) is _Slot for o in outputs):
        kind, idx = type(outputs), [o.index for o in outputs]
        return lambda outs: kind([outs[i] for i in idx])
    return lambda outs: nest.map_structure(lambda s: None if s is None else outs[s.index],
                                           outputs)


def _fast_key(args: tuple) -> tuple | None:
    """(shape, dtype) per argument when every argument is an eager Tensor, else None; GPU
    tensors add their device, so that they never share an entry with CPU tensors."""
    if len(args) == 1 and type(args[0]) is Tensor:  # the commonest call: a flat key
        v = args[0]._value
        return v.shape, v.dtype
    key = []
    for a in args:
        t = type(a)
        if t is Tensor:
            v = a._value
            key.append((v.shape, v.dtype))
        elif t is DeviceTensor:
            v = a._value
            key.append((tuple(v.shape), v.dtype, placement.GPU_DEVICE))
        else:
            return None
    return tuple(key)


# --------------------------------------------------------------------- tracing

_KEEP = object()  # "no relaxation" (a relaxed dims of None means an unknown rank)


def _placeholders(structure: Any, fg: FuncGraph, hint: str, flat: list,
                  relax: Any = _KEEP) -> Any:
    """Replaces tensor leaves by placeholder GraphTensors (variables by reference inputs)."""
    if isinstance(structure, dict):
        # Placeholders in sorted-key order (the order of the cache key and of _flat_tensors),
        # the dict itself in the caller's order.
        built = {k: _placeholders(structure[k], fg, f"{hint}_{k}", flat, _sub(relax, k))
                 for k in _keys(structure)}
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


def _keys(d: dict) -> list:
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
        return _Slot(len(results) - 1)
    return nest.map_structure(leaf, outputs)


def trace(python_function: Callable, args: tuple, kwargs: dict, name: str,
          variable_policy: str = "allow", relax: Any = None,
          backend: str | None = None, device: str | None = None) -> "ConcreteFunction":
    """Traces ``python_function`` on placeholders for the tensors in ``args``/``kwargs``;
    ``device`` (None: the CPU) is where calls of the result put their outputs."""
    fg = FuncGraph(name, variable_policy=variable_policy)
    fg.enclosing = STATE.get().graph
    flat_inputs: list = []
    names = _param_names(python_function, len(args))
    sym_args = [_placeholders(a, fg, names[i], flat_inputs,
                              _KEEP if relax is None else relax[0][i])
                for i, a in enumerate(args)]
    sym_kwargs = {k: _placeholders(kwargs[k], fg, k, flat_inputs,
                                   _KEEP if relax is None else relax[1][k])
                  for k in _keys(kwargs)}
    from stagecraft.converters.operators.trace_report import recording
    with recording() as report, building(fg):  # what AutoGraph's statements did in this trace
        outputs = python_function(*sym_args, **sym_kwargs)
        results: list = []
        structure = _output_structure(outputs, fg, results)
    graph = fg.build(results)
    concrete = ConcreteFunction(graph, fg, structure, flat_inputs, (args, kwargs), name, backend,
                                device)
    concrete._arg_names = names
    concrete._trace_report = report
    return concrete


def _param_names(fn: Callable, n: int) -> list[str]:
    """Names for the first ``n`` positional arguments: the Python parameter names."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "arg")
    return [names[i] if i < len(names) else f"{var}_{i}" for i in range(n)]


# ---------------------------------------------------------------- ConcreteFunction

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
                 device: str | None = None):
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
        self._executable = None
        self._backward = None
        self._lock = threading.Lock()
        self._fast: Callable | None = None  # the hot path's closure (_eager_caller)
        # The device of this trace (None: the CPU). A GPU trace compiles its graph with the
        # "cuda" backend (staged GPU kernels, device arrays in and out) unless the function
        # asked for the reference interpreter, which runs on host copies (placement.host_call);
        # backend="cuda" runs every call on the GPU.
        self._device = device
        self._on_gpu = backend == "cuda" or device is not None and backend != "reference"

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
                    self._executable = get_backend(
                        "cuda" if self._on_gpu else self._backend_name).compile(
                        self.optimized_graph)
        return self._executable

    @property
    def optimized_graph(self) -> Graph:
        """``self.graph`` after ``stagecraft.ir.passes.optimize``: what the backend compiles
        (``self.graph`` itself stays as traced, for printing and for calls from other graphs)."""
        graph = getattr(self, "_optimized_graph", None)
        if graph is None:
            from stagecraft.ir.passes.manager import optimize
            graph = self._optimized_graph = optimize(self.graph)
        return graph

    def pretty_printed_signature(self) -> str:
        return str(self.graph).splitlines()[0]

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.pretty_printed_signature()}>"

    # --------------------------------------------------------------------- calls
    _arg_names: Sequence[str] = ()  # Python names of the traced positional arguments

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
            if self._on_gpu:
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
        if any(isinstance(c, GraphTensor) for c in extras):
            return self._call_flat  # raises the slow path's error
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
            only = self._outputs.index if type(self._outputs) is _Slot else None
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
        """Records the call; its gradient replays the graph with the random sites of ``saved``
        (``random_state.snapshot``) as they were before the call."""
        def backward(gouts: list) -> list:
            return self._backward_call(random_state.replay_inputs(args, saved), outs, gouts)
        for tape in tapes:
            tape.record_composite(args, outs, backward)

    def _backward_call(self, args: list, outs: list, gouts: list) -> list:
        """Gradients for ``args`` given output gradients, via the staged backward function."""
        from stagecraft.array_ops import zeros_like
        backward, connected = self._backward_function(args)
        float_outs = [i for i, o in enumerate(outs) if o.dtype.is_floating]
        seeds = [zeros_like(outs[i]) if gouts[i] is None else gouts[i] for i in float_outs]
        tensors = [a for a in args if not isinstance(a, Variable)]
        variables = [a for a in args if isinstance(a, Variable)]
        grads = backward(tensors, variables, seeds) if connected else []
        it = iter(grads)
        return [next(it) if c else None for c in connected]

    def _backward_function(self, args: list) -> tuple:
        """The backward graph function (traced once) and which inputs receive a gradient."""
        if self._backward is None:
            graph = self.graph
            mask: list = []

            def backward(tensors: list, variables: list, seeds: list) -> list:
                from stagecraft.tape import GradientTape
                ordered, ti, vi = [], iter(tensors), iter(variables)
                for p in graph.params:
                    ordered.append(next(vi) if p.ref else next(ti))
                with GradientTape(watch_accessed_variables=False) as tape:
                    tape.watch([x for x in ordered if x.dtype.is_floating])
                    results = [r for r in _inline(graph, ordered)]
                targets = [r for r in results if r.dtype.is_floating]
                grads = tape.gradient(targets, ordered, output_gradients=seeds)
                mask[:] = [g is not None for g in grads]
                return [g for g in grads if g is not None]

            tensors = [a for a in args if not isinstance(a, Variable)]
            variables = [a for a in args if isinstance(a, Variable)]
            seeds = [o for o in self.outputs if o.dtype.is_floating]
            concrete = trace(backward, (_specs(tensors), variables, _specs(seeds)), {},
                             f"{self.name}_backward", backend=self._backend_name,
                             device=self._device)
            self._backward = (concrete, list(mask))
        concrete, mask = self._backward
        return (lambda t, v, s: nest.flatten(concrete._call_flat(list(t) + list(v) + list(s)))), \
            mask


def _inline(graph: Graph, args: list) -> list:
    from stagecraft.replay import inline_graph
    return inline_graph(graph, args, effects=False)


def _specs(tensors: list) -> list:
    return [TensorSpec(t.shape, t.dtype) for t in tensors]


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
        for k in _keys(template):
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


# ------------------------------------------------------------------------ Function

class _RetraceMonitor:
    """TensorFlow's retracing warning: per code object, when 5 of the last 10 calls traced
    (at most 2 warnings per code object)."""

    def __init__(self) -> None:
        self.history: dict[Any, collections.deque] = {}
        self.warnings: dict[Any, int] = collections.Counter()

    def called(self, code: Any, traced: bool, fn: Any, changed: str | None) -> collections.deque:
        """Records a call; returns the code's history (the caller appends later calls that
        need no trace to it directly)."""
        h = self.history.get(code)
        if h is None:
            h = self.history.setdefault(code, collections.deque(maxlen=10))
        h.append(traced)
        if not traced:
            return h
        n = sum(h)
        if traced and n >= 5 and self.warnings[code] < 2:
            self.warnings[code] += 1
            because = f" The argument that changed in the latest call: '{changed}'." if changed \
                else ""
            logger.warning(
                "%d out of the last %d calls to %s triggered tf.function retracing. Tracing is "
                "expensive and the excessive number of tracings could be due to (1) creating "
                "@tf.function repeatedly in a loop, (2) passing tensors with different shapes, "
                "(3) passing Python objects instead of tensors.%s For (1), please define your "
                "@tf.function outside of the loop. For (2), @tf.function has "
                "reduce_retracing=True option that can avoid unnecessary retracing. For (3), "
                "please refer to the tf.function guide.", n, len(h), repr(fn), because)
        return h


_MONITOR = _RetraceMonitor()


class _Entry:
    """One trace in a ``Function``'s cache: its key, the concrete function and weak references
    to the objects the key names by identity (the entry is dead once one of them died).
    ``general`` marks keys with unknown dims or ranks, the only ones a lookup that misses the
    exact-key dict must consider (any other key matches only itself)."""
    __slots__ = ("key", "concrete", "refs", "general")

    def __init__(self, key: Any, concrete: ConcreteFunction, refs: list):
        self.key, self.concrete, self.refs = key, concrete, refs
        self.general = specificity(key) > 0

    def alive(self) -> bool:
        return all(r() is not None for r in self.refs)


def _names_object(key: Any) -> bool:
    """Whether an argument's key names an object by identity (``ObjectKey``), at any depth."""
    if isinstance(key, ObjectKey):
        return True
    return isinstance(key, tuple) and any(_names_object(k) for k in key)


def _drop_when_dead(fn: "Function", entry: _Entry) -> None:
    """Makes the death of any object ``entry``'s key names drop the entry from ``fn``'s exact
    index at once (and from ``fn._entries`` on the next lookup), without ``fn`` or ``entry``
    being kept alive by the callback."""
    owner = weakref.ref(fn)
    key = entry.key

    def died(_: Any) -> None:
        f = owner()
        if f is None:
            return
        e = f._by_key.get(key)
        if e is not None and not e.alive():
            f._by_key.pop(key, None)
        f._dead_entries = True

    entry.refs = [weakref.ref(obj, died) for obj in (r() for r in entry.refs)
                  if obj is not None] if entry.alive() else entry.refs


class Function:
    """A Python function staged into graph functions, one per input signature (see
    ``function``)."""

    def __init__(self, python_function: Callable, name: str | None = None,
                 input_signature: Sequence[Any] | None = None, autograph: bool = True,
                 reduce_retracing: bool = False, jit_compile: bool | None = None,
                 backend: str | None = None):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", "function")
        self._input_signature = _check_signature(input_signature, python_function)
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = jit_compile
        self._backend = backend
        self._entries: list[_Entry] = []
        self._by_key: dict[Any, _Entry] = {}  # exact-key index of _entries
        self._general: list[_Entry] = []  # the entries whose keys have unknown dims
        self._dead_entries = False  # set when an object a key names dies (prune _entries)
        self._dropped = 0  # traces dropped because an object their key named died
        self._last_key: Any = None  # the key of the latest trace, for the retracing warning
        self._indexed = 0  # len(_entries) that _by_key/_general index (entries appended directly
        # by a subclass, as RestoredFunction does, are indexed on the next lookup)
        # (shape, dtype) per argument -> concrete function, for calls whose arguments are all
        # eager tensors passed positionally: skips key building, binding and flattening.
        self._fast: dict[tuple, Callable] = {}
        # This function's entry in the retracing monitor (a hot-path call appends False).
        self._history: collections.deque = collections.deque(maxlen=10)
        try:
            self._signature: inspect.Signature | None = inspect.signature(python_function)
            params = list(self._signature.parameters.values())
            simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            self._n_positional = len(params) if simple else -1
        except (TypeError, ValueError):
            self._signature, self._n_positional = None, -1
        self._lock = threading.RLock()
        self._created_variables: bool | None = None  # None until the first trace
        self._descriptor_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._last_trace_report: Any = None  # AutoGraph's decisions in the last trace
        self._method_of: "Function | None" = None  # the class's Function, for a method's
        functools.update_wrapper(self, python_function)

    @property
    def python_function(self) -> Callable:
        return self._python_function

    @property
    def input_signature(self) -> Any:
        return self._input_signature

    @property
    def name(self) -> str:
        return self._name

    @property
    def function_spec(self) -> inspect.Signature:
        return inspect.signature(self._python_function)

    def experimental_get_tracing_count(self) -> int:
        """How many graph functions this Function has traced."""
        return len(self._entries) + self._dropped + getattr(self, "_extra_traces", 0)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        try:
            return self._descriptor_cache[instance]
        except KeyError:
            pass
        except TypeError:  # an unhashable instance (e.g. a dataclass): keyed by identity
            return self._get_unhashable(instance, owner)
        return self._make_method(instance, owner, cache=True)

    def _get_unhashable(self, instance: Any, owner: Any) -> "Function":
        cache = self.__dict__.setdefault("_identity_cache", {})
        entry = cache.get(id(instance))
        if entry is not None and entry[0]() is instance:
            return entry[1]
        method = self._make_method(instance, owner, cache=False)
        key = id(instance)
        cache[key] = (weakref.ref(instance, lambda _: cache.pop(key, None)), method)
        return method

    def _make_method(self, instance: Any, owner: Any, cache: bool) -> "Function":
        ref = weakref.ref(instance)
        fn = self._python_function

        @functools.wraps(fn)
        def bound(*args: Any, **kwargs: Any) -> Any:
            obj = ref()
            if obj is None:  # the per-instance Function holds its instance weakly
                raise ReferenceError(
                    f"{self._name}: the instance this @function method was bound to no longer "
                    f"exists. Keep a reference to the object while calling its method (e.g. "
                    f"`m = Model(); m.{self._name}(x)` rather than `Model().{self._name}(x)`).")
            return fn(obj, *args, **kwargs)

        bound.__signature__ = inspect.signature(fn.__get__(instance, owner))
        bound.__sc_method__ = (fn, ref)  # what AutoGraph converts: the method itself
        method = Function(bound, self._name, self._input_signature, self._autograph,
                          self._reduce_retracing, self._jit_compile, self._backend)
        method._method_of = self
        if cache:
            self._descriptor_cache[instance] = method
        return method

    def __repr__(self) -> str:
        return f"<stagecraft.Function {self._name}>"

    # ----------------------------------------------------------------- calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        if fast and not kwargs:
            # The hot path: eager, no tape, no device scope, every argument an eager tensor
            # whose (shape, dtype) was seen before.
            state = STATE.get()
            if state.graph is None and not state.tapes and state.device is None and \
                    not _RUN_EAGERLY[0]:
                call = fast.get(_fast_key(args))
                if call is not None:
                    self._history.append(False)
                    return call(args)
        if config.functions_run_eagerly():
            return self._python_function(*args, **kwargs)
        state = STATE.get()
        eager_top = state.graph is None
        fast = eager_top and not kwargs and len(args) == self._n_positional
        if fast and self._fast:
            key = _fast_key(args)
            if key is not None and state.device is not None:  # under a device scope
                key = (key, placement.call_device(args))
            call = self._fast.get(key) if key is not None else None
            if call is not None and not state.tapes:
                self._history.append(False)
                return call(args)
        concrete, flat, traced, changed = self._lookup(args, kwargs)
        if eager_top:
            self._history = _MONITOR.called(self._code, traced, self._python_function, changed)
            if fast:
                key = _fast_key(args)
                if key is not None:
                    if state.device is not None:
                        key = (key, placement.call_device(args))
                    self._fast[key] = concrete._eager_caller()
        return concrete._call_flat(flat)

    @property
    def _code(self) -> Any:
        """What the retracing monitor counts calls by."""
        return getattr(self._python_function, "__code__", self._python_function)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The graph function for these arguments (tensors or TensorSpecs), tracing it if it
        is not cached yet; it is not run."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        concrete, _, _, _ = self._lookup(args, kwargs, run_inits=False)
        return concrete

    def _canonical(self, args: tuple, kwargs: dict) -> tuple[list, dict]:
        """Arguments bound to the Python signature (defaults applied): positional, keyword."""
        if not kwargs and len(args) == self._n_positional:
            return list(args), {}  # the common call: every parameter given positionally
        try:
            sig = self._signature if self._signature is not None else \
                inspect.signature(self._python_function)
            ba = sig.bind(*args, **kwargs)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{self._name}(): {e}") from None
        ba.apply_defaults()
        pos, kw = [], {}
        for name, p in sig.parameters.items():
            if name not in ba.arguments:
                continue
            v = ba.arguments[name]
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                pos.append(v)
            elif p.kind == p.VAR_POSITIONAL:
                pos.extend(v)
            elif p.kind == p.KEYWORD_ONLY:
                kw[name] = v
            else:
                kw.update(v)
        return pos, kw

    def _lookup(self, args: tuple, kwargs: dict, run_inits: bool = True) -> tuple:
        pos, kw = self._canonical(args, kwargs)
        signature = self._input_signature
        key_pos = pos
        if signature is not None:
            pos = _apply_signature(signature, pos, self._name)
            key_pos = list(signature) + pos[len(signature):]
        aliases: dict = {}
        refs: list = []
        key = (make_key(key_pos, aliases, refs), make_key(kw, aliases, refs))
        flat = _flat_tensors((pos, kw))
        device = placement.call_device(flat)
        if device is not None and self._traces_per_device():
            key = key + (device,)  # traced separately per device; CPU keys stay (pos, kw)
        exact = self._by_key.get(key)
        if exact is not None and exact.alive():
            return exact.concrete, flat, False, None
        with self._lock:
            entry = self._find(key)
            if entry is not None:
                return entry.concrete, flat, False, None
            relax = key if signature is not None else self._relaxed(key)
            changed = self._changed_argument(key)
            concrete = self._trace_new(pos, kw, key if relax is None else relax, refs, flat,
                                       relax, run_inits)
            return concrete, flat, True, changed

    def _traces_per_device(self) -> bool:
        """Whether calls on the GPU get their own traces. A subclass that cannot trace (a
        function loaded from a SavedModel overrides ``_trace_new``) serves every device from
        the traces it has: ``placement.host_call`` runs them on host copies of GPU arguments."""
        return type(self)._trace_new is Function._trace_new

    def _find(self, key: Any) -> _Entry | None:
        """The entry for ``key``: its exact one (a dict hit), else the most specific live
        entry with unknown dims that ``key`` is a subtype of (only those are scanned)."""
        if self._dead_entries or self._indexed != len(self._entries):
            self._dead_entries = False  # some key object died, or entries were added directly
            live = [e for e in self._entries if e.alive()]
            self._dropped += len(self._entries) - len(live)
            self._entries = live
            self._by_key = {e.key: e for e in self._entries}
            self._general = [e for e in self._entries if e.general]
            self._indexed = len(self._entries)
        exact = self._by_key.get(key)
        if exact is not None and exact.alive():
            return exact
        best = None
        for e in self._general:
            if e.alive() and is_subtype(key, e.key) and \
                    (best is None or specificity(e.key) < specificity(best.key)):
                best = e
        return best

    def _relaxed(self, key: Any) -> Any:
        if not self._reduce_retracing or self._input_signature is not None:
            return None
        for e in self._entries:
            g = generalize(key, e.key)
            if g is not None and g != key:
                return g
        return None

    def _changed_argument(self, key: Any) -> str | None:
        last = self._last_key  # (kept apart from _entries: that trace may have been dropped)
        if last is None:
            return None
        try:
            names = list(inspect.signature(self._python_function).parameters)
        except (TypeError, ValueError):
            names = []
        for i, (a, b) in enumerate(zip(key[0][1], last[0][1])):
            if a != b:
                return names[i] if i < len(names) else f"args[{i}]"
        for k, _ in key[1][1]:
            if dict(key[1][1]).get(k) != dict(last[1][1]).get(k):
                return k
        # Equal keys: an object keyed by identity died and a new one took its address.
        for i, a in enumerate(key[0][1]):
            if _names_object(a):
                return names[i] if i < len(names) else f"args[{i}]"
        return next((k for k, a in key[1][1] if _names_object(a)), None)

    def _trace_new(self, pos: list, kw: dict, key: Any, refs: list, flat: list, relax: Any,
                   run_inits: bool) -> ConcreteFunction:
        relax_dims = None if relax is None else _dims_of(relax)
        device = key[2] if len(key) == 3 else None
        fn = self._converted()
        if self._created_variables is None:
            first = trace(fn, tuple(pos), kw, self._name, "allow", relax_dims, self._backend,
                          device)
            self._created_variables = bool(first.created_variables)
            if first.created_variables:
                if first.pending_inits:
                    _run_initializers(first, flat)
                self._extra_traces = getattr(self, "_extra_traces", 0) + 1
                concrete = trace(fn, tuple(pos), kw, self._name,
                                 "first_call_only_second_trace", relax_dims, self._backend,
                                 device)
            else:
                concrete = first
        else:
            policy = "first_call_only_second_trace" if self._created_variables else "never"
            concrete = trace(fn, tuple(pos), kw, self._name, policy, relax_dims, self._backend,
                             device)
        self._fast.clear()  # a new, more specific trace may now match some fast keys
        entry = _Entry(key, concrete, refs)
        _drop_when_dead(self, entry)
        self._last_key = key  # keys hold ids and values, never the objects
        self._entries.append(entry)
        self._by_key[key] = entry
        if entry.general:
            self._general.append(entry)
        self._indexed += 1
        # show_converted(f, trace=True) reports the last trace (on the class's Function too
        # when this is a method's per-instance Function).
        self._last_trace_report = concrete._trace_report
        if self._method_of is not None:
            self._method_of._last_trace_report = concrete._trace_report
        return concrete

    def _converted(self) -> Callable:
        """The function to trace: with autograph=True, its AutoGraph conversion (an error
        when it cannot be converted, never a silent fallback)."""
        fn = self._python_function
        if not self._autograph or getattr(fn, "__sc_do_not_convert__", False):
            return fn
        from stagecraft.converters.api import convert
        method = getattr(fn, "__sc_method__", None)
        if method is not None:
            target, ref = method
            converted = convert(target)

            @functools.wraps(fn)
            def call(*args: Any, **kwargs: Any) -> Any:
                obj = ref()
                if obj is None:
                    return fn(*args, **kwargs)  # raises the clear dead-instance error
                return converted(obj, *args, **kwargs)
            return call
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            return types.MethodType(convert(fn.__func__), fn.__self__)  # tf.function(obj.m)
        if not isinstance(fn, types.FunctionType):
            return fn  # a callable object or builtin: traced as is
        return convert(fn)


def _dims_of(key: Any) -> Any:
    """Placeholder shapes from a (generalized) key, in the structure _placeholders walks."""
    if isinstance(key, TensorKey):
        return key.dims
    if isinstance(key, tuple) and key and key[0] in ("list", "tuple"):
        return [_dims_of(k) for k in key[1]]
    if isinstance(key, tuple) and key and key[0] == "dict":
        return {k: _dims_of(v) for k, v in key[1]}
    if isinstance(key, tuple) and key and key[0] == "namedtuple":
        return [_dims_of(k) for k in key[3]]
    if isinstance(key, tuple) and len(key) in (2, 3) and not isinstance(key[0], str):
        return (_dims_of(key[0]), _dims_of(key[1]))  # (positional, keyword[, device])
    return None


def _flat_tensors(structure: Any) -> list:
    out: list = []

    def visit(x: Any) -> None:
        if isinstance(x, dict):
            for k in _keys(x):
                visit(x[k])
        elif isinstance(x, (list, tuple)):
            for v in x:
                visit(v)
        elif isinstance(x, (Tensor, Variable)):
            out.append(x)
        elif isinstance(x, np.ndarray):
            out.append(convert_to_tensor(x))
    visit(structure)
    return out


def _run_initializers(concrete: ConcreteFunction, flat: list) -> None:
    """Evaluates variable initial values that depend on the arguments, with this call's
    arguments (TensorFlow's 'initializer not constant' case)."""
    from stagecraft.ir.passes.prune import prune
    fg = concrete._func_graph
    results = [fg.operand(t) for _, t in concrete.pending_inits]
    graph = prune(fg.build(results))
    args = [a if isinstance(a, Variable) else a._value for a in
            list(flat) + concrete.captured_inputs + concrete._captured_variables]
    if concrete._on_gpu:   # computed on the GPU; CPU variables get host copies (_store)
        values = get_backend("cuda").compile(graph)(args)
        for (var, _), value in zip(concrete.pending_inits, values):
            var._store(value if value.dtype == var.dtype.np else
                       np.asarray(placement.to_host_array(value), dtype=var.dtype.np))
        return
    values = placement.host_call(get_backend(concrete._backend_name).compile(graph), args, None)
    for (var, _), value in zip(concrete.pending_inits, values):
        var._store(np.array(value._value, dtype=var.dtype.np))


def _check_signature(signature: Any, fn: Callable) -> Any:
    if signature is None:
        return None
    if not isinstance(signature, (list, tuple)):
        raise TypeError(f"input_signature must be a list or tuple of tf.TensorSpec, got "
                        f"{type(signature).__name__}.")
    for s in nest.flatten(list(signature)):
        if not isinstance(s, TensorSpec):
            raise TypeError(f"input_signature must contain only tf.TensorSpec objects, got "
                            f"{s!r}.")
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return tuple(signature)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(f"{getattr(fn, '__name__', fn)}: a function with **kwargs cannot have "
                        f"an input_signature.")
    return tuple(signature)


def _apply_signature(signature: tuple, pos: list, name: str) -> list:
    """Converts the leading arguments to the signature's dtypes, checking shapes (TypeError)."""
    if len(pos) < len(signature):
        raise TypeError(f"{name}(): expected {len(signature)} arguments for the input_signature "
                        f"{list(signature)}, got {len(pos)}.")
    out = list(pos)
    for i, spec in enumerate(signature):
        out[i] = _conform(spec, pos[i], name, i)
    return out


def _conform(spec: Any, value: Any, name: str, i: int) -> Any:
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise TypeError(f"Binding inputs to tf.function {name} failed: argument {i} "
                            f"{value!r} does not match the nested signature {spec!r}.")
        return type(spec)(_conform(s, v, name, i) for s, v in zip(spec, value))
    if isinstance(value, TensorSpec):  # get_concrete_function(TensorSpec(...))
        if value.dtype != spec.dtype or not _shape_within(value.shape, spec.shape):
            raise TypeError(f"Binding inputs to tf.function {name} failed due to: Can not cast "
                            f"{value} to {spec} (argument {i}).")
        return TensorSpec(spec.shape, spec.dtype, value.name or spec.name)
    if isinstance(value, Tensor):
        t = value
    else:
        try:
            t = convert_to_tensor(value, spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Binding inputs to tf.function {name} failed: argument {i}: {e}") \
                from None
    if not spec.is_compatible_with(t):
        raise TypeError(f"Binding inputs to tf.function {name} failed due to: Can not cast "
                        f"{TensorSpec(t.shape, t.dtype)} to {spec} (argument {i}). Pass a tensor "
                        f"of dtype {spec.dtype.name} and shape {spec.shape}.")
    return t


def _shape_within(shape: Any, general: Any) -> bool:
    """True when every tensor of ``shape`` also has shape ``general``."""
    from stagecraft.trace_cache import _dims_sub
    return _dims_sub(shape.dims_tuple, general.dims_tuple)


def function(func: Callable | None = None, input_signature: Sequence[Any] | None = None,
             autograph: bool = True, jit_compile: bool | None = None,
             reduce_retracing: bool = False, experimental_implements: Any = None,
             experimental_autograph_options: Any = None, experimental_attributes: Any = None,
             experimental_relax_shapes: bool | None = None,
             backend: str | None = None) -> Any:
    """Stages ``func``: each call with a new input signature traces it into a graph function,
    which later calls with the same signature run instead of the Python code.

    Behaves like the plain Python function, except: Python side effects (print, list appends)
    happen only while tracing; tensors are symbolic inside (no ``.numpy()``, no ``bool()``);
    Python-valued arguments are baked into the trace (each new value retraces); variables may
    only be created on the first call.

    Devices: a call under a GPU ``device`` scope, or with GPU tensors, gets its own trace (the
    device is part of the trace-cache key), compiled by the ``"cuda"`` backend: one GPU kernel
    per fused elementwise group, the other ops on the GPU library, ``cond``/``while`` driven
    from the host (one element copied per test); inputs, outputs and variables stay on the
    device. ``backend="reference"`` keeps the interpreter there too (on host copies);
    ``backend="cuda"`` stages every call on the GPU, whatever the scope.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return x * x + 1.0
    >>> float(f(tf.constant(3.0))), float(f(tf.constant(4.0))), f.experimental_get_tracing_count()
    (10.0, 17.0, 1)
    """
    if experimental_relax_shapes is not None:
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    def decorate(fn: Callable) -> Function:
        return Function(fn, None, input_signature, autograph, reduce_retracing, jit_compile,
                        backend)

    return decorate if func is None else decorate(func)
