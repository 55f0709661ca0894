"""Concrete functions in a SavedModel: written as serialized IR plus the trace-cache key, the
argument template and the output structure; read back as ``ConcreteFunction``s that run on the
default backend, grouped under a ``RestoredFunction`` that dispatches between them with the
trace cache's own rules (and never traces).
"""
from __future__ import annotations

import collections
import inspect
import json
from typing import Any

import numpy as np

from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.staging.func_graph import FuncGraph
from stagecraft.staging.concrete_function import ConcreteFunction
from stagecraft.staging.function import CacheEntry, Function
from stagecraft.staging.tracing import Slot
from stagecraft.ir import dtypes as dt
from stagecraft.ir import serialize
from stagecraft.ir.errors import VerificationError
from stagecraft.ir.graph import Graph, walk_eqns
from stagecraft.ir.shapes import is_compatible
from stagecraft.ir.verify import verify
from stagecraft.state.saved_model.format import CorruptSavedModelError, decode_literal, encode_literal
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.staging.trace_cache import TensorKey, VariableKey
from stagecraft.state.random_state import RandomState, site_state
from stagecraft.state.variables import Variable
from stagecraft.eager import nest


class UnsaveableError(ValueError):
    """Raised while encoding a function that a SavedModel cannot hold (stagecraft-only)."""


# ------------------------------------------------------------ trace-cache keys

def _shape(dims: Any) -> Any:
    return None if dims is None else list(dims)


def _dims(shape: Any) -> Any:
    return None if shape is None else tuple(shape)


class VariableSpec(TensorSpec):
    """The argument template of a variable passed to a saved function: the call passes a
    variable of this shape and dtype (by reference)."""

    __slots__ = ("trainable",)

    def __init__(self, shape: Any, dtype: Any, trainable: bool = True):
        super().__init__(shape, dtype)
        self.trainable = trainable

    def __repr__(self) -> str:
        return (f"VariableSpec(shape={self.shape}, dtype=stagecraft.{self.dtype.name}, "
                f"trainable={self.trainable})")


def encode_key(key: Any, arg: Any = None) -> Any:
    """One trace-cache key (``trace_cache.make_key``) as JSON data; ``arg`` is the matching
    traced argument, from which TensorSpec names are kept (they name keyword inputs).

    >>> import stagecraft as tf
    >>> from stagecraft.staging.trace_cache import make_key
    >>> key = make_key([tf.constant([1.0]), 2, {"training": True}], {}, [])
    >>> data = encode_key(key)
    >>> data["list"][1]
    {'literal': 2, 'type': 'int'}
    >>> decode_key(data)[0] == key
    True
    """
    if isinstance(key, TensorKey):
        name = arg.name if isinstance(arg, TensorSpec) else None
        return {"tensor": {"shape": _shape(key.dims), "dtype": key.dtype.short, "name": name}}
    if isinstance(key, VariableKey):
        return {"variable": {"shape": _shape(key.dims), "dtype": key.dtype.short,
                             "trainable": key.trainable, "alias": key.alias}}
    if isinstance(key, tuple) and key and key[0] == "literal":
        try:
            return {"literal": encode_literal(key[2]), "type": key[1]}
        except TypeError as e:
            raise UnsaveableError(str(e)) from None
    if isinstance(key, tuple) and key and key[0] in ("list", "tuple"):
        args = list(arg) if isinstance(arg, (list, tuple)) else [None] * len(key[1])
        return {key[0]: [encode_key(k, a) for k, a in zip(key[1], args)]}
    if isinstance(key, tuple) and key and key[0] == "namedtuple":
        args = list(arg) if isinstance(arg, tuple) else [None] * len(key[3])
        return {"namedtuple": key[1], "fields": list(key[2]),
                "items": [encode_key(k, a) for k, a in zip(key[3], args)]}
    if isinstance(key, tuple) and key and key[0] == "dict":
        d = arg if isinstance(arg, dict) else {}
        try:
            return {"dict": [[encode_literal(k), encode_key(v, d.get(k))] for k, v in key[1]]}
        except TypeError as e:
            raise UnsaveableError(f"a dict argument has a key that cannot be saved: {e}") \
                from None
    what = getattr(key, "type_name", None) or (key[0] if isinstance(key, tuple) else key)
    raise UnsaveableError(f"an argument is a Python object ({what}) that the trace cache "
                          f"keys by identity or by a custom TraceType; it cannot exist in "
                          f"another process. Pass tensors or Python constants instead.")


