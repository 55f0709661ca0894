"""VJP rules of the convolution primitives, written with the three conv ops themselves so that
gradients of gradients work (all three are bilinear, so each rule is another of the three).

With ``<conv(x, w), dy> = <x, backprop_input(w, dy)> = <w, backprop_filter(x, dy)>``:

* ``conv``: ``dx = backprop_input(w, g)``, ``dw = backprop_filter(x, g)``;
* ``backprop_input(w, dy)`` (shaped like ``x``): ``dw = backprop_filter(g, dy)``,
  ``ddy = conv(g, w)``;
* ``backprop_filter(x, dy)`` (shaped like ``w``): ``dx = backprop_input(g, dy)``,
  ``ddy = conv(x, g)``.
"""
from __future__ import annotations

from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ir.errors import InvalidArgumentError

RULES = RuleTable()  # merged into autodiff.vjps.VJPS by that module (no import cycle)
vjp = RULES.rule


def _static(t: Tensor, what: str, batch_may_be_unknown: bool) -> tuple:
    dims = t.shape.as_list() if t.shape.rank is not None else None
    if dims is None or any(d is None for d in dims[1 if batch_may_be_unknown else 0:]):
        raise InvalidArgumentError(
            f"conv gradient: the {what} has shape {t.shape}, but the gradient of a convolution "
            f"needs it known{' except for the batch dimension' if batch_may_be_unknown else ''}"
            f". Give the function an input_signature with those dimensions fixed.")
    return tuple(dims)


def backprop_input(w, dy, input_shape, **conv):
    return bind(OPS["conv_backprop_input"], w, dy, input_shape=input_shape, **conv)


def backprop_filter(x, dy, filter_shape, **conv):
    return bind(OPS["conv_backprop_filter"], x, dy, filter_shape=filter_shape, **conv)


@vjp("conv")
def _conv(g, out, x, w, **conv):
    return (backprop_input(w, g, _static(x, "input", True), **conv),
            backprop_filter(x, g, _static(w, "filters", False), **conv))


@vjp("conv_backprop_input")
def _conv_backprop_input(g, out, w, dy, input_shape, **conv):
    return (backprop_filter(g, dy, _static(w, "filters", False), **conv),
            bind(OPS["conv"], g, w, **conv))


@vjp("conv_backprop_filter")
def _conv_backprop_filter(g, out, x, dy, filter_shape, **conv):
    return (backprop_input(g, dy, _static(x, "input", True), **conv),
            bind(OPS["conv"], x, g, **conv))
