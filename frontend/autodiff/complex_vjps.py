"""VJP rules for complex tensors, with TensorFlow's convention: the gradient of a real loss L
with respect to ``z = x + iy`` is ``dL/dx + i dL/dy`` (twice the conjugate Wirtinger
derivative), so through a holomorphic ``u = f(z)`` the rule is ``grad_z = grad_u *
conj(f'(z))``.

``RULES`` holds the rules of the complex-number ops (``complex``, ``real``, ``imag``, ``conj``,
``angle``); ``complex_aware(VJPS)`` wraps the existing rules of the ops that also take complex
tensors. A real rule written as ``g * f'(x)`` with ``f`` a power series with real coefficients
(exp, sin, multiply, matmul, ...) gives the complex rule when called on the conjugated input and
output, since ``f'(conj z) = conj(f'(z))``. :mod:`stagecraft.autodiff.vjps` merges both (this
module does not import it: no import cycle).
"""
from __future__ import annotations

from typing import Callable

from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ops import array_ops as a
from stagecraft.ops import math_ops as m
from stagecraft.autodiff.rule_table import RuleTable

RULES = RuleTable()
_O = dict(OPS)


def _conj(x):
    return bind(_O["conj"], x) if x.dtype.is_complex else x


def _complex(re, im):
    return bind(_O["complex"], re, im)


def _real(x):
    return bind(_O["real"], x)


def _imag(x):
    return bind(_O["imag"], x)


def _fit(g, like):
    """``g`` summed down to ``like``'s shape (undoing broadcasting)."""
    same = g.shape.is_fully_defined() and g.shape == like.shape
    return g if same else bind(_O["sum_like"], g, like)


@RULES.rule("complex")
def _complex_rule(g, out, re, im):
    return _fit(_real(g), re), _fit(_imag(g), im)


@RULES.rule("real")
def _real_rule(g, out, x):
    return (_complex(g, a.zeros_like(g)),)


@RULES.rule("imag")
def _imag_rule(g, out, x):
    return (_complex(a.zeros_like(g), g),)


@RULES.rule("conj")
def _conj_rule(g, out, x):
    return (_conj(g),)


@RULES.rule("angle")
def _angle_rule(g, out, x):
    # angle = atan2(y, x): d/dx = -y / |z|^2 and d/dy = x / |z|^2, so the gradient is
    # g (-y + ix) / |z|^2 = g i z / (z conj(z)) = g i / conj(z)
    ig = _complex(a.zeros_like(g), g)
    return (m.truediv(ig, _conj(x)),)


@RULES.rule("eig")
def _eig_rule(gs, outs, x):
    # TensorFlow's rule: with V^H as vt, F[i, j] = conj(1 / (e_j - e_i)) off the diagonal,
    # grad = vt^-1 (diag(ge) + F * (vt gv - vt v diag(Re(diag(vt gv))))) vt; the last term
    # keeps the eigenvectors' unit norm
    (ge, gv), (e, v) = gs, outs
    vt = _h(v)
    n = e.shape.as_list()[-1]
    eye = _complex(a.eye(n, dtype=e.dtype.real_dtype), a.zeros([n, n], e.dtype.real_dtype))
    gap = m.subtract(a.expand_dims(e, -2), a.expand_dims(e, -1))
    f = _conj(m.multiply(m.subtract(1.0, eye), m.reciprocal(m.add(gap, eye))))
    mid = bind(_O["diag"], ge if ge is not None else a.zeros_like(e))
    if gv is not None:
        vgv = m.matmul(vt, gv)
        real_diag = bind(_O["diag"], _complex(_real(bind(_O["diag_part"], vgv)),
                                              a.zeros_like(_real(e))))
        mid = m.add(mid, m.multiply(f, m.subtract(vgv, m.matmul(m.matmul(vt, v), real_diag))))
    grad = bind(_O["matrix_solve"], vt, m.matmul(mid, vt), adjoint=False)
    return (grad if x.dtype.is_complex else _real(grad),)


# Ops whose real rule, called on conjugated values, is their complex rule (see the docstring).
CONJUGATING = ("square", "exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh",
               "reciprocal", "multiply", "matmul", "reduce_prod", "cumprod")


def _conjugating(rule: Callable) -> Callable:
    def complex_rule(g, out, *inputs, **attrs):
        if not any(x.dtype.is_complex for x in inputs):
            return rule(g, out, *inputs, **attrs)
        return rule(g, _conj(out), *[_conj(x) for x in inputs], **attrs)
    return complex_rule