def decode_key(data: Any) -> tuple[Any, Any]:
    """(trace-cache key, argument template) from ``encode_key``'s data. The template holds
    TensorSpecs for tensors (and variables) and the constants themselves, which is what a
    ``ConcreteFunction`` checks calls against."""
    if not isinstance(data, dict):
        raise CorruptSavedModelError(f"bad argument entry {data!r}")
    if "tensor" in data:
        t = data["tensor"]
        dtype = dt.as_dtype(t["dtype"])
        return TensorKey(_dims(t["shape"]), dtype), TensorSpec(t["shape"], dtype, t["name"])
    if "variable" in data:
        v = data["variable"]
        dtype = dt.as_dtype(v["dtype"])
        return (VariableKey(_dims(v["shape"]), dtype, v["trainable"], v["alias"]),
                VariableSpec(v["shape"], dtype, trainable=v["trainable"]))
    if "literal" in data:
        value = decode_literal(data["literal"])
        return ("literal", data["type"], value), value
    for kind in ("list", "tuple"):
        if kind in data:
            pairs = [decode_key(d) for d in data[kind]]
            template = [t for _, t in pairs]
            return (kind, tuple(k for k, _ in pairs)), \
                template if kind == "list" else tuple(template)
    if "namedtuple" in data:
        pairs = [decode_key(d) for d in data["items"]]
        cls = collections.namedtuple(data["namedtuple"], data["fields"])
        return (("namedtuple", data["namedtuple"], tuple(data["fields"]),
                 tuple(k for k, _ in pairs)), cls(*[t for _, t in pairs]))
    if "dict" in data:
        items = [(decode_literal(k), decode_key(v)) for k, v in data["dict"]]
        return ("dict", tuple((k, kt[0]) for k, kt in items)), {k: kt[1] for k, kt in items}
    raise CorruptSavedModelError(f"unknown argument encoding {data!r}")


# ----------------------------------------------------------- nested structures

def encode_structure(structure: Any) -> Any:
    """An output structure (``Slot`` leaves, None, lists, tuples, namedtuples, dicts)."""
    if structure is None:
        return None
    if isinstance(structure, Slot):
        return {"slot": structure.index}
    if isinstance(structure, dict):
        try:
            return {"dict": [[encode_literal(k), encode_structure(v)]
                             for k, v in structure.items()]}
        except TypeError as e:
            raise UnsaveableError(f"a returned dict has a key that cannot be saved: {e}") \
                from None
    if isinstance(structure, tuple) and hasattr(type(structure), "_fields"):
        return {"namedtuple": type(structure).__name__, "fields": list(structure._fields),
                "items": [encode_structure(v) for v in structure]}
    if isinstance(structure, (list, tuple)):
        return {type(structure).__name__ if type(structure) in (list, tuple) else "list":
                [encode_structure(v) for v in structure]}
    raise UnsaveableError(f"the function returns a {type(structure).__name__}, which a "
                          f"SavedModel cannot describe.")


def decode_structure(data: Any) -> Any:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise CorruptSavedModelError(f"bad output structure entry {data!r}")
    if "slot" in data:
        return Slot(int(data["slot"]))
    if "dict" in data:
        return {decode_literal(k): decode_structure(v) for k, v in data["dict"]}
    if "namedtuple" in data:
        cls = collections.namedtuple(data["namedtuple"], data["fields"])
        return cls(*[decode_structure(v) for v in data["items"]])
    if "list" in data:
        return [decode_structure(v) for v in data["list"]]
    if "tuple" in data:
        return tuple(decode_structure(v) for v in data["tuple"])
    raise CorruptSavedModelError(f"unknown output structure encoding {data!r}")


