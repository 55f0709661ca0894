"""VJP rules of the pooling primitives (``ir/ops/pooling.py``), written with the pooling ops
themselves so every order of derivative works: ``avg_pool`` and ``avg_pool_grad`` are each
other's adjoints; ``max_pool``'s gradient routes through ``max_pool_grad``, whose adjoint in
its gradient argument is ``max_pool_grad_grad`` (and back). The routing is piecewise constant
in the pooled input, so no gradient flows to ``orig_input`` from the gradient ops (zeros, as
TensorFlow's MaxPoolGrad gradient gives).

``RULES`` maps each op to its rule; :mod:`stagecraft.autodiff.vjps`, which owns the rule
table, adds them (this module does not import it, so the two stay free of import cycles).
"""
from __future__ import annotations


from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as a

RULES = RuleTable()
vjp = RULES.rule


def _static_shape(x, op: str) -> tuple:
    """``x``'s shape with its batch size possibly None; the other dims must be known."""
    dims = x.shape.as_list() if x.shape.rank is not None else None
    if dims is None or None in dims[1:]:
        raise ValueError(f"The gradient of {op} needs the input's static shape (all but the "
                         f"batch size), got {x.shape}; give the function an input_signature "
                         f"with known spatial and channel dimensions.")
    return tuple(None if d is None else int(d) for d in dims)


@vjp("max_pool")
def _max_pool(g, out, x, ksize, strides, padding):
    return (bind(OPS["max_pool_grad"], x, g, ksize=ksize, strides=strides, padding=padding),)


@vjp("avg_pool")
def _avg_pool(g, out, x, ksize, strides, padding):
    return (bind(OPS["avg_pool_grad"], g, ksize=ksize, strides=strides, padding=padding,
                 input_shape=_static_shape(x, "avg_pool")),)


@vjp("avg_pool_grad")
def _avg_pool_grad(g, out, dy, ksize, strides, padding, input_shape):
    return (bind(OPS["avg_pool"], g, ksize=ksize, strides=strides, padding=padding),)


@vjp("max_pool_grad")
def _max_pool_grad(g, out, x, dy, ksize, strides, padding):
    return (a.zeros_like(x),
            bind(OPS["max_pool_grad_grad"], x, g, ksize=ksize, strides=strides, padding=padding))


@vjp("max_pool_grad_grad")
def _max_pool_grad_grad(g, out, x, grad, ksize, strides, padding):
    return (a.zeros_like(x),
            bind(OPS["max_pool_grad"], x, g, ksize=ksize, strides=strides, padding=padding))
