"""``converted_call``: how converted code calls functions. User functions are converted (so
their tensor control flow is staged too); library code, builtins and classes run untouched."""
from __future__ import annotations

import builtins
import functools
import inspect
import logging
import types
from typing import Any, Callable

from stagecraft.converters.operators.builtins import abs_, float_, int_, len_, print_, range_
from stagecraft.converters.operators.variables import UndefinedReturnValue, is_undefined
from stagecraft.ir.errors import ConversionError

logger = logging.getLogger("stagecraft")

_BUILTINS = {builtins.range: range_, builtins.len: len_, builtins.print: print_,
             builtins.abs: abs_, builtins.float: float_, builtins.int: int_}
# Modules whose functions are never converted (they do not branch on tensors in Python).
_LIBRARY_PREFIXES = ("stagecraft", "numpy", "scipy", "numba", "builtins", "functools",
                     "itertools", "collections", "math", "operator", "typing", "abc", "copy",
                     "logging", "inspect", "re", "os", "sys", "json", "random", "gast",
                     "astunparse", "torch")

# The converter (``converters.api.convert``), registered by ``api`` when it is imported: the
# runtime converts user functions it is asked to call, but the converter imports the runtime
# (generated code runs against it), so the runtime does not import the converter.
_CONVERTER: list[Callable[[Callable], Callable]] = []


def set_converter(convert: Callable[[Callable], Callable]) -> None:
    """Makes ``convert`` the function ``converted_call`` converts user functions with.

    >>> _CONVERTER[0].__module__   # registered by stagecraft.converters.api
    'stagecraft.converters.api'
    """
    _CONVERTER[:] = [convert]


def converted_call(f: Any, args: tuple, kwargs: dict) -> Any:
    """Calls ``f(*args, **kwargs)``, converting ``f`` first when it is user code."""
    if is_undefined(f):
        raise f.error()
    target = _BUILTINS.get(f) if _hashable(f) else None
    if target is not None:
        return target(*args, **kwargs)
    if _is_callable_object(f):
        f = f.__call__  # an instance of a user class: its __call__ is user code (TF does this)
    fn = _to_convert(f)
    if fn is None:
        result = f(*args, **kwargs)
    else:
        try:
            converted = _CONVERTER[0](fn)
        except ConversionError as e:
            logger.warning("AutoGraph could not convert %s and calls it unconverted: %s",
                           getattr(fn, "__qualname__", fn), str(e).splitlines()[0])
            converted = fn
        if isinstance(f, types.MethodType):
            result = converted(f.__self__, *args, **kwargs)
        elif isinstance(f, functools.partial):
            result = converted(*f.args, *args, **{**f.keywords, **kwargs})
        else:
            result = converted(*args, **kwargs)
    if is_undefined(result):  # `return y` where y was never assigned on the path taken
        raise result.error()
    return None if isinstance(result, UndefinedReturnValue) else result


def _hashable(f: Any) -> bool:
    try:
        hash(f)
        return True
    except TypeError:
        return False


def _is_callable_object(f: Any) -> bool:
    return not isinstance(f, (type, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                               functools.partial)) \
        and isinstance(getattr(type(f), "__call__", None), types.FunctionType)


def _to_convert(f: Any) -> Callable | None:
    """The plain Python function to convert for callable ``f``, or None to call it as is."""
    from stagecraft.converters.loader import is_converted
    fn = f
    if isinstance(f, types.MethodType):
        fn = f.__func__
    elif isinstance(f, functools.partial):
        fn = f.func
    if not isinstance(fn, types.FunctionType) or is_converted(fn):
        return None
    if getattr(fn, "__sc_do_not_convert__", False):
        return None
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in _LIBRARY_PREFIXES:
        return None
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn):
        return None
    return fn
