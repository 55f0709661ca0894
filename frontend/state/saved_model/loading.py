"""``saved_model.load``: checks the files against the fingerprint, rebuilds the object tree as
generic objects, creates the variables, restores their values from the checkpoint and turns
the saved concrete functions into callables. Only JSON and NumPy arrays are read (no pickle,
no ``eval``): loading a SavedModel runs no code from it."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import DataLossError, NotFoundError
from stagecraft.ir.serialize import DocumentError
from stagecraft.ir.shapes import TensorShape
from stagecraft.state.saved_model import format as fmt
from stagecraft.state.saved_model import functions as fns
from stagecraft.state.saved_model.objects import UserObject, read_variables
from stagecraft.state.saved_model.schema import check_document
from stagecraft.state.variables import Variable


def load(export_dir: str | os.PathLike, tags: Any = None, options: Any = None) -> Any:
    """Loads a SavedModel written by ``tf.saved_model.save``; the Python classes that built
    it are not needed (and no code from the directory is run).

    Returns a generic object with the saved attribute tree: variables (restored values,
    assignable; functions see assignments), sub-objects, lists, dicts, and each saved
    ``tf.function`` as a ``RestoredFunction`` that dispatches among its saved concrete
    functions by the trace cache's rules and runs them on the default backend. Named
    signatures are in ``obj.signatures``. ``tags`` and ``options`` are accepted for
    TensorFlow compatibility and ignored.

    >>> import os, tempfile, stagecraft as tf
    >>> m = tf.Module(); m.v = tf.Variable([1.0, 2.0])
    >>> m.total = tf.function(lambda: tf.reduce_sum(m.v)); _ = m.total()
    >>> d = os.path.join(tempfile.mkdtemp(), "m"); tf.saved_model.save(m, d)
    >>> loaded = tf.saved_model.load(d)
    >>> _ = loaded.v.assign([5.0, 5.0]); float(loaded.total())
    10.0

    A save over ``export_dir`` while it loads (``save`` swaps the whole directory in one
    rename) is noticed by the directory's identity changing: the load starts again on the new
    version, so it never returns or rejects a mix of two versions.
    """
    export_dir = os.fspath(export_dir)
    for _ in range(_ATTEMPTS):
        before = _identity(export_dir)
        try:
            root = _load_once(export_dir)
        except (fmt.CorruptSavedModelError, NotFoundError, DataLossError, OSError):
            if _identity(export_dir) == before:
                raise
            continue  # overwritten while it was read: load the new version
        if _identity(export_dir) == before:
            return root
    raise fmt.CorruptSavedModelError(
        f"{export_dir}: the SavedModel was replaced {_ATTEMPTS} times while it was being "
        f"loaded; load it when no process is saving to it.")


_ATTEMPTS = 5


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells the directory at ``path`` from the one a save swaps in: its inode, and its
    change time (a deleted directory's inode number may be reused by the next one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns


def _load_once(export_dir: str) -> Any:
    document = os.path.join(export_dir, fmt.DOCUMENT)
    if not os.path.isdir(export_dir) or not os.path.isfile(document):
        raise NotFoundError(f"SavedModel file does not exist at: {document}. Pass the directory "
                            f"given to tf.saved_model.save.")
    fmt.check_fingerprint(export_dir)
    doc = fmt.read_json(document, fmt.FORMAT, "SavedModel document")
    arrays = fmt.read_arrays(os.path.join(export_dir, fmt.ARRAYS))
    try:
        check_document(doc, arrays.keys())  # every field, before any is used
        root = _Loader(doc, arrays).root()
    except DocumentError as e:
        raise fmt.CorruptSavedModelError(
            f"{document}: corrupted SavedModel document: field {e.field}: {e.problem}. The "
            f"file was damaged or crafted (it is not loaded); save the SavedModel again.") \
            from None
    except fmt.CorruptSavedModelError as e:
        raise fmt.CorruptSavedModelError(f"{document}: corrupted SavedModel document: {e}") \
            from None
    except RecursionError:
        raise fmt.CorruptSavedModelError(f"{document}: corrupted SavedModel document: its "
                                         f"values are nested too deeply. Save the SavedModel "
                                         f"again.") from None
    except (KeyError, TypeError, IndexError, AttributeError, ValueError, OverflowError) as e:
        raise fmt.CorruptSavedModelError(f"{document}: corrupted SavedModel document: "
                                         f"{type(e).__name__}: {e}") from None
    read_variables(root, os.path.join(export_dir, fmt.VARIABLES_PREFIX))
    return root


class _Loader:
    """Builds the objects of the document's nodes (shared nodes stay shared)."""

    def __init__(self, doc: dict, arrays: dict[str, np.ndarray]):
        self.doc = doc
        self.arrays = arrays
        self.nodes: list[dict] = doc["nodes"]
        if not isinstance(self.nodes, list) or not self.nodes:
            raise fmt.CorruptSavedModelError("it has no object nodes")
        self.objects: list[Any] = [None] * len(self.nodes)
        self.concretes: dict[int, Any] = {}  # index -> (key, ConcreteFunction)
        self._building: set[int] = set()

    def root(self) -> Any:
        for i, node in enumerate(self.nodes):  # variables first: functions capture them
            if node["kind"] == "variable":
                self.objects[i] = _variable(node)
        for i, node in enumerate(self.nodes):
            kind = node["kind"]
            if kind == "user_object":
                tracked = [e["name"] for e in node["children"]
                           if self.nodes[e["node"]]["kind"] != "function"]
                self.objects[i] = UserObject(node.get("type_name", "object"), tracked)
            elif kind == "list":
                self.objects[i] = []
            elif kind == "dict":
                self.objects[i] = {}
            elif kind == "function":
                self.objects[i] = self._function(node, i)
            elif kind not in ("variable", "tuple"):
                raise fmt.CorruptSavedModelError(f"node {i} has the unknown kind {kind!r}")
        for i in range(len(self.nodes)):
            self._get(i)
        for i, node in enumerate(self.nodes):
            self._fill(i, node)
        root = self.objects[0]
        if not isinstance(root, UserObject):
            raise fmt.CorruptSavedModelError("the root node is not an object")
        signatures = self.doc.get("signatures") or {}
        root.__dict__.setdefault("signatures", {
            name: fns.SignatureFunction(name, self._concrete(e["concrete_function"],
                                                             f"signature {name!r}")[1],
                                        e["inputs"], e["outputs"])
            for name, e in signatures.items()})
        return root

    def _get(self, i: int) -> Any:
        """The object of node ``i``; tuples are built from their (already built) items."""
        node = self.nodes[i]
        if node["kind"] != "tuple" or self.objects[i] is not None:
            return self.objects[i]
        if i in self._building:
            raise fmt.CorruptSavedModelError(f"tuple node {i} contains itself")
        self._building.add(i)
        self.objects[i] = tuple(self._get(e["node"]) for e in node["children"])
        return self.objects[i]

    def _fill(self, i: int, node: dict) -> None:
        obj, kind = self.objects[i], node["kind"]
        edges = node["children"]
        if kind == "user_object":
            for e in edges:
                obj.__dict__[e["name"]] = self._get(e["node"])
        elif kind == "list":
            obj.extend(self._get(e["node"]) for e in edges)
        elif kind == "dict":
            for e in edges:
                obj[fmt.decode_literal(e.get("key", e["name"]))] = self._get(e["node"])

    def _concrete(self, index: int, where: str) -> tuple:
        if index not in self.concretes:
            data = self.doc["concrete_functions"][index]
            self.concretes[index] = fns.decode_concrete(data, self.objects, self.arrays,
                                                        f"#{index} ({where})",
                                                        f"concrete_functions[{index}]")
        return self.concretes[index]

    def _function(self, node: dict, i: int) -> fns.RestoredFunction:
        name = node["name"]
        pairs = [self._concrete(c, f"of function '{name}'") for c in node["concrete_functions"]]
        signature = node.get("input_signature")
        return fns.RestoredFunction(
            name, fns.decode_python_signature(node.get("python_signature", [])),
            None if signature is None else fns.decode_specs(signature), pairs)


def _variable(node: dict) -> Variable:
    dtype = dt.as_dtype(node["dtype"])
    shape = node["shape"]
    v = Variable(np.zeros(node["value_shape"], dtype.np), trainable=node["trainable"],
                 shape=TensorShape(None) if shape is None else tuple(shape), dtype=dtype)
    v._name = node["name"]  # the saved name, not one made in the loader's name scope
    return v
