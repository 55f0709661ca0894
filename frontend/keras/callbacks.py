"""``keras.callbacks``: hooks that ``fit``/``evaluate``/``predict`` call at the start and end of
training, epochs and batches, with the logs (``{"loss": ..., "val_loss": ...}``) as Python
floats. ``History`` and the progress bar are added by ``fit`` itself, as in Keras."""
from __future__ import annotations

import csv
import math
import os
import sys
import time
from typing import Any, Callable, Iterable

import numpy as np

from stagecraft import summary

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "EarlyStopping",
           "ModelCheckpoint", "ReduceLROnPlateau", "LearningRateScheduler", "CSVLogger",
           "TensorBoard", "TerminateOnNaN", "LambdaCallback"]


class Callback:
    """Base class: override any of the ``on_*`` hooks; ``self.model`` and ``self.params``
    (``epochs``, ``steps``, ``verbose``) are set before training starts.

    >>> import numpy as np, stagecraft as tf
    >>> class Count(tf.keras.callbacks.Callback):
    ...     def on_epoch_end(self, epoch, logs=None):
    ...         print(epoch, sorted(logs))
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer="sgd", loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[Count()])
    0 ['loss']
    1 ['loss']
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...


class CallbackList(Callback):
    """Calls every hook of a list of callbacks in order."""

    def __init__(self, callbacks: Iterable[Callback] | None = None, model: Any = None,
                 **params: Any):
        super().__init__()
        self.callbacks = list(callbacks or [])
        for c in self.callbacks:
            if not isinstance(c, Callback):
                raise TypeError(f"callbacks: expected tf.keras.callbacks.Callback objects; got "
                                f"{type(c).__name__}.")
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)

    def overrides(self, *hooks: str) -> bool:
        """Whether any callback defines one of ``hooks`` itself (not the base's no-op)."""
        def own(c: Callback, h: str) -> bool:
            fn = getattr(c, h)  # a bound method, or a LambdaCallback's plain function
            return getattr(fn, "__func__", fn) is not getattr(Callback, h)
        return any(own(c, h) for c in self.callbacks for h in hooks)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for c in self.callbacks:
            c.set_model(model)

    def set_params(self, params: dict) -> None:
        super().set_params(params)
        for c in self.callbacks:
            c.set_params(params)



def _dispatch(hook: str) -> Callable[..., None]:
    def call_all(self: CallbackList, *args: Any, **kwargs: Any) -> None:
        for c in self.callbacks:
            getattr(c, hook)(*args, **kwargs)
    call_all.__name__ = hook
    return call_all


for _hook in [n for n in vars(Callback) if n.startswith("on_")]:
    setattr(CallbackList, _hook, _dispatch(_hook))


class History(Callback):
    """Records the epoch logs: ``history.history["loss"]`` lists the loss of every epoch
    (``fit`` returns it)."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        self.model.history = self


def _format_logs(logs: dict) -> str:
    return " - ".join(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}"
                      for k, v in logs.items())


class ProgbarLogger(Callback):
    """Keras's progress output: with ``verbose=1`` a bar redrawn in place on a terminal (one
    line per epoch elsewhere), with ``verbose=2`` one line per epoch."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__()
        self.stream = stream
        self._interactive = False

    def _out(self) -> Any:
        return self.stream if self.stream is not None else sys.stdout

    def on_train_begin(self, logs: dict | None = None) -> None:
        out = self._out()
        self._interactive = hasattr(out, "isatty") and out.isatty()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._start = time.perf_counter()
        self._seen = 0
        if self.params.get("verbose", 1) == 1:
            self._out().write(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}\n")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._seen = batch + 1
        if self._interactive and self.params.get("verbose", 1) == 1:
            self._out().write("\r" + self._bar(logs or {}))
            self._out().flush()

    def _bar(self, logs: dict, final: bool = False) -> str:
        steps = self.params.get("steps")
        elapsed = time.perf_counter() - self._start
        if steps:
            done = int(30 * self._seen / steps)
            bar = "=" * max(done - 1, 0) + (">" if done < 30 else "=") + "." * (30 - done)
            head = f"{self._seen}/{steps} [{bar}]"
        else:
            head = f"{self._seen}/Unknown"
        if final or not steps:
            tail = f"{elapsed:.0f}s {1000 * elapsed / max(self._seen, 1):.0f}ms/step"
        else:
            tail = f"ETA: {elapsed / self._seen * (steps - self._seen):.0f}s"
        text = f"{head} - {tail}"
        return text + (" - " + _format_logs(logs) if logs else "")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        verbose = self.params.get("verbose", 1)
        if verbose == 2:
            elapsed = time.perf_counter() - self._start
            self._out().write(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)} - "
                              f"{elapsed:.0f}s - {_format_logs(logs or {})}\n")
        elif verbose == 1:
            self._out().write(("\r" if self._interactive else "")
                              + self._bar(logs or {}, final=True) + "\n")
        self._out().flush()


