"""The object graph: which objects are trackable, their named children, the breadth-first walk
that gives every node its shortest path, and the checkpoint keys derived from those paths.

Trackable objects (TensorFlow's rules, semantics.md §4.1):

* ``Variable``: a leaf with one value, ``VARIABLE_VALUE``;
* ``Module`` and optimizers (objects with ``_checkpoint_slots``): their attributes, in the order
  they were first assigned (``vars(obj)`` order, private names included, as TensorFlow tracks
  ``self._v``), skipping the names in the class's ``_TF_MODULE_IGNORED_PROPERTIES``;
* lists and tuples (edges ``"0"``, ``"1"``, ...) and dicts (edges = string keys);
* any object with a ``_checkpoint_children()`` method (``Checkpoint`` itself; other packages
  can use it to define their own nodes).

Everything else (Python numbers and strings, Tensors, functions, arbitrary objects) is not a
child: it is not saved, as in TensorFlow.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Iterable

import numpy as np

from stagecraft.state.module import Module
from stagecraft.state.variables import Variable

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VALUE_ATTRIBUTE = "VARIABLE_VALUE"


def is_trackable(value: Any) -> bool:
    """Whether ``value`` can be a node of the object graph.

    >>> import stagecraft as tf
    >>> [is_trackable(x) for x in (tf.Variable(1.0), tf.Module(), [], {}, 3, "s", tf.constant(1))]
    [True, True, True, True, False, False, False]
    """
    if isinstance(value, (Variable, Module, list, tuple, dict)):
        return True
    cls = type(value)
    return hasattr(cls, "_checkpoint_children") or hasattr(cls, "_checkpoint_slots")


def children(obj: Any) -> list[tuple[str, Any]]:
    """The named children of ``obj``, in the order the dependencies were added.

    >>> import stagecraft as tf
    >>> m = tf.Module()
    >>> m.w = tf.Variable(1.0); m.n = 3; m.blocks = [tf.Variable(2.0)]
    >>> [name for name, _ in children(m)], [name for name, _ in children(m.blocks)]
    (['w', 'blocks'], ['0'])
    """
    if isinstance(obj, Variable):
        return []
    own = getattr(type(obj), "_checkpoint_children", None)
    if own is not None:
        return list(obj._checkpoint_children())
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if is_trackable(v)]
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            if not is_trackable(v):
                continue
            if not isinstance(k, str):
                raise ValueError(
                    f"A dict holds the trackable value {_short(v)} under the non-string key "
                    f"{k!r}: checkpoint edge names must be strings. Use string keys, or list "
                    f"the attribute holding the dict in the class's "
                    f"_TF_MODULE_IGNORED_PROPERTIES to leave it out of checkpoints.")
            out.append((k, v))
        return out
    try:
        attrs = vars(obj)
    except TypeError:
        return []
    ignored = getattr(type(obj), "_TF_MODULE_IGNORED_PROPERTIES", ())
    return [(k, v) for k, v in attrs.items() if k not in ignored and is_trackable(v)]


@dataclasses.dataclass
class Node:
    """One object of the graph: its id (breadth-first order, the root is 0), the object, its
    shortest edge path from the root and its edges ``(name, child node id)``. Slot variables
    of optimizers are nodes with ``slot_of = (optimizer id, variable id, slot name)`` and an
    empty path."""

    node_id: int
    obj: Any
    path: tuple[str, ...]
    children: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    slot_of: tuple[int, int, str] | None = None
    # on an optimizer's node: (variable node id, slot name, slot variable node id)
    slot_variables: list[tuple[int, str, int]] = dataclasses.field(default_factory=list)


def walk(root: Any, extra_children: Iterable[tuple[str, Any]] = ()) -> list[Node]:
    """Breadth-first walk from ``root``: every object once, with its shortest path (the first
    one discovered; children in the order they were added). ``extra_children`` are edges of the
    root that are not attributes of it (what ``Checkpoint(root=obj, step=v)`` attaches).

    >>> import stagecraft as tf
    >>> m = tf.Module(); m.layer = tf.Module(); m.layer.kernel = tf.Variable(1.0)
    >>> m.alias = m.layer
    >>> [(n.node_id, "/".join(n.path)) for n in walk(m)]
    [(0, ''), (1, 'layer'), (2, 'layer/kernel')]
    """
    nodes = [Node(0, root, ())]
    index = {id(root): 0}
    queue = 0
    while queue < len(nodes):
        node = nodes[queue]
        queue += 1
        edges = children(node.obj)
        if node.node_id == 0:
            edges = merge_edges(edges, list(extra_children))
        for name, child in edges:
            child_id = index.get(id(child))
            if child_id is None:
                child_id = len(nodes)
                index[id(child)] = child_id
                nodes.append(Node(child_id, child, node.path + (name,)))
            node.children.append((name, child_id))
    return nodes


def add_slot_nodes(nodes: list[Node]) -> list[Node]:
    """Appends a node for every optimizer slot whose variable and optimizer are both in the
    graph (optimizers list them with ``_checkpoint_slots() -> [(variable, name, slot)]``).
    A slot variable already in the graph through ordinary edges keeps its node.

    >>> import stagecraft as tf
    >>> class Opt:
    ...     def __init__(self, v): self.slots = [(v, "m", tf.Variable(0.0))]
    ...     def _checkpoint_slots(self): return self.slots
    ...     _TF_MODULE_IGNORED_PROPERTIES = ("slots",)
    >>> v = tf.Variable(1.0)
    >>> nodes = add_slot_nodes(walk([v, Opt(v)]))
    >>> nodes[-1].slot_of, node_prefix(nodes, nodes[-1])
    ((2, 1, 'm'), '0/.OPTIMIZER_SLOT/1/m')
    """
    index = {id(n.obj): n.node_id for n in nodes}
    for opt in list(nodes):
        if opt.slot_of is not None or not hasattr(type(opt.obj), "_checkpoint_slots"):
            continue
        for variable, slot_name, slot in opt.obj._checkpoint_slots():
            var_id = index.get(id(variable))
            if var_id is None:
                continue  # the variable is not saved, so neither is its slot (TensorFlow)
            slot_id = index.get(id(slot))
            if slot_id is None:
                slot_id = len(nodes)
                index[id(slot)] = slot_id
                nodes.append(Node(slot_id, slot, (), slot_of=(opt.node_id, var_id, slot_name)))
            opt.slot_variables.append((var_id, slot_name, slot_id))
    return nodes


def serialize(root: Any, extra_children: Iterable[tuple[str, Any]] = ()
              ) -> tuple[dict, dict[str, np.ndarray]]:
    """The object graph of ``root`` as a JSON-able dict, and the value of every variable in it
    keyed by its checkpoint key (each variable once, under its shortest path).

    The graph is ``{"nodes": [...]}`` in breadth-first order (node 0 is the root); a node is
    ``{"children": [[edge name, node id], ...], "attributes": {"VARIABLE_VALUE": key}}``
    (``attributes`` is empty except for variables), and an optimizer's node also has
    ``"slot_variables": [[variable node id, slot name, slot variable node id], ...]``.

    >>> import stagecraft as tf
    >>> m = tf.Module(); m.layer = tf.Module(); m.layer.kernel = tf.Variable([1.0, 2.0])
    >>> m.alias = m.layer
    >>> graph, arrays = serialize(m)
    >>> list(arrays), graph["nodes"][0]["children"]
    (['layer/kernel/.ATTRIBUTES/VARIABLE_VALUE'], [['layer', 1], ['alias', 1]])
    """
    nodes = add_slot_nodes(walk(root, extra_children))
    out_nodes, arrays = [], {}
    for node in nodes:
        entry: dict[str, Any] = {"children": [[name, cid] for name, cid in node.children],
                                 "attributes": {}}
        if isinstance(node.obj, Variable):
            key = value_key(node_prefix(nodes, node))
            entry["attributes"][VALUE_ATTRIBUTE] = key
            arrays[key] = np.array(node.obj._value)  # a copy: later assigns do not change it
        if node.slot_variables:
            entry["slot_variables"] = [list(s) for s in node.slot_variables]
        out_nodes.append(entry)
    return {"nodes": out_nodes}, arrays


def merge_edges(edges: list[tuple[str, Any]], extra: list[tuple[str, Any]]
                ) -> list[tuple[str, Any]]:
    """``edges`` followed by the ``extra`` edges whose names are not taken.

    >>> merge_edges([("a", 1)], [("a", 2), ("b", 3)])
    [('a', 1), ('b', 3)]
    """
    names = {name for name, _ in edges}
    return edges + [(n, v) for n, v in extra if n not in names]


def escape(name: str) -> str:
    """One path component of a key: ``.`` becomes ``..`` and ``/`` becomes ``.S``.

    >>> escape("a.b/c")
    'a..b.Sc'
    """
    return name.replace(".", "..").replace("/", ".S")


def node_prefix(nodes: list[Node], node: Node) -> str:
    """The escaped key prefix of a node (``model/layer/kernel``, or for a slot variable
    ``<variable prefix>/.OPTIMIZER_SLOT/<optimizer prefix>/<slot name>``; see
    ``add_slot_nodes``).

    >>> import stagecraft as tf
    >>> nodes = walk({"a.b": tf.Variable(1.0)})
    >>> node_prefix(nodes, nodes[1])
    'a..b'
    """
    if node.slot_of is not None:
        opt_id, var_id, slot_name = node.slot_of
        return (f"{node_prefix(nodes, nodes[var_id])}/.OPTIMIZER_SLOT/"
                f"{node_prefix(nodes, nodes[opt_id])}/{escape(slot_name)}")
    return "/".join(escape(p) for p in node.path)


def value_key(prefix: str) -> str:
    """The tensor key of a variable's value.

    >>> value_key("model/layer/kernel")
    'model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE'
    """
    return f"{prefix}/.ATTRIBUTES/{VALUE_ATTRIBUTE}" if prefix else f".ATTRIBUTES/{VALUE_ATTRIBUTE}"


def pretty_name(path: Iterable[str]) -> str:
    """How messages name an object.

    >>> pretty_name(("model", "layer", "kernel"))
    '(root).model.layer.kernel'
    """
    return "(root)" + "".join(f".{p}" for p in path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
