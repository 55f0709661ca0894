"""The schema of ``saved_model.json``, checked field by field before the loader uses any of
it (a SavedModel is untrusted input: the fingerprint only detects damage, since whoever
crafts the files can recompute it).

``check_document`` raises ``DocumentError`` naming the field
(``concrete_functions[0].args.list[1].tensor.shape[0]``), what is wrong with it and what
was expected; the graphs inside are checked by ``stagecraft.ir.serialize.loads`` with the
same kind of message. Types: dims are non-negative ints or null, dtypes come from the dtype
table, names are single printable lines, edge names hold no path separator, indices point
inside their lists, and array names refer to arrays of ``saved_model.npz``.

>>> check_document({"nodes": [{"kind": "list", "children": [{"name": "0", "node": 7}]}],
...                 "concrete_functions": []}, set())  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
DocumentError: field nodes[0].children[0].node: expected an integer between 0 and 0, got 7
"""
from __future__ import annotations

import keyword
from typing import Any, Collection

from stagecraft.ir import serialize
from stagecraft.ir.shapes import is_compatible
from stagecraft.ir.serialize import (DocumentError, check_dims, check_dtype, check_int,
                                     check_list, check_object, check_text)

NODE_KINDS = ("user_object", "variable", "function", "list", "tuple", "dict")
_SPECIAL_FLOATS = ("nan", "inf", "-inf")
_NP_SCALARS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
_MAX_PARAMETER_KIND = 4  # inspect.Parameter.VAR_KEYWORD


def check_document(doc: dict, arrays: Collection[str]) -> None:
    """Checks every field of a SavedModel document outside its graphs; ``arrays`` are the
    names in ``saved_model.npz``. Raises ``DocumentError`` for the first bad field."""
    check_object(doc, "document", ("format", "version", "nodes", "concrete_functions"),
                 ("signatures",))
    nodes = check_list(doc["nodes"], "nodes")
    if not nodes:
        raise DocumentError("nodes", "the SavedModel has no object nodes (node 0 is the saved "
                                     "object)")
    functions = check_list(doc["concrete_functions"], "concrete_functions")
    kinds = [_node_kind(n, f"nodes[{i}]") for i, n in enumerate(nodes)]
    if kinds[0] != "user_object":
        raise DocumentError("nodes[0].kind", f"the root node must be a user_object, got "
                                             f"{kinds[0]!r}")
    for i, node in enumerate(nodes):
        _check_node(node, f"nodes[{i}]", len(nodes), len(functions))
    for i, data in enumerate(functions):
        _check_concrete(data, f"concrete_functions[{i}]", kinds, arrays)
    signatures = doc.get("signatures")
    if signatures is not None:
        if not isinstance(signatures, dict):
            raise DocumentError("signatures", f"expected an object, got "
                                              f"{type(signatures).__name__}")
        for name, entry in signatures.items():
            at = f"signatures[{name!r}]"
            check_text(name, at)
            _check_signature(entry, at, len(functions))


def _node_kind(node: Any, at: str) -> str:
    if not isinstance(node, dict) or node.get("kind") not in NODE_KINDS:
        kind = node.get("kind") if isinstance(node, dict) else node
        raise DocumentError(f"{at}.kind", f"expected one of {list(NODE_KINDS)}, got {kind!r}"[:200])
    return node["kind"]


