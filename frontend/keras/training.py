"""``Model.compile``/``fit``/``evaluate``/``predict`` and the ``*_on_batch`` methods, as
TF 2 Keras defines them. The steps (``train_step``, ``test_step``, ``predict_step``; override
them to customize training) run as staged ``tf.function``s unless ``compile(run_eagerly=
True)``; the loops around them, the data handling and the callbacks run in Python."""
from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from stagecraft.autodiff.tape import GradientTape
from stagecraft.data import Dataset, structure
from stagecraft.eager.tensor import Tensor
from stagecraft.keras import callbacks as callbacks_module
from stagecraft.keras import losses as losses_module
from stagecraft.keras import metrics as metrics_module
from stagecraft.keras import optimizers as optimizers_module
from stagecraft.keras.data_adapter import DataHandler, split_validation, unpack
from stagecraft.ops import math_ops as _m
from stagecraft.ops.array_ops import shape
from stagecraft.staging.function import function

__all__ = ["Trainer"]


class _Compiled:
    """What ``compile`` set: the loss, the metrics (built at the first batch, when the
    targets' shapes say what ``"accuracy"`` means) and the staged step functions. Kept out of
    the object graph: metrics and functions are not checkpointed, as in Keras."""

    def __init__(self, loss: Any, metrics: list, loss_weights: Any, run_eagerly: bool):
        self.loss = loss
        self.metric_specs = metrics
        self.loss_weights = loss_weights
        self.run_eagerly = run_eagerly
        self.loss_tracker = metrics_module.Mean(name="loss")
        self.metrics: list | None = None
        self.train_function: Callable | None = None
        self.test_function: Callable | None = None
        self.predict_function: Callable | None = None


def _loss_object(loss: Any) -> Any:
    """A callable ``loss(y_true, y_pred, sample_weight)`` reducing over the batch."""
    if loss is None:
        return None
    found = losses_module.get(loss)
    if isinstance(found, losses_module.Loss):
        return found
    name = loss if isinstance(loss, str) else getattr(found, "__name__", None)
    return losses_module.LossFunctionWrapper(found, name=name)


def _accuracy_for(name: str, loss: Any, y: Any, y_pred: Any) -> Any:
    """Keras's meaning of ``"accuracy"``: binary for one output unit, sparse categorical for
    integer labels (one dimension fewer than the predictions, or a last dimension of 1),
    categorical otherwise."""
    fn = getattr(loss, "fn", loss)
    pred_rank, true_rank = y_pred.shape.rank, y.shape.rank
    if fn is losses_module.binary_crossentropy or (y_pred.shape.rank and y_pred.shape[-1] == 1):
        metric = metrics_module.BinaryAccuracy(name=name)
    elif fn is losses_module.sparse_categorical_crossentropy or true_rank == pred_rank - 1 or \
            (true_rank == pred_rank and y.shape[-1] == 1):
        metric = metrics_module.SparseCategoricalAccuracy(name=name)
    else:
        metric = metrics_module.CategoricalAccuracy(name=name)
    return metric


