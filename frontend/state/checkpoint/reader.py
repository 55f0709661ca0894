"""Inspecting a checkpoint without a Python object graph: ``tf.train.list_variables`` and
``tf.train.load_checkpoint``."""
from __future__ import annotations

import json
import os

import numpy as np

from stagecraft.state.checkpoint import format as fmt
from stagecraft.state.checkpoint import graph as graph_lib
from stagecraft.state.checkpoint import state
from stagecraft.ir import dtypes
from stagecraft.ir.errors import DataLossError, NotFoundError


def _prefix(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = state.latest_checkpoint(path)
        if latest is None:
            raise NotFoundError(f"No checkpoint found in directory {path!r} (it has no "
                                f"'checkpoint' metadata file naming an existing checkpoint). "
                                f"Pass a checkpoint prefix such as "
                                f"{os.path.join(path, 'ckpt-1')!r}.")
        return latest
    if not fmt.bundle_exists(path):
        raise NotFoundError(f"No checkpoint at {path!r} (no file {fmt.index_path(path)!r}). "
                            f"Checkpoint.save(prefix) writes '<prefix>-<N>'.")
    return path


class CheckpointReader:
    """The tensors of one checkpoint, by key. Every read checks the tensor's checksum.

    >>> import os, tempfile, stagecraft as tf
    >>> path = tf.train.Checkpoint(step=tf.Variable(7)).write(os.path.join(tempfile.mkdtemp(), "c"))
    >>> reader = tf.train.load_checkpoint(path)
    >>> int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
    7
    """

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._content = fmt.read_index(prefix)

    def has_tensor(self, key: str) -> bool:
        return key == graph_lib.OBJECT_GRAPH_KEY or key in self._content["tensors"]

    def get_tensor(self, key: str) -> np.ndarray:
        """The array saved under ``key`` (the object graph key gives its JSON as bytes)."""
        if key == graph_lib.OBJECT_GRAPH_KEY:
            return np.array(json.dumps(self._content["document"].get("object_graph")).encode())
        if key not in self._content["tensors"]:
            raise NotFoundError(f"Key {key!r} not found in checkpoint {self._prefix!r}. Its "
                                f"keys are listed by tf.train.list_variables({self._prefix!r}).")
        return fmt.read_bundle(self._prefix, keys=[key])[1][key]

    def get_variable_to_shape_map(self) -> dict[str, list[int]]:
        out = {k: list(v["shape"]) for k, v in self._content["tensors"].items()}
        out[graph_lib.OBJECT_GRAPH_KEY] = []
        return out

    def get_variable_to_dtype_map(self) -> dict[str, dtypes.DType]:
        """The dtype of every tensor; a tensor whose element type no stagecraft dtype has
        raises DataLossError naming it (the index check refuses such tensors already)."""
        table = {d.name: d for d in dtypes.ALL}
        out = {}
        for key, meta in self._content["tensors"].items():
            if meta["dtype"] not in table:
                raise DataLossError(f"Checkpoint index {fmt.index_path(self._prefix)!r} field "
                                    f"tensors[{key!r}].dtype: {meta['dtype']!r} is not a "
                                    f"stagecraft dtype ({', '.join(table)}); read the tensor "
                                    f"with get_tensor instead.")
            out[key] = table[meta["dtype"]]
        return out


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A ``CheckpointReader`` for a checkpoint prefix, or for the newest checkpoint of a
    directory. See ``CheckpointReader`` for an example."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """``(key, shape)`` of every tensor in the checkpoint, sorted by key (including the
    object graph's key, with shape ``[]``, as TensorFlow lists it).

    >>> import os, tempfile, stagecraft as tf
    >>> m = tf.Module(); m.kernel = tf.Variable([1.0, 2.0])
    >>> path = tf.train.Checkpoint(model=m).write(os.path.join(tempfile.mkdtemp(), "c"))
    >>> tf.train.list_variables(path)
    [('_CHECKPOINTABLE_OBJECT_GRAPH', []), ('model/kernel/.ATTRIBUTES/VARIABLE_VALUE', [2])]
    """
    shapes = CheckpointReader(_prefix(ckpt_dir_or_file)).get_variable_to_shape_map()
    return [(k, shapes[k]) for k in sorted(shapes)]