def _check_node(node: dict, at: str, n_nodes: int, n_functions: int) -> None:
    kind = node["kind"]
    if kind == "user_object":
        check_object(node, at, ("kind", "children"), ("type_name",))
        check_text(node.get("type_name", "object"), f"{at}.type_name")
    elif kind == "variable":
        check_object(node, at, ("kind", "dtype", "shape", "value_shape", "trainable", "name",
                                "children"))
        check_dtype(node["dtype"], f"{at}.dtype")
        shape = check_dims(node["shape"], f"{at}.shape")
        value_shape = check_dims(node["value_shape"], f"{at}.value_shape")
        if value_shape is None or None in value_shape:
            raise DocumentError(f"{at}.value_shape", "a variable's value has a known shape: "
                                                     "expected a list of non-negative ints")
        if not is_compatible(shape, value_shape):
            raise DocumentError(f"{at}.value_shape", f"{list(value_shape)} does not fit the "
                                                     f"variable's shape {node['shape']}")
        check_bool(node["trainable"], f"{at}.trainable")
        check_text(node["name"], f"{at}.name")
    elif kind == "function":
        check_object(node, at, ("kind", "name", "concrete_functions", "children"),
                     ("input_signature", "python_signature"))
        check_text(node["name"], f"{at}.name")
        for j, c in enumerate(check_list(node["concrete_functions"],
                                         f"{at}.concrete_functions")):
            check_int(c, f"{at}.concrete_functions[{j}]", 0, n_functions - 1)
        if node.get("input_signature") is not None:
            check_specs(node["input_signature"], f"{at}.input_signature")
        for j, p in enumerate(check_list(node.get("python_signature", []),
                                         f"{at}.python_signature")):
            _check_parameter(p, f"{at}.python_signature[{j}]")
    else:
        check_object(node, at, ("kind", "children"))
    for j, edge in enumerate(check_list(node["children"], f"{at}.children")):
        where = f"{at}.children[{j}]"
        check_object(edge, where, ("name", "node"), ("key",) if kind == "dict" else ())
        check_name(edge["name"], f"{where}.name")
        check_int(edge["node"], f"{where}.node", 0, n_nodes - 1)
        if "key" in edge:
            check_literal(edge["key"], f"{where}.key")


def _check_parameter(p: Any, at: str) -> None:
    check_object(p, at, ("name", "kind"), ("default", "default_saved"))
    check_identifier(p["name"], f"{at}.name")
    check_int(p["kind"], f"{at}.kind", 0, _MAX_PARAMETER_KIND)
    if "default" in p:
        check_literal(p["default"], f"{at}.default")
    if "default_saved" in p and p["default_saved"] is not False:
        raise DocumentError(f"{at}.default_saved", f"expected false, got {p['default_saved']!r}")


def _check_concrete(data: Any, at: str, kinds: list[str], arrays: Collection[str]) -> None:
    check_object(data, at, ("name", "args", "kwargs", "arg_names", "outputs", "num_inputs",
                            "captures", "variables", "graph", "graph_arrays"),
                 ("random_sites",))
    check_text(data["name"], f"{at}.name")
    check_key(data["args"], f"{at}.args")
    check_key(data["kwargs"], f"{at}.kwargs")
    for j, n in enumerate(check_list(data["arg_names"], f"{at}.arg_names")):
        check_text(n, f"{at}.arg_names[{j}]")
    check_structure(data["outputs"], f"{at}.outputs")
    check_int(data["num_inputs"], f"{at}.num_inputs", 0)
    for j, name in enumerate(check_list(data["captures"], f"{at}.captures")):
        _check_array_name(name, f"{at}.captures[{j}]", arrays)
    graph_arrays = data["graph_arrays"]
    if not isinstance(graph_arrays, dict):
        raise DocumentError(f"{at}.graph_arrays", "expected an object mapping graph array keys "
                                                  "to array names")
    for key, name in graph_arrays.items():
        check_text(key, f"{at}.graph_arrays")
        _check_array_name(name, f"{at}.graph_arrays[{key!r}]", arrays)
    nulls = 0
    for j, v in enumerate(check_list(data["variables"], f"{at}.variables")):
        if v is None:
            nulls += 1
        elif kinds[check_int(v, f"{at}.variables[{j}]", 0, len(kinds) - 1)] != "variable":
            raise DocumentError(f"{at}.variables[{j}]", f"node {v} is a {kinds[v]}, not a "
                                                        f"variable")
    sites = check_list(data.get("random_sites", []), f"{at}.random_sites")
    if len(sites) != nulls:
        raise DocumentError(f"{at}.random_sites", f"{len(sites)} random op sites for {nulls} "
                                                  f"null variables (one each is needed)")
    for j, site in enumerate(sites):
        where = f"{at}.random_sites[{j}]"
        if not isinstance(site, list) or len(site) != 2:
            raise DocumentError(where, f"expected [op seed or null, index], got {site!r}"[:200])
        if site[0] is not None:
            check_int(site[0], f"{where}[0]", -2 ** 63, 2 ** 64 - 1)
        check_int(site[1], f"{where}[1]", 0, 2 ** 63 - 1)
    graph = check_object(data["graph"], f"{at}.graph", ("format", "version", "graph"))
    if graph["format"] != serialize.FORMAT:
        raise DocumentError(f"{at}.graph.format", f"expected {serialize.FORMAT!r}, got "
                                                  f"{graph['format']!r}"[:300])
    if type(graph["version"]) is not int or graph["version"] not in serialize.SUPPORTED_VERSIONS:
        raise DocumentError(f"{at}.graph.version", f"graph format version {graph['version']!r} "
                                                   f"is not one this stagecraft reads "
                                                   f"{list(serialize.SUPPORTED_VERSIONS)}"[:300])


