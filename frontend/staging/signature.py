"""Input signatures: checking an ``input_signature`` and binding call arguments to it
(conversion to the signature's dtypes, shape checks with TensorFlow's messages)."""
from __future__ import annotations

import inspect
from typing import Any, Callable

from stagecraft.eager import nest
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.staging.trace_cache import _dims_sub


def check_signature(signature: Any, fn: Callable) -> tuple | None:
    """``input_signature`` as a tuple of TensorSpecs (nested lists allowed), after checking
    that it is one and that ``fn`` takes no ``**kwargs``.

    >>> import stagecraft as tf
    >>> check_signature([tf.TensorSpec([None], tf.float32)], lambda x: x)
    (TensorSpec(shape=(None,), dtype=stagecraft.float32, name=None),)
    """
    if signature is None:
        return None
    if not isinstance(signature, (list, tuple)):
        raise TypeError(f"input_signature must be a list or tuple of tf.TensorSpec, got "
                        f"{type(signature).__name__}.")
    for s in nest.flatten(list(signature)):
        if not isinstance(s, TensorSpec):
            raise TypeError(f"input_signature must contain only tf.TensorSpec objects, got "
                            f"{s!r}.")
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return tuple(signature)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        raise TypeError(f"{getattr(fn, '__name__', fn)}: a function with **kwargs cannot have "
                        f"an input_signature.")
    return tuple(signature)


def apply_signature(signature: tuple, pos: list, name: str) -> list:
    """Converts the leading arguments to the signature's dtypes, checking shapes (TypeError).

    >>> import stagecraft as tf
    >>> apply_signature((tf.TensorSpec([2], tf.float32),), [[1, 2]], "f")[0].numpy().tolist()
    [1.0, 2.0]
    """
    if len(pos) < len(signature):
        raise TypeError(f"{name}(): expected {len(signature)} arguments for the input_signature "
                        f"{list(signature)}, got {len(pos)}.")
    out = list(pos)
    for i, spec in enumerate(signature):
        out[i] = _conform(spec, pos[i], name, i)
    return out


def _conform(spec: Any, value: Any, name: str, i: int) -> Any:
    if isinstance(spec, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(spec):
            raise TypeError(f"Binding inputs to tf.function {name} failed: argument {i} "
                            f"{value!r} does not match the nested signature {spec!r}.")
        return type(spec)(_conform(s, v, name, i) for s, v in zip(spec, value))
    if isinstance(value, TensorSpec):  # get_concrete_function(TensorSpec(...))
        if value.dtype != spec.dtype or not _shape_within(value.shape, spec.shape):
            raise TypeError(f"Binding inputs to tf.function {name} failed due to: Can not cast "
                            f"{value} to {spec} (argument {i}).")
        return TensorSpec(spec.shape, spec.dtype, value.name or spec.name)
    if isinstance(value, Tensor):
        t = value
    else:
        try:
            t = convert_to_tensor(value, spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Binding inputs to tf.function {name} failed: argument {i}: {e}") \
                from None
    if not spec.is_compatible_with(t):
        raise TypeError(f"Binding inputs to tf.function {name} failed due to: Can not cast "
                        f"{TensorSpec(t.shape, t.dtype)} to {spec} (argument {i}). Pass a tensor "
                        f"of dtype {spec.dtype.name} and shape {spec.shape}.")
    return t


def _shape_within(shape: Any, general: Any) -> bool:
    """True when every tensor of ``shape`` also has shape ``general``."""
    return _dims_sub(shape.dims_tuple, general.dims_tuple)
