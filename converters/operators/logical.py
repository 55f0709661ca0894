"""Lazy ``and``/``or``/``not`` and conditional expressions in converted code: Python semantics
for Python values and eager tensors, graph ``cond``/``logical_not`` for symbolic tensors."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.staging.cond import cond as _cond
from stagecraft.converters.operators.variables import is_undefined
from stagecraft.staging.graph_tensor import GraphTensor


def _value(x: Any) -> Any:
    if is_undefined(x):
        raise x.error()
    return x


def and_(a: Callable[[], Any], b: Callable[[], Any]) -> Any:
    """``a() and b()``: ``b`` runs only if needed (a staged cond when ``a()`` is symbolic)."""
    x = _value(a())
    if isinstance(x, GraphTensor):
        return _cond(x, b, lambda: x)
    return x and _value(b())


def or_(a: Callable[[], Any], b: Callable[[], Any]) -> Any:
    """``a() or b()``, lazily."""
    x = _value(a())
    if isinstance(x, GraphTensor):
        return _cond(x, lambda: x, b)
    return x or _value(b())


def not_(x: Any) -> Any:
    """``not x`` (elementwise logical_not for symbolic tensors)."""
    x = _value(x)
    if isinstance(x, GraphTensor):
        from stagecraft.ops.math_ops import logical_not
        return logical_not(x)
    return not x


def if_exp(cond: Any, if_true: Callable[[], Any], if_false: Callable[[], Any]) -> Any:
    """``if_true() if cond else if_false()`` (a staged cond when ``cond`` is symbolic)."""
    cond = _value(cond)
    if isinstance(cond, GraphTensor):
        return _cond(cond, if_true, if_false)
    return if_true() if cond else if_false()


_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "is": lambda a, b: a is b, "is not": lambda a, b: a is not b,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
}


def compare_chain(left: Any, pairs: tuple) -> Any:
    """``left op1 b op2 c ...``: each operand evaluated once, left to right, stopping at the
    first Python-false link (symbolic links are combined with logical_and)."""
    result = None
    for op, thunk in pairs:
        right = _value(thunk())
        link = _COMPARE[op](_value(left), right)
        if result is None:
            result = link
        elif isinstance(result, GraphTensor) or isinstance(link, GraphTensor):
            from stagecraft.ops.math_ops import logical_and
            result = logical_and(result, link)
        else:
            result = result and link
        if not isinstance(result, GraphTensor) and not result:
            return result
        left = right
    return result
