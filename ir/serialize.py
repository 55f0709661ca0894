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
import re
import zipfile
from typing import Any, Callable

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.graph import Eqn, Graph, Literal, Value
from stagecraft.ir.ops import OPS
from stagecraft.ir.ops.structural import STRUCTURAL
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
    if "graph" not in doc:
        raise ValueError("Corrupt graph document: field graph: missing.")
    try:
        return _Decoder(arrays).graph(doc["graph"], "graph")
    except DocumentError as e:
        raise DocumentError(e.field, e.problem, "The graph document is damaged or was not "
                                                "written by stagecraft; save the graph again.") \
            from None


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
        savez(path, data)
        return
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "graph.json"), "w", encoding="utf-8") as f:
        f.write(text)
    savez(os.path.join(path, "arrays.npz"), arrays)


# A .npy header cannot name ml_dtypes' bfloat16 (NumPy writes it as raw void, '|V2'): such an
# array is stored as its uint16 bits under its name plus this suffix, and read back as bfloat16.
_BF16_SUFFIX = ".bfloat16"


def savez(target: Any, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez(target, **arrays)`` with bfloat16 arrays stored as their bits (``read_npz``
    reads them back).

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npz")
    >>> savez(p, {"x": np.array([1.5], dt.bfloat16.np)})
    >>> read_npz(p)["x"]
    array([1.5], dtype=bfloat16)
    """
    np.savez(target, **{(k + _BF16_SUFFIX if a.dtype == dt.bfloat16.np else k):
                        (a.view(np.uint16) if a.dtype == dt.bfloat16.np else a)
                        for k, a in arrays.items()})


def read_npz(path: str, dtypes: frozenset | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file at ``path``, read as untrusted input: nothing is
    unpickled, and before any array is allocated its size is checked against the file's own
    (no member may expand past the size of the whole file, and an array's header must declare
    exactly the bytes its member holds), so a crafted file cannot make the reader allocate
    more than it holds. ``dtypes`` (NumPy dtypes) restricts the element types allowed.
    Raises ValueError naming the file and the member.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "a.npz"); np.savez(p, x=np.arange(3))
    >>> read_npz(p)["x"].tolist()
    [0, 1, 2]
    """
    size = os.path.getsize(path)
    out: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                name = info.filename
                where = f"{path}: array file member {name!r}"
                if not name.endswith(".npy") or info.file_size > size:
                    raise ValueError(f"{where}: not an array of {size} bytes at most "
                                     f"(it declares {info.file_size} bytes)")
                with zf.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    read_header = _NPY_HEADERS.get(version)
                    if read_header is None:
                        raise ValueError(f"{where}: .npy format version {version} is not read")
                    shape, _, dtype = read_header(fh, max_header_size=10000)
                    header = fh.tell()
                    need = math.prod(shape) * dtype.itemsize
                    bits = name.endswith(_BF16_SUFFIX + ".npy")  # a bfloat16 array's bits
                    if bits and dtype != np.uint16:
                        raise ValueError(f"{where}: a bfloat16 array must be stored as uint16 "
                                         f"bits, not {dtype}")
                    if dtype.hasobject or (dtypes is not None and (
                            dt.bfloat16.np if bits else dtype) not in dtypes):
                        raise ValueError(f"{where}: dtype {dtype} is not allowed")
                    if header + need != info.file_size:
                        raise ValueError(f"{where}: its header declares shape {shape} of "
                                         f"{dtype} ({need} bytes) but it holds "
                                         f"{info.file_size - header} bytes")
                    fh.seek(0)
                    array = np.lib.format.read_array(fh, allow_pickle=False)
                    if bits:
                        out[name[:-len(_BF16_SUFFIX + ".npy")]] = array.view(dt.bfloat16.np)
                    else:
                        out[name[:-len(".npy")]] = array
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, KeyError,
            NotImplementedError, RuntimeError, SyntaxError, TypeError) as e:
        raise ValueError(f"{path}: not a valid array file ({type(e).__name__}: {e})") from None
    return out


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}


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
    document = os.path.join(path, "graph.json") if os.path.isdir(path) else path
    try:
        if os.path.isdir(path):
            with open(document, encoding="utf-8") as f:
                text = f.read()
            arrays = read_npz(os.path.join(path, "arrays.npz"))
        else:
            arrays = read_npz(path)
            if _JSON_KEY not in arrays:
                raise ValueError(f"not a saved stagecraft graph (no {_JSON_KEY} entry).")
            text = arrays.pop(_JSON_KEY).tobytes().decode("utf-8")
        return loads(text, arrays)
    except (ValueError, OSError, EOFError, UnicodeDecodeError, zipfile.BadZipFile) as e:
        if isinstance(e, FileNotFoundError):
            raise
        message = str(e)  # read_npz's errors name their file already
        raise ValueError(message if message.startswith(path) else f"{document}: {message}") \
            from None


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
        if isinstance(v, complex):
            return {"complex": [self.attr(v.real), self.attr(v.imag)]}
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