def encode_specs(signature: Any) -> Any:
    """An ``input_signature`` (nested lists/tuples of TensorSpecs)."""
    if isinstance(signature, TensorSpec):
        return {"spec": {"shape": _shape(signature.shape.dims_tuple),
                         "dtype": signature.dtype.short, "name": signature.name}}
    return {type(signature).__name__ if type(signature) in (list, tuple) else "list":
            [encode_specs(s) for s in signature]}


def decode_specs(data: Any) -> Any:
    if "spec" in data:
        s = data["spec"]
        return TensorSpec(s["shape"], dt.as_dtype(s["dtype"]), s["name"])
    if "list" in data:
        return [decode_specs(s) for s in data["list"]]
    if "tuple" in data:
        return tuple(decode_specs(s) for s in data["tuple"])
    raise CorruptSavedModelError(f"unknown input_signature encoding {data!r}")


class _DefaultNotSaved:
    """Stands for a parameter default that was not a Python constant (so not saved)."""

    def __repr__(self) -> str:
        return "<default not saved>"


def encode_python_signature(fn: Function) -> list:
    """The parameters of the Python function: names, kinds and constant defaults (calls to
    the loaded function are bound to them exactly as the original's calls were)."""
    try:
        params = inspect.signature(fn.python_function).parameters.values()
    except (TypeError, ValueError):
        return []
    out = []
    for p in params:
        entry: dict = {"name": p.name, "kind": int(p.kind)}
        if p.default is not p.empty:
            try:
                entry["default"] = encode_literal(p.default)
            except TypeError:
                entry["default_saved"] = False
        out.append(entry)
    return out


def decode_python_signature(data: list) -> inspect.Signature:
    params = []
    for p in data:
        default: Any = inspect.Parameter.empty
        if "default" in p:
            default = decode_literal(p["default"])
        elif p.get("default_saved") is False:
            default = _DefaultNotSaved()
        params.append(inspect.Parameter(p["name"], inspect._ParameterKind(p["kind"]),
                                        default=default))
    return inspect.Signature(params)


# ------------------------------------------------------------ concrete functions

def check_saveable(concrete: ConcreteFunction, where: str) -> None:
    """Rejects a graph that calls back into Python (``py_function``): its body is Python code,
    which a SavedModel does not store."""
    for eqn in walk_eqns(concrete.graph):
        if eqn.op == "py_function":
            fn = dict(eqn.attrs).get("fn")
            fn = getattr(fn, "func", fn)
            name = getattr(fn, "__qualname__", type(fn).__name__)
            loc = f" (at {eqn.loc})" if eqn.loc else ""
            raise ValueError(
                f"saved_model.save: the tf.function '{where}' calls tf.py_function "
                f"'{name}'{loc}, whose Python body cannot be saved: a SavedModel holds graphs "
                f"and variable values, not Python code, so the loaded function could not run "
                f"it. Write that computation with stagecraft ops, or keep it outside the "
                f"saved function.")


def encode_concrete(concrete: ConcreteFunction, key: Any, index: int,
                    variable_nodes: dict[int, int], where: str,
                    arrays: dict[str, np.ndarray], input_signature: Any = None) -> dict:
    """The document entry of one concrete function; its arrays go into ``arrays`` under
    ``cf<index>.`` names. ``variable_nodes`` maps id(variable) -> object-graph node. The
    TensorSpec names of ``input_signature`` (when the function has one) name the inputs."""
    check_saveable(concrete, where)
    graph_text, graph_arrays = serialize.dumps(concrete.graph)
    prefix = f"cf{index}."
    for k, a in graph_arrays.items():
        arrays[prefix + k] = a
    captures = []
    for i, t in enumerate(concrete.captured_inputs):
        name = f"{prefix}capture{i}"
        arrays[name] = np.asarray(t._value)
        captures.append(name)
    variables, sites = [], []
    for v in concrete._captured_variables:
        node = variable_nodes.get(id(v))
        if type(v) is RandomState:  # a random op's state: saved as its seed rule, not a value
            variables.append(None)
            sites.append([v._op_seed, v._index])
            continue
        if node is None:
            raise ValueError(
                f"saved_model.save: the tf.function '{where}' uses the variable '{v.name}' "
                f"(shape {v.shape}, dtype {v.dtype.name}), which is not reachable from the "
                f"object being saved, so its value would not be saved. Assign it to an "
                f"attribute of the object (e.g. `obj.{_attr_hint(v)} = variable`) or of one of "
                f"its tf.Modules.")
        variables.append(node)
    pos_key, kw_key = key
    pos_args, kw_args = concrete._arguments
    if input_signature is not None:
        pos_args = list(input_signature) + list(pos_args[len(input_signature):])
    return {"name": concrete.name,
            "args": encode_key(pos_key, list(pos_args)),
            "kwargs": encode_key(kw_key, dict(kw_args)),
            "arg_names": list(concrete._arg_names),
            "outputs": encode_structure(concrete._outputs),
            "num_inputs": len(concrete._input_types),
            "captures": captures,
            "variables": variables,
            "random_sites": sites,
            "graph": json.loads(graph_text),
            "graph_arrays": {k: prefix + k for k in graph_arrays}}


