"""Where the user called in: the file and line of the innermost frame outside stagecraft, which
every error message names (``at file:line``), and the error for a symbolic tensor used after
its trace (raised by ``bind`` and by device copies)."""
from __future__ import annotations

import sys
from typing import Any


def user_location() -> str:
    """'file:line' of the innermost frame outside stagecraft (where the user called in).

    >>> import stagecraft as tf
    >>> try:
    ...     tf.constant([1, 2]) + tf.constant([1.0, 2.0])
    ... except tf.errors.InvalidArgumentError as e:
    ...     print(str(e).splitlines()[-1].startswith("  at "))   # the file:line of this call
    True
    """
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "stagecraft" and not module.startswith("stagecraft."):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def leaked(op: Any, inputs: tuple) -> TypeError:
    """The error for a symbolic tensor used after its trace ended (or inside init_scope).

    >>> import stagecraft as tf
    >>> from stagecraft.ir import OPS
    >>> leaked_tensor = []
    >>> tf.function(lambda x: leaked_tensor.append(x * 2.0))(tf.constant(1.0))
    >>> str(leaked(OPS["add"], (leaked_tensor[0],))).startswith("add: An op outside")
    True
    """
    t = next(x for x in inputs if x._value is None)
    return TypeError(
        f"{op.name}: An op outside of the function building code is being passed a Graph tensor "
        f"({t!r}). Symbolic tensors exist only while their @function is being traced; return "
        f"the value from the function (or pass it in as an argument) instead of storing it.\n"
        f"  at {user_location()}")
