"""Restoring: greedy matching of checkpoint nodes to Python objects by edge names, deferred
restoration of objects created later, optimizer slots, and the status objects.

Every match is planned and validated before anything is assigned: an incompatible shape or
dtype raises ``ValueError`` and leaves every variable as it was.
"""
from __future__ import annotations

import collections
import logging
import weakref
from typing import Any, Callable

import numpy as np

from stagecraft.state.checkpoint import format as fmt
from stagecraft.state.checkpoint import graph as graph_lib
from stagecraft.state.checkpoint import slots, tracking
from stagecraft.state.checkpoint.schema import check_object_graph
from stagecraft.eager.context import STATE
from stagecraft.ir.shapes import is_compatible
from stagecraft.eager.scopes import init_scope
from stagecraft.state.variables import Variable

logger = logging.getLogger("stagecraft")

# Returns the Python graph to check a status against: (root, extra root edges).
RootFn = Callable[[], "tuple[Any, list[tuple[str, Any]]]"]


class _Bound:
    """node id -> matched Python object, held weakly where the object allows it: deferred
    restores are kept in a registry for as long as their parent lives, and must not keep the
    parent (or anything else matched) alive themselves."""

    def __init__(self) -> None:
        self._refs: dict[int, Callable[[], Any]] = {}

    def get(self, node_id: int, default: Any = None) -> Any:
        ref = self._refs.get(node_id)
        obj = ref() if ref is not None else None
        return default if obj is None else obj

    def __contains__(self, node_id: int) -> bool:
        return node_id in self._refs

    def __len__(self) -> int:
        return len(self._refs)

    def update(self, pairs: dict[int, Any]) -> None:
        for node_id, obj in pairs.items():
            try:
                self._refs[node_id] = weakref.ref(obj)
            except TypeError:  # tuples cannot be weakly referenced
                self._refs[node_id] = lambda obj=obj: obj

    def items(self) -> list[tuple[int, Any]]:
        return [(i, o) for i, o in ((i, r()) for i, r in self._refs.items()) if o is not None]

    def values(self) -> list[Any]:
        return [o for _, o in self.items()]


class _Ledger:
    """What a restoration has matched so far. Shared with the finalizer that warns about
    unused values, so it must not refer back to the restoration."""

    def __init__(self, prefix: str, nodes: list[dict]):
        self.prefix = prefix
        self.nodes = nodes
        self.names = _node_names(nodes)
        self.bound = _Bound()                # node id -> Python object (weakly)
        self.assigned: set[int] = set()      # nodes whose value was restored
        self.unused_attributes: dict[int, str] = {}  # value nodes bound to non-variables
        self.expect_partial = False

    def unresolved(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n["attributes"] and i not in self.assigned]

    def warn_unused(self) -> None:
        if self.expect_partial:
            return
        missing = self.unresolved()
        if not missing:
            return
        logger.warning(
            "A checkpoint was restored from %r but not all checkpointed values were used; "
            "use expect_partial() on the status returned by restore()/read() to silence this "
            "warning, or assert_consumed() to make the check explicit.", self.prefix)
        for i in missing:
            logger.warning("Value in checkpoint could not be found in the restored object: %s",
                           self.names[i])


def _node_names(nodes: list[dict]) -> list[str]:
    """Pretty names, ``(root).model.kernel``, by breadth-first order; slot variables are named
    ``<optimizer>'s state 'm' for <variable>`` as TensorFlow prints them."""
    names: list[str | None] = [None] * len(nodes)
    names[0] = "(root)"
    order = [0]
    for i in order:
        for name, child in nodes[i]["children"]:
            if names[child] is None:
                names[child] = f"{names[i]}.{name}"
                order.append(child)
    for i, node in enumerate(nodes):
        for var_id, slot_name, slot_id in node.get("slot_variables", ()):
            if names[slot_id] is None:
                names[slot_id] = f"{names[i]}'s state {slot_name!r} for {names[var_id]}"
    return [n if n is not None else f"(node {i})" for i, n in enumerate(names)]


