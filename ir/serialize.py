"""Graphs on disk: a versioned JSON document for the structure plus NumPy arrays (``.npz``,
never pickled) for constants. ``dumps``/``loads`` work in memory; ``save``/``load`` write a
directory (``graph.json`` + ``arrays.npz``) or, for a path ending in ``.npz``, one file.

Loading gives a graph that prints exactly like the one saved. Python callables
(``py_function``) cannot be serialized.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.placeholders import DigestArray
from stagecraft.ir.types import TensorType

FORMAT = "stagecraft.graph"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
_JSON_KEY = "__graph_json__"  # the document's bytes inside a single-file .npz


def dumps(graph: Graph) -> tuple[str, dict[str, np.ndarray]]:
    """The JSON document for ``graph`` and the arrays it refers to by key.

    >>> import numpy as np
    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("f")
    >>> (c,) = b.add("const", [], [TensorType(dtypes.float32, (2,))],
    ...              {"value": np.ones(2, np.float32)})
    >>> text, arrays = dumps(b.build([c]))
    >>> json.loads(text)["version"], sorted(arrays)
    (1, ['a0'])
    >>> str(loads(text, arrays)) == str(b.build([c]))
    True
    """
    enc = _Encoder()
    doc = {"format": FORMAT, "version": VERSION, "graph": enc.graph(graph)}
    return json.dumps(doc, allow_nan=False), enc.arrays


def loads(text: str, arrays: dict[str, np.ndarray]) -> Graph:
    """The graph a ``dumps`` document describes (``arrays`` maps its array keys to data).

    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("g")
    >>> x = b.param(TensorType(dtypes.int32, (None,)), "x")
    >>> print(loads(*dumps(b.build([x]))))
    graph @g(%x: i32[?]) -> (i32[?]) {
      return %x
    }
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"Not a stagecraft graph document: invalid JSON ({e}).") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"Not a stagecraft graph document: expected format {FORMAT!r}, got "
                         f"{doc.get('format') if isinstance(doc, dict) else None!r}.")
    version = doc.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"Unsupported {FORMAT} version {version!r}: this stagecraft reads "
                         f"version(s) {', '.join(map(str, SUPPORTED_VERSIONS))}. Save the graph "
                         f"again with this version, or upgrade stagecraft.")
    return _Decoder(arrays).graph(doc["graph"])


def save(graph: Graph, path: str | os.PathLike) -> None:
    """Writes ``graph`` to ``path``: one ``.npz`` file when the path ends in ``.npz``, else a
    directory holding ``graph.json`` and ``arrays.npz``.

    >>> import tempfile, os
    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("g")
    >>> x = b.param(TensorType(dtypes.float32, ()), "x")
    >>> d = tempfile.mkdtemp()
    >>> save(b.build([x]), os.path.join(d, "g"))
    >>> sorted(os.listdir(os.path.join(d, "g")))
    ['arrays.npz', 'graph.json']
    >>> str(load(os.path.join(d, "g"))) == str(b.build([x]))
    True
    """
    text, arrays = dumps(graph)
    path = os.fspath(path)
    if path.endswith(".npz"):
        data = dict(arrays)
        data[_JSON_KEY] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        np.savez(path, **data)
        return
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "graph.json"), "w", encoding="utf-8") as f:
        f.write(text)
    np.savez(os.path.join(path, "arrays.npz"), **arrays)