def _abs(rule: Callable) -> Callable:
    def abs_rule(g, out, x):
        if not x.dtype.is_complex:
            return rule(g, out, x)
        # d|z|/dx + i d|z|/dy = z / |z|, and 0 at z = 0 (TensorFlow's div_no_nan)
        safe = m.where(m.equal(out, 0), a.ones_like(out), out)
        unit = m.truediv(x, _complex(safe, a.zeros_like(safe)))
        return (m.multiply(_complex(g, a.zeros_like(g)), unit),)
    return abs_rule


def _divide(rule: Callable) -> Callable:
    def divide_rule(g, out, x, y):
        if not x.dtype.is_complex:
            return rule(g, out, x, y)
        gx = m.truediv(g, _conj(y))
        return _fit(gx, x), _fit(m.negative(m.multiply(gx, _conj(out))), y)
    return divide_rule


def _pow(rule: Callable) -> Callable:
    def pow_rule(g, out, x, y):
        if not x.dtype.is_complex:
            return rule(g, out, x, y)
        gx = m.multiply(g, _conj(m.multiply(y, m.pow(x, m.subtract(y, 1)))))
        # d x**y / dy = x**y log(x); at x = 0 TensorFlow takes it as 0
        zero = m.equal(x, 0)
        log = m.log(m.where(zero, a.ones_like(x), x))
        gy = m.multiply(g, _conj(m.multiply(out, log)))
        return _fit(gx, x), _fit(gy, y)
    return pow_rule


def _cast(rule: Callable) -> Callable:
    def cast_rule(g, out, x, dtype):
        src, dst = x.dtype, dtype
        if not (src.is_complex or dst.is_complex):
            return rule(g, out, x, dtype=dtype)
        # real <-> complex (and complex64 <-> complex128): the gradient cast back; a complex
        # gradient cast to a real source keeps its real part (the imaginary direction is lost)
        inexact = (src.is_floating or src.is_complex) and (dst.is_floating or dst.is_complex)
        return (m.cast(g, src) if inexact else None,)
    return cast_rule


def _h(x):
    """The conjugate transpose of the matrices of ``x``."""
    perm = list(range(x.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return _conj(a.transpose(x, perm))


def _matrix_inverse(rule: Callable) -> Callable:
    def inverse_rule(g, out, x, adjoint):
        if not x.dtype.is_complex:
            return rule(g, out, x, adjoint)
        # Y = A^-1: grad = -Y^H G Y^H; Y = (A^H)^-1: the conjugate transpose of that in A^H
        if adjoint:
            return (m.negative(m.matmul(out, m.matmul(_h(g), out))),)
        return (m.negative(m.matmul(_h(out), m.matmul(g, _h(out)))),)
    return inverse_rule


def _matrix_determinant(rule: Callable) -> Callable:
    def determinant_rule(g, out, x):
        if not x.dtype.is_complex:
            return rule(g, out, x)
        # d det = det tr(A^-1 dA): grad = g conj(det) A^-H
        scale = a.expand_dims(a.expand_dims(m.multiply(g, _conj(out)), -1), -1)
        return (m.multiply(scale, bind(_O["matrix_inverse"], x, adjoint=True)),)
    return determinant_rule


def _matrix_solve(rule: Callable) -> Callable:
    def solve_rule(g, out, matrix, rhs, adjoint):
        if not matrix.dtype.is_complex:
            return rule(g, out, matrix, rhs, adjoint)
        # X = op(A)^-1 B: grad_B = op(A)^-H G; grad_A = -grad_B X^H (op = identity), or its
        # conjugate transpose -X grad_B^H (op = conjugate transpose)
        g_rhs = bind(_O["matrix_solve"], matrix, g, adjoint=not adjoint)
        g_a = m.negative(m.matmul(out, _h(g_rhs)) if adjoint else m.matmul(g_rhs, _h(out)))
        return g_a, g_rhs
    return solve_rule


def complex_aware(vjps: dict) -> dict:
    """The rules of ``vjps`` for the ops that take complex tensors, wrapped so that complex
    inputs get TensorFlow's complex gradients (real inputs still take the original rule).

    >>> rules = complex_aware({"exp": lambda g, out, x: (g * out,)})
    >>> sorted(rules)
    ['exp']
    """
    wrappers = {name: _conjugating for name in CONJUGATING}
    wrappers.update(abs=_abs, divide=_divide, pow=_pow, cast=_cast,
                    matrix_inverse=_matrix_inverse, matrix_determinant=_matrix_determinant,
                    matrix_solve=_matrix_solve)
    return {name: wrap(vjps[name]) for name, wrap in wrappers.items() if name in vjps}


__all__ = ["RULES", "complex_aware"]