# ------------------------------------------------------------------------ decoding
#
# The document is untrusted input (it may come from a crafted file): every field is checked
# against the schema below before it is used, and a violation raises ValueError naming the
# field (``graph.eqns[3].outputs[0].type.shape[1]``), what is wrong and how to fix it.

MAX_TEXT = 1 << 16  # longest name, hint, location or string attribute accepted
MAX_DIM = 2 ** 62  # larger dims cannot be the size of any real array
_DTYPES = {d.short: d for d in dt.ALL}  # the spellings ``dumps`` writes, and only those
_NP_SCALARS = frozenset(d.np.name for d in dt.ALL)
_SPECIAL_FLOATS = frozenset(("nan", "inf", "-inf"))
# Attributes of the non-primitive equations that can be written (the primitives' come from the
# op table, these from the structural ops' table).
STRUCTURAL_ATTRS: dict[str, frozenset] = {n: frozenset(r.attrs) for n, r in STRUCTURAL.items()
                                          if r.serializable}
# The attributes whose values may hold strings (data only: never pasted into source).
STRING_ATTRS = frozenset({"mode", "spec", "name", "message", "template", "sep", "end",
                          "stream", "side"})


def _is_int(v: Any) -> bool:
    return type(v) is int and -2 ** 63 <= v < 2 ** 64


def _tuple_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: type(v) is tuple and all(ok(x) for x in v)


def _either(*oks: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: any(ok(x) for ok in oks for x in (v,))


def _is_none(v: Any) -> bool:
    return v is None


def _is_str(v: Any) -> bool:
    return type(v) is str


_INTS = _tuple_of(_is_int)
_ITEMS = _tuple_of(_tuple_of(_either(_is_none, _is_int, _is_str)))
# The value each attribute may hold, by attribute name (the op table's attributes and the
# structural ops'): (a description for messages, the check).
ATTR_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    **{k: ("an int", _is_int) for k in ("batch_dims", "depth", "num_columns", "num_rows",
                                         "carry")},
    **{k: ("true or false", lambda v: type(v) is bool)
       for k in ("descending", "exclusive", "keepdims", "reverse", "transpose_a", "transpose_b",
                 "sorted", "adjoint", "full_matrices", "lower")},
    **{k: ("a dtype", lambda v: isinstance(v, dt.DType))
       for k in ("dtype", "out_type", "output_type")},
    **{k: ("a tuple of ints", _INTS) for k in ("dims", "multiples", "perm", "shape")},
    **{k: ("a tuple of ints", _INTS) for k in ("strides", "dilations", "filter_shape")},
    "groups": ("an int", _is_int),
    "ksize": ("a tuple of ints", _INTS),
    "padding": ("a tuple of (before, after) int pairs", _tuple_of(_INTS)),
    "input_shape": ("a tuple of ints and nulls", _tuple_of(_either(_is_none, _is_int))),
    "axes": ("null or a tuple of ints", _either(_is_none, _INTS)),
    "axis": ("null, an int or a tuple of ints", _either(_is_none, _is_int, _INTS)),
    "static": ("a tuple of ints and nulls", _tuple_of(_either(_is_none, _is_int))),
    "summarize": ("null or an int", _either(_is_none, _is_int)),
    "spec": ("a tuple of tuples of strings, ints and nulls", _ITEMS),
    "template": ("a tuple of tuples of strings, ints and nulls", _ITEMS),
    **{k: ("a string", _is_str) for k in ("mode", "name", "message", "sep", "end", "stream",
                                          "side")},
    "value": ("an array", lambda v: isinstance(v, np.ndarray)),
    "rank": ("an int", _is_int),  # the FFTs'
    "inverse": ("true or false", lambda v: type(v) is bool),
    "fft_length": ("a tuple of ints", _INTS),
}
# Strings that are printed as data rather than names (``tf.print``'s text) may hold line
# breaks; every other string from a file must be one printable line.
_MULTILINE_ATTRS = frozenset({"message", "template", "sep", "end"})


