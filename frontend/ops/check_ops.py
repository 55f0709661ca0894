"""``tf.debugging``'s assertions: element-wise comparisons, ranks, shapes and dtypes.

What is known while tracing (ranks, static shapes, dtypes) is checked at once, as TensorFlow
does, and raises ``ValueError``/``TypeError``; what depends on values is checked every time
the op runs (eagerly at once, staged as an ``assert`` equation) and raises
``InvalidArgumentError``. Eagerly the message lists the first differing values, as TF 2's
does; its first line is the caller's ``message`` when one is given.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import ml_dtypes
import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ir.errors import InvalidArgumentError
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.logging_ops import emit_assert

__all__ = ["assert_equal", "assert_none_equal", "assert_less", "assert_less_equal",
           "assert_greater", "assert_greater_equal", "assert_positive", "assert_negative",
           "assert_non_negative", "assert_non_positive", "assert_near", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_scalar", "assert_type",
           "assert_integer", "assert_same_float_dtype", "assert_shapes", "assert_all_finite",
           "check_numerics", "is_numeric_tensor", "assert_proper_iterable"]


def _eager() -> bool:
    return STATE.get().graph is None


def _first(values: np.ndarray, n: int) -> str:
    return np.array2string(np.asarray(values).reshape(-1)[:n], separator=" ")


def _fail_eagerly(sym: str, x: Tensor, y: Tensor, ok: np.ndarray, message: str | None,
                  summarize: int | None) -> None:
    """Raises TF 2's eager message: the condition, the first differing values and indices
    (when x and y have one non-scalar shape), then the first elements of x and y."""
    n = 3 if summarize is None else (10 ** 9 if summarize < 0 else summarize)
    lines = [message] if message is not None else []
    lines.append(f"Condition x {sym} y did not hold.")
    xv, yv = x.numpy(), y.numpy()
    if n > 0:
        if xv.shape == yv.shape and xv.ndim:
            bad = np.argwhere(~ok)
            k = min(n, len(bad))
            lines += [f"Indices of first {k} different values:", str(bad[:k]),
                      "Corresponding x values:", _first(xv[~ok], k),
                      "Corresponding y values:", _first(yv[~ok], k)]
        lines += [f"First {min(xv.size, n)} elements of x:", _first(xv, n),
                  f"First {min(yv.size, n)} elements of y:", _first(yv, n)]
    raise InvalidArgumentError("\n".join(lines))


def _binary(sym: str, op: Callable[[Any, Any], Tensor]) -> Callable[..., None]:
    def check(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
              name: str | None = None) -> None:
        x = convert_to_tensor(x)
        y = y if isinstance(y, Tensor) else convert_to_tensor(y, x.dtype)  # 3 adopts x's dtype
        holds = op(x, y)
        if _eager():
            ok = np.asarray(holds.numpy(), bool)
            if not ok.all():
                _fail_eagerly(sym, x, y, ok, message, summarize)
            return
        prefix = f"{message}\n" if message else ""
        emit_assert(_m.reduce_all(holds),
                    f"{prefix}Condition x {sym} y did not hold element-wise.")
    return check


def _doc(fn: Callable, sym: str, example: str) -> Callable:
    fn.__doc__ = (f"Raises ``InvalidArgumentError`` unless ``x {sym} y`` holds element-wise "
                  f"(with broadcasting).\n\n    >>> import stagecraft as tf\n    >>> {example}\n")
    return fn


assert_equal = _doc(_binary("==", _m.equal), "==",
                    "tf.debugging.assert_equal(tf.constant([1, 2]), [1, 2])")
assert_none_equal = _doc(_binary("!=", _m.not_equal), "!=",
                         "tf.debugging.assert_none_equal(tf.constant([1, 2]), [3, 4])")
assert_less = _doc(_binary("<", _m.less), "<",
                   "tf.debugging.assert_less(tf.constant([1, 2]), 3)")
assert_less_equal = _doc(_binary("<=", _m.less_equal), "<=",
                         "tf.debugging.assert_less_equal(tf.constant([1, 3]), 3)")
assert_greater = _doc(_binary(">", _m.greater), ">",
                      "tf.debugging.assert_greater(tf.constant([4, 5]), 3)")
assert_greater_equal = _doc(_binary(">=", _m.greater_equal), ">=",
                            "tf.debugging.assert_greater_equal(tf.constant([3, 5]), 3)")


def _sign_check(sym: str, op: Callable[[Any, Any], Tensor], word: str) -> Callable[..., None]:
    binary = _binary(sym, op)

    def check(x: Any, message: str | None = None, summarize: int | None = None,
              name: str | None = None) -> None:
        x = convert_to_tensor(x)
        binary(x, _a.zeros_like(x), message=message, summarize=summarize)
    check.__doc__ = (f"Raises ``InvalidArgumentError`` unless every element of ``x`` is {word} "
                     f"(``x {sym} 0``).\n\n    >>> import stagecraft as tf\n"
                     f"    >>> tf.debugging.assert_{word.replace('-', '_')}"
                     f"(tf.constant([{'-' if '<' in sym else ''}1.0]))\n")
    return check


assert_positive = _sign_check(">", _m.greater, "positive")
assert_negative = _sign_check("<", _m.less, "negative")
assert_non_negative = _sign_check(">=", _m.greater_equal, "non-negative")
assert_non_positive = _sign_check("<=", _m.less_equal, "non-positive")


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: str | None = None,
                summarize: int | None = None, name: str | None = None) -> None:
    """Raises ``InvalidArgumentError`` unless ``|x - y| <= atol + rtol * |y|`` element-wise;
    both tolerances default to 10 * the dtype's epsilon.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_near(tf.constant([1.0]), tf.constant([1.0 + 1e-7]))
    """
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, x.dtype)
    if not x.dtype.is_floating:
        raise TypeError(f"assert_near: x must be a floating-point tensor, got {x.dtype.name}.")
    eps = float(ml_dtypes.finfo(x.dtype.np).eps)  # (NumPy's finfo has no bfloat16)
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    tol = _m.add(_m.cast(atol, x.dtype), _m.multiply(_m.cast(rtol, x.dtype), _m.abs(y)))
    _binary("~=", lambda a, b: _m.less_equal(_m.abs(_m.subtract(a, b)), tol))(
        x, y, message=message or f"x and y not equal to tolerance rtol = {rtol}, "
                                 f"atol = {atol}", summarize=summarize)


def _static_rank_error(x: Tensor, what: str, message: str | None) -> ValueError:
    prefix = f"{message}. " if message else ""
    return ValueError(f"{prefix}Tensor must have {what}. Received rank {x.shape.rank}, "
                      f"shape {tuple(x.shape.as_list())}.")


def _rank_check(x: Any, allowed: Callable[[int], bool], what: str, message: str | None,
                dynamic: Callable[[Tensor], Tensor]) -> None:
    x = convert_to_tensor(x)
    if x.shape.rank is not None:
        if not allowed(x.shape.rank):
            raise _static_rank_error(x, what, message)
        return
    emit_assert(dynamic(_a.rank(x)), f"{message + chr(10) if message else ''}Tensor must have "
                                     f"{what}.")


def assert_rank(x: Any, rank: int, message: str | None = None, name: str | None = None) -> None:
    """Raises ``ValueError`` (or, for a rank known only when running, ``InvalidArgumentError``)
    unless ``x`` has rank ``rank``.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_rank(tf.zeros([2, 3]), 2)
    """
    r = int(rank)
    _rank_check(x, lambda k: k == r, f"rank {r}", message, lambda k: _m.equal(k, r))


def assert_rank_at_least(x: Any, rank: int, message: str | None = None,
                         name: str | None = None) -> None:
    """Raises unless ``x`` has rank ``rank`` or more.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_rank_at_least(tf.zeros([2, 3]), 1)
    """
    r = int(rank)
    _rank_check(x, lambda k: k >= r, f"rank at least {r}", message,
                lambda k: _m.greater_equal(k, r))


def assert_rank_in(x: Any, ranks: Sequence[int], message: str | None = None,
                   name: str | None = None) -> None:
    """Raises unless the rank of ``x`` is one of ``ranks``.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_rank_in(tf.zeros([2]), [1, 2])
    """
    rs = [int(r) for r in ranks]
    _rank_check(x, lambda k: k in rs, f"rank in {rs}", message,
                lambda k: _m.reduce_any(_m.equal(k, convert_to_tensor(rs, _dt.int32))))


def assert_scalar(tensor: Any, message: str | None = None, name: str | None = None) -> Tensor:
    """Returns ``tensor`` if it is a scalar; raises ``ValueError`` otherwise.

    >>> import stagecraft as tf
    >>> int(tf.debugging.assert_scalar(tf.constant(3)))
    3
    """
    t = convert_to_tensor(tensor)
    if t.shape.rank is None or t.shape.rank != 0:
        prefix = f"{message} " if message else ""
        raise ValueError(f"{prefix}Expected scalar shape, saw shape: "
                         f"{tuple(t.shape.as_list()) if t.shape.rank is not None else None}.")
    return t


def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> None:
    """Raises ``TypeError`` unless ``tensor`` has dtype ``tf_type``.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_type(tf.constant(1.0), tf.float32)
    """
    want = _dt.as_dtype(tf_type)
    got = convert_to_tensor(tensor).dtype
    if got != want:
        prefix = f"{message}: " if message else ""
        raise TypeError(f"{prefix}tensor must be of type {want.name}; got {got.name}.")


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> None:
    """Raises ``TypeError`` unless ``x`` has an integer dtype.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_integer(tf.constant(1))
    """
    d = convert_to_tensor(x).dtype
    if not d.is_integer:
        prefix = f"{message} " if message else ""
        raise TypeError(f"{prefix}Expected integer type; got dtype {d.name}.")


def assert_same_float_dtype(tensors: Iterable[Any] | None = None,
                            dtype: Any = None) -> _dt.DType:
    """The one floating dtype of ``tensors`` (and ``dtype``); float32 when there are none.
    Raises ``ValueError`` for a mix or a non-float dtype.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_same_float_dtype([tf.constant(1.0), tf.constant(2.0)]).name
    'float32'
    """
    found = [] if dtype is None else [_dt.as_dtype(dtype)]
    found += [t.dtype for t in (tensors or []) if isinstance(t, Tensor) or hasattr(t, "dtype")]
    if not found:
        return _dt.float32
    first = found[0]
    for d in found:
        if d != first:
            raise ValueError(f"Expected dtype {first.name} for all tensors; got {d.name}.")
    if not first.is_floating:
        raise ValueError(f"Expected a floating point dtype; got {first.name}.")
    return first


def assert_shapes(shapes: Any, data: Any = None, summarize: int | None = None,
                  message: str | None = None, name: str | None = None) -> None:
    """Checks the shapes of several tensors against specs that may share symbolic dims:
    ``shapes`` is a list (or dict) of ``(tensor, spec)``; a spec lists ints (exact sizes),
    strings (a symbol: equal sizes wherever it appears) and ``'.'`` (any size), and may start
    with ``'...'`` (any leading dims). A scalar's spec is ``()``.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_shapes([(tf.zeros([2, 3]), ('N', 3)), (tf.zeros([2]), ('N',))])
    """
    pairs = list(shapes.items()) if isinstance(shapes, dict) else list(shapes)
    bound: dict[str, Any] = {}
    prefix = f"{message}\n" if message else ""
    for index, (tensor, spec) in enumerate(pairs):
        t = convert_to_tensor(tensor)
        spec = list(spec) if not isinstance(spec, str) else list(spec)
        ellipsis = bool(spec) and spec[0] in ("...", "*")
        dims = spec[1:] if ellipsis else spec
        rank = t.shape.rank
        if rank is not None and (rank < len(dims) if ellipsis else rank != len(dims)):
            raise ValueError(
                f"{prefix}Specified by tensor {index} of assert_shapes: expected rank "
                f"{'at least ' if ellipsis else ''}{len(dims)}, got shape "
                f"{tuple(t.shape.as_list())} (spec {tuple(spec)}).")
        actual = t.shape.as_list()[len(t.shape.as_list()) - len(dims):] if rank is not None \
            else [None] * len(dims)
        dynamic = None
        for k, (want, have) in enumerate(zip(dims, actual)):
            if want == ".":
                continue
            if have is None:
                dynamic = _a.shape(t) if dynamic is None else dynamic
                have = dynamic[k - len(dims)]
            if isinstance(want, str):
                if want not in bound:
                    bound[want] = have
                    continue
                want = bound[want]
            if isinstance(want, int) and isinstance(have, int):
                if want != have:
                    raise ValueError(
                        f"{prefix}Specified by tensor {index} of assert_shapes: dimension "
                        f"{k - len(dims) + (rank or len(dims))} must have size {want}, got "
                        f"shape {tuple(t.shape.as_list())} (spec {tuple(spec)}).")
                continue
            emit_assert(_m.equal(want, have),
                        f"{prefix}Specified by tensor {index} of assert_shapes: a dimension "
                        f"does not match its spec {tuple(spec)}.")


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """Returns ``tensor`` if it has no NaN or infinity; raises ``InvalidArgumentError``
    (``"<message> : Tensor had NaN values"`` or ``Inf values``) otherwise.

    >>> import stagecraft as tf
    >>> tf.debugging.check_numerics(tf.constant([1.0]), "bad").numpy().tolist()
    [1.0]
    """
    t = convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise TypeError(f"check_numerics: expected a floating-point tensor, got {t.dtype.name}.")
    if _eager():
        v = t.numpy()
        if np.isnan(v).any():
            raise InvalidArgumentError(f"{message} : Tensor had NaN values")
        if np.isinf(v).any():
            raise InvalidArgumentError(f"{message} : Tensor had Inf values")
        return t
    emit_assert(_m.reduce_all(_m.logical_not(_m.is_nan(t))),
                f"{message} : Tensor had NaN values")
    emit_assert(_m.reduce_all(_m.logical_not(_m.is_inf(t))),
                f"{message} : Tensor had Inf values")
    return _a.identity(t)


def assert_all_finite(t: Any, msg: str, name: str | None = None, x: Any = None,
                      message: str | None = None) -> Tensor:
    """``check_numerics`` under TF's other name: returns ``t`` if it is all finite.

    >>> import stagecraft as tf
    >>> float(tf.debugging.assert_all_finite(tf.constant(2.0), "bad"))
    2.0
    """
    return check_numerics(t if x is None else x, message or msg)


def is_numeric_tensor(tensor: Any) -> bool:
    """Whether ``tensor`` is a tensor of a numeric (integer or floating) dtype.

    >>> import stagecraft as tf
    >>> tf.debugging.is_numeric_tensor(tf.constant(1)), tf.debugging.is_numeric_tensor(1)
    (True, False)
    """
    return isinstance(tensor, Tensor) and (tensor.dtype.is_integer or tensor.dtype.is_floating)


def assert_proper_iterable(values: Any) -> None:
    """Raises ``TypeError`` if ``values`` is a tensor, an array or a string (iterables that
    are usually passed by mistake) or is not iterable.

    >>> import stagecraft as tf
    >>> tf.debugging.assert_proper_iterable([1, 2])
    """
    if isinstance(values, (Tensor, np.ndarray, str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument 'values' to be a \"proper\" iterable. Found: "
                        f"{type(values)}")