def _random_site(entry: Any) -> RandomState:
    """A fresh random op state for a saved ``[op seed or null, index]`` entry."""
    op_seed, index = entry
    if not (op_seed is None or type(op_seed) is int) or type(index) is not int or index < 0:
        raise ValueError(f"bad random op site {entry!r}")
    return site_state(None, op_seed, index)


def _attr_hint(v: Variable) -> str:
    name = v._name.rsplit("/", 1)[-1]
    return name if name.isidentifier() else "v"


def decode_concrete(data: dict, variables: list, arrays: dict[str, np.ndarray],
                    where: str, field: str = "concrete function") -> tuple[Any, ConcreteFunction]:
    """(trace-cache key, ConcreteFunction) for one saved concrete function; ``variables`` are
    the loaded variables of the object graph, by node id. ``field`` is the entry's path in the
    document (bad graph fields raise ``DocumentError`` naming ``<field>.graph.<...>``)."""
    try:
        graph_arrays = {k: arrays[name] for k, name in data["graph_arrays"].items()}
        try:
            graph = serialize.loads(json.dumps(data["graph"]), graph_arrays)
        except serialize.DocumentError as e:
            raise serialize.DocumentError(f"{field}.{e.field}", e.problem) from None
        pos_key, pos_t = decode_key(data["args"])
        kw_key, kw_t = decode_key(data["kwargs"])
        captured = [convert_to_tensor(np.array(arrays[name])) for name in data["captures"]]
        sites = list(data.get("random_sites", []))
        if len(sites) != sum(i is None for i in data["variables"]):
            raise ValueError("one random_sites entry per null variable is needed")
        sites.reverse()
        bound = [variables[i] if i is not None else _random_site(sites.pop())
                 for i in data["variables"]]
        outputs = decode_structure(data["outputs"])
        num_inputs = int(data["num_inputs"])
        name = data["name"]
    except serialize.DocumentError:
        raise
    except (KeyError, TypeError, IndexError, ValueError, OverflowError) as e:
        raise CorruptSavedModelError(f"concrete function {where}: {type(e).__name__}: {e}") \
            from None
    try:  # a well-formed document can still describe an ill-typed graph: never run one
        verify(graph)
    except VerificationError as e:
        raise serialize.DocumentError(f"{field}.graph", f"the graph of concrete function "
                                                        f"{where} is invalid: "
                                                        f"{str(e).splitlines()[0]}") from None
    concrete = concrete_from_graph(graph, num_inputs, captured, bound, outputs,
                                   (tuple(pos_t), kw_t), name, data["arg_names"], where)
    return (pos_key, kw_key), concrete


