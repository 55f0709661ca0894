"""``tf.train.Checkpoint``: saves and restores an object graph of variables (semantics.md §4)."""
from __future__ import annotations

import glob
import os
from typing import Any

from stagecraft.state.checkpoint import format as fmt
from stagecraft.state.checkpoint import graph as graph_lib
from stagecraft.state.checkpoint import state, tracking
from stagecraft.state.checkpoint.restore import (CheckpointLoadStatus, InitializationOnlyStatus,
                                           Restoration)
from stagecraft.eager.context import executing_eagerly
from stagecraft.ir import dtypes
from stagecraft.ir.errors import NotFoundError
from stagecraft.eager.scopes import init_scope
from stagecraft.state.variables import Variable

_SAVED_MODEL_VARIABLES = os.path.join("variables", "variables")


class Checkpoint:
    """Groups trackable objects (variables, modules, optimizers, lists and dicts of them) for
    saving and restoring. Each keyword argument is an edge of the object graph; the saved
    value of ``model.layer.kernel`` is found again through the same attribute names, not by
    variable names. Restoring into an object that does not exist yet is deferred: the value is
    assigned when an attribute with that name is set.

    ``Checkpoint(root=obj, **kwargs)`` makes ``obj`` the root instead: its children become the
    top-level edges (what ``saved_model`` uses).

    >>> import os, tempfile, stagecraft as tf
    >>> m = tf.Module(); m.w = tf.Variable([1.0, 2.0])
    >>> path = tf.train.Checkpoint(model=m).save(os.path.join(tempfile.mkdtemp(), "ckpt"))
    >>> os.path.basename(path)
    'ckpt-1'
    >>> fresh = tf.Module()
    >>> status = tf.train.Checkpoint(model=fresh).restore(path)
    >>> fresh.w = tf.Variable([0.0, 0.0])   # restored on assignment (deferred)
    >>> fresh.w.numpy().tolist()
    [1.0, 2.0]
    >>> _ = status.assert_consumed()
    """

    def __init__(self, root: Any = None, **kwargs: Any):
        object.__setattr__(self, "_deps", {})
        object.__setattr__(self, "_root", None)
        if root is not None:
            if not graph_lib.is_trackable(root):
                raise ValueError(f"Checkpoint: root={_short(root)} is not trackable. Pass a "
                                 f"Module, a Variable, an optimizer, another Checkpoint, or a "
                                 f"list/dict of them.")
            object.__setattr__(self, "_root", root)
            own = dict(graph_lib.children(root))
            for name, value in kwargs.items():
                if name in own and own[name] is not value:
                    raise ValueError(f"Checkpoint: root already has a child {name!r} "
                                     f"({_short(own[name])}), which conflicts with the keyword "
                                     f"argument {name}={_short(value)}. Rename one of them.")
        for name in sorted(kwargs):  # TensorFlow adds keyword arguments in sorted order
            value = kwargs[name]
            if not graph_lib.is_trackable(value):
                raise ValueError(f"Checkpoint: the value of {name}= is {_short(value)} "
                                 f"({type(value).__name__}), which is not trackable. Pass a "
                                 f"Variable, a Module, an optimizer, another Checkpoint, or a "
                                 f"list/dict of them.")
            self._add(name, value)

    # ------------------------------------------------------------------ the object graph
    def _graph_root(self) -> Any:
        return self if self._root is None else self._root

    def _extra(self) -> list[tuple[str, Any]]:
        """Edges of the graph root that are not attributes of it."""
        return [] if self._root is None else list(self._deps.items())

    def _checkpoint_children(self) -> list[tuple[str, Any]]:
        if self._root is None:
            return list(self._deps.items())
        return graph_lib.merge_edges(graph_lib.children(self._root), list(self._deps.items()))

    def _add(self, name: str, value: Any) -> None:
        value = tracking.wrap(value)
        tracking.notify(self, name, value)
        if self._root is not None:
            tracking.notify(self._root, name, value)
        self._deps[name] = value

    def __setattr__(self, name: str, value: Any) -> None:
        # Attributes set after construction are edges too (and may complete a deferred restore).
        if name.startswith("_") or not graph_lib.is_trackable(value) or \
                isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)
            return
        self._add(name, value)

    def __getattr__(self, name: str) -> Any:
        deps = self.__dict__.get("_deps", {})
        if name in deps:
            return deps[name]
        raise AttributeError(f"'Checkpoint' object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        if name in self._deps:
            del self._deps[name]
        else:
            object.__delattr__(self, name)

    @property
    def save_counter(self) -> Variable:
        """How many times ``save`` was called (an int64, non-trainable variable, created on
        first use and saved as the edge ``save_counter``)."""
        counter = self._deps.get("save_counter")
        if counter is None:
            with init_scope():
                counter = Variable(0, dtype=dtypes.int64, trainable=False, name="save_counter")
            self._add("save_counter", counter)
        return counter

    # ------------------------------------------------------------------------- saving
    def write(self, file_prefix: str, options: Any = None) -> str:
        """Writes the checkpoint exactly at ``file_prefix`` (no counter, no metadata file) and
        returns the prefix. Read it back with ``read``."""
        if not executing_eagerly():
            raise NotImplementedError(
                "Checkpoint.write() inside a tf.function is not supported by stagecraft: the "
                "files would be written once, while tracing. Call it outside the function.")
        file_prefix = os.fspath(file_prefix)
        object_graph, arrays = graph_lib.serialize(self._graph_root(), self._extra())
        fmt.write_bundle(file_prefix, {"object_graph": object_graph}, arrays)
        return file_prefix

    def save(self, file_prefix: str, options: Any = None) -> str:
        """Increments ``save_counter``, writes ``"{file_prefix}-{n}"``, records it in the
        ``checkpoint`` metadata file of the directory and returns that path."""
        if not executing_eagerly():
            raise NotImplementedError(
                "Calling Checkpoint.save() from a tf.function is not supported, as save() "
                "updates the save counter and the metadata file. Use Checkpoint.write() "
                "outside the function (tf.train.latest_checkpoint will not see it).")
        file_prefix = os.fspath(file_prefix)
        counter = self.save_counter
        counter.assign_add(1)
        path = f"{file_prefix}-{int(counter.numpy())}"
        try:
            self.write(path)
        except BaseException:
            counter.assign_sub(1)  # the failed save did not happen: the next one reuses n
            raise
        directory = os.path.dirname(file_prefix)
        recorded = False
        try:
            _, every = state.read_state(directory or ".")
            recorded = any(os.path.abspath(p) == os.path.abspath(path) for p in every)
            every = [p for p in every if os.path.abspath(p) != os.path.abspath(path)] + [path]
            state.write_state(directory, path, every)
        except BaseException:
            # Not recorded (disk full, killed metadata write): the save did not happen; leave
            # no unrecorded checkpoint behind and let the next save reuse the number.
            if not recorded:
                fmt.delete_bundle(path)
            counter.assign_sub(1)
            raise
        # What killed saves and deletions of other numbered checkpoints here left behind.
        fmt.sweep_numbered(directory, os.path.basename(file_prefix))
        return path

    # ----------------------------------------------------------------------- restoring
    def read(self, save_path: str, options: Any = None) -> CheckpointLoadStatus:
        """Restores the checkpoint at ``save_path`` (a prefix from ``write`` or ``save``, or a
        SavedModel directory) without creating ``save_counter``; returns a status object."""
        prefix = _resolve(os.fspath(save_path))
        document, arrays = fmt.read_bundle(prefix)
        if not isinstance(document.get("object_graph"), dict):
            raise fmt.DataLossError(f"Checkpoint {prefix!r} has no object graph: it was written "
                                    f"by format.write_bundle for another purpose, not by "
                                    f"Checkpoint.write/save.")
        restoration = Restoration(prefix, document["object_graph"], arrays)
        try:
            restoration.match(0, self._graph_root(), self._extra())
        except BaseException:
            restoration.ledger.expect_partial = True  # the error says it all; no warnings
            raise
        return CheckpointLoadStatus(restoration, lambda: (self._graph_root(), self._extra()))

    def restore(self, save_path: str | None, options: Any = None
                ) -> CheckpointLoadStatus | InitializationOnlyStatus:
        """Restores the checkpoint at ``save_path``; ``None`` restores nothing. Values of
        objects that do not exist yet are assigned when they are created (attribute set,
        list append). Returns a status object (``assert_consumed`` and friends)."""
        if save_path is None:
            return InitializationOnlyStatus()
        status = self.read(save_path, options)
        _ = self.save_counter  # created after reading, so a saved counter is restored into it
        return status

    def __repr__(self) -> str:
        return f"<stagecraft.train.Checkpoint edges={[n for n, _ in self._checkpoint_children()]}>"


def _resolve(path: str) -> str:
    """The checkpoint prefix for ``path``: itself, or a SavedModel's variables prefix."""
    if os.path.isdir(path):
        inner = os.path.join(path, _SAVED_MODEL_VARIABLES)
        if fmt.bundle_exists(inner):
            return inner
    if fmt.bundle_exists(path):
        return path
    hint = ""
    numbered = sorted(glob.glob(glob.escape(path) + "-*" + fmt.INDEX_SUFFIX))
    if numbered:
        newest = max(numbered, key=lambda p: _number(p[:-len(fmt.INDEX_SUFFIX)]))
        hint = (f" It looks like the path is missing the '-<N>' suffix that save() adds: "
                f"did you mean {newest[:-len(fmt.INDEX_SUFFIX)]!r}? "
                f"tf.train.latest_checkpoint(directory) gives the newest one.")
    elif not os.path.isdir(path):
        hint = (" Checkpoint.save(prefix) writes '<prefix>-<N>'; pass that path, or "
                "tf.train.latest_checkpoint(directory).")
    raise NotFoundError(f"Could not find a checkpoint or SavedModel at {path!r} (no file "
                        f"{fmt.index_path(path)!r}).{hint}")


def _number(prefix: str) -> int:
    tail = prefix.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
