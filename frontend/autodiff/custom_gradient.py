"""``custom_gradient``: a function whose backward pass the user writes."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from stagecraft.eager import nest
from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.state.variables import Variable
from stagecraft.autodiff.tape import GradientTape
from stagecraft.ops.array_ops import identity, zeros_like


def custom_gradient(f: Callable | None = None) -> Callable:
    """Decorates ``f(*x) -> (y, grad_fn)``; tapes record ``f`` as one op whose gradient is
    ``grad_fn(*dy)`` (which returns one gradient per input of ``f``). If ``f`` reads variables,
    ``grad_fn`` must accept ``variables=`` and return ``(input_grads, variable_grads)``.

    >>> import stagecraft as tf
    >>> @tf.custom_gradient
    ... def clip_grad(x):
    ...     return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1., 1.)
    >>> x = tf.constant(2.)
    >>> with tf.GradientTape() as t:
    ...     t.watch(x)
    ...     y = clip_grad(x) * 10.
    >>> float(t.gradient(y, x))
    1.0
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        state = STATE.get()
        inputs = [a if isinstance(a, (Tensor, Variable)) else convert_to_tensor(a) for a in args]
        probe = GradientTape(watch_accessed_variables=True)
        STATE.set(state.replace(tapes=()))  # the forward pass itself is not recorded
        try:
            with probe:
                result, grad_fn = f(*inputs, **kwargs)
        finally:
            STATE.set(state)
        variables = [v for v in probe.watched_variables()]
        if variables and "variables" not in inspect.signature(grad_fn).parameters:
            raise TypeError(f"@custom_gradient function '{f.__name__}' reads variables "
                            f"({', '.join(v.name for v in variables)}), so its grad_fn must "
                            f"accept a keyword argument 'variables' and return "
                            f"(input_grads, variable_grads).")
        flat = nest.flatten(result)
        outs = [_fresh(convert_to_tensor(o)) for o in flat]
        tensor_inputs = [a for a in inputs if isinstance(a, Tensor)]

        def backward(gouts: list) -> tuple:
            dys = [zeros_like(o) if g is None else g for g, o in zip(gouts, outs)]
            if variables:
                grads, var_grads = grad_fn(*dys, variables=variables)
            else:
                grads, var_grads = grad_fn(*dys), []
            grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
            if len(grads) != len(tensor_inputs):
                raise ValueError(f"@custom_gradient '{f.__name__}': grad_fn returned "
                                 f"{len(grads)} gradients for {len(tensor_inputs)} inputs; "
                                 f"return one per input (None for no gradient).")
            return tuple(grads) + tuple(var_grads)

        for tape in state.tapes:
            if tape._watch_accessed_variables:
                for v in variables:
                    if v.trainable:
                        tape._watch_variable(v)
            tape.record(None, {}, tensor_inputs + variables, outs, backward)
        return nest.pack_sequence_as(result, outs)

    return wrapped


def _fresh(t: Tensor) -> Tensor:
    """A new tensor object with ``t``'s value, so the tape can tell the outputs apart."""
    if t._value is not None:
        fresh = object.__new__(type(t))  # a device tensor stays on its device
        fresh._value = t._value
        return fresh
    return identity(t)