def concrete_from_graph(graph: Graph, num_inputs: int, captured: list, variables: list,
                        outputs: Any, arguments: tuple, name: str, arg_names: list,
                        where: str = "") -> ConcreteFunction:
    """A ``ConcreteFunction`` around an already-built graph whose parameters are ``num_inputs``
    inputs, then ``captured`` tensors, then references to ``variables``: what ``trace`` would
    have produced, without the Python function. It is called, differentiated and called from
    other traces exactly as a traced one."""
    params = graph.params
    if len(params) != num_inputs + len(captured) + len(variables):
        raise CorruptSavedModelError(
            f"concrete function {where}: its graph has {len(params)} parameters but the "
            f"document lists {num_inputs} inputs, {len(captured)} captured tensors and "
            f"{len(variables)} variables.")
    fg = FuncGraph(name)
    fg.inputs = list(params[:num_inputs])
    cap_params = params[num_inputs:num_inputs + len(captured)]
    var_params = params[num_inputs + len(captured):]
    for t, p in zip(captured, cap_params):
        if p.ref or t.dtype != p.type.dtype or not is_compatible(p.type.shape, t._value.shape):
            raise CorruptSavedModelError(f"concrete function {where}: captured tensor of dtype "
                                         f"{t.dtype.name} and shape {list(t._value.shape)} "
                                         f"does not fit parameter {p!r}.")
        fg.captures.append((t, p))
    for v, p in zip(variables, var_params):
        if not isinstance(v, Variable) or not p.ref or v.dtype != p.type.dtype or \
                not is_compatible(p.type.shape, v._shape):
            raise CorruptSavedModelError(f"concrete function {where}: object {v!r} does not "
                                         f"fit variable parameter {p!r}.")
        fg.variables.append((v, p))
        fg.ref_objects[p.uid] = v
        fg._var_refs[id(v)] = p
    fg.builder.params = list(params)
    concrete = ConcreteFunction(graph, fg, outputs, [], arguments, name)
    concrete._arg_names = list(arg_names)
    concrete._trace_report = None  # nothing was converted or traced in this process
    return concrete


# ------------------------------------------------------------ restored functions

def _describe(value: Any) -> str:
    if isinstance(value, Variable):
        return repr(VariableSpec(value.shape, value.dtype, value.trainable))
    if isinstance(value, Tensor):
        return repr(TensorSpec(value.shape, value.dtype))
    if isinstance(value, np.ndarray):
        return repr(TensorSpec(value.shape, dt.from_numpy(value.dtype)))
    return repr(value)


def _describe_call(args: Any, kwargs: dict) -> str:
    lines = [f"  Positional arguments ({len(args)} total):"]
    lines += [f"    * {_describe_nested(a)}" for a in args]
    kw = ", ".join(f"{k!r}: {_describe_nested(v)}" for k, v in kwargs.items())
    lines.append(f"  Keyword arguments: {{{kw}}}")
    return "\n".join(lines)


