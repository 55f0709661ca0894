"""``tf.train``: checkpoints of object graphs (``Checkpoint``, ``CheckpointManager``) and the
functions that inspect checkpoint files.

>>> import os, tempfile, stagecraft as tf
>>> v = tf.Variable(1.0)
>>> ckpt = tf.train.Checkpoint(v=v)
>>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
>>> _ = v.assign(5.0); _ = ckpt.restore(path).assert_consumed(); float(v.numpy())
1.0
"""
from stagecraft.distribute.cluster_spec import ClusterSpec
from stagecraft.state.checkpoint.checkpoint import Checkpoint
from stagecraft.state.checkpoint.manager import CheckpointManager
from stagecraft.state.checkpoint.reader import CheckpointReader, list_variables, load_checkpoint
from stagecraft.state.checkpoint.restore import CheckpointLoadStatus, InitializationOnlyStatus
from stagecraft.state.checkpoint.state import latest_checkpoint

__all__ = ["Checkpoint", "CheckpointLoadStatus", "ClusterSpec", "CheckpointManager", "CheckpointReader",
           "InitializationOnlyStatus", "latest_checkpoint", "list_variables", "load_checkpoint"]
