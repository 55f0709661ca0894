"""The SavedModel directory layout, its versioned JSON document and the fingerprint that
guards every file against damage.

``<export_dir>/saved_model.json`` holds the object graph and the concrete functions (IR graphs
as JSON); ``saved_model.npz`` their arrays (graph constants, captured tensors; read with
``allow_pickle=False``); ``variables/variables.*`` the variable values as a checkpoint;
``assets/`` is empty; ``fingerprint.json`` the SHA-256 of every other file. Nothing in a
SavedModel is code: loading one parses JSON and NumPy arrays only.

The document (format ``stagecraft.saved_model``, version 1)::

    {"format": "stagecraft.saved_model", "version": 1,
     "nodes": [                                   # node 0 is the saved object
       {"kind": "user_object", "type_name": "Net",
        "children": [{"name": "kernel", "node": 1}, {"name": "__call__", "node": 2}]},
       {"kind": "variable", "dtype": "f32", "shape": [2, 2], "value_shape": [2, 2],
        "trainable": true, "name": "Variable", "children": []},
       {"kind": "function", "name": "__call__", "concrete_functions": [0],
        "input_signature": null | <specs>, "python_signature": [{"name", "kind", "default"}],
        "children": []},
       {"kind": "list" | "tuple" | "dict", "children": [...]}],  # dict edges add "key"
     "concrete_functions": [
       {"name", "graph": <ir.serialize document>, "graph_arrays": {key: npz name},
        "args": <trace-cache key of the positional arguments>, "kwargs": <of the keywords>,
        "arg_names": [...], "outputs": <nest structure with {"slot": i} leaves>,
        "num_inputs": n, "captures": [npz names], "variables": [node ids, null for a
         random op site], "random_sites": [[op seed or null, index], one per null]}],
     "signatures": {"serving_default": {"concrete_function": i,
                    "inputs": [{"name", "shape", "dtype"}],
                    "outputs": {"dict": [keys]} | {"flat": ["output_0", ...]}}}}

Edge names are the checkpoint's (``stagecraft.state.checkpoint.graph.children``) plus the names of
the ``tf.function`` attributes. A graph's parameters are its ``num_inputs`` inputs, then the
captured tensors, then the variables, in that order.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any

import numpy as np

from stagecraft.ir import durable
from stagecraft.ir.errors import NotFoundError
from stagecraft.ir.dtypes import as_dtype
from stagecraft.ir.serialize import read_npz, savez

FORMAT = "stagecraft.saved_model"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
FINGERPRINT_FORMAT = "stagecraft.saved_model.fingerprint"

DOCUMENT = "saved_model.json"
ARRAYS = "saved_model.npz"
FINGERPRINT = "fingerprint.json"
VARIABLES_DIR = "variables"
VARIABLES_PREFIX = os.path.join(VARIABLES_DIR, "variables")  # the checkpoint's file prefix
ASSETS_DIR = "assets"


class CorruptSavedModelError(ValueError):
    """A SavedModel file is damaged, truncated, missing a part, or from a newer stagecraft
    (stagecraft-only); the message names the file."""


# ------------------------------------------------------------------ literals

def encode_literal(value: Any) -> Any:
    """A Python constant (None, bool, int, float, str, bytes, NumPy scalar) as JSON data that
    ``decode_literal`` turns back into an equal value of the same type.

    >>> encode_literal(2.0), encode_literal(float("inf")), encode_literal(b"ab")
    (2.0, {'float': 'inf'}, {'bytes': '6162'})
    >>> decode_literal(encode_literal(np.float32(1.5))).dtype.name
    'float32'
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if isinstance(value, np.generic):
        return {"np": value.dtype.name, "value": encode_literal(value.item())}
    raise TypeError(f"{type(value).__name__} value {value!r} is not a Python constant a "
                    f"SavedModel can store (None, bool, int, float, str, bytes or a NumPy "
                    f"scalar).")


def decode_literal(data: Any) -> Any:
    """The value ``encode_literal`` encoded (see there)."""
    if not isinstance(data, dict):
        if isinstance(data, (list,)):
            raise CorruptSavedModelError(f"unexpected list {data!r} where a constant was "
                                         f"expected")
        return data
    try:
        if "float" in data:
            return float(data["float"])
        if "bytes" in data:
            return bytes.fromhex(data["bytes"])
        if "np" in data:
            with np.errstate(all="raise"):
                return as_dtype(data["np"]).np.type(decode_literal(data["value"]))
    except (TypeError, ValueError, OverflowError, FloatingPointError) as e:
        raise CorruptSavedModelError(f"bad constant {data!r}: {e}"[:300]) from None
    raise CorruptSavedModelError(f"unknown constant encoding {data!r}"[:300])


# --------------------------------------------------------------- fingerprint