def _describe_nested(x: Any) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_describe_nested(v)}" for k, v in x.items()) + "}"
    if isinstance(x, (list, tuple)) and not hasattr(type(x), "_fields"):
        inner = ", ".join(_describe_nested(v) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
    return _describe(x)


class RestoredFunction(Function):
    """A ``tf.function`` loaded from a SavedModel: the concrete functions it had traced when it
    was saved, chosen per call by the trace cache's rules (exact key first, else the most
    specific saved trace whose types accept the call). It cannot trace: a call that matches
    no saved concrete function raises ValueError listing them.

    >>> import os, tempfile, stagecraft as tf
    >>> m = tf.Module(); m.f = tf.function(lambda x: x + 1.0)
    >>> _ = m.f(tf.constant([1.0]))
    >>> d = os.path.join(tempfile.mkdtemp(), "m"); tf.saved_model.save(m, d)
    >>> loaded = tf.saved_model.load(d)
    >>> type(loaded.f).__name__, loaded.f(tf.constant([2.0])).numpy().tolist()
    ('RestoredFunction', [3.0])
    """

    def __init__(self, name: str, python_signature: inspect.Signature,
                 input_signature: Any, concretes: list[tuple[Any, ConcreteFunction]]):
        def not_traceable(*args: Any, **kwargs: Any) -> Any:
            raise ValueError(f"'{name}' was loaded from a SavedModel: it has no Python body to "
                             f"run (tf.config.run_functions_eagerly does not apply to it).")
        not_traceable.__name__ = not_traceable.__qualname__ = name
        not_traceable.__signature__ = python_signature  # type: ignore[attr-defined]
        super().__init__(not_traceable, name, input_signature, autograph=False)
        for key, concrete in concretes:
            entry = CacheEntry(key, concrete, [])
            self._entries.append(entry)
            self._by_key[key] = entry

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        """The saved concrete functions, in the order they were traced."""
        return [e.concrete for e in self._entries]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # No run-eagerly shortcut and no retracing bookkeeping: only dispatch.
        concrete, flat, _, _ = self._lookup(args, kwargs)
        return concrete._call_flat(flat)

    def _trace_new(self, pos: list, kw: dict, *rest: Any) -> ConcreteFunction:
        """Called by the trace cache on a miss: loaded functions cannot trace."""
        options = []
        for i, e in enumerate(self._entries, 1):
            args, kwargs = e.concrete._arguments
            options.append(f"Option {i}:\n{_describe_call(args, kwargs)}")
        listing = "\n\n".join(options) if options else "  (none: the function was saved " \
                                                      "without any concrete function)"
        raise ValueError(
            f"Could not find matching concrete function to call loaded from the SavedModel "
            f"(function '{self._name}'). Got:\n{_describe_call(pos, kw)}\n\n Expected these "
            f"arguments to match one of the following {len(options)} option(s):\n\n{listing}\n"
            f"A loaded function cannot trace new signatures: call it with one of these, or "
            f"trace the original with these arguments (or give it an input_signature with None "
            f"dims) before saving.")


# ----------------------------------------------------------------- signatures

def signature_inputs(concrete: ConcreteFunction, name: str,
                     input_signature: Any = None) -> list[dict]:
    """The keyword inputs of a signature (flat, in the concrete function's input order),
    named by the input_signature's TensorSpec names, else by the Python parameter names;
    every argument must be a tensor (TensorFlow's rule for signatures)."""
    pos_t, kw_t = concrete._arguments
    if input_signature is not None:
        pos_t = list(input_signature) + list(pos_t[len(input_signature):])
    inputs: list[tuple[str, Any]] = []
    for i, a in enumerate(pos_t):
        arg = a.name if isinstance(a, TensorSpec) and a.name else \
            (concrete._arg_names[i] if i < len(concrete._arg_names) else f"arg_{i}")
        inputs.append((arg, a))
    for k in sorted(kw_t, key=repr):
        inputs.append((str(k), kw_t[k]))
    out = []
    types = iter(concrete._input_types)
    for arg, a in inputs:
        if not _is_tensor_like(a) and not any(_is_tensor_like(x) or isinstance(x, Variable)
                                              for x in _leaves(a)):
            continue  # a Python constant: fixed at its traced value, not an input
        if not _is_tensor_like(a):
            raise ValueError(f"saved_model.save: signature '{name}': argument '{arg}' is "
                             f"{_describe_nested(a)}; every argument of a signature must be a "
                             f"single tensor (nested structures, variables and Python values "
                             f"are not allowed). Use a function whose arguments are all "
                             f"tensors, e.g. with input_signature=[tf.TensorSpec(...), ...].")
        ty = next(types)
        out.append({"name": arg, "shape": _shape(ty.shape), "dtype": ty.dtype.short})
    names = [d["name"] for d in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"saved_model.save: signature '{name}' has several inputs named "
                         f"{dup}; give the TensorSpecs distinct names.")
    return out


def _is_tensor_like(x: Any) -> bool:
    return isinstance(x, (Tensor, TensorSpec, np.ndarray))


def _leaves(x: Any) -> list:
    return nest.flatten(x) if isinstance(x, (list, tuple, dict)) else [x]


def signature_outputs(concrete: ConcreteFunction, name: str) -> Any:
    """Output names: the dict's keys when the function returns a flat dict of tensors, else
    ``output_0``, ``output_1``, ... (TensorFlow's names)."""
    outs = concrete._outputs
    if isinstance(outs, dict):
        if not all(isinstance(k, str) for k in outs) or \
                not all(isinstance(v, Slot) for v in outs.values()):
            raise ValueError(f"saved_model.save: signature '{name}' returns a dict whose keys "
                             f"are not all strings or whose values are not all tensors; a "
                             f"signature returns a flat dict of tensors.")
        return {"dict": list(outs)}
    leaves = nest.flatten(outs)
    if not all(isinstance(s, Slot) for s in leaves):
        raise ValueError(f"saved_model.save: signature '{name}' returns None; a signature must "
                         f"return tensors.")
    return {"flat": [f"output_{i}" for i in range(len(leaves))]}


class SignatureFunction:
    """A serving signature of a loaded SavedModel: called with keyword tensors only, returns a
    dict of output tensors.

    >>> import os, tempfile, stagecraft as tf
    >>> f = tf.function(lambda x: x * 2.0, input_signature=[tf.TensorSpec([None])])
    >>> m = tf.Module(); m.f = f
    >>> d = os.path.join(tempfile.mkdtemp(), "m"); tf.saved_model.save(m, d, signatures=f)
    >>> sig = tf.saved_model.load(d).signatures["serving_default"]
    >>> sig(x=tf.constant([1.0]))["output_0"].numpy().tolist()
    [2.0]
    """

    def __init__(self, name: str, concrete: ConcreteFunction, inputs: list[dict],
                 outputs: dict):
        self.name = name
        self._concrete = concrete
        self._inputs = [(d["name"], TensorSpec(d["shape"], dt.as_dtype(d["dtype"]), d["name"]))
                        for d in inputs]
        self._document = {"inputs": inputs, "outputs": outputs}  # what saving it again writes
        self._outputs = outputs

    @property
    def structured_input_signature(self) -> tuple:
        """``((), {name: TensorSpec})`` as TensorFlow reports signatures."""
        return (), {n: s for n, s in self._inputs}

    @property
    def output_names(self) -> list[str]:
        return list(self._outputs.get("dict") or self._outputs.get("flat"))

    @property
    def concrete_function(self) -> ConcreteFunction:
        return self._concrete

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        expected = [n for n, _ in self._inputs]
        if args:
            raise TypeError(f"signature '{self.name}' takes keyword arguments only "
                            f"({', '.join(expected)}); got {len(args)} positional argument(s). "
                            f"Call it as signature({', '.join(f'{n}=...' for n in expected)}).")
        if set(kwargs) != set(expected):
            missing = [n for n in expected if n not in kwargs]
            extra = sorted(set(kwargs) - set(expected))
            raise TypeError(f"signature '{self.name}' expects the keyword arguments "
                            f"{expected}; missing {missing}, unexpected {extra}.")
        flat = [_conform(spec, kwargs[n], self.name, n) for n, spec in self._inputs]
        outs = self._concrete._call_flat(flat)
        if "dict" in self._outputs:
            return dict(outs)
        return dict(zip(self._outputs["flat"], nest.flatten(outs)))

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {s}" for n, s in self._inputs)
        return f"<SignatureFunction {self.name}({ins}) -> {self.output_names}>"


def _conform(spec: TensorSpec, value: Any, sig: str, name: str) -> Tensor:
    """``value`` as a tensor of ``spec`` or a TypeError saying what does not fit."""
    if not isinstance(value, Tensor):
        if isinstance(value, Variable):
            value = value.read_value()
        else:
            try:
                value = convert_to_tensor(value, spec.dtype)
            except (TypeError, ValueError) as e:
                raise TypeError(f"Binding inputs to tf.function {sig} failed: argument "
                                f"'{name}': {e}") from None
    if not spec.is_compatible_with(value):
        raise TypeError(f"Binding inputs to tf.function {sig} failed due to: Can not cast "
                        f"{TensorSpec(value.shape, value.dtype)} to {spec} (argument '{name}'). "
                        f"Pass a tensor of dtype {spec.dtype.name} and shape {spec.shape}.")
    return value


def restore_signatures(entries: dict, concretes: list[ConcreteFunction]) -> dict:
    return {name: SignatureFunction(name, concretes[e["concrete_function"]], e["inputs"],
                                    e["outputs"]) for name, e in entries.items()}

