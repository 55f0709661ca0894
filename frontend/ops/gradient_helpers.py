"""Gradient helpers of TensorFlow's top level: ``recompute_grad`` (trade compute for memory:
the forward pass runs again in the backward pass) and ``grad_pass_through`` (the identity as
the gradient of a function), both built on ``custom_gradient``."""
from __future__ import annotations

import functools
from typing import Any, Callable

from stagecraft.autodiff.custom_gradient import custom_gradient
from stagecraft.autodiff.tape import GradientTape
from stagecraft.eager import nest

__all__ = ["recompute_grad", "grad_pass_through"]


def recompute_grad(f: Callable) -> Callable:
    """``f`` with the same values and gradients, whose intermediates are not kept for the
    backward pass: the gradient runs ``f`` again under a tape. Tensor arguments only; variables
    ``f`` reads get gradients too.

    >>> import stagecraft as tf
    >>> g = tf.recompute_grad(lambda x: tf.sin(x) * x)
    >>> x = tf.constant(0.5)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = g(x)
    >>> round(float(tape.gradient(y, x)), 6) == round(0.5 * 0.8775825618903728 + 0.479425538604203, 6)
    True
    """
    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        @custom_gradient
        def inner(*xs: Any) -> Any:
            result = f(*xs, **kwargs)  # custom_gradient records none of its ops

            def grad(*dys: Any, variables: Any = None) -> Any:
                with GradientTape(watch_accessed_variables=True) as tape:
                    tape.watch(list(xs))
                    again = f(*xs, **kwargs)
                sources = list(xs) + list(variables or [])
                grads = tape.gradient(nest.flatten(again), sources,
                                      output_gradients=list(dys))
                n = len(xs)
                return (grads[:n], grads[n:]) if variables is not None else grads[:n]
            return result, grad
        return inner(*args)
    return wrapped


def grad_pass_through(f: Callable) -> Callable:
    """``f`` whose gradient is the identity: the incoming gradients pass to the inputs
    unchanged (one per output), e.g. to train through a non-differentiable quantizer or an
    assignment. Variables ``f`` reads get no gradient.

    >>> import stagecraft as tf
    >>> x = tf.constant(2.4)
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = tf.grad_pass_through(tf.round)(x) * 3.0
    >>> float(y), float(tape.gradient(y, x))
    (6.0, 3.0)
    """
    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        @custom_gradient
        def inner(*xs: Any) -> Any:
            def grad(*dys: Any, variables: Any = None) -> Any:
                if variables is not None:
                    return list(dys), [None] * len(variables)
                return list(dys)
            return f(*xs, **kwargs), grad
        return inner(*args)
    return wrapped