class _Monitor(Callback):
    """What EarlyStopping and ReduceLROnPlateau share: a watched log value and its best."""

    def __init__(self, monitor: str, mode: str, min_delta: float):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"mode must be 'auto', 'min' or 'max'; got {mode!r}.")
        self.monitor = monitor
        if mode == "auto":
            mode = "max" if "acc" in monitor or monitor.endswith("auc") else "min"
        self.mode = mode
        self.min_delta = abs(min_delta)
        self.best = math.inf if mode == "min" else -math.inf

    def _improved(self, value: float) -> bool:
        if self.mode == "min":
            return value < self.best - self.min_delta
        return value > self.best + self.min_delta

    def _value(self, logs: dict | None) -> float | None:
        value = (logs or {}).get(self.monitor)
        if value is None:
            import logging
            logging.getLogger("stagecraft").warning(
                "%s: the monitored metric %r is not in the logs (available: %s); skipping.",
                type(self).__name__, self.monitor, ", ".join(sorted(logs or {})))
        return value


class EarlyStopping(_Monitor):
    """Stops ``fit`` when ``monitor`` has not improved by ``min_delta`` for ``patience``
    epochs; ``restore_best_weights`` puts back the best epoch's weights.

    >>> import numpy as np, stagecraft as tf
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")
    >>> h = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=10, verbose=0,
    ...               callbacks=[tf.keras.callbacks.EarlyStopping(monitor="loss", patience=2)])
    >>> len(h.history["loss"])
    3
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__(monitor, mode, min_delta)
        self.patience = patience
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.stopped_epoch = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.best = math.inf if self.mode == "min" else -math.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = self._value(logs)
        if value is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._improved(value):
            self.best, self.best_epoch = value, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved_over_baseline(value):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def _improved_over_baseline(self, value: float) -> bool:
        return value < self.baseline if self.mode == "min" else value > self.baseline


class ReduceLROnPlateau(_Monitor):
    """Multiplies the optimizer's learning rate by ``factor`` when ``monitor`` has not
    improved for ``patience`` epochs (not below ``min_lr``)."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0):
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0; got "
                             f"{factor}.")
        super().__init__(monitor, mode, min_delta)
        self.factor, self.patience, self.cooldown, self.min_lr = factor, patience, cooldown, min_lr
        self.verbose = verbose
        self.wait = self.cooldown_counter = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        value = self._value(logs)
        if value is None:
            return
        if logs is not None:
            logs["lr"] = float(np.asarray(self.model.optimizer.learning_rate))
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(value):
            self.best, self.wait = value, 0
            return
        if self.cooldown_counter > 0:
            return
        self.wait += 1
        if self.wait >= self.patience:
            old = float(np.asarray(self.model.optimizer.learning_rate))
            if old > self.min_lr:
                new = max(old * self.factor, self.min_lr)
                self.model.optimizer.learning_rate = new
                if self.verbose:
                    print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                          f"{new}.")
                self.cooldown_counter, self.wait = self.cooldown, 0


