"""The schema of a checkpoint's index content and object graph, checked field by field before
use (a checkpoint is untrusted input: its CRC-32 only detects damage, since whoever crafts the
files can recompute it).

Violations raise ``DataLossError`` whose first line names the index file and the field
(``tensors['x'].shape[0]``), says what is wrong and how to recover. Sizes are bounded by the
file's own: every tensor's bytes lie inside the data file (``offset + length <= data_size``)
and its length is exactly what its dtype and shape need, so nothing allocates more than the
file holds.

>>> try:  # doctest: +ELLIPSIS
...     check_index({"write_id": "00" * 16, "data_file": "p.data-00000-of-00001",
...                  "data_size": 40, "document": {}, "tensors": {
...                      "x": {"dtype": "float32", "shape": [-2], "offset": 32, "length": 8,
...                            "crc32": 0}}}, "p.index")
... except Exception as e:
...     print(str(e).splitlines()[0])
Checkpoint index 'p.index' field tensors['x'].shape[0]: expected an integer between 0 and ...
"""
from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from stagecraft.ir.errors import DataLossError
from stagecraft.ir.serialize import (DocumentError, check_int, check_list, check_object,
                                     check_text)

# The data file's header (magic, version, padding, write id: 32 bytes); format.py writes it.
HEADER = struct.Struct("<8sI4x16s")
HEADER_SIZE = HEADER.size
MAX_SIZE = 2 ** 62
# dtypes a checkpoint can hold (numbers and bools; no object or string arrays)
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
_ADVICE = "The index is damaged or was crafted; restore an older checkpoint or write it again."


def check_index(content: Any, path: str) -> dict:
    """``content`` (an index's verified ``content``) if every field fits the schema, else
    ``DataLossError`` naming ``path`` and the field."""
    try:
        _check_index(content)
    except DocumentError as e:
        raise DataLossError(f"Checkpoint index {path!r} field {e.field}: {e.problem}. "
                            f"{_ADVICE}") from None
    return content


def _check_index(content: Any) -> None:
    check_object(content, "content", ("write_id", "data_size", "tensors", "document"),
                 ("data_file",))
    write_id = check_text(content["write_id"], "write_id")
    if len(write_id) != 32 or any(c not in "0123456789abcdef" for c in write_id):
        raise DocumentError("write_id", f"expected 32 lowercase hex digits, got {write_id!r}")
    if "data_file" in content:
        check_text(content["data_file"], "data_file")
    data_size = check_int(content["data_size"], "data_size", HEADER_SIZE, MAX_SIZE)
    tensors = content["tensors"]
    if not isinstance(tensors, dict):
        raise DocumentError("tensors", f"expected an object, got {type(tensors).__name__}")
    for key, meta in tensors.items():
        at = f"tensors[{key!r}]"
        check_text(key, at, multiline=True)  # object paths from dict keys, never file paths
        check_object(meta, at, ("dtype", "shape", "offset", "length", "crc32"))
        if meta["dtype"] not in DTYPES:
            raise DocumentError(f"{at}.dtype", f"expected one of {list(DTYPES)}, got "
                                               f"{meta['dtype']!r}"[:300])
        shape = check_list(meta["shape"], f"{at}.shape", 64)
        for i, d in enumerate(shape):
            check_int(d, f"{at}.shape[{i}]", 0, MAX_SIZE)
        offset = check_int(meta["offset"], f"{at}.offset", HEADER_SIZE, data_size)
        length = check_int(meta["length"], f"{at}.length", 0, data_size - offset)
        need = math.prod(shape) * np.dtype(meta["dtype"]).itemsize
        if length != need:
            raise DocumentError(f"{at}.length", f"{length} bytes, but dtype {meta['dtype']} and "
                                                f"shape {shape} need {need}")
        check_int(meta["crc32"], f"{at}.crc32", 0, 2 ** 32 - 1)
    if not isinstance(content["document"], dict):
        raise DocumentError("document", f"expected an object, got "
                                        f"{type(content['document']).__name__}")


def check_object_graph(graph: Any, path: str, tensor_keys: Any) -> list[dict]:
    """The nodes of a checkpoint's object graph if every field fits the schema (edges and slot
    entries point at existing nodes, value keys at saved tensors), else ``DataLossError``
    naming ``path`` and the field."""
    try:
        return _check_object_graph(graph, tensor_keys)
    except DocumentError as e:
        raise DataLossError(f"Checkpoint index {path!r} field document.object_graph."
                            f"{e.field}: {e.problem}. {_ADVICE}") from None


def _check_object_graph(graph: Any, tensor_keys: Any) -> list[dict]:
    check_object(graph, "(graph)", ("nodes",))
    nodes = check_list(graph["nodes"], "nodes")
    if not nodes:
        raise DocumentError("nodes", "the object graph has no nodes (node 0 is the root)")
    last = len(nodes) - 1
    for i, node in enumerate(nodes):
        at = f"nodes[{i}]"
        check_object(node, at, ("children", "attributes"), ("slot_variables",))
        for j, edge in enumerate(check_list(node["children"], f"{at}.children")):
            where = f"{at}.children[{j}]"
            if not isinstance(edge, list) or len(edge) != 2:
                raise DocumentError(where, f"expected [name, node id], got {edge!r}"[:300])
            check_text(edge[0], f"{where}[0]", multiline=True)  # attribute names, dict keys
            check_int(edge[1], f"{where}[1]", 0, last)
        attributes = node["attributes"]
        if not isinstance(attributes, dict):
            raise DocumentError(f"{at}.attributes", "expected an object")
        for name, key in attributes.items():
            check_text(name, f"{at}.attributes")
            if not isinstance(key, str) or key not in tensor_keys:
                raise DocumentError(f"{at}.attributes[{name!r}]", f"names the tensor {key!r}, "
                                                                  f"which the checkpoint does "
                                                                  f"not hold"[:300])
        for j, entry in enumerate(check_list(node.get("slot_variables", []),
                                             f"{at}.slot_variables")):
            where = f"{at}.slot_variables[{j}]"
            if not isinstance(entry, list) or len(entry) != 3:
                raise DocumentError(where, f"expected [variable node id, slot name, slot node "
                                           f"id], got {entry!r}"[:300])
            check_int(entry[0], f"{where}[0]", 0, last)
            check_text(entry[1], f"{where}[1]")
            check_int(entry[2], f"{where}[2]", 0, last)
    return nodes
