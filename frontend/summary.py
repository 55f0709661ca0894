"""``tf.summary``: write scalars and histograms for TensorBoard, eagerly or from staged
functions (where each summary runs at call time, through ``py_function``). Events are written
by TensorBoard's own writer (``tensorboard.summary.writer.EventFileWriter``) and built by its
own summary helpers, so TensorBoard reads them as it reads TensorFlow's. TensorBoard is an
optional dependency: ``pip install "stagecraft[tensorboard]"``.

>>> import os, tempfile, stagecraft as tf
>>> writer = tf.summary.create_file_writer(tempfile.mkdtemp())
>>> with writer.as_default(step=3):
...     wrote = tf.summary.scalar("loss", 0.5)
>>> bool(wrote), len(os.listdir(writer.logdir))
(True, 1)
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from typing import Any, Iterator

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.scopes import get_current_name_scope
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import math_ops as _m
from stagecraft.ops.script_ops import py_function

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "scalar", "histogram",
           "flush", "record_if", "should_record_summaries", "experimental"]

_WRITER: contextvars.ContextVar["SummaryWriter | None"] = contextvars.ContextVar(
    "summary_writer", default=None)
_STEP: contextvars.ContextVar[Any] = contextvars.ContextVar("summary_step", default=None)
_RECORD: contextvars.ContextVar[Any] = contextvars.ContextVar("summary_record", default=True)


def _tensorboard() -> Any:
    try:
        from tensorboard.plugins.histogram import summary_v2 as histogram_plugin
        from tensorboard.plugins.scalar import summary_v2 as scalar_plugin
        from tensorboard.compat.proto import event_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError:
        raise ImportError("tf.summary writes TensorBoard event files with the tensorboard "
                          "package, which is not installed: pip install "
                          "\"stagecraft[tensorboard]\" (or pip install tensorboard).") from None
    return scalar_plugin, histogram_plugin, event_pb2, EventFileWriter


class SummaryWriter:
    """Writes events to one file in ``logdir`` (``create_file_writer`` makes it); use it with
    ``as_default()`` so ``tf.summary.scalar`` and the others write to it."""

    def __init__(self, logdir: str | None, max_queue: int | None = None,
                 flush_millis: int | None = None, filename_suffix: str | None = None):
        self.logdir = None if logdir is None else os.fspath(logdir)
        self._lock = threading.Lock()
        self._file: Any = None
        if self.logdir is not None:
            _, _, self._event_pb2, writer_class = _tensorboard()
            os.makedirs(self.logdir, exist_ok=True)
            self._file = writer_class(self.logdir, max_queue_size=max_queue or 10,
                                      flush_secs=(flush_millis or 120_000) / 1000,
                                      filename_suffix=filename_suffix or ".v2")

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator["SummaryWriter"]:
        """Makes this the default writer inside the block (and ``step`` the default step)."""
        token = _WRITER.set(self)
        step_token = _STEP.set(step) if step is not None else None
        try:
            yield self
        finally:
            if step_token is not None:
                _STEP.reset(step_token)
            _WRITER.reset(token)
            self.flush()

    def set_as_default(self, step: Any = None) -> None:
        """Makes this the default writer from now on (and ``step`` the default step)."""
        _WRITER.set(self)
        if step is not None:
            _STEP.set(step)

    def init(self) -> None:
        """Nothing to do: the file is opened when the writer is created."""

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _write(self, summary: Any, step: int) -> None:
        if self._file is None:
            return
        event = self._event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary)
        with self._lock:
            self._file.add_event(event)


def create_file_writer(logdir: str, max_queue: int | None = None,
                       flush_millis: int | None = None, filename_suffix: str | None = None,
                       name: str | None = None, experimental_trackable: bool = False
                       ) -> SummaryWriter:
    """A writer of TensorBoard event files in ``logdir`` (created if needed)."""
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def create_noop_writer() -> SummaryWriter:
    """A writer that writes nothing (summaries under it still return True)."""
    return SummaryWriter(None)


def should_record_summaries() -> bool:
    """Whether summaries would be written now: a default writer and a true ``record_if``."""
    record = _RECORD.get()
    return _WRITER.get() is not None and bool(record() if callable(record) else record)


@contextlib.contextmanager
def record_if(condition: Any) -> Iterator[None]:
    """Writes summaries inside the block only when ``condition`` (a bool or a callable) is
    true."""
    token = _RECORD.set(condition)
    try:
        yield
    finally:
        _RECORD.reset(token)


def flush(writer: SummaryWriter | None = None, name: str | None = None) -> None:
    """Flushes ``writer`` (default: the default writer)."""
    writer = writer or _WRITER.get()
    if writer is not None:
        writer.flush()


class _Experimental:
    """``tf.summary.experimental``: the default step."""

    @staticmethod
    def set_step(step: Any) -> None:
        """Sets the default step of summaries (an int, a tensor or a variable)."""
        _STEP.set(step)

    @staticmethod
    def get_step() -> Any:
        """The default step set by ``set_step`` or ``as_default(step=)``, or None."""
        return _STEP.get()


experimental = _Experimental()


def _tag(name: str) -> str:
    scope = get_current_name_scope()
    return f"{scope}/{name}" if scope else name


def _emit(kind: str, name: str, data: Any, step: Any, extra: dict) -> Any:
    """Writes one summary now (eagerly) or at every call (inside a trace); returns a bool
    tensor saying whether it was written."""
    writer = _WRITER.get()
    if writer is None or not should_record_summaries():
        return wrap(np.asarray(False))
    step = _STEP.get() if step is None else step
    if step is None:
        raise ValueError(f"tf.summary.{kind}({name!r}): no step set. Pass step=..., or set "
                         f"one with tf.summary.experimental.set_step(step) or "
                         f"writer.as_default(step=...).")
    tag = _tag(name)
    scalar_plugin, histogram_plugin, _, _ = _tensorboard()

    def write(value: Tensor, at: Tensor) -> Any:
        array = np.asarray(value.numpy())
        if kind == "scalar":
            summary = scalar_plugin.scalar_pb(tag, array, **extra)
        else:
            summary = histogram_plugin.histogram_pb(tag, array, **extra)
        writer._write(summary, int(np.asarray(at.numpy())))
        return wrap(np.asarray(True))

    data = convert_to_tensor(data)
    if kind == "scalar" and data.shape.rank != 0:
        raise ValueError(f"tf.summary.scalar({name!r}): data must be a scalar; got shape "
                         f"{data.shape}.")
    at = _m.cast(convert_to_tensor(step.read_value() if hasattr(step, "read_value") else step),
                 _dt.int64)
    if STATE.get().graph is None:
        return write(data, at)
    return py_function(write, [data, at], _dt.bool_)  # at every call of the staged function


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> Any:
    """Writes the scalar ``data`` under ``name`` (prefixed by the name scope) at ``step``;
    returns True (a bool tensor) if written, False with no default writer.

    >>> import tempfile, stagecraft as tf
    >>> with tf.summary.create_file_writer(tempfile.mkdtemp()).as_default():
    ...     bool(tf.summary.scalar("accuracy", 0.9, step=1))
    True
    """
    return _emit("scalar", name, data, step, {"description": description})


def histogram(name: str, data: Any, step: Any = None, buckets: int | None = None,
              description: str | None = None) -> Any:
    """Writes a histogram of the values of ``data`` (``buckets`` bins, TensorBoard's default
    30) under ``name`` at ``step``."""
    return _emit("histogram", name, data, step, {"buckets": buckets,
                                                  "description": description})
