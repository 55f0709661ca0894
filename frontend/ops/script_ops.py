"""``py_function``: a Python callable embedded in staged code, run eagerly every time."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ir.shapes import format_dims, is_compatible
from stagecraft.ir.types import TensorType
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft.eager.tensor import Tensor, wrap
from stagecraft.autodiff.tape import GradientTape
from stagecraft.ops.array_ops import zeros_like


def py_function(func: Callable, inp: Sequence[Any], Tout: Any,  # noqa: N803 (TF's name)
                name: str | None = None) -> Any:
    """Calls ``func`` on eager tensors whenever the op runs (inside ``@function``: at every
    call, not at trace time). ``Tout`` is a dtype or a ``TensorSpec`` (one result) or a list
    of them; a ``TensorSpec`` also gives the result's shape, which is checked when the
    function returns (the Numba backend compiles staged code around a ``py_function`` only
    when the ranks of its results are known this way). It is differentiable once: gradients
    come from running ``func`` under a tape.

    >>> import stagecraft as tf
    >>> @tf.function
    ... def f(x):
    ...     return tf.py_function(lambda t: t * 2, [x], tf.float32)
    >>> float(f(tf.constant(3.0)))
    6.0
    """
    single = not isinstance(Tout, (list, tuple))
    touts = [_out_spec(t) for t in ([Tout] if single else Tout)]
    inputs = [x if isinstance(x, Tensor) else convert_to_tensor(x) for x in inp]
    fg = STATE.get().graph
    if fg is None:
        outs = _call(func, inputs, touts)
    else:
        fn = _array_function(func, touts)
        operands = [fg.operand(x) for x in inputs]
        outs = fg.emit("py_function", operands, [TensorType(d, dims) for d, dims in touts],
                       {"fn": fn, "Tout": tuple(d for d, _ in touts)})
        tapes = STATE.get().tapes
        if tapes and outs:
            tensors = [fg.tensor_for(o) for o in operands]
            for tape in tapes:
                tape.record(None, {}, tensors, outs,
                            lambda gouts, ins=tensors: _grad(func, ins, touts, gouts))
    return outs[0] if single else list(outs)


def _call(func: Callable, inputs: list, touts: list) -> list:
    result = func(*inputs)
    results = [result] if not isinstance(result, (list, tuple)) else list(result)
    if len(touts) == 0 and result is None:
        return []
    if len(results) != len(touts):
        raise InvalidArgumentError(f"py_function: the function returned {len(results)} values "
                                   f"but Tout lists {len(touts)} dtypes.")
    out = []
    for r, (d, dims) in zip(results, touts):
        t = convert_to_tensor(r, d) if not isinstance(r, Tensor) else r
        if t.dtype != d:
            raise InvalidArgumentError(f"py_function: the function returned a {t.dtype.name} "
                                       f"value where Tout says {d.name}; return that dtype or "
                                       f"change Tout.")
        if dims is not None and not is_compatible(dims, t.shape.dims_tuple):
            raise InvalidArgumentError(f"py_function: the function returned a value of shape "
                                       f"{t.shape} where Tout says {format_dims(dims)}; return "
                                       f"that shape or change Tout.")
        out.append(t)
    return out


def _out_spec(t: Any) -> tuple:
    """(dtype, dims or None) of one ``Tout`` entry (a dtype or a TensorSpec)."""
    if isinstance(t, TensorSpec):
        return t.dtype, (None if t.shape.rank is None else tuple(t.shape.as_list()))
    return _dt.as_dtype(t), None


def _array_function(func: Callable, touts: list) -> Callable:
    """The backend-level callable: arrays in, arrays out (it wraps them as eager tensors)."""
    def run(*arrays: Any) -> list:
        state = STATE.get()
        token = STATE.set(state.replace(graph=None, tapes=()))
        try:
            # compiled code passes scalars as Python/NumPy scalars: tensors hold arrays
            inputs = [wrap(a if isinstance(a, np.ndarray) else np.asarray(a)) for a in arrays]
            return [t._value for t in _call(func, inputs, touts)]
        finally:
            STATE.reset(token)
    run.func = func
    return run


def _grad(func: Callable, inputs: list, touts: list, gouts: list) -> list:
    """The gradient of a staged py_function: another py_function that re-runs ``func`` under a
    tape (so it works once, not for higher orders, as in TensorFlow)."""
    float_in = [i for i, x in enumerate(inputs) if x.dtype.is_floating]

    def backward(*args: Tensor) -> list:
        xs, seeds = list(args[:len(inputs)]), list(args[len(inputs):])
        with GradientTape() as tape:
            tape.watch([xs[i] for i in float_in])
            ys = _call(func, xs, touts)
        grads = tape.gradient(ys, [xs[i] for i in float_in], output_gradients=seeds)
        return [zeros_like(xs[i]) if g is None else g for i, g in zip(float_in, grads)]

    grads = py_function(backward, list(inputs) + list(gouts),
                        [TensorSpec(inputs[i].shape, inputs[i].dtype) for i in float_in])
    out: list = [None] * len(inputs)
    for i, g in zip(float_in, grads):
        out[i] = g
    return out


def numpy_function(func: Callable, inp: Sequence[Any], Tout: Any,  # noqa: N803 (TF's name)
                   stateful: bool = True, name: str | None = None) -> Any:
    """Like :func:`py_function`, but ``func`` receives NumPy arrays (and may return arrays or
    Python values) and no gradient flows through it, as in TensorFlow. Inside ``@function``
    it runs at every call.

    >>> import stagecraft as tf, numpy as np
    >>> f = tf.function(lambda x: tf.numpy_function(np.sort, [x], tf.int32))
    >>> f(tf.constant([3, 1, 2])).numpy().tolist()
    [1, 2, 3]
    """
    from stagecraft.ops.array_ops import stop_gradient

    def on_arrays(*tensors: Tensor) -> Any:
        return func(*[t.numpy() for t in tensors])
    on_arrays.__name__ = getattr(func, "__name__", "numpy_function")
    inputs = [stop_gradient(x if isinstance(x, Tensor) else convert_to_tensor(x)) for x in inp]
    return py_function(on_arrays, inputs, Tout)