def _check_signature(entry: Any, at: str, n_functions: int) -> None:
    check_object(entry, at, ("concrete_function", "inputs", "outputs"))
    check_int(entry["concrete_function"], f"{at}.concrete_function", 0, n_functions - 1)
    for j, d in enumerate(check_list(entry["inputs"], f"{at}.inputs")):
        where = f"{at}.inputs[{j}]"
        check_object(d, where, ("name", "shape", "dtype"))
        check_text(d["name"], f"{where}.name")  # a keyword argument: any name
        check_dims(d["shape"], f"{where}.shape")
        check_dtype(d["dtype"], f"{where}.dtype")
    outputs = entry["outputs"]
    if not isinstance(outputs, dict) or len(outputs) != 1 or \
            next(iter(outputs)) not in ("dict", "flat"):
        raise DocumentError(f"{at}.outputs", "expected {\"dict\": [names]} or "
                                             "{\"flat\": [names]}")
    for kind, names in outputs.items():
        for j, n in enumerate(check_list(names, f"{at}.outputs.{kind}")):
            check_text(n, f"{at}.outputs.{kind}[{j}]")


def _check_array_name(name: Any, at: str, arrays: Collection[str]) -> None:
    check_text(name, at)
    if name not in arrays:
        raise DocumentError(at, f"array {name!r} is not in saved_model.npz")


# ------------------------------------------------------------------ field kinds

def check_bool(value: Any, at: str) -> bool:
    """``value`` if it is true or false."""
    if type(value) is not bool:
        raise DocumentError(at, f"expected true or false, got {value!r}"[:200])
    return value


def check_name(value: Any, at: str) -> str:
    """An object-graph edge name: printable text. Edge names are attribute names and dict
    keys (``{"a/b": v}`` gives the edge ``a/b``), never file paths, so separators are allowed;
    the file paths of a SavedModel are checked by ``format.is_relative_path``."""
    return check_text(value, at, multiline=True)


def check_identifier(value: Any, at: str) -> str:
    """A Python identifier made of ASCII letters, digits and underscores (a parameter,
    namedtuple or field name)."""
    check_text(value, at)
    if not (value.isascii() and value.isidentifier()) or keyword.iskeyword(value):
        raise DocumentError(at, f"expected a Python identifier, got {value!r}")
    return value


def check_literal(data: Any, at: str, depth: int = 0) -> None:
    """A constant as ``format.encode_literal`` writes it."""
    if data is None or type(data) in (bool, int, float):
        return
    if isinstance(data, str):
        check_text(data, at, multiline=True)
        return
    if isinstance(data, dict) and depth < 2:
        if set(data) == {"float"} and data["float"] in _SPECIAL_FLOATS:
            return
        if set(data) == {"bytes"} and isinstance(data["bytes"], str) and \
                len(data["bytes"]) % 2 == 0 and all(c in "0123456789abcdef"
                                                    for c in data["bytes"]):
            return
        if set(data) == {"np", "value"} and data["np"] in _NP_SCALARS and \
                (data["value"] is None or type(data["value"]) in (bool, int, float)
                 or isinstance(data["value"], dict)):
            check_literal(data["value"], f"{at}.value", depth + 1)
            if data["value"] is not None:
                return
    raise DocumentError(at, f"expected a constant (null, bool, number, string, "
                            f"{{\"float\"}}, {{\"bytes\"}} or {{\"np\", \"value\"}}), got "
                            f"{data!r}"[:300])


