"""The registry of Keras classes that configs name (``{"class_name": ..., "config": ...}``):
built-in layers and models register themselves here, and ``deserialize`` creates only
registered classes (or ``custom_objects`` the caller passes). A config read from a file can so
name nothing but these classes: loading runs no code from the file."""
from __future__ import annotations

import contextlib
import contextvars
import inspect
from typing import Any, Iterator

import numpy as np

__all__ = ["register", "serialize", "deserialize", "get_class", "weight_budget", "charge",
           "deserialize_named"]

_CLASSES: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: makes ``cls`` loadable from configs by its name."""
    _CLASSES[cls.__name__] = cls
    return cls


def get_class(name: Any, custom_objects: dict | None = None) -> type:
    """The registered (or custom) class called ``name``; ``ValueError`` naming the known ones
    otherwise."""
    if isinstance(name, str):
        found = (custom_objects or {}).get(name) or _CLASSES.get(name)
        if found is not None:
            return found
    raise ValueError(f"Unknown Keras class {name!r}: known classes are "
                     f"{', '.join(sorted(_CLASSES))}. Pass custom classes to load_model as "
                     f"custom_objects={{'Name': Name}}.")


def serialize(obj: Any) -> dict:
    """``{"class_name": ..., "config": obj.get_config()}``.

    >>> import stagecraft as tf
    >>> serialize(tf.keras.layers.Dense(2, name="d"))["config"]["units"]
    2
    """
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def deserialize(spec: Any, custom_objects: dict | None = None) -> Any:
    """A new object from ``serialize``'s output (``cls.from_config(config)``)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("config"), dict):
        raise ValueError(f"A Keras object config must be a dict with 'class_name' and a "
                         f"'config' dict; got {str(spec)[:200]}.")
    cls = get_class(spec.get("class_name"), custom_objects)
    if not hasattr(cls, "from_config"):
        return cls(**spec["config"])
    if "custom_objects" in inspect.signature(cls.from_config).parameters:  # models: layers
        return cls.from_config(spec["config"], custom_objects=custom_objects)
    return cls.from_config(spec["config"])


def deserialize_named(kind: str, config: Any, known: dict, custom_objects: dict | None) -> Any:
    """A ``kind`` (``'regularizer'``, ``'constraint'``) from a name or a ``{'class_name',
    'config'}`` dict, looked up in ``known`` then ``custom_objects``; Keras's error otherwise.

    >>> deserialize_named("thing", {"class_name": "dict", "config": {"a": 1}}, {"dict": dict},
    ...                   None)
    {'a': 1}
    """
    table = {**known, **(custom_objects or {})}
    if isinstance(config, str):
        name, kwargs = config, {}
    elif isinstance(config, dict) and isinstance(config.get("config", {}), dict):
        name, kwargs = config.get("class_name"), dict(config.get("config", {}))
    else:
        raise ValueError(f"keras.{kind}s.deserialize: expected a name or a dict with "
                         f"'class_name' and 'config'; got {str(config)[:200]}.")
    cls = table.get(name)
    if cls is None:
        raise ValueError(f"Unknown {kind}: {name!r}. Valid names are "
                         f"{', '.join(repr(n) for n in sorted(known))}; pass custom ones as "
                         f"custom_objects={{'Name': Name}}.")
    return cls.from_config(kwargs) if hasattr(cls, "from_config") else cls(**kwargs)


#: While a model is rebuilt from a file, the number of weight elements it may still create
#: (the file's own): a crafted config cannot make the loader allocate without bound.
_BUDGET: contextvars.ContextVar[list | None] = contextvars.ContextVar("keras_weight_budget",
                                                                      default=None)


@contextlib.contextmanager
def weight_budget(elements: int) -> Iterator[None]:
    """Limits the weights layers may create inside the block to ``elements`` in all."""
    token = _BUDGET.set([elements])
    try:
        yield
    finally:
        _BUDGET.reset(token)


def charge(name: str, shape: tuple) -> None:
    """Called by ``Layer.add_weight`` before it allocates: refuses a weight beyond the
    budget of ``weight_budget``."""
    budget = _BUDGET.get()
    if budget is None:
        return
    size = int(np.prod(shape, dtype=np.float64)) if shape else 1
    if size > budget[0]:
        raise ValueError(f"the model's config creates weight {name!r} of shape {list(shape)}, "
                         f"more weights than the file holds; the file is damaged or crafted")
    budget[0] -= size
