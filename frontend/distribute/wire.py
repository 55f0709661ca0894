"""What travels between the main program and a worker: plain data only (strings, ints, tuples,
lists and NumPy arrays). An eager op is sent as a one-equation graph document
(``stagecraft.ir.serialize``), which the worker decodes with the same validation as a graph
read from disk: nothing received is unpickled by stagecraft or pasted into code. (Ray carries
these values with its own serializer.)

Arguments of ops and calls are tagged tuples (``array``: as ``pack`` sends it):

* ``("h", id)``: a tensor the worker holds;
* ``("p", id, array)``: a value to store under ``id`` and use (a copy from elsewhere);
* ``("v", array)``: a value used once;
* ``("var", id)``: a variable the worker holds;
* ``("lv", array)``: the value of a variable of the main program, which the call may assign
  (the reply then carries the new value).
"""
from __future__ import annotations

import functools
import hashlib
import math
from typing import Any, Sequence

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir import serialize
from stagecraft.ir.graph import GraphBuilder
from stagecraft.ir.ops import OPS
from stagecraft.ir.ops.opdef import OpDef
from stagecraft.ir.types import TensorType

# Results at most this big come back in the reply of the op that computed them (one round
# trip for the op and the read); larger ones stay on the worker until fetched.
INLINE_BYTES = 64 * 1024


def encode_op(op: OpDef, attrs: dict, in_types: Sequence[TensorType],
              out_types: Sequence[TensorType]) -> tuple[str, dict]:
    """The document of one eager op: a graph with one parameter per input and the op's single
    equation (cached: a loop sends the same few documents again and again).

    >>> from stagecraft.ir import dtypes
    >>> t = TensorType(dtypes.float32, (2,))
    >>> text, arrays = encode_op(OPS["add"], {}, [t, t], [t])
    >>> decode_op(text, arrays)[0].name
    'add'
    """
    try:
        key = (op.name, tuple(sorted(attrs.items())), tuple(in_types), tuple(out_types))
        hash(key)
    except TypeError:  # an attribute holds an array: not cached
        return _encode(op, attrs, tuple(in_types), tuple(out_types))
    return _encode_cached(key, op)


@functools.lru_cache(maxsize=4096)
def _encode_cached(key: tuple, op: OpDef) -> tuple[str, dict]:
    return _encode(op, dict(key[1]), key[2], key[3])


def _encode(op: OpDef, attrs: dict, in_types: tuple, out_types: tuple) -> tuple[str, dict]:
    b = GraphBuilder(op.name)
    params = [b.param(t) for t in in_types]
    outs = b.add(op.name, params, out_types, attrs)
    return serialize.dumps(b.build(list(outs)))


_decoded: dict[str, tuple[OpDef, dict]] = {}


def decode_op(text: str, arrays: dict) -> tuple[OpDef, dict]:
    """The op and attributes of an ``encode_op`` document, validated (ValueError names what
    is wrong); cached by the document's text when it holds no arrays."""
    hit = _decoded.get(text) if not arrays else None
    if hit is not None:
        return hit
    graph = serialize.loads(text, arrays)
    if len(graph.eqns) != 1 or graph.eqns[0].op not in OPS:
        raise ValueError("Not an eager op document: expected exactly one equation of a "
                         "primitive op.")
    eqn = graph.eqns[0]
    out = (OPS[eqn.op], dict(eqn.attrs))
    if not arrays and len(_decoded) < 4096:
        _decoded[text] = out
    return out


def graph_digest(text: str, arrays: dict) -> str:
    """A content hash of a serialized graph (its document and arrays): the key under which
    workers cache the compiled function.

    >>> graph_digest("{}", {}) == graph_digest("{}", {})
    True
    """
    h = hashlib.sha256(text.encode())
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"|{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def result_entry(value: Any, host: Any = np.asarray) -> tuple:
    """How one result (a NumPy or device array; ``host`` copies it to NumPy) is described in
    a reply: (dtype string, shape, the value's bytes when small, else None)."""
    shape = tuple(value.shape)
    small = host(value).tobytes() if math.prod(shape) * value.dtype.itemsize <= INLINE_BYTES \
        else None
    return value.dtype.str, shape, small


def pack(value: np.ndarray) -> Any:
    """An array as it travels: small ones as (dtype string, shape, bytes), which Ray carries
    several times faster than an array object; large ones as the array (which Ray moves
    without copying).

    >>> unpack(pack(np.arange(3, dtype=np.int32)), "x").tolist()
    [0, 1, 2]
    """
    value = np.asarray(value)
    if value.nbytes > INLINE_BYTES:
        return value
    return value.dtype.str, value.shape, value.tobytes()


def unpack(value: Any, where: str) -> np.ndarray:
    """The array ``pack`` sent (validated: a stagecraft dtype and bytes matching the shape)."""
    if type(value) is not tuple:
        return check_array(value, where)
    try:
        dtype_str, shape, data = value
        dtype = np.dtype(dtype_str)
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: not a packed array ({e}).") from None
    if dtype not in _DTYPES or type(data) is not bytes or \
            len(data) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"{where}: a packed array's dtype {dtype}, shape {shape} and "
                         f"{len(data) if type(data) is bytes else type(data).__name__} bytes "
                         f"do not agree.")
    return np.frombuffer(data, dtype).reshape(shape).copy()  # (writable, like other values)


_DTYPES = frozenset(d.np for d in dt.ALL)


def check_array(value: Any, where: str) -> np.ndarray:
    """A received value as an array of one of stagecraft's dtypes (anything else, such as an
    object array that could hold arbitrary Python objects, is refused with ValueError).

    >>> check_array(np.float32(1.5), "x").shape
    ()
    """
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype not in _DTYPES:
        raise ValueError(f"{where}: expected a NumPy array of one of stagecraft's dtypes, got "
                         f"{getattr(value, 'dtype', type(value).__name__)}.")
    return value
