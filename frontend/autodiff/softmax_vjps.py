"""VJP rules of the softmax family (``ir/ops/softmax.py``). ``softmax`` and ``log_softmax``
take their outputs' Jacobians along the axis (``s * (g - sum(g * s))`` and
``g - exp(out) * sum(g)``), written with ops that are differentiable again. The sparse
cross-entropy loss's gradient is the fused ``_grad`` op; that op's own adjoint, for second
derivatives, is written with the op again (in its ``grad`` argument) and with softmax (in its
logits: ``grad * s * (v - sum(s * v))``, the softmax Jacobian applied to the upstream ``v``),
so every order works. Labels are integers and get no gradient.

``RULES`` maps each op to its rule; :mod:`stagecraft.autodiff.vjps` adds them to the table
(this module does not import it, so the two stay free of import cycles).
"""
from __future__ import annotations

from stagecraft.autodiff.rule_table import RuleTable
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ir.ops.softmax import GRAD, NAME
from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m
from stagecraft.ops import nn_ops

RULES = RuleTable()
vjp = RULES.rule


@vjp("softmax")
def _softmax(g, out, logits, axis):
    return (m.multiply(out, m.subtract(g, m.reduce_sum(m.multiply(g, out), axis,
                                                       keepdims=True))),)


@vjp("log_softmax")
def _log_softmax(g, out, logits, axis):
    return (m.subtract(g, m.multiply(m.exp(out), m.reduce_sum(g, axis, keepdims=True))),)


@vjp(NAME)
def _loss(g, out, logits, labels):
    return bind(OPS[GRAD], g, logits, labels), None


@vjp(GRAD)
def _grad(v, out, grad, logits, labels):
    per_unit = bind(OPS[GRAD], a.ones_like(grad), logits, labels)   # softmax - one_hot
    s = nn_ops.softmax(logits)
    sv = m.multiply(s, v)
    d_logits = m.multiply(a.expand_dims(grad, -1),
                          m.subtract(sv, m.multiply(s, m.reduce_sum(sv, -1, keepdims=True))))
    return m.reduce_sum(m.multiply(v, per_unit), -1), d_logits, None