def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_fingerprint(export_dir: str, files: list[str]) -> None:
    """Writes ``fingerprint.json``: the SHA-256 of each of ``files`` (paths relative to
    ``export_dir``); the document's is the SavedModel's identity. ``check_fingerprint``
    verifies them.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_text(os.path.join(d, DOCUMENT), "{}")
    >>> write_fingerprint(d, [DOCUMENT])
    >>> check_fingerprint(d)["saved_model_checksum"][:12]
    '44136fa355b3'
    >>> write_text(os.path.join(d, DOCUMENT), "{ }")
    >>> check_fingerprint(d)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    stagecraft.state.saved_model.format.CorruptSavedModelError: .../saved_model.json: corrupted file: ...
    """
    digests = {f: sha256_of(os.path.join(export_dir, f)) for f in files}
    doc = {"format": FINGERPRINT_FORMAT, "version": VERSION,
           "saved_model_checksum": digests[DOCUMENT], "files": digests}
    write_text(os.path.join(export_dir, FINGERPRINT), json.dumps(doc, indent=1, sort_keys=True))


def check_fingerprint(export_dir: str) -> dict:
    """Verifies every file listed in ``fingerprint.json`` against its SHA-256; returns the
    fingerprint document. Raises CorruptSavedModelError / NotFoundError naming the file."""
    path = os.path.join(export_dir, FINGERPRINT)
    doc = read_json(path, FINGERPRINT_FORMAT, "fingerprint")
    files = doc.get("files")
    if not isinstance(files, dict) or DOCUMENT not in files:
        raise CorruptSavedModelError(f"{path}: corrupted fingerprint: it lists no checksum "
                                     f"for {DOCUMENT}. Save the SavedModel again.")
    for name, digest in files.items():
        if not is_relative_path(name) or not isinstance(digest, str) or \
                len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise CorruptSavedModelError(
                f"{path}: corrupted fingerprint: field files[{name!r}]: expected a path inside "
                f"the SavedModel (no '..', no absolute path) and a SHA-256 in hex, got "
                f"{digest!r}"[:400] + ". Save the SavedModel again.")
    for name, digest in sorted(files.items()):
        file = os.path.join(export_dir, name)
        if not os.path.isfile(file):
            raise NotFoundError(f"{file}: file of the SavedModel is missing (listed in "
                                f"{FINGERPRINT}). The directory was modified after it was "
                                f"saved; save the SavedModel again.")
        if sha256_of(file) != digest:
            raise CorruptSavedModelError(
                f"{file}: corrupted file: its SHA-256 does not match the one recorded in "
                f"{FINGERPRINT} when the SavedModel was written (the file was truncated, "
                f"damaged or edited). Save the SavedModel again.")
    return doc


# ------------------------------------------------------------------ files

def is_relative_path(name: object) -> bool:
    """Whether ``name`` is a relative path that stays inside its directory: '/'-separated
    parts, none empty, ``.``, ``..`` or holding a backslash or a control character.

    >>> is_relative_path("variables/variables.index"), is_relative_path("../x")
    (True, False)
    >>> is_relative_path("/etc/passwd"), is_relative_path("a\\\\b")
    (False, False)
    """
    if not isinstance(name, str) or not name or len(name) > 1024 or not name.isprintable():
        return False
    return all(part not in ("", ".", "..") and "\\" not in part for part in name.split("/"))


def write_text(path: str, text: str) -> None:
    durable.write_synced(path, text.encode("utf-8"))


def write_arrays(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` as an ``.npz``; object arrays are refused, since NumPy would pickle
    them and a SavedModel must load without unpickling."""
    for name, a in arrays.items():
        if a.dtype.hasobject:
            raise ValueError(f"saved_model.save: array {name!r} holds Python objects "
                             f"(dtype {a.dtype}), which a SavedModel cannot store without "
                             f"pickling; only numeric and boolean tensors can be saved.")
    durable.write_synced(path, lambda f: savez(f, arrays))


def read_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of ``saved_model.npz`` (never unpickled: object arrays are refused)."""
    try:
        return read_npz(path)
    except (OSError, ValueError) as e:
        detail = str(e).removeprefix(f"{path}: ")
        raise CorruptSavedModelError(f"{path}: corrupted array file: {detail}. Save the "
                                     f"SavedModel again.") from None


def read_json(path: str, fmt: str, what: str) -> dict:
    """Reads and checks a versioned JSON document (format name and supported version)."""
    if not os.path.isfile(path):
        raise NotFoundError(f"SavedModel file does not exist at: {path}. Pass the directory "
                            f"given to tf.saved_model.save (it contains {DOCUMENT}).")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        reason = "nested too deeply" if isinstance(e, RecursionError) else e
        raise CorruptSavedModelError(f"{path}: corrupted {what} file: not valid JSON "
                                     f"({reason}). Save the SavedModel again.") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CorruptSavedModelError(f"{path}: not a stagecraft {what} file (format "
                                     f"{found!r}, expected {fmt!r}).")
    version = doc.get("version")
    if version not in SUPPORTED_VERSIONS:
        newer = isinstance(version, int) and version > max(SUPPORTED_VERSIONS)
        raise CorruptSavedModelError(
            f"{path}: {what} format version {version!r} is not supported: this stagecraft reads "
            f"version(s) {', '.join(map(str, SUPPORTED_VERSIONS))}. "
            + ("It was written by a newer stagecraft; upgrade stagecraft to load it."
               if newer else "Save the SavedModel again."))
    return doc