class Trainer:
    """The training methods of ``keras.Model`` (a mixin; see ``Model``)."""

    # ------------------------------------------------------------------ compile

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, weighted_metrics: Any = None,
                run_eagerly: bool | None = None, steps_per_execution: int | None = None,
                jit_compile: Any = None, **kwargs: Any) -> None:
        """Configures the model for training: the optimizer (an object or a name such as
        ``"adam"``), the loss (an object, a function, or a name such as
        ``"sparse_categorical_crossentropy"``) and the metrics (objects, functions or names;
        ``"accuracy"`` picks binary, sparse categorical or categorical accuracy from the
        targets' shape, as Keras does).

        >>> import numpy as np, stagecraft as tf
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, activation="softmax")])
        >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
        ...               metrics=["accuracy"])
        >>> model.evaluate(np.zeros((4, 3)), np.zeros(4), verbose=0)[1]  # ties pick class 0
        1.0
        """
        if kwargs:
            raise TypeError(f"compile: unexpected keyword argument(s) {', '.join(kwargs)}.")
        if weighted_metrics:
            raise ValueError("compile: weighted_metrics is not supported; pass metrics, which "
                             "receive the sample weights.")
        if isinstance(loss, (dict, list, tuple)) and not isinstance(loss, str):
            raise ValueError("compile: one loss per output (a dict or list of losses) is not "
                             "supported; models here have one output. Pass one loss.")
        self.optimizer = optimizers_module.get(optimizer)
        specs = list(metrics.values()) if isinstance(metrics, dict) else list(metrics or [])
        self._compiled = _Compiled(_loss_object(loss), specs, loss_weights,
                                   bool(run_eagerly))
        self.stop_training = False

    def _require_compiled(self, method: str) -> _Compiled:
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            raise RuntimeError(f"You must compile your model before training/testing. Use "
                               f"`model.compile(optimizer, loss)` before `{method}`.")
        return compiled

    @property
    def run_eagerly(self) -> bool:
        compiled = getattr(self, "_compiled", None)
        return bool(compiled and compiled.run_eagerly)

    @property
    def metrics(self) -> list:
        """The loss tracker, then the compiled metrics (once the first batch built them)."""
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            return []
        return [compiled.loss_tracker] + list(compiled.metrics or [])

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def _build_metrics(self, y: Any, y_pred: Any) -> None:
        compiled = self._compiled
        if compiled.metrics is not None or y is None:
            compiled.metrics = compiled.metrics if compiled.metrics is not None else []
            return
        built = []
        for spec in compiled.metric_specs:
            if spec in ("accuracy", "acc"):
                built.append(_accuracy_for(spec, compiled.loss, y, y_pred))
            else:
                built.append(metrics_module.get(spec))
        compiled.metrics = built

    # ------------------------------------------------------------------ steps

    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None) -> Any:
        """The compiled loss of a batch (plus the model's added losses, if any)."""
        compiled = self._require_compiled("compute_loss")
        if compiled.loss is None:
            raise ValueError("The model has no loss to train with: pass `loss` to compile, or "
                             "override train_step.")
        loss = compiled.loss(y, y_pred, sample_weight)
        if compiled.loss_weights is not None:
            loss = _m.multiply(loss, float(compiled.loss_weights))
        for extra in getattr(self, "losses", None) or []:
            loss = _m.add(loss, extra)
        return loss

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> dict:
        """Updates the compiled metrics with a batch; returns every metric's result."""
        for m in self._compiled.metrics or []:
            m.update_state(y, y_pred, sample_weight)
        return {m.name: m.result() for m in self.metrics}

    def _track_loss(self, loss: Any, y_pred: Any) -> None:
        batch = _m.cast(_first_dim(y_pred), loss.dtype)
        self._compiled.loss_tracker.update_state(loss, sample_weight=batch)

    def train_step(self, data: Any) -> dict:
        """One optimization step on a batch ``(x, y[, sample_weight])``: forward pass, loss,
        gradients, optimizer update, metrics. Returns the metrics' results."""
        x, y, sample_weight = unpack(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = self.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        self._track_loss(loss, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data: Any) -> dict:
        """Loss and metrics of a batch, without training."""
        x, y, sample_weight = unpack(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        self._track_loss(loss, y_pred)
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data: Any) -> Any:
        """The model's output on a batch's ``x``."""
        x, _, _ = unpack(data)
        return self(x, training=False)

    def _stage(self, step: Callable) -> Callable:
        """``step`` as Keras's ``train_function``: staged (shapes relaxed, so a last smaller
        batch does not add traces) unless the model runs eagerly. The staged function takes
        the batch's tensors as flat positional arguments (one staged function per layout of
        the batch: which parts are present, how they nest), so every call after the first
        takes ``Function``'s fast path instead of binding a nested argument."""
        if self.run_eagerly:
            return step
        staged: dict[str, Callable] = {}

        def call(data: Any) -> Any:
            if isinstance(data, list):
                data = tuple(data)
            if type(data) is tuple and all(type(v) is Tensor or v is None for v in data):
                # the common batch, (x, y[, weights]) tensors: its layout without a walk
                key = tuple(v is None for v in data)
                fn = staged.get(key)
                if fn is not None:
                    return fn(*[v for v in data if v is not None])
            template = structure.map_structure(lambda v: None if v is None else 0, data)
            key = tuple(v is None for v in data) if type(data) is tuple and all(
                type(v) is Tensor or v is None for v in data) else repr(template)
            flat = [v for v in structure.flatten(data) if v is not None]
            fn = staged.get(key)
            if fn is None:
                def run_step(*flat: Any) -> Any:
                    parts = iter(flat)
                    return step(structure.map_structure(
                        lambda v: None if v is None else next(parts), template))
                run_step.__name__ = step.__name__
                # a fixed arity (not *args), which Function's fast path needs
                run_step.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
                    inspect.Parameter(f"part{i}", inspect.Parameter.POSITIONAL_ONLY)
                    for i in range(len(flat))])
                fn = staged[key] = function(run_step, reduce_retracing=True)
            return fn(*flat)
        return call

    def make_train_function(self) -> Callable:
        compiled = self._require_compiled("fit")
        if compiled.train_function is None:
            compiled.train_function = self._stage(self.train_step)
        return compiled.train_function

    def make_test_function(self) -> Callable:
        compiled = self._require_compiled("evaluate")
        if compiled.test_function is None:
            compiled.test_function = self._stage(self.test_step)
        return compiled.test_function

    def make_predict_function(self) -> Callable:
        compiled = getattr(self, "_compiled", None) or _Compiled(None, [], None, False)
        self._compiled = compiled
        if compiled.predict_function is None:
            compiled.predict_function = self._stage(self.predict_step)
        return compiled.predict_function

    def _first_batch(self, data: Any) -> None:
        """Builds the model and its metrics eagerly from the first batch (before any trace:
        variables are then created outside the staged steps)."""
        if self._compiled.metrics is not None:
            return
        x, y, _ = unpack(data)
        y_pred = self(x, training=False)
        self._build_metrics(None if y is None else structure.normalize(y, "fit"), y_pred)

    # ------------------------------------------------------------------ loops

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: Any = "auto", callbacks: Any = None, validation_split: float = 0.0,
            validation_data: Any = None, shuffle: bool = True, class_weight: Any = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: int = 1) -> Any:
        """Trains for ``epochs`` epochs on arrays/tensors ``x, y`` (batches of ``batch_size``,
        default 32, reshuffled every epoch) or on a ``tf.data`` dataset of batches; returns a
        ``History`` whose ``history`` dict lists every epoch's logs (``loss``, metrics, and
        ``val_*`` with validation data).

        >>> import numpy as np, stagecraft as tf
        >>> x = np.linspace(-1, 1, 64, dtype=np.float32)[:, None]
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        >>> model.compile(optimizer=tf.keras.optimizers.SGD(0.5), loss="mse")
        >>> history = model.fit(x, 3 * x + 1, epochs=20, batch_size=16, verbose=0)
        >>> history.history["loss"][-1] < 1e-3
        True
        """
        self._require_compiled("fit")
        verbose = 1 if verbose == "auto" else int(verbose)
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = split_validation(x, y, sample_weight,
                                                                      validation_split)
        handler = DataHandler(x, y, sample_weight, batch_size, steps_per_epoch, shuffle,
                              class_weight)
        history = callbacks_module.History()
        callback_list = self._callbacks(callbacks, verbose, history, epochs=epochs,
                                        steps=handler.steps)
        self.stop_training = False
        train = None
        logs: dict = {}
        # Keras calls batch hooks (and reads the batch logs) only when a callback has them
        batch_hooks = callback_list.overrides("on_train_batch_begin", "on_train_batch_end")
        callback_list.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            for step, data in enumerate(handler.epoch()):
                if train is None:
                    self._first_batch(data)
                    train = self.make_train_function()
                if batch_hooks:
                    callback_list.on_train_batch_begin(step)
                logs = train(data)
                if batch_hooks:  # (reading the results back costs a few µs per metric)
                    logs = _floats(logs)
                    callback_list.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            if train is None:
                raise ValueError("fit: the data has no batches (an empty dataset, or "
                                 "steps_per_epoch=0).")
            epoch_logs = _floats(logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                vx, vy, vsw = unpack(validation_data) if not _is_dataset(validation_data) \
                    else (validation_data, None, None)
                val_logs = self.evaluate(vx, vy, batch_size=validation_batch_size or batch_size,
                                         sample_weight=vsw, steps=validation_steps, verbose=0,
                                         return_dict=True)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            callback_list.on_epoch_end(epoch, epoch_logs)
            logs = epoch_logs
            if self.stop_training:
                break
        callback_list.on_train_end(logs)
        return history

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
                 callbacks: Any = None, return_dict: bool = False) -> Any:
        """The loss and metrics over the data: a float when there are no metrics, else the
        list ``[loss, metric, ...]`` (or a dict with ``return_dict=True``)."""
        self._require_compiled("evaluate")
        handler = DataHandler(x, y, sample_weight, batch_size, steps)
        callback_list = self._callbacks(callbacks, 0, None, steps=handler.steps)
        self.reset_metrics()
        test = None
        logs: dict = {}
        callback_list.on_test_begin()
        for step, data in enumerate(handler.epoch()):
            if test is None:
                self._first_batch(data)
                test = self.make_test_function()
            callback_list.on_test_batch_begin(step)
            logs = _floats(test(data))
            callback_list.on_test_batch_end(step, logs)
        callback_list.on_test_end(logs)
        return _result(self, logs, return_dict)

    def predict(self, x: Any, batch_size: int | None = None, verbose: Any = "auto",
                steps: int | None = None, callbacks: Any = None) -> Any:
        """The model's outputs for ``x``, batch by batch, concatenated as NumPy arrays.

        >>> import numpy as np, stagecraft as tf
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, kernel_initializer="ones")])
        >>> model.predict(np.ones((3, 2)), verbose=0).tolist()
        [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]
        """
        handler = DataHandler(x, None, None, batch_size, steps)
        callback_list = self._callbacks(callbacks, 0, None, steps=handler.steps)
        predict = None
        outputs: list = []
        callback_list.on_predict_begin()
        for step, data in enumerate(handler.epoch()):
            if predict is None:
                predict = self.make_predict_function()
            callback_list.on_predict_batch_begin(step)
            out = predict(data)
            outputs.append(structure.map_structure(lambda t: t.numpy(), out))
            callback_list.on_predict_batch_end(step, {"outputs": out})
        callback_list.on_predict_end()
        if not outputs:
            raise ValueError("predict: the data has no batches.")
        return structure.map_structure(lambda *parts: np.concatenate(parts), *outputs)

    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: Any = None, reset_metrics: bool = True,
                       return_dict: bool = False) -> Any:
        """One training step on one batch; the loss (and metrics) after it."""
        self._require_compiled("train_on_batch")
        (data,) = DataHandler(x, y, sample_weight, _rows_of(x), None, False,
                              class_weight).epoch()
        self._first_batch(data)
        if reset_metrics:
            self.reset_metrics()
        return _result(self, _floats(self.make_train_function()(data)), return_dict)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      reset_metrics: bool = True, return_dict: bool = False) -> Any:
        """The loss (and metrics) of one batch, without training."""
        self._require_compiled("test_on_batch")
        (data,) = DataHandler(x, y, sample_weight, _rows_of(x)).epoch()
        self._first_batch(data)
        if reset_metrics:
            self.reset_metrics()
        return _result(self, _floats(self.make_test_function()(data)), return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """The model's outputs for one batch, as NumPy arrays."""
        (data,) = DataHandler(x, None, None, _rows_of(x)).epoch()
        out = self.make_predict_function()(data)
        return structure.map_structure(lambda t: t.numpy(), out)

    def _callbacks(self, given: Any, verbose: int, history: Any, **params: Any) -> Any:
        if isinstance(given, callbacks_module.CallbackList):
            given = given.callbacks
        chain = list(given or [])
        if verbose:
            chain.insert(0, callbacks_module.ProgbarLogger())
        if history is not None:
            chain.append(history)
        return callbacks_module.CallbackList(chain, model=self, verbose=verbose, **params)


def _first_dim(t: Any) -> Any:
    return shape(t)[0]


def _floats(logs: Any) -> dict:
    return {k: float(np.asarray(v.numpy() if hasattr(v, "numpy") else v))
            for k, v in dict(logs).items()}


def _is_dataset(value: Any) -> bool:
    return isinstance(value, Dataset)


def _rows_of(x: Any) -> int:
    first = structure.flatten(x)[0] if isinstance(x, (tuple, dict)) else x
    return len(np.asarray(first.numpy() if hasattr(first, "numpy") else first))


def _result(model: Any, logs: dict, return_dict: bool) -> Any:
    if return_dict:
        return logs
    values = [logs[name] for name in model.metrics_names if name in logs]
    return values[0] if len(values) == 1 else values
