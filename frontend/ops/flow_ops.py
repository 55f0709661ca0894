"""TensorFlow 2's top-level control helpers: ``no_op``, ``group``, ``tuple``,
``control_dependencies``, ``identity_n``, ``switch_case`` and ``case``.

Inside ``@function`` every effect (variable reads and writes, ``print``, asserts,
``py_function``) is a stateful equation that is never pruned and keeps its program order -- the
automatic control dependencies of TF 2's ``tf.function``. So ``group``/``no_op`` have nothing
to add to the graph and return None (as they do eagerly in TF 2), and ``control_dependencies``
only checks its inputs: the effects written inside the block already run after those written
before it. ``switch_case`` and ``case`` are staged as chains of ``cond``.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from stagecraft.eager.context import STATE
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.ops import array_ops as _a
from stagecraft.ops import math_ops as _m
from stagecraft.ops.logging_ops import emit_assert
from stagecraft.staging.cond import cond
from stagecraft.state.variables import Variable

__all__ = ["no_op", "group", "tuple", "control_dependencies", "identity_n", "switch_case",
           "case"]

_builtin_tuple = tuple


def _staging() -> bool:
    return STATE.get().graph is not None


def _check_control_input(c: Any, fn: str) -> None:
    """Tensors, variables and the None that effects such as ``tf.print`` / ``assign`` / ``group``
    give are valid control inputs."""
    if c is None or isinstance(c, (Tensor, Variable)):
        return
    raise TypeError(f"{fn}: a control input must be a tensor, a variable or the result of an "
                    f"effect (tf.print, tf.debugging.Assert, tf.group, which give None); got "
                    f"{type(c).__name__} {c!r}.")


def no_op(name: str | None = None) -> None:
    """Does nothing (TF's ``NoOp``); returns None as TensorFlow 2 does eagerly.

    >>> import stagecraft as tf
    >>> tf.no_op() is None
    True
    """
    return None


def group(*inputs: Any, name: str | None = None) -> None:
    """Groups effects; returns None. Eagerly they have already run; inside ``@function`` every
    effect is kept and ordered by the program, so grouping adds nothing (TF 2's ``tf.group``
    returns None eagerly and an op with only control edges when staged).

    >>> import stagecraft as tf
    >>> v = tf.Variable(0)
    >>> tf.group(v.assign_add(1), v.assign_add(2)) is None, int(v.numpy())
    (True, 3)
    """
    for x in inputs:
        for c in (x if isinstance(x, (list, _builtin_tuple)) else [x]):
            _check_control_input(c, "tf.group")
    return None


def tuple(tensors: Sequence[Any], control_inputs: Sequence[Any] | None = None,  # noqa: A001
          name: str | None = None) -> list:
    """The tensors again (``None`` entries stay None), available only once all of them (and the
    ``control_inputs``) are computed -- which program order already guarantees here.

    >>> import stagecraft as tf
    >>> [t.numpy().tolist() for t in tf.tuple([tf.constant(1), tf.constant([2, 3])])]
    [1, [2, 3]]
    """
    for c in control_inputs or ():
        if callable(c) and not isinstance(c, (Tensor, Variable)):
            raise TypeError("tf.tuple: control_inputs must be tensors or effects, not "
                            f"callables; got {c!r}.")
        _check_control_input(c, "tf.tuple")
    return [None if t is None else _a.identity(t) for t in tensors]


@contextlib.contextmanager
def control_dependencies(control_inputs: Sequence[Any] | None) -> Iterator[None]:
    """Runs the ops created in the block after ``control_inputs``.

    Eagerly this is a no-op (callables among the inputs are called, as TensorFlow does);
    inside ``@function`` effects keep their program order, so the effects in the block already
    follow the inputs' effects; the inputs are checked.

    >>> import stagecraft as tf
    >>> v = tf.Variable(1.0)
    >>> @tf.function
    ... def f():
    ...     with tf.control_dependencies([v.assign(5.0)]):
    ...         return v.read_value() * 2.0
    >>> float(f())
    10.0
    """
    if control_inputs is None:
        control_inputs = []
    if not isinstance(control_inputs, (list, _builtin_tuple)):
        raise TypeError(f"tf.control_dependencies: control_inputs must be a list of tensors or "
                        f"effects (or None), got {type(control_inputs).__name__}. Wrap a single "
                        f"input in a list: tf.control_dependencies([x]).")
    staging = _staging()
    for c in control_inputs:
        if callable(c) and not isinstance(c, (Tensor, Variable)):
            if staging:
                raise TypeError(f"tf.control_dependencies: inside @function a control input "
                                f"must be a tensor or effect, not a callable ({c!r}); call it "
                                f"first: tf.control_dependencies([fn()]).")
            c()
            continue
        _check_control_input(c, "tf.control_dependencies")
    yield


def identity_n(input: Sequence[Any], name: str | None = None) -> list:  # noqa: A002
    """A copy of each tensor of ``input`` (gradients pass through unchanged).

    >>> import stagecraft as tf
    >>> a, b = tf.identity_n([tf.constant(1.0), tf.constant([2, 3])])
    >>> float(a), b.numpy().tolist()
    (1.0, [2, 3])
    """
    return [_a.identity(t) for t in input]


def _static_value(x: Any) -> Any:
    """The value of a Python value or an eager tensor, None for a symbolic tensor."""
    if isinstance(x, Tensor):
        return None if _staging() and not _is_eager(x) else np.asarray(x.numpy())
    return np.asarray(x)


def _is_eager(t: Tensor) -> bool:
    from stagecraft.staging.graph_tensor import GraphTensor
    return not isinstance(t, GraphTensor)


def _branches(branch_fns: Any) -> list:
    """``branch_fns`` as a list of callables indexed 0..n-1 (TF accepts a dict, a list of
    (int, callable) pairs, or a list of callables)."""
    if isinstance(branch_fns, dict):
        pairs = sorted(branch_fns.items(), key=lambda kv: kv[0])
    elif isinstance(branch_fns, (list, _builtin_tuple)) and branch_fns and all(
            isinstance(p, (list, _builtin_tuple)) and len(p) == 2 for p in branch_fns):
        pairs = sorted(branch_fns, key=lambda kv: kv[0])
    elif isinstance(branch_fns, (list, _builtin_tuple)):
        pairs = list(enumerate(branch_fns))
    else:
        raise TypeError(f"tf.switch_case: branch_fns must be a list of callables, a list of "
                        f"(int, callable) pairs or a dict of int to callable; got "
                        f"{type(branch_fns).__name__}.")
    if not pairs:
        raise ValueError("tf.switch_case: branch_fns must not be empty.")
    keys = [k for k, _ in pairs]
    if any(not isinstance(k, (int, np.integer)) or isinstance(k, bool) for k in keys):
        raise TypeError(f"tf.switch_case: branch indices must be ints; got {keys}.")
    if keys != list(range(len(keys))):
        raise ValueError(f"tf.switch_case: branch indices must be 0, 1, ..., {len(keys) - 1} "
                         f"(each once); got {keys}.")
    fns = [f for _, f in pairs]
    for i, f in enumerate(fns):
        if not callable(f):
            raise TypeError(f"tf.switch_case: branch {i} must be callable, got {f!r}.")
    return fns


def switch_case(branch_index: Any, branch_fns: Any, default: Callable | None = None,
                name: str = "switch_case") -> Any:
    """Runs ``branch_fns[branch_index]`` (an int32 scalar); an index outside the branches runs
    ``default``, or the last branch when ``default`` is None. Inside ``@function`` with an
    index known only at run time, every branch is traced into a chain of ``cond``.

    >>> import stagecraft as tf
    >>> fns = [lambda: tf.constant(10), lambda: tf.constant(20)]
    >>> int(tf.switch_case(tf.constant(1), fns)), int(tf.switch_case(7, fns))
    (20, 20)
    """
    fns = _branches(branch_fns)
    if default is not None and not callable(default):
        raise TypeError(f"tf.switch_case: default must be callable or None, got {default!r}.")
    index = convert_to_tensor(branch_index)
    if index.dtype not in (_dt.int32, _dt.int64) or index.shape.rank not in (0, None):
        raise TypeError(f"tf.switch_case: branch_index must be a scalar int32 tensor; got a "
                        f"{index.dtype.name} tensor of shape {index.shape}.")
    fallback = default if default is not None else fns[-1]
    known = _static_value(index)
    if known is not None:
        i = int(known)
        return fns[i]() if 0 <= i < len(fns) else fallback()
    chained = fns if default is not None else fns[:-1]

    def chain(i: int) -> Any:
        if i == len(chained):
            return fallback()
        return cond(_m.equal(index, i), chained[i], lambda: chain(i + 1))
    return chain(0)


def case(pred_fn_pairs: Any, default: Callable | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """Runs the callable of the first predicate that holds, else ``default``. With ``default``
    None the last pair's callable is the default and one of the predicates must hold
    (``InvalidArgumentError`` otherwise); ``exclusive=True`` also requires at most one to hold.

    >>> import stagecraft as tf
    >>> x = tf.constant(3)
    >>> int(tf.case([(x < 0, lambda: tf.constant(-1)), (x > 0, lambda: tf.constant(1))],
    ...             default=lambda: tf.constant(0)))
    1
    """
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, _builtin_tuple)) or not all(
            isinstance(p, (list, _builtin_tuple)) and len(p) == 2 for p in pred_fn_pairs):
        raise TypeError("tf.case: pred_fn_pairs must be a list of (predicate, callable) pairs.")
    if not pred_fn_pairs:
        if default is None:
            raise ValueError("tf.case: give at least one (predicate, callable) pair or a "
                             "default.")
        return default()
    preds, fns = [], []
    for i, (p, f) in enumerate(pred_fn_pairs):
        p = convert_to_tensor(p)
        if p.dtype != _dt.bool_ or p.shape.rank not in (0, None):
            raise TypeError(f"tf.case: predicate {i} must be a scalar bool tensor, got a "
                            f"{p.dtype.name} tensor of shape {p.shape}.")
        if not callable(f):
            raise TypeError(f"tf.case: the function of pair {i} must be callable, got {f!r}.")
        preds.append(p)
        fns.append(f)
    if exclusive and len(preds) > 1:
        count = _m.add_n([_m.cast(p, _dt.int32) for p in preds])
        emit_assert(_m.less_equal(count, 1),
                    f"Input error: exclusive=True: more than 1 conditions evaluated as True "
                    f"among the {len(preds)} predicates of tf.case.")
    if default is None:
        last_pred, last_fn = preds.pop(), fns.pop()

        def default() -> Any:
            emit_assert(last_pred, "Input error: None of conditions evaluated as True in "
                                   "tf.case (and no default was given).")
            return last_fn()

    def chain(i: int) -> Any:
        if i == len(preds):
            return default()
        known = _static_value(preds[i])
        if known is not None:
            return fns[i]() if bool(known) else chain(i + 1)
        return cond(preds[i], fns[i], lambda: chain(i + 1))
    return chain(0)