class _Plan:
    def __init__(self) -> None:
        self.bind: dict[int, Any] = {}
        self.assign: list[tuple[int, Variable, str]] = []
        self.defer: list[tuple[Any, str, int]] = []
        self.defer_slots: list[tuple[Any, Any, str, int]] = []
        self.unused: dict[int, str] = {}
        self.slots_done: list[tuple[int, int, str]] = []


class Restoration:
    """One ``restore``/``read`` of a checkpoint: the loaded values and the matching state. It
    lives as long as the status object or a deferred child still needs it."""

    def __init__(self, prefix: str, object_graph: dict, arrays: dict[str, np.ndarray]):
        self.nodes: list[dict] = check_object_graph(object_graph, fmt.index_path(prefix),
                                                    arrays)
        self.arrays = arrays
        self.ledger = _Ledger(prefix, self.nodes)
        self.slots_done: set[tuple[int, int, str]] = set()
        self.slot_nodes = [(i, n["slot_variables"]) for i, n in enumerate(self.nodes)
                           if n.get("slot_variables")]
        finalizer = weakref.finalize(self, self.ledger.warn_unused)
        finalizer.atexit = False  # no warnings while the interpreter shuts down

    # ------------------------------------------------------------------------ matching
    def match(self, node_id: int, obj: Any, extra_children: list | None = None) -> None:
        """Pairs checkpoint node ``node_id`` with ``obj`` and everything below it by edge
        names; restores what exists, defers what does not."""
        plan = _Plan()
        self._plan(plan, node_id, obj, extra_children)
        self._plan_slots(plan)
        self._validate(plan)
        self._commit(plan)

    def _children(self, obj: Any, extra: list | None) -> dict[str, Any]:
        edges = graph_lib.children(obj)
        if extra:
            edges = graph_lib.merge_edges(edges, extra)
        out: dict[str, Any] = {}
        for name, child in edges:
            out.setdefault(name, child)
        return out

    def _plan(self, plan: _Plan, node_id: int, obj: Any, extra: list | None) -> None:
        queue = collections.deque([(node_id, obj, extra)])
        while queue:
            nid, o, ex = queue.popleft()
            known = self.ledger.bound.get(nid, plan.bind.get(nid))
            if known is not None:
                if known is not o:
                    logger.warning(
                        "Inconsistent references when loading the checkpoint %r: %s was "
                        "already matched to %r, and another path reaches %r; keeping the first.",
                        self.ledger.prefix, self.ledger.names[nid], known, o)
                continue
            plan.bind[nid] = o
            node = self.nodes[nid]
            key = node["attributes"].get(graph_lib.VALUE_ATTRIBUTE)
            if key is not None:
                if isinstance(o, Variable):
                    plan.assign.append((nid, o, key))
                else:
                    plan.unused[nid] = key
            py_children = self._children(o, ex)
            for name, child_id in node["children"]:
                child = py_children.get(name)
                if child is None:
                    plan.defer.append((o, name, child_id))
                else:
                    queue.append((child_id, child, None))

    def _plan_slots(self, plan: _Plan) -> None:
        def bound(i: int) -> Any:
            return plan.bind.get(i, self.ledger.bound.get(i))

        for opt_id, entries in self.slot_nodes:
            optimizer = bound(opt_id)
            if optimizer is None or not hasattr(type(optimizer), "_checkpoint_slots"):
                continue
            existing = None
            for var_id, slot_name, slot_id in entries:
                variable = bound(var_id)
                if variable is None or (opt_id, var_id, slot_name) in self.slots_done:
                    continue
                if existing is None:
                    existing = {(id(v), n): s for v, n, s in optimizer._checkpoint_slots()}
                slot = existing.get((id(variable), slot_name))
                if slot is not None:
                    if bound(slot_id) is None:
                        plan.bind[slot_id] = slot
                        plan.assign.append((slot_id, slot, self._value_key(slot_id)))
                else:
                    plan.defer_slots.append((optimizer, variable, slot_name, slot_id))
                plan.slots_done.append((opt_id, var_id, slot_name))

    def _value_key(self, node_id: int) -> str:
        return self.nodes[node_id]["attributes"][graph_lib.VALUE_ATTRIBUTE]

    def _validate(self, plan: _Plan) -> None:
        for nid, var, key in plan.assign:
            value = self.arrays[key]
            vshape = var._shape  # a tuple (None dims allowed), printed like TensorFlow's
            where = (f"(checkpoint key {key!r}, object {self.ledger.names[nid]}, checkpoint "
                     f"{self.ledger.prefix!r})")
            fix = ("Nothing was restored. Build the object with the shapes and dtypes it had "
                   "when the checkpoint was written.")
            if not is_compatible(var._shape, value.shape):
                raise ValueError(f"Received incompatible tensor with shape {value.shape} when "
                                 f"attempting to restore variable with shape {vshape} "
                                 f"{where}.\n{fix}")
            if value.dtype != var.dtype.np:
                raise ValueError(f"Received incompatible tensor with dtype {value.dtype} when "
                                 f"attempting to restore variable with dtype {var.dtype.name} "
                                 f"{where}.\n{fix}")

    def _commit(self, plan: _Plan) -> None:
        ledger = self.ledger
        ledger.bound.update(plan.bind)
        ledger.unused_attributes.update(plan.unused)
        self.slots_done.update(plan.slots_done)
        _drop_pending_inits({id(var) for _, var, _ in plan.assign})
        with init_scope():  # restoring inside a trace (a variable made there) runs eagerly
            for nid, var, key in plan.assign:
                var.assign(self.arrays[key], read_value=False)
                ledger.assigned.add(nid)
        for parent, name, child_id in plan.defer:
            tracking.defer(parent, name, self._deferred(child_id))
        for optimizer, variable, slot_name, slot_id in plan.defer_slots:
            slots.defer_slot_restore(optimizer, variable, slot_name, self._slot_restorer(slot_id))

    def _deferred(self, child_id: int) -> Callable[[Any], bool]:
        def restore_on_create(value: Any) -> bool:
            if not graph_lib.is_trackable(value):
                return False
            if child_id not in self.ledger.bound:
                self.match(child_id, value)
            return True
        return restore_on_create

    def _slot_restorer(self, slot_id: int) -> Callable[[Any], None]:
        def restore_slot(slot: Any) -> None:
            if slot_id in self.ledger.bound:
                return
            plan = _Plan()
            plan.bind[slot_id] = slot
            plan.assign.append((slot_id, slot, self._value_key(slot_id)))
            self._validate(plan)
            self._commit(plan)
        return restore_slot