class DocumentError(ValueError):
    """A field of a graph document breaks the schema; ``field`` is its path."""

    def __init__(self, field: str, problem: str, advice: str = ""):
        super().__init__(f"field {field}: {problem}" + (f". {advice}" if advice else ""))
        self.field = field
        self.problem = problem  # what is wrong, without the advice (wrappers give their own)


def check_text(value: Any, field: str, multiline: bool = False, optional: bool = False) -> Any:
    """``value`` if it is a string of at most ``MAX_TEXT`` characters that is one printable
    line (``multiline``: line breaks and tabs allowed too); ``None`` passes when ``optional``.

    >>> check_text("x_1", "hint")
    'x_1'
    >>> try:
    ...     check_text("a\\nb", "graph.params[0].hint")
    ... except DocumentError as e:
    ...     print(e)
    field graph.params[0].hint: expected one printable line of text, got str 'a\\nb'
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise DocumentError(field, f"expected a string{' or null' if optional else ''}, got "
                                   f"{_show(value)}")
    if len(value) > MAX_TEXT:
        raise DocumentError(field, f"a string of {len(value)} characters is longer than the "
                                   f"{MAX_TEXT} allowed")
    body = value.replace("\n", "").replace("\t", "") if multiline else value
    if not body.isprintable():
        what = "printable text" if multiline else "one printable line of text"
        raise DocumentError(field, f"expected {what}, got {_show(value)}")
    return value


def check_int(value: Any, field: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` if it is a JSON integer (not a bool) in ``[low, high]``."""
    if type(value) is not int:
        raise DocumentError(field, f"expected an integer, got {_show(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f">= {low}"
        raise DocumentError(field, f"expected an integer {bounds}, got {value}")
    return value


def check_dims(value: Any, field: str) -> tuple | None:
    """A shape: null (unknown rank) or a list of dims, each a non-negative int or null."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > 64:
        raise DocumentError(field, f"expected a list of at most 64 dims or null, got "
                                   f"{_show(value)}")
    return tuple(None if d is None else check_int(d, f"{field}[{i}]", 0, MAX_DIM)
                 for i, d in enumerate(value))


def check_dtype(value: Any, field: str) -> dt.DType:
    """The dtype a short name from the dtype table (``f32``, ``i64``, ``bool``...) spells."""
    if not isinstance(value, str) or value not in _DTYPES:
        raise DocumentError(field, f"expected a dtype, one of {sorted(_DTYPES)}, got "
                                   f"{_show(value)}")
    return _DTYPES[value]


def check_object(value: Any, field: str, required: tuple, optional: tuple = ()) -> dict:
    """``value`` if it is a JSON object with the ``required`` keys and no keys outside
    ``required + optional``."""
    if not isinstance(value, dict):
        raise DocumentError(field, f"expected an object, got {_show(value)}")
    missing = [k for k in required if k not in value]
    if missing:
        raise DocumentError(field, f"the object lacks the key(s) {missing}")
    extra = sorted(str(k) for k in value if k not in required and k not in optional)
    if extra:
        raise DocumentError(field, f"unexpected key(s) {extra}")
    return value


def check_list(value: Any, field: str, limit: int = 1 << 24) -> list:
    """``value`` if it is a JSON array of at most ``limit`` items."""
    if not isinstance(value, list):
        raise DocumentError(field, f"expected a list, got {_show(value)}")
    if len(value) > limit:
        raise DocumentError(field, f"a list of {len(value)} items is longer than the {limit} "
                                   f"allowed")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    kind = "null" if value is None else type(value).__name__
    return f"{kind} {text if len(text) <= 60 else text[:57] + '...'}"


class _Decoder:
    """Builds a graph from a document, checking each field before it is used."""

    def __init__(self, arrays: dict[str, np.ndarray]):
        self.arrays = arrays
        self.values: dict[int, Value] = {}
        self.depth = 0

    def graph(self, d: Any, at: str) -> Graph:
        self.depth += 1
        if self.depth > 64:
            raise DocumentError(at, "regions are nested more than 64 deep")
        check_object(d, at, ("name", "params", "eqns", "results"))
        name = check_text(d["name"], f"{at}.name")
        params = [self.define(p, f"{at}.params[{i}]")
                  for i, p in enumerate(check_list(d["params"], f"{at}.params"))]
        eqns = [self.eqn(e, f"{at}.eqns[{i}]")
                for i, e in enumerate(check_list(d["eqns"], f"{at}.eqns"))]
        results = tuple(self.operand(r, f"{at}.results[{i}]")
                        for i, r in enumerate(check_list(d["results"], f"{at}.results")))
        self.depth -= 1
        return Graph(name, tuple(params), tuple(eqns), results)

    def define(self, d: Any, at: str) -> Value:
        check_object(d, at, ("id", "type", "hint", "ref"))
        t = check_object(d["type"], f"{at}.type", ("dtype", "shape"))
        ref = d["ref"]
        if type(ref) is not bool:
            raise DocumentError(f"{at}.ref", f"expected true or false, got {_show(ref)}")
        v = Value(TensorType(check_dtype(t["dtype"], f"{at}.type.dtype"),
                             check_dims(t["shape"], f"{at}.type.shape")),
                  check_text(d["hint"], f"{at}.hint", optional=True), ref)
        key = check_int(d["id"], f"{at}.id", 0)
        if key in self.values:
            raise DocumentError(f"{at}.id", f"value id {key} is defined twice")
        self.values[key] = v
        return v

    def operand(self, d: Any, at: str) -> Any:
        if isinstance(d, dict) and "literal" in d:
            check_object(d, at, ("literal", "dtype"))
            value = self.attr(d["literal"], f"{at}.literal")
            dtype = check_dtype(d["dtype"], f"{at}.dtype")
            if value is None or type(value) not in (bool, int, float, complex) or \
                    type(value) is complex and not dtype.is_complex:
                raise DocumentError(f"{at}.literal", f"expected a number or a bool (complex "
                                                     f"only for a complex dtype), got "
                                                     f"{_show(value)}")
            return Literal(value, TensorType(dtype, ()))
        check_object(d, at, ("value",))
        key = check_int(d["value"], f"{at}.value", 0)
        try:
            return self.values[key]
        except KeyError:
            raise DocumentError(f"{at}.value", f"value id {key} is used before it is "
                                               f"defined") from None

    def eqn(self, d: Any, at: str) -> Eqn:
        check_object(d, at, ("op", "inputs", "outputs", "attrs", "regions", "loc"))
        op = d["op"]
        if not isinstance(op, str) or (op not in OPS and op not in STRUCTURAL_ATTRS):
            raise DocumentError(f"{at}.op", f"unknown op {_show(op)}: not in the op table nor "
                                            f"a structural op that can be loaded")
        allowed = STRUCTURAL_ATTRS[op] if op in STRUCTURAL_ATTRS else frozenset(OPS[op].attrs)
        inputs = tuple(self.operand(x, f"{at}.inputs[{i}]")
                       for i, x in enumerate(check_list(d["inputs"], f"{at}.inputs")))
        attrs = []
        for i, pair in enumerate(check_list(d["attrs"], f"{at}.attrs")):
            where = f"{at}.attrs[{i}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise DocumentError(where, f"expected a [name, value] pair, got {_show(pair)}")
            key = pair[0]
            if not isinstance(key, str) or key not in allowed:
                raise DocumentError(f"{where}[0]", f"the op '{op}' has no attribute "
                                                   f"{_show(key)} (its attributes: "
                                                   f"{sorted(allowed)})")
            if any(k == key for k, _ in attrs):
                raise DocumentError(f"{where}[0]", f"attribute {key!r} is given twice")
            value = self.attr(pair[1], f"{where}[1]", key)
            what, ok = ATTR_KINDS.get(key, ("a known attribute", lambda v: False))
            if not ok(value):
                raise DocumentError(f"{where}[1]", f"attribute {key!r} of the op '{op}' must be "
                                                   f"{what}, got {_show(value)}")
            attrs.append((key, value))
        regions = tuple(self.graph(r, f"{at}.regions[{i}]")
                        for i, r in enumerate(check_list(d["regions"], f"{at}.regions")))
        outputs = tuple(self.define(o, f"{at}.outputs[{i}]")
                        for i, o in enumerate(check_list(d["outputs"], f"{at}.outputs")))
        return Eqn(op, inputs, outputs, tuple(attrs), regions,
                   check_text(d["loc"], f"{at}.loc", optional=True))

    def attr(self, v: Any, at: str, key: str = "") -> Any:
        """An attribute value: None, bool, int, finite float, a string where attribute ``key``
        may hold one, or an encoded dtype / array / NumPy scalar / tuple / list / dict."""
        if v is None or type(v) in (bool, int):
            return v
        if type(v) is float:
            if not math.isfinite(v):
                raise DocumentError(at, f"non-finite float {v!r} must be encoded as "
                                        f"{{\"float\": ...}}")
            return v
        if isinstance(v, str):
            if key not in STRING_ATTRS:
                raise DocumentError(at, f"attribute {key!r} cannot hold a string, got "
                                        f"{_show(v)}")
            return check_text(v, at, multiline=key in _MULTILINE_ATTRS)
        if not isinstance(v, dict) or len(v) not in (1, 2):
            raise DocumentError(at, f"unknown attribute encoding {_show(v)}")
        if "float" in v:
            check_object(v, at, ("float",))
            if v["float"] not in _SPECIAL_FLOATS:
                raise DocumentError(f"{at}.float", f"expected one of {sorted(_SPECIAL_FLOATS)}, "
                                                   f"got {_show(v['float'])}")
            return float(v["float"])
        if "dtype" in v:
            check_object(v, at, ("dtype",))
            return check_dtype(v["dtype"], f"{at}.dtype")
        if "complex" in v:
            check_object(v, at, ("complex",))
            parts = [self.attr(p, f"{at}.complex[{k}]")
                     for k, p in enumerate(check_list(v["complex"], f"{at}.complex", 2))]
            if len(parts) != 2 or any(type(p) not in (int, float) for p in parts):
                raise DocumentError(f"{at}.complex", f"expected [real, imag] numbers, got "
                                                     f"{_show(v['complex'])}")
            return complex(*parts)
        if "array" in v:
            return self.array(v, at)
        if "scalar" in v:
            check_object(v, at, ("scalar", "np"))
            if v["np"] not in _NP_SCALARS:
                raise DocumentError(f"{at}.np", f"expected a NumPy dtype name, one of "
                                                f"{sorted(_NP_SCALARS)}, got {_show(v['np'])}")
            item = self.attr(v["scalar"], f"{at}.scalar")
            if type(item) not in (bool, int, float, complex) or \
                    type(item) is complex and not dt.as_dtype(v["np"]).is_complex:
                raise DocumentError(f"{at}.scalar", f"expected a number (complex only for a "
                                                    f"complex dtype), got {_show(item)}")
            try:
                with np.errstate(all="raise"):
                    return dt.as_dtype(v["np"]).np.type(item)  # (bfloat16: ml_dtypes')
            except (OverflowError, FloatingPointError, ValueError) as e:
                raise DocumentError(f"{at}.scalar", f"{item!r} does not fit {v['np']}: {e}") \
                    from None
        for kind in ("tuple", "list"):
            if kind in v:
                check_object(v, at, (kind,))
                items = check_list(v[kind], f"{at}.{kind}", 1 << 16)
                out = [self.attr(x, f"{at}.{kind}[{i}]", key) for i, x in enumerate(items)]
                return tuple(out) if kind == "tuple" else out
        if "dict" in v:
            check_object(v, at, ("dict",))
            out: dict = {}
            for i, pair in enumerate(check_list(v["dict"], f"{at}.dict", 1 << 16)):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise DocumentError(f"{at}.dict[{i}]", f"expected a [key, value] pair, got "
                                                          f"{_show(pair)}")
                k = self.attr(pair[0], f"{at}.dict[{i}][0]", key)
                if isinstance(k, (list, dict, np.ndarray)):
                    raise DocumentError(f"{at}.dict[{i}][0]", f"unhashable key {_show(k)}")
                out[k] = self.attr(pair[1], f"{at}.dict[{i}][1]", key)
            return out
        raise DocumentError(at, f"unknown attribute encoding {_show(v)}")

    def array(self, v: dict, at: str) -> np.ndarray:
        check_object(v, at, ("array",), ("digest",))
        name = v["array"]
        if not isinstance(name, str) or name not in self.arrays:
            raise DocumentError(f"{at}.array", f"array {name!r} is missing from the arrays")
        a = self.arrays[name]
        if not isinstance(a, np.ndarray) or a.dtype not in _ARRAY_DTYPES:
            raise DocumentError(f"{at}.array", f"array {name!r} has dtype "
                                               f"{getattr(a, 'dtype', type(a).__name__)}, not "
                                               f"one of the dtype table's")
        if "digest" in v:
            digest = v["digest"]
            if not isinstance(digest, str) or not _HEX.fullmatch(digest):
                raise DocumentError(f"{at}.digest", f"expected a hexadecimal digest, got "
                                                    f"{_show(digest)}")
            out = DigestArray(digest, a.dtype, a.shape)
            out[...] = a
            return out
        return np.array(a)


_ARRAY_DTYPES = frozenset(d.np for d in dt.ALL)
_HEX = re.compile(r"[0-9a-f]{1,128}")
