"""The ``.keras`` file: ``Model.save`` and ``keras.models.load_model``.

A ``.keras`` file is a zip holding three members:

* ``metadata.json``: ``{"format": "stagecraft.keras", "version": 1}``;
* ``config.json``: ``{"model": <the model's class_name/config>, "compile": <the optimizer's
  class_name/config, the loss and metric names> or null, "weights": [[shape, dtype], ...]}``;
* ``model.weights.npz``: the weights as arrays ``w0``, ``w1``, ... in ``model.weights`` order.

Loading treats the file as untrusted input: members and sizes are checked before anything is
read, nothing is unpickled, the config can only name registered Keras classes (so no code from
the file runs), the weights created while the model is rebuilt may not exceed what the file
holds (a crafted config cannot make the loader allocate without bound), and every weight must
match its saved shape and dtype. A bad file is a ``ValueError`` whose first line names it."""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from typing import Any

import numpy as np

from stagecraft.ir import durable
from stagecraft.ir.serialize import read_npz, savez
from stagecraft.keras import losses as losses_module
from stagecraft.keras import optimizers as optimizers_module
from stagecraft.keras import serialization

__all__ = ["save_model", "load_model"]

FORMAT, VERSION = "stagecraft.keras", 1
_MEMBERS = {"metadata.json", "config.json", "model.weights.npz"}
_MAX_JSON = 64 << 20  # bytes of config a model may have

def _compile_config(model: Any) -> dict | None:
    compiled = getattr(model, "_compiled", None)
    if compiled is None:
        return None
    loss = compiled.loss
    loss_spec = None
    if loss is not None:
        if type(loss) in vars(losses_module).values() and hasattr(loss, "get_config") and \
                type(loss) is not losses_module.LossFunctionWrapper:
            loss_spec = {"class_name": type(loss).__name__, "config": loss.get_config()}
        elif isinstance(loss, losses_module.LossFunctionWrapper) and isinstance(loss.name, str):
            loss_spec = loss.name
        else:
            return None  # a custom loss: the file is loadable, uncompiled
    metrics = [m for m in compiled.metric_specs if isinstance(m, str)]
    if len(metrics) != len(compiled.metric_specs):
        return None
    opt = model.optimizer
    spec = {"optimizer": {"class_name": type(opt).__name__, "config": opt.get_config()},
            "loss": loss_spec, "metrics": metrics}
    try:
        json.dumps(spec, allow_nan=False)
    except (TypeError, ValueError):
        return None  # a schedule or other object in the config: the file loads uncompiled
    return spec


def save_model(model: Any, filepath: str, overwrite: bool = True) -> None:
    """Writes ``model`` to the ``.keras`` file ``filepath`` (atomically)."""
    filepath = os.fspath(filepath)
    if not model.built:
        raise ValueError("The model has not been built yet: call it on data (or pass "
                         "input_shape to its first layer) before saving.")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False.")
    config = {"model": serialization.serialize(model), "compile": _compile_config(model),
              "weights": [[list(w.shape.as_list()), w.dtype.name] for w in model.weights]}
    arrays = {f"w{i}": np.asarray(w.numpy()) for i, w in enumerate(model.weights)}
    weights = io.BytesIO()
    savez(weights, arrays)
    blob = io.BytesIO()
    with zipfile.ZipFile(blob, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("metadata.json", json.dumps({"format": FORMAT, "version": VERSION}))
        z.writestr("config.json", json.dumps(config, allow_nan=False))
        z.writestr("model.weights.npz", weights.getvalue())
    durable.write_atomic(filepath, blob.getvalue())


def _read_members(path: str) -> tuple[dict, dict, bytes]:
    size = os.path.getsize(path)
    with zipfile.ZipFile(path) as z:
        infos = {i.filename: i for i in z.infolist()}
        if set(infos) != _MEMBERS:
            raise ValueError(f"it holds members {sorted(infos)}, not {sorted(_MEMBERS)}")
        for name, info in infos.items():
            limit = _MAX_JSON if name.endswith(".json") else 64 * size + (1 << 20)
            if info.file_size > limit:
                raise ValueError(f"member {name} declares {info.file_size} bytes, more than a "
                                 f"file of {size} bytes can hold")
        metadata = json.loads(z.read("metadata.json"))
        config = json.loads(z.read("config.json"))
        weights = z.read("model.weights.npz")
    if metadata != {"format": FORMAT, "version": VERSION}:
        raise ValueError(f"metadata.json is {str(metadata)[:200]}, not a {FORMAT} version "
                         f"{VERSION} file")
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict) or \
            not isinstance(config.get("weights"), list):
        raise ValueError("config.json has no model config and weights list")
    return metadata, config, weights


