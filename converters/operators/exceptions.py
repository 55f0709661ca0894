"""``assert`` in converted code: a Python assertion for Python values and eager tensors, a
runtime assertion in the graph for symbolic tensors."""
from __future__ import annotations

from typing import Any, Callable

from stagecraft.converters.operators.variables import is_undefined
from stagecraft.staging.graph_tensor import GraphTensor


def assert_stmt(test: Any, msg: Callable[[], Any] | None = None, what: str | None = None) -> None:
    """``assert test, msg()``. For a symbolic ``test`` the assertion is staged: the call
    raises InvalidArgumentError carrying the message when ``test`` is false at run time (every
    call, like ``tf.debugging.Assert``). Otherwise it is Python's assert: AssertionError with
    ``msg()`` (evaluated only when the test fails). ``what`` ('file:line: test') describes an
    assert without a message in the staged error.

    >>> assert_stmt(1 + 1 == 2, lambda: "never evaluated")
    >>> assert_stmt(False, lambda: "x must be positive")
    Traceback (most recent call last):
    ...
    AssertionError: x must be positive
    >>> import stagecraft as tf
    >>> @tf.function
    ... def check(x):
    ...     assert_stmt(x > 0, lambda: "x must be positive")
    ...     return x
    >>> print(check(tf.constant(1)).numpy())
    1
    >>> check(tf.constant(-1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stagecraft.ir.errors.InvalidArgumentError: x must be positive...
    """
    if is_undefined(test):
        raise test.error()
    if not isinstance(test, GraphTensor):
        if not test:
            if msg is None:
                raise AssertionError
            raise AssertionError(msg())
        return
    from stagecraft.ir import dtypes
    from stagecraft.ops.logging_ops import emit_assert
    from stagecraft.ops.math_ops import not_equal, reduce_all
    if test.dtype != dtypes.bool_:
        test = not_equal(test, 0)  # Python truthiness of a number: nonzero
    if test.shape.rank not in (0, None):
        raise ValueError(
            f"The test of this assert is a tensor of shape {test.shape}"
            f"{' (' + what + ')' if what else ''}; a tensor assertion needs a scalar bool, "
            f"as Python's truth value of an array is ambiguous. Reduce it, e.g. "
            f"assert tf.reduce_all(x > 0).")
    message = "Assertion failed" + (f" at {what}" if what else "") if msg is None \
        else str(msg())
    emit_assert(reduce_all(test), message)
