"""``saved_model.save``: the object graph, every concrete function of every ``tf.function``
found on it, the signatures and the variable values, written atomically (a temporary sibling
directory renamed, or exchanged with the old version, into place at the end)."""
from __future__ import annotations

import errno
import json
import os
import shutil
from typing import Any

import numpy as np

from stagecraft.ir import durable
from stagecraft.eager.context import executing_eagerly
from stagecraft.staging.concrete_function import ConcreteFunction
from stagecraft.staging.function import Function
from stagecraft.state.saved_model import format as fmt
from stagecraft.state.saved_model import functions as fns
from stagecraft.state.saved_model import objects
from stagecraft.state.saved_model.objects import (children, functions_of, is_trackable,
                                            kind_of)
from stagecraft.state.variables import Variable
from stagecraft.staging.trace_cache import make_key


def save(obj: Any, export_dir: str | os.PathLike, signatures: Any = None,
         options: Any = None) -> None:
    """Saves ``obj`` (a ``tf.Module`` or another object holding variables, modules and
    ``tf.function``s as attributes) to ``export_dir`` as a SavedModel.

    Saved: the attribute tree (the same edge names as checkpoints), the variable values,
    every concrete function each ``tf.function`` has traced (one traced from its
    ``input_signature`` if it has one and was never called), and ``signatures`` (a
    ``ConcreteFunction``, a ``Function`` with an ``input_signature``, or a dict name -> either).
    Not saved: Python code, plain Python attributes, undecorated methods. A function that was
    never traced and has no ``input_signature``, or that calls ``py_function``, is an error
    here (``ValueError``), not at load time. ``options`` is accepted for TensorFlow
    compatibility and ignored. The write is atomic at every instant: a crash or an error
    leaves ``export_dir`` holding the previous SavedModel (or nothing, if there was none) or
    the new one, and the next save there removes what a killed save left.

    >>> import os, tempfile, stagecraft as tf
    >>> class Scale(tf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.w = tf.Variable(3.0)
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    ...     def __call__(self, x):
    ...         return x * self.w
    >>> d = os.path.join(tempfile.mkdtemp(), "scale")
    >>> tf.saved_model.save(Scale(), d)
    >>> sorted(os.listdir(d))
    ['assets', 'fingerprint.json', 'saved_model.json', 'saved_model.npz', 'variables']
    >>> tf.saved_model.load(d)(tf.constant([1.0, 2.0])).numpy().tolist()
    [3.0, 6.0]
    """
    if not executing_eagerly():
        raise NotImplementedError(
            "saved_model.save() inside a tf.function is not supported: the files would be "
            "written once, while tracing. Call it outside the function.")
    export_dir = os.path.abspath(os.fspath(export_dir))
    _check_target(export_dir)
    if not is_trackable(obj):
        raise ValueError(
            f"saved_model.save: expected a trackable object (a tf.Module, or an object whose "
            f"attributes hold variables, modules or tf.functions), got {type(obj).__name__} "
            f"{_short(obj)}. Wrap it: `m = tf.Module(); m.f = f; "
            f"tf.saved_model.save(m, path)`.")
    doc, arrays = _document(obj, signatures)
    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    tmp, lock = durable.temp_dir_locked(parent, os.path.basename(export_dir))
    try:
        _write(obj, doc, arrays, tmp)
        _replace(tmp, export_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        os.close(lock)
    # What killed or failed saves of export_dir left (and the version just replaced).
    durable.sweep(parent, durable.temp_pattern(os.path.basename(export_dir)))


def _short(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_target(export_dir: str) -> None:
    """Refuses to replace something that is not a SavedModel (never delete user data)."""
    if os.path.isfile(export_dir):
        raise ValueError(f"saved_model.save: {export_dir} is a file; pass a directory path "
                         f"(it is created).")
    if os.path.isdir(export_dir) and os.listdir(export_dir) and \
            not os.path.isfile(os.path.join(export_dir, fmt.DOCUMENT)):
        raise ValueError(f"saved_model.save: {export_dir} exists and is not a SavedModel (no "
                         f"{fmt.DOCUMENT}); refusing to replace its contents. Choose a new or "
                         f"empty directory, or remove it first.")


# ---------------------------------------------------------------- the document

class _Builder:
    """Numbers the object graph's nodes (breadth first from the root, children in the
    checkpoint's order) and collects the concrete functions."""

    def __init__(self) -> None:
        self.nodes: list[dict] = []
        self.ids: dict[int, int] = {}          # id(object) -> node
        self.paths: list[str] = []             # node -> first path, for messages
        self.objects: list[Any] = []           # node -> object (kept alive while saving)
        self.concretes: list[dict] = []
        self.concrete_ids: dict[int, int] = {}  # id(ConcreteFunction) -> index
        self.arrays: dict[str, np.ndarray] = {}
        self.variable_nodes: dict[int, int] = {}  # id(variable) -> node, once all are known

    def node(self, obj: Any, path: str) -> tuple[int, bool]:
        i = self.ids.get(id(obj))
        if i is not None:
            return i, False
        i = len(self.nodes)
        self.ids[id(obj)] = i
        self.paths.append(path)
        self.objects.append(obj)
        self.nodes.append({})
        return i, True


def _document(root: Any, signatures: Any) -> tuple[dict, dict]:
    _trace_input_signatures(root, signatures)
    b = _Builder()
    functions = _walk(b, root)
    # Functions last: their concrete functions refer to variables by node id.
    b.variable_nodes = {id(o): n for n, o in enumerate(b.objects) if isinstance(o, Variable)}
    for j, fn in functions:
        b.nodes[j] = _function_node(b, fn, b.paths[j])
    doc = {"format": fmt.FORMAT, "version": fmt.VERSION, "nodes": b.nodes,
           "signatures": _signatures(b, signatures), "concrete_functions": b.concretes}
    return doc, b.arrays


def _trace_input_signatures(root: Any, signatures: Any) -> None:
    """Traces each never-traced function that has an input_signature before the object graph
    is numbered: a first trace may create variables (``if self.v is None: ...``), which must
    be in the graph. Repeats until no new function appears."""
    done: set[int] = set()
    while True:
        pending = [fn for _, fn in _walk(_Builder(), root)]
        extra = signatures.values() if isinstance(signatures, dict) else [signatures]
        pending += [fn for fn in extra if isinstance(fn, Function)]
        pending = [fn for fn in pending if id(fn) not in done]
        if not pending:
            return
        for fn in pending:
            done.add(id(fn))
            if fn.input_signature is not None and not fn._entries:
                fn.get_concrete_function()


def _walk(b: _Builder, root: Any) -> list[tuple[int, Function]]:
    """Numbers every node reachable from ``root`` into ``b`` (objects get their document
    entry, functions a placeholder); returns the function nodes."""
    b.node(root, "root")
    functions: list[tuple[int, Function]] = []
    queue = [0]
    while queue:  # breadth first, so the recorded path of a node is a shortest one
        i = queue.pop(0)
        obj, path = b.objects[i], b.paths[i]
        kind = kind_of(obj)
        node: dict = {"kind": kind}
        if kind == "variable":
            node.update(_variable_node(obj))
        elif kind == "user_object":
            node["type_name"] = type(obj).__name__
        edges = []
        for name, child in children(obj):
            where = {"user_object": f"{path}.{name}", "dict": f"{path}[{name!r}]"}.get(
                kind, f"{path}[{name}]")
            j, new = b.node(child, where)
            if new:
                queue.append(j)
            edge: dict = {"name": str(name), "node": j}
            if kind == "dict":
                edge["key"] = fmt.encode_literal(name)
            edges.append(edge)
        if kind == "user_object":
            for name, fn in functions_of(obj):
                j, new = b.node(fn, f"{path}.{name}")
                if new:
                    functions.append((j, fn))
                edges.append({"name": name, "node": j})
        node["children"] = edges
        b.nodes[i] = node
    return functions


def _variable_node(v: Variable) -> dict:
    return {"dtype": v.dtype.short, "shape": None if v._shape is None else list(v._shape),
            "value_shape": list(np.shape(v._value)), "trainable": v.trainable,
            "name": v._name}


def _function_node(b: _Builder, fn: Function, path: str) -> dict:
    entries = [e for e in fn._entries if e.alive()]
    if not entries and fn._dropped:
        raise ValueError(
            f"saved_model.save: the tf.function '{path}' has no trace left to save: its "
            f"traces were keyed on Python objects (by identity) that no longer exist, and "
            f"traces are dropped with their key objects. Declare an input_signature, or call "
            f"it with tensors before saving.")
    if not entries:  # (one with an input_signature was traced by _trace_input_signatures)
        raise ValueError(
            f"saved_model.save: the tf.function '{path}' was never traced and has no "
            f"input_signature, so there is no graph to save for it. Call it once with "
            f"example inputs before saving (each traced signature is saved), or declare "
            f"`@tf.function(input_signature=[tf.TensorSpec(shape, dtype), ...])`.")
    signature = fn.input_signature
    ids = [_concrete_index(b, e.concrete, e.key, path, signature) for e in entries]
    return {"kind": "function", "name": fn.name, "concrete_functions": ids,
            "input_signature": None if signature is None else fns.encode_specs(signature),
            "python_signature": fns.encode_python_signature(fn), "children": []}


def _concrete_index(b: _Builder, concrete: ConcreteFunction, key: Any, where: str,
                    input_signature: Any = None) -> int:
    i = b.concrete_ids.get(id(concrete))
    if i is not None:
        return i
    i = len(b.concretes)
    try:
        entry = fns.encode_concrete(concrete, key, i, b.variable_nodes, where, b.arrays,
                                    input_signature)
    except fns.UnsaveableError as e:
        raise ValueError(f"saved_model.save: the tf.function '{where}' has a concrete function "
                         f"that cannot be saved: {e}") from None
    b.concretes.append(entry)
    b.concrete_ids[id(concrete)] = i
    return i


def _signatures(b: _Builder, signatures: Any) -> dict:
    if signatures is None:
        return {}
    if not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    out = {}
    for name, fn in signatures.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"saved_model.save: signature names must be non-empty strings, "
                             f"got {name!r}.")
        if isinstance(fn, fns.SignatureFunction):  # saving a loaded SavedModel again
            concrete = fn.concrete_function
            index = _concrete_index(b, concrete, _key_of(concrete), f"signatures[{name!r}]")
            out[name] = dict(fn._document, concrete_function=index)
            continue
        spec = None
        if isinstance(fn, Function):
            spec = fn.input_signature
            if spec is None:
                raise ValueError(
                    f"saved_model.save: signature '{name}' is the tf.function '{fn.name}', "
                    f"which has no input_signature, so its inputs are unknown. Pass "
                    f"{fn.name}.get_concrete_function(tf.TensorSpec(...), ...) instead, or "
                    f"declare the function with input_signature=[...].")
            fn = fn.get_concrete_function()
        if not isinstance(fn, ConcreteFunction):
            raise ValueError(f"saved_model.save: signature '{name}' must be a ConcreteFunction "
                             f"(f.get_concrete_function(...)) or a tf.function with an "
                             f"input_signature, got {type(fn).__name__}.")
        key = _key_of(fn)
        index = _concrete_index(b, fn, key, f"signatures[{name!r}]", spec)
        out[name] = {"concrete_function": index,
                     "inputs": fns.signature_inputs(fn, name, spec),
                     "outputs": fns.signature_outputs(fn, name)}
    return out


def _key_of(concrete: ConcreteFunction) -> Any:
    """The trace-cache key of a concrete function given on its own (as a signature)."""
    pos, kw = concrete._arguments
    aliases: dict = {}
    return make_key(list(pos), aliases, []), make_key(dict(kw), aliases, [])


# ---------------------------------------------------------------------- files

def _write(obj: Any, doc: dict, arrays: dict, tmp: str) -> None:
    os.makedirs(os.path.join(tmp, fmt.VARIABLES_DIR))
    os.makedirs(os.path.join(tmp, fmt.ASSETS_DIR))
    objects.write_variables(obj, os.path.join(tmp, fmt.VARIABLES_PREFIX))  # (tests inject faults)
    fmt.write_arrays(os.path.join(tmp, fmt.ARRAYS), arrays)
    fmt.write_text(os.path.join(tmp, fmt.DOCUMENT), json.dumps(doc, allow_nan=False))
    files = [fmt.DOCUMENT, fmt.ARRAYS] + sorted(
        os.path.join(fmt.VARIABLES_DIR, f) for f in os.listdir(os.path.join(tmp,
                                                                            fmt.VARIABLES_DIR)))
    fmt.write_fingerprint(tmp, files)


def _replace(tmp: str, export_dir: str) -> None:
    """Puts the finished SavedModel ``tmp`` at ``export_dir`` in one atomic step: a rename
    when nothing is there, else an exchange of the two directories (``durable.exchange``), so
    ``export_dir`` holds the old or the new complete SavedModel at every instant; the old one,
    now at ``tmp``, is removed by the caller's sweep."""
    try:
        os.rename(tmp, export_dir)
    except OSError as e:
        if not os.path.isdir(export_dir) or e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
        if not durable.exchange(tmp, export_dir):
            raise OSError(
                e.errno, f"saved_model.save: cannot replace the existing SavedModel at "
                f"{export_dir} atomically: this platform or file system has no "
                f"renameat2(RENAME_EXCHANGE). Save to a new directory and rename it yourself, "
                f"or remove {export_dir} first.") from None
    durable.fsync_directory(os.path.dirname(export_dir))