def load_model(filepath: str, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True) -> Any:
    """The model saved by ``Model.save`` at ``filepath``: rebuilt from its config, with its
    weights, and compiled again when it was compiled with built-in optimizer, loss and metrics
    (the optimizer's slots start afresh). Custom layer classes must be passed in
    ``custom_objects``."""
    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        raise FileNotFoundError(f"No file at {filepath}: pass the path given to Model.save "
                                f"(a .keras file).")
    try:
        _, config, weights_blob = _read_members(filepath)
        with tempfile.TemporaryDirectory() as tmp:
            weights_path = os.path.join(tmp, "model.weights.npz")
            with open(weights_path, "wb") as f:
                f.write(weights_blob)
            arrays = read_npz(weights_path)
        n = len(config["weights"])
        if set(arrays) != {f"w{i}" for i in range(n)}:
            raise ValueError(f"model.weights.npz holds {len(arrays)} arrays, config.json "
                             f"lists {n} weights")
        budget = sum(int(a.size) for a in arrays.values())
        with serialization.weight_budget(budget):
            model = serialization.deserialize(config["model"], custom_objects)
        weights = model.weights
        if len(weights) != n:
            raise ValueError(f"the rebuilt model has {len(weights)} weights, the file "
                             f"{n}")
        for i, w in enumerate(weights):
            a = arrays[f"w{i}"]
            if list(a.shape) != w.shape.as_list() or a.dtype != np.dtype(w.dtype.np):
                raise ValueError(f"weight {i} ({w.name}) has shape {list(a.shape)} and dtype "
                                 f"{a.dtype} in the file; the model needs "
                                 f"{w.shape.as_list()} {w.dtype.name}")
        for i, w in enumerate(weights):
            w.assign(arrays[f"w{i}"])
        if compile and config.get("compile") is not None:
            _compile(model, config["compile"])
        return model
    except (ValueError, TypeError, KeyError, zipfile.BadZipFile, json.JSONDecodeError,
            RecursionError, UnicodeDecodeError) as e:
        reason = str(e).rstrip(".")
        raise ValueError(f"{filepath}: not a loadable .keras file: {reason}. The file is damaged, "
                         f"was crafted, or needs custom_objects for its custom classes.") \
            from None


def _compile(model: Any, spec: Any) -> None:
    if not isinstance(spec, dict):
        raise ValueError("the compile config must be a dict")
    opt = spec.get("optimizer")
    if not isinstance(opt, dict) or not isinstance(opt.get("config"), dict):
        raise ValueError("the compile config has no optimizer config")
    cls = optimizers_module.get(str(opt.get("class_name", "")).lower()).__class__
    optimizer = cls(**opt["config"])
    loss = spec.get("loss")
    if isinstance(loss, dict):
        cls_loss = getattr(losses_module, str(loss.get("class_name")), None)
        if not (isinstance(cls_loss, type) and issubclass(cls_loss, losses_module.Loss)) or \
                not isinstance(loss.get("config"), dict):
            raise ValueError(f"unknown loss {str(loss)[:200]}")
        loss = cls_loss(**loss["config"])
    metrics = spec.get("metrics") or []
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise ValueError("the compile config's metrics must be a list of names")
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
