"""``function``: stages a Python function into graph functions, one per input signature.

``Function`` owns the trace cache (``CacheEntry`` per trace, keyed by ``trace_cache``),
TensorFlow's tracing contract (retracing and its warning, the variable-creation rules) and
method binding. A trace is made by ``tracing.trace_graph`` and called as a
``ConcreteFunction`` (``concrete_function.py``); input signatures are ``signature.py``.
"""
from __future__ import annotations

import collections
import functools
import inspect
import logging
import threading
import types
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from stagecraft import config
from stagecraft.backends import get_backend
from stagecraft.config import _RUN_FUNCTIONS_EAGERLY as _RUN_EAGERLY
from stagecraft.eager import placement
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.device_tensor import DeviceTensor
from stagecraft.eager.tensor import Tensor
from stagecraft.staging import tracing
from stagecraft.staging.concrete_function import ConcreteFunction
from stagecraft.staging.signature import apply_signature, check_signature
from stagecraft.staging.trace_cache import (ObjectKey, TensorKey, generalize, is_subtype,
                                            make_key, specificity)
from stagecraft.staging.tracing import sorted_keys
from stagecraft.state.variables import Variable
from stagecraft.ir.passes.prune import prune

logger = logging.getLogger("stagecraft")


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


class CacheEntry:
    """One trace in a ``Function``'s cache: its key, the concrete function and weak references
    to the objects the key names by identity (the entry is dead once one of them died).
    ``general`` marks keys with unknown dims or ranks, the only ones a lookup that misses the
    exact-key dict must consider (any other key matches only itself).

    >>> import stagecraft as tf
    >>> f = tf.function(lambda x: x + 1.0)
    >>> c = f.get_concrete_function(tf.TensorSpec([None], tf.float32))
    >>> entry = CacheEntry(("key",), c, [])
    >>> entry.alive(), entry.general
    (True, False)
    """
    __slots__ = ("key", "concrete", "refs", "general")
    key: Any  # the trace_cache key the trace was made for
    concrete: ConcreteFunction
    refs: list  # weak references to the objects the key names by identity
    general: bool

    def __init__(self, key: Any, concrete: ConcreteFunction, refs: list):
        self.key, self.concrete, self.refs = key, concrete, refs
        self.general = specificity(key) > 0

    def alive(self) -> bool:
        return all(r() is not None for r in self.refs)


class Lookup(NamedTuple):
    """What ``Function._lookup`` found for a call: the concrete function, the call's flat
    tensors and variables, whether it was traced now and (then) the argument that changed."""
    concrete: ConcreteFunction
    flat: list
    traced: bool
    changed: str | None


def _names_object(key: Any) -> bool:
    """Whether an argument's key names an object by identity (``ObjectKey``), at any depth."""
    if isinstance(key, ObjectKey):
        return True
    return isinstance(key, tuple) and any(_names_object(k) for k in key)


def _drop_when_dead(fn: "Function", entry: CacheEntry) -> None:
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
        self._input_signature = check_signature(input_signature, python_function)
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = jit_compile
        self._backend = backend
        self._entries: list[CacheEntry] = []
        self._by_key: dict[Any, CacheEntry] = {}  # exact-key index of _entries
        self._general: list[CacheEntry] = []  # the entries whose keys have unknown dims
        self._dead_entries = False  # set when an object a key names dies (prune _entries)
        self._dropped = 0  # traces dropped because an object their key named died
        self._extra_traces = 0  # first traces made again because they created variables
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
        # Methods bound to unhashable instances, by id (with a weak reference to the instance)
        self._identity_cache: dict[int, tuple] = {}
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
        return len(self._entries) + self._dropped + self._extra_traces

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
        cache = self._identity_cache
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

    def _lookup(self, args: tuple, kwargs: dict, run_inits: bool = True) -> Lookup:
        pos, kw = self._canonical(args, kwargs)
        signature = self._input_signature
        key_pos = pos
        if signature is not None:
            pos = apply_signature(signature, pos, self._name)
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
            return Lookup(exact.concrete, flat, False, None)
        with self._lock:
            entry = self._find(key)
            if entry is not None:
                return Lookup(entry.concrete, flat, False, None)
            relax = key if signature is not None else self._relaxed(key)
            changed = self._changed_argument(key)
            concrete = self._trace_new(pos, kw, key if relax is None else relax, refs, flat,
                                       relax, run_inits)
            return Lookup(concrete, flat, True, changed)

    def _traces_per_device(self) -> bool:
        """Whether calls on the GPU get their own traces. A subclass that cannot trace (a
        function loaded from a SavedModel overrides ``_trace_new``) serves every device from
        the traces it has: ``placement.host_call`` runs them on host copies of GPU arguments."""
        return type(self)._trace_new is Function._trace_new

    def _find(self, key: Any) -> CacheEntry | None:
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
            first = _trace(fn, tuple(pos), kw, self._name, "allow", relax_dims, self._backend,
                           device)
            self._created_variables = bool(first.created_variables)
            if first.created_variables:
                if first.pending_inits:
                    _run_initializers(first, flat)
                self._extra_traces += 1
                concrete = _trace(fn, tuple(pos), kw, self._name,
                                  "first_call_only_second_trace", relax_dims, self._backend,
                                  device)
            else:
                concrete = first
        else:
            policy = "first_call_only_second_trace" if self._created_variables else "never"
            concrete = _trace(fn, tuple(pos), kw, self._name, policy, relax_dims, self._backend,
                              device)
        if self._jit_compile:
            concrete._compile_mode = "sync"  # TF's jit_compile: compiled before it runs
        self._fast.clear()  # a new, more specific trace may now match some fast keys
        entry = CacheEntry(key, concrete, refs)
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
        # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
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


def _trace(fn: Callable, args: tuple, kwargs: dict, name: str, policy: str, relax: Any,
           backend: str | None, device: str | None) -> ConcreteFunction:
    # Through the module attribute, so that tests (tests/conftest.py) can wrap every trace.
    return ConcreteFunction.from_traced(
        tracing.trace_graph(fn, args, kwargs, name, policy, relax), name, backend, device)


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
            for k in sorted_keys(x):
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
