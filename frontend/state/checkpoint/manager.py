"""``tf.train.CheckpointManager``: numbered saves in one directory, keeping the newest few."""
from __future__ import annotations

import os
import time
from typing import Any

from stagecraft.state.checkpoint import format as fmt
from stagecraft.state.checkpoint import state
from stagecraft.state.checkpoint.checkpoint import Checkpoint
from stagecraft.eager.context import executing_eagerly


class CheckpointManager:
    """Saves ``checkpoint`` as ``<directory>/<checkpoint_name>-<n>`` and deletes the oldest
    checkpoints beyond ``max_to_keep`` (``None`` keeps them all), except that one every
    ``keep_checkpoint_every_n_hours`` is left on disk (no longer managed). With
    ``step_counter`` and ``checkpoint_interval``, ``save()`` skips (returns None) until the
    counter has advanced by the interval. Picks up the checkpoints already recorded in
    ``directory``.

    >>> import tempfile, stagecraft as tf
    >>> ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    >>> manager = tf.train.CheckpointManager(ckpt, tempfile.mkdtemp(), max_to_keep=2)
    >>> for _ in range(3):
    ...     _ = manager.save()
    >>> [p.rsplit("/", 1)[-1] for p in manager.checkpoints]
    ['ckpt-2', 'ckpt-3']
    """

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: int | None = 5,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt", step_counter: Any = None,
                 checkpoint_interval: Any = None, init_fn: Any = None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: expected a tf.train.Checkpoint, got "
                            f"{type(checkpoint).__name__}.")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"CheckpointManager: max_to_keep must be a positive int or None "
                             f"(keep every checkpoint), got {max_to_keep!r}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: checkpoint_interval needs a step_counter (a "
                             "variable holding the current step) to measure steps against.")
        if keep_checkpoint_every_n_hours is not None and keep_checkpoint_every_n_hours <= 0:
            raise ValueError(f"CheckpointManager: keep_checkpoint_every_n_hours must be "
                             f"positive, got {keep_checkpoint_every_n_hours!r}.")
        self._keep_every_s = None if keep_checkpoint_every_n_hours is None else \
            3600.0 * keep_checkpoint_every_n_hours
        self._last_preserved = time.time()  # as TensorFlow: counting starts now
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._last_step: int | None = None
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._init_fn = init_fn
        latest, every = state.read_state(self._directory)
        # Forget recorded checkpoints whose files are gone (deleted by hand).
        self._checkpoints = [p for p in every if fmt.bundle_exists(p)]
        self._latest = latest if latest is not None and fmt.bundle_exists(latest) else None

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoint prefixes, oldest first."""
        return list(self._checkpoints)

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest checkpoint prefix, or None before the first save."""
        return self._latest

    def save(self, checkpoint_number: int | None = None, check_interval: bool = True,
             options: Any = None) -> str:
        """Writes a new checkpoint (numbered by ``checkpoint_number``, else by the incremented
        ``save_counter``), records it, deletes the oldest beyond ``max_to_keep`` and returns
        its prefix."""
        if not executing_eagerly():
            raise NotImplementedError("CheckpointManager.save() cannot be called inside a "
                                      "tf.function; call it outside.")
        if self._interval is not None and check_interval:
            step, interval = int(_value(self._step_counter)), int(_value(self._interval))
            if self._last_step is not None and step < self._last_step + interval:
                return None  # fewer than checkpoint_interval steps since the last save
            self._last_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        number = int(counter.numpy()) if checkpoint_number is None else int(checkpoint_number)
        path = f"{self._prefix}-{number}"
        try:
            self._checkpoint.write(path)
        except BaseException:
            counter.assign_sub(1)
            raise
        kept, latest = self._checkpoints, self._latest
        self._checkpoints = [p for p in self._checkpoints if p != path] + [path]
        self._latest = path
        # Record the new checkpoint before deleting old ones, so an interruption while
        # deleting still finds it; then record again without the deleted ones.
        try:
            state.write_state(self._directory, path, self._checkpoints)
        except BaseException:  # not recorded: the save did not happen (no unrecorded files)
            self._checkpoints, self._latest = kept, latest
            if path not in kept:  # (an overwritten, recorded one stays: it holds the new values)
                fmt.delete_bundle(path)
            counter.assign_sub(1)
            raise
        self._sweep()
        state.write_state(self._directory, path, self._checkpoints)
        # What killed saves and deletions of numbered checkpoints here left behind.
        fmt.sweep_numbered(self._directory, os.path.basename(self._prefix))
        return path

    def restore_or_initialize(self) -> str | None:
        """Restores the latest checkpoint and returns its path, or runs ``init_fn`` (when
        given) and returns None when there is none."""
        if self._latest is not None:
            self._checkpoint.restore(self._latest)
            return self._latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def _sweep(self) -> None:
        if self._max_to_keep is None:
            return
        while len(self._checkpoints) > self._max_to_keep:
            oldest = self._checkpoints.pop(0)
            written = _written_at(oldest)
            if self._keep_every_s is not None and written is not None and \
                    written - self._last_preserved >= self._keep_every_s:
                self._last_preserved = written  # kept on disk, no longer managed
                continue
            fmt.delete_bundle(oldest)


def _value(x: Any) -> Any:
    """A Python number from an int, a tensor or a variable."""
    return x.numpy() if hasattr(x, "numpy") else x


def _written_at(prefix: str) -> float | None:
    """When the checkpoint at ``prefix`` was written (its index file's modification time)."""
    try:
        return os.path.getmtime(fmt.index_path(prefix))
    except OSError:
        return None