def check_key(data: Any, at: str) -> None:
    """A trace-cache key as ``functions.encode_key`` writes it."""
    kind = _single_kind(data, at, ("tensor", "variable", "literal", "list", "tuple",
                                   "namedtuple", "dict"))
    if kind == "tensor":
        check_object(data, at, ("tensor",))
        t = check_object(data["tensor"], f"{at}.tensor", ("shape", "dtype", "name"))
        check_dims(t["shape"], f"{at}.tensor.shape")
        check_dtype(t["dtype"], f"{at}.tensor.dtype")
        check_text(t["name"], f"{at}.tensor.name", optional=True)
    elif kind == "variable":
        check_object(data, at, ("variable",))
        v = check_object(data["variable"], f"{at}.variable",
                         ("shape", "dtype", "trainable", "alias"))
        check_dims(v["shape"], f"{at}.variable.shape")
        check_dtype(v["dtype"], f"{at}.variable.dtype")
        check_bool(v["trainable"], f"{at}.variable.trainable")
        if v["alias"] is not None:
            check_int(v["alias"], f"{at}.variable.alias", 0)
    elif kind == "literal":
        check_object(data, at, ("literal", "type"))
        check_literal(data["literal"], f"{at}.literal")
        check_text(data["type"], f"{at}.type")
    elif kind in ("list", "tuple"):
        check_object(data, at, (kind,))
        for j, d in enumerate(check_list(data[kind], f"{at}.{kind}")):
            check_key(d, f"{at}.{kind}[{j}]")
    elif kind == "namedtuple":
        check_object(data, at, ("namedtuple", "fields", "items"))
        _check_namedtuple(data, at)
        for j, d in enumerate(data["items"]):
            check_key(d, f"{at}.items[{j}]")
    else:
        check_object(data, at, ("dict",))
        for j, pair in enumerate(check_list(data["dict"], f"{at}.dict")):
            _check_pair(pair, f"{at}.dict[{j}]")
            check_key(pair[1], f"{at}.dict[{j}][1]")


def check_structure(data: Any, at: str) -> None:
    """An output structure as ``functions.encode_structure`` writes it."""
    if data is None:
        return
    kind = _single_kind(data, at, ("slot", "dict", "namedtuple", "list", "tuple"))
    if kind == "slot":
        check_object(data, at, ("slot",))
        check_int(data["slot"], f"{at}.slot", 0)
    elif kind == "dict":
        check_object(data, at, ("dict",))
        for j, pair in enumerate(check_list(data["dict"], f"{at}.dict")):
            _check_pair(pair, f"{at}.dict[{j}]")
            check_structure(pair[1], f"{at}.dict[{j}][1]")
    elif kind == "namedtuple":
        check_object(data, at, ("namedtuple", "fields", "items"))
        _check_namedtuple(data, at)
        for j, d in enumerate(data["items"]):
            check_structure(d, f"{at}.items[{j}]")
    else:
        check_object(data, at, (kind,))
        for j, d in enumerate(check_list(data[kind], f"{at}.{kind}")):
            check_structure(d, f"{at}.{kind}[{j}]")


def check_specs(data: Any, at: str) -> None:
    """An ``input_signature`` as ``functions.encode_specs`` writes it."""
    kind = _single_kind(data, at, ("spec", "list", "tuple"))
    check_object(data, at, (kind,))
    if kind == "spec":
        s = check_object(data["spec"], f"{at}.spec", ("shape", "dtype", "name"))
        check_dims(s["shape"], f"{at}.spec.shape")
        check_dtype(s["dtype"], f"{at}.spec.dtype")
        check_text(s["name"], f"{at}.spec.name", optional=True)
    else:
        for j, d in enumerate(check_list(data[kind], f"{at}.{kind}")):
            check_specs(d, f"{at}.{kind}[{j}]")


def _single_kind(data: Any, at: str, kinds: tuple) -> str:
    if isinstance(data, dict):
        for kind in kinds:
            if kind in data:
                return kind
    raise DocumentError(at, f"expected an object with one of the keys {list(kinds)}, got "
                            f"{data!r}"[:300])


def _check_namedtuple(data: dict, at: str) -> None:
    check_identifier(data["namedtuple"], f"{at}.namedtuple")
    fields = check_list(data["fields"], f"{at}.fields")
    for j, f in enumerate(fields):
        check_identifier(f, f"{at}.fields[{j}]")
        if f.startswith("_") or fields.index(f) != j:
            raise DocumentError(f"{at}.fields[{j}]", f"field name {f!r} starts with '_' or is "
                                                     f"repeated")
    if len(check_list(data["items"], f"{at}.items")) != len(fields):
        raise DocumentError(f"{at}.items", f"{len(data['items'])} items for {len(fields)} "
                                           f"fields")


def _check_pair(pair: Any, at: str) -> None:
    if not isinstance(pair, list) or len(pair) != 2:
        raise DocumentError(at, f"expected a [key, value] pair, got {pair!r}"[:200])
    check_literal(pair[0], f"{at}[0]")