class LearningRateScheduler(Callback):
    """Sets the learning rate at the start of each epoch to ``schedule(epoch, lr)``."""

    def __init__(self, schedule: Callable[..., float], verbose: int = 0):
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        lr = float(np.asarray(self.model.optimizer.learning_rate))
        try:
            new = self.schedule(epoch, lr)
        except TypeError:  # a schedule of the epoch only (Keras 1 style)
            new = self.schedule(epoch)
        new = float(np.asarray(new))
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule returned {new} for epoch "
                             f"{epoch}; it must return a finite float.")
        self.model.optimizer.learning_rate = new
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["lr"] = float(np.asarray(self.model.optimizer.learning_rate))


class ModelCheckpoint(Callback):
    """Saves the model's weights (``save_weights``, or the whole model where the path ends in
    ``.keras``) after each epoch; ``filepath`` may use the epoch and logs, e.g.
    ``"ckpt-{epoch:02d}-{val_loss:.2f}"``; ``save_best_only`` keeps only improvements of
    ``monitor``."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: str | int = "epoch",
                 initial_value_threshold: float | None = None):
        super().__init__()
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint: save_freq={save_freq!r} is not supported; "
                             f"use 'epoch'.")
        self.filepath = os.fspath(filepath)
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.verbose = verbose
        self._monitor = _Monitor(monitor, mode, 0.0)
        if initial_value_threshold is not None:
            self._monitor.best = initial_value_threshold

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.save_best_only:
            value = self._monitor._value(logs)
            if value is None or not self._monitor._improved(value):
                return
            self._monitor.best = value
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_weights_only or not path.endswith(".keras"):
            self.model.save_weights(path)
        else:
            self.model.save(path)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")


class CSVLogger(Callback):
    """Writes the epoch logs to a CSV file (one row per epoch, a header first)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file: Any = None
        self._writer: Any = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        exists = self.append and os.path.exists(self.filename)
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._header_written = exists

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        row = {"epoch": epoch, **(logs or {})}
        if self._writer is None:
            self._writer = csv.DictWriter(self._file, fieldnames=list(row),
                                          delimiter=self.sep)
            if not self._header_written:
                self._writer.writeheader()
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None:
            self._file.close()
        self._file = self._writer = None


class TensorBoard(Callback):
    """Writes TensorBoard event files through ``tf.summary``: each epoch's logs as scalars
    ``epoch_<name>`` in ``log_dir/train`` (and the ``val_`` ones in ``log_dir/validation``),
    every ``histogram_freq`` epochs a histogram of each weight; with ``update_freq`` an
    integer, also ``batch_<name>`` every that many batches. (``write_graph`` is accepted and
    writes nothing: stagecraft's graphs are not TensorFlow GraphDefs.)"""

    def __init__(self, log_dir: str = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False,
                 update_freq: str | int = "epoch", **kwargs: Any):
        super().__init__()
        self._summary = summary
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = int(histogram_freq)
        self.update_freq = update_freq
        self._writers: dict[str, Any] = {}
        self._batches = 0

    def _writer(self, which: str) -> Any:
        if which not in self._writers:
            self._writers[which] = self._summary.create_file_writer(
                os.path.join(self.log_dir, which))
        return self._writers[which]

    def _scalars(self, which: str, prefix: str, logs: dict, step: int) -> None:
        with self._writer(which).as_default(step=step):
            for key, value in logs.items():
                self._summary.scalar(prefix + key, value)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._batches += 1
        if isinstance(self.update_freq, int) and self._batches % self.update_freq == 0:
            self._scalars("train", "batch_", logs or {}, self._batches)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        self._scalars("train", "epoch_", {k: v for k, v in logs.items()
                                          if not k.startswith("val_")}, epoch)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val:
            self._scalars("validation", "epoch_", val, epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            with self._writer("train").as_default(step=epoch):
                for w in self.model.weights:
                    name = w.name[:-2] if w.name.endswith(":0") else w.name
                    self._summary.histogram(name, w.numpy())

    def on_train_end(self, logs: dict | None = None) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class LambdaCallback(Callback):
    """A callback from functions: ``on_epoch_end=lambda epoch, logs: ...`` and so on."""

    def __init__(self, **hooks: Callable[..., Any]):
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}.")
            setattr(self, name, fn)