def _drop_pending_inits(restored: set[int]) -> None:
    """A variable created while a function is traced, with an initial value computed from
    the function's arguments, gets that value after the trace (staging/function.py); a restored
    variable must keep the checkpoint value instead."""
    graph = STATE.get().graph
    if graph is None or not restored:
        return
    root = graph.root()
    root.pending_inits[:] = [(v, t) for v, t in root.pending_inits if id(v) not in restored]


def python_variables(root: Any, extra: list) -> list[Any]:
    """Every variable (slot variables included) in the current Python graph of ``root``.

    >>> import stagecraft as tf
    >>> m = tf.Module(); m.a = tf.Variable(1.0); m.b = [m.a, tf.Variable(2.0)]
    >>> len(python_variables(m, []))
    2
    """
    nodes = graph_lib.add_slot_nodes(graph_lib.walk(root, extra))
    return [n.obj for n in nodes if isinstance(n.obj, Variable)]


class CheckpointLoadStatus:
    """What ``Checkpoint.restore``/``read`` returns: checks on how well the checkpoint matched
    the Python objects. The checks look at the objects as they are when called, so they pass
    once deferred objects have been created.

    >>> import os, tempfile, stagecraft as tf
    >>> path = tf.train.Checkpoint(v=tf.Variable(3.0)).write(os.path.join(tempfile.mkdtemp(), "c"))
    >>> v = tf.Variable(0.0)
    >>> status = tf.train.Checkpoint(v=v).read(path).assert_consumed()
    >>> float(v.numpy())
    3.0
    """

    def __init__(self, restoration: Restoration, root_fn: RootFn):
        self._restoration = restoration
        self._root_fn = root_fn

    def _unbound_python(self) -> list[Any]:
        bound = {id(o) for o in self._restoration.ledger.bound.values()}
        return [v for v in python_variables(*self._root_fn()) if id(v) not in bound]

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """Every value in the checkpoint was restored and every Python variable got one;
        raises ``AssertionError`` otherwise."""
        ledger = self._restoration.ledger
        for i in ledger.unresolved():
            if i in ledger.unused_attributes:
                raise AssertionError(
                    f"Unused attributes in these objects (the attributes exist in the checkpoint "
                    f"but were not restored): {ledger.names[i]} has "
                    f"{ledger.unused_attributes[i]!r} but is not a variable.")
            raise AssertionError(f"Unresolved object in checkpoint {ledger.names[i]}: its value "
                                 f"{self._key(i)!r} was not restored into any Python object.")
        self._check_python_bound()
        return self

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """Every Python variable that exists now got a value (extra checkpoint content is
        fine); raises ``AssertionError`` otherwise."""
        ledger = self._restoration.ledger
        for i, obj in ledger.bound.items():
            if isinstance(obj, Variable) and i not in ledger.assigned:
                raise AssertionError(f"Object not assigned a value from checkpoint: "
                                     f"{ledger.names[i]} has no value in {ledger.prefix!r}.")
        self._check_python_bound()
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        """Something besides the root was matched; raises ``AssertionError`` otherwise."""
        if len(self._restoration.ledger.bound) <= 1:
            unbound = self._unbound_python()
            if unbound:
                raise AssertionError(
                    f"Nothing except the root object matched a checkpointed value. Typically "
                    f"this means that the checkpoint does not match the Python program. The "
                    f"following objects have no matching checkpointed value: {unbound}")
            raise AssertionError("Nothing to load. No dependencies have been added to the root "
                                 "object yet.")
        return self

    def expect_partial(self) -> "CheckpointLoadStatus":
        """Silences the warnings about unused checkpoint values."""
        self._restoration.ledger.expect_partial = True
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to run: values are assigned eagerly (kept for TensorFlow 1 style code)."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Nothing to run: values are assigned eagerly (kept for TensorFlow 1 style code)."""

    def _check_python_bound(self) -> None:
        unbound = self._unbound_python()
        if unbound:
            names = ", ".join(v.name for v in unbound)
            raise AssertionError(f"Some Python objects were not bound to checkpointed values, "
                                 f"likely due to changes in the Python program: {names}")

    def _key(self, node_id: int) -> str:
        return self._restoration.nodes[node_id]["attributes"].get(graph_lib.VALUE_ATTRIBUTE, "")


class InitializationOnlyStatus:
    """What ``restore(None)`` returns: nothing is restored, every assertion fails.

    >>> import stagecraft as tf
    >>> tf.train.Checkpoint().restore(None).expect_partial()  # doctest: +ELLIPSIS
    <...InitializationOnlyStatus object at ...>
    """

    _MESSAGE = "No checkpoint specified (save_path=None); nothing is being restored."

    def assert_consumed(self) -> "InitializationOnlyStatus":
        raise AssertionError(self._MESSAGE)

    def assert_existing_objects_matched(self) -> "InitializationOnlyStatus":
        raise AssertionError(self._MESSAGE)

    def assert_nontrivial_match(self) -> "InitializationOnlyStatus":
        raise AssertionError(self._MESSAGE)

    def expect_partial(self) -> "InitializationOnlyStatus":
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to run."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Nothing to run: variables keep their initial values."""