def load(path: str | os.PathLike) -> Graph:
    """Reads a graph written by ``save`` (a directory or a single ``.npz`` file).

    >>> import tempfile, os
    >>> from stagecraft.ir import dtypes
    >>> from stagecraft.ir.graph import GraphBuilder
    >>> b = GraphBuilder("g")
    >>> x = b.param(TensorType(dtypes.float32, ()), "x")
    >>> p = os.path.join(tempfile.mkdtemp(), "g.npz")
    >>> save(b.build([x]), p)
    >>> load(p).params[0].hint
    'x'
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        with open(os.path.join(path, "graph.json"), encoding="utf-8") as f:
            text = f.read()
        with np.load(os.path.join(path, "arrays.npz"), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return loads(text, arrays)
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != _JSON_KEY}
        if _JSON_KEY not in z.files:
            raise ValueError(f"{path} is not a saved stagecraft graph (no {_JSON_KEY} entry).")
        text = z[_JSON_KEY].tobytes().decode("utf-8")
    return loads(text, arrays)


# ------------------------------------------------------------------------ encoding

def _type(t: TensorType) -> dict:
    return {"dtype": t.dtype.short, "shape": None if t.shape is None else list(t.shape)}


class _Encoder:
    def __init__(self) -> None:
        self.ids: dict[int, int] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self.eqn: Eqn | None = None
        self.count = 0

    def graph(self, g: Graph) -> dict:
        params = [self.define(p) for p in g.params]
        eqns = [self.eqn_(e) for e in g.eqns]
        return {"name": g.name, "params": params, "eqns": eqns,
                "results": [self.operand(r) for r in g.results]}

    def define(self, v: Value) -> dict:
        # A callee shared by several call equations is written once per call; its values get
        # fresh ids each time, as a printout gives them fresh names.
        i = self.count
        self.count += 1
        self.ids[v.uid] = i
        return {"id": i, "type": _type(v.type), "hint": v.hint, "ref": v.ref}

    def operand(self, x: Any) -> dict:
        if isinstance(x, Literal):
            return {"literal": self.attr(x.value), "dtype": x.type.dtype.short}
        try:
            return {"value": self.ids[x.uid]}
        except KeyError:
            where = f" by '{self.eqn.op}'" if self.eqn is not None else ""
            raise ValueError(f"Cannot serialize the graph: a value is used{where} before it "
                             f"is defined ({x!r}). Run ir.verify(graph) to locate it.") from None

    def eqn_(self, e: Eqn) -> dict:
        self.eqn = e
        inputs = [self.operand(x) for x in e.inputs]
        attrs = [[k, self.attr(v, k)] for k, v in e.attrs]
        regions = [self.graph(r) for r in e.regions]
        self.eqn = e
        outputs = [self.define(o) for o in e.outputs]
        return {"op": e.op, "inputs": inputs, "outputs": outputs, "attrs": attrs,
                "regions": regions, "loc": e.loc}

    def attr(self, v: Any, key: str = "") -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, dt.DType):
            return {"dtype": v.short}
        if isinstance(v, np.ndarray):
            k = f"a{len(self.arrays)}"
            self.arrays[k] = np.asarray(v, order="C")
            out: dict = {"array": k}
            if isinstance(v, DigestArray) and v.digest is not None:
                out["digest"] = v.digest
            return out
        if isinstance(v, np.generic):
            return {"scalar": self.attr(v.item()), "np": v.dtype.name}
        if isinstance(v, tuple):
            return {"tuple": [self.attr(x, key) for x in v]}
        if isinstance(v, list):
            return {"list": [self.attr(x, key) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[self.attr(k, key), self.attr(x, key)] for k, x in v.items()]}
        op = self.eqn.op if self.eqn is not None else "?"
        if callable(v):
            name = getattr(v, "__qualname__", type(v).__name__)
            raise ValueError(f"Cannot serialize the '{op}' equation: its attribute {key!r} is "
                             f"the Python callable {name!r}, which cannot be saved as data. "
                             f"Graphs that use py_function can only run in the process that "
                             f"traced them.")
        raise ValueError(f"Cannot serialize the '{op}' equation: its attribute {key!r} is a "
                         f"{type(v).__name__} ({v!r}), which the graph format does not support.")


class _Decoder:
    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays
        self.values: dict[int, Value] = {}

    def graph(self, d: dict) -> Graph:
        params = [self.define(p) for p in d["params"]]
        eqns = [self.eqn(e) for e in d["eqns"]]
        return Graph(d["name"], tuple(params), tuple(eqns),
                     tuple(self.operand(r) for r in d["results"]))

    def define(self, d: dict) -> Value:
        t = d["type"]
        shape = None if t["shape"] is None else tuple(t["shape"])
        v = Value(TensorType(dt.as_dtype(t["dtype"]), shape), d["hint"], d["ref"])
        self.values[d["id"]] = v
        return v

    def operand(self, d: dict) -> Any:
        if "literal" in d:
            return Literal(self.attr(d["literal"]), TensorType(dt.as_dtype(d["dtype"]), ()))
        try:
            return self.values[d["value"]]
        except KeyError:
            raise ValueError(f"Corrupt graph document: value id {d['value']} is used before "
                             f"it is defined.") from None

    def eqn(self, d: dict) -> Eqn:
        inputs = tuple(self.operand(x) for x in d["inputs"])
        attrs = tuple((k, self.attr(v)) for k, v in d["attrs"])
        regions = tuple(self.graph(r) for r in d["regions"])
        outputs = tuple(self.define(o) for o in d["outputs"])
        return Eqn(d["op"], inputs, outputs, attrs, regions, d["loc"])

    def attr(self, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        if "float" in v:
            return float(v["float"])
        if "dtype" in v:
            return dt.as_dtype(v["dtype"])
        if "array" in v:
            try:
                a = self.arrays[v["array"]]
            except KeyError:
                raise ValueError(f"Corrupt graph document: array {v['array']!r} is missing "
                                 f"from the arrays.") from None
            if "digest" in v:
                out = DigestArray(v["digest"], a.dtype, a.shape)
                out[...] = a
                return out
            return np.array(a)
        if "scalar" in v:
            return np.dtype(v["np"]).type(self.attr(v["scalar"]))
        if "tuple" in v:
            return tuple(self.attr(x) for x in v["tuple"])
        if "list" in v:
            return [self.attr(x) for x in v["list"]]
        if "dict" in v:
            return {self.attr(k): self.attr(x) for k, x in v["dict"]}
        raise ValueError(f"Corrupt graph document: unknown attribute encoding {v!r}.")
