"""stagecraft's command line.

    python -m stagecraft show-converted path/to/file.py:function
    python -m stagecraft show-converted path/to/file.py:Class.method
    python -m stagecraft warmup

``warmup`` compiles the kernel library and common staged programs into the disk caches ahead of
time (once per installation and user), so the first calls of real programs load machine code.

``show-converted`` imports the file as a module (its ``if __name__ == "__main__":`` block does not
run), looks the function up (a plain function, a ``stagecraft.function`` or a method) and prints
the source AutoGraph generates for it. A missing file or function, or a malformed target, exits
with status 2 and a one-line message; a function AutoGraph cannot convert exits with status 1.
"""
from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import sys
from typing import Any, Sequence
from stagecraft.ir.errors import ConversionError


class UsageError(Exception):
    """A target the command line cannot resolve (exit status 2)."""


def split_target(target: str) -> tuple[str, str]:
    """``'path/to/file.py:Class.method'`` → ``('path/to/file.py', 'Class.method')``.

    >>> split_target("models/net.py:Net.call")
    ('models/net.py', 'Net.call')
    >>> split_target("net.py")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    stagecraft.__main__.UsageError: expected FILE.py:FUNCTION (...), got 'net.py'
    """
    path, sep, attr = target.rpartition(":")
    if not sep or not path or not attr:
        raise UsageError(f"expected FILE.py:FUNCTION (e.g. model.py:train_step), got {target!r}")
    return path, attr


def load_module(path: str) -> Any:
    """Imports the Python file at ``path`` as a module (its folder goes first on sys.path, so
    its own imports of neighbouring files work)."""
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    path = os.path.abspath(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_sc_cli_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def resolve(module: Any, attr: str, path: str = "") -> Any:
    """The object ``attr`` (dotted: ``Class.method``) names in ``module``.

    >>> import types
    >>> m = types.ModuleType("m")
    >>> def f(): pass
    >>> m.f = f
    >>> resolve(m, "f") is f
    True
    >>> resolve(m, "g", "m.py")
    Traceback (most recent call last):
    ...
    stagecraft.__main__.UsageError: m.py has no function 'g' (it defines: f)
    """
    obj = module
    for i, part in enumerate(attr.split(".")):
        try:
            obj = inspect.getattr_static(obj, part) if inspect.isclass(obj) else \
                getattr(obj, part)
        except AttributeError:
            where = path or getattr(module, "__name__", "the module")
            if i:
                where = f"{where}:{'.'.join(attr.split('.')[:i])}"
            raise UsageError(f"{where} has no function {part!r} (it defines: "
                             f"{', '.join(_candidates(obj)) or 'nothing convertible'})") from None
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    if inspect.ismethod(obj):
        obj = obj.__func__
    if not (inspect.isfunction(obj) or hasattr(obj, "python_function")):
        raise UsageError(f"{attr} in {path or module.__name__} is not a function (type "
                         f"{type(obj).__name__})")
    return obj


def _candidates(obj: Any) -> list[str]:
    """Names in ``obj`` that show-converted can take (functions, tf.functions, classes)."""
    names = vars(obj) if hasattr(obj, "__dict__") else {}
    out = []
    for name, value in names.items():
        if name.startswith("__"):
            continue
        if inspect.isfunction(value) or inspect.isclass(value) or \
                hasattr(value, "python_function") or isinstance(value, (staticmethod,
                                                                         classmethod)):
            out.append(name)
    return sorted(out)


def show_converted(target: str) -> str:
    """The converted source of the function ``target`` names (``FILE.py:NAME``)."""
    # lazy import: AutoGraph (gast, astunparse) loads on first use, not with stagecraft
    from stagecraft.converters.api import to_code
    path, attr = split_target(target)
    module = load_module(path)
    return to_code(resolve(module, attr, path))


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m stagecraft",
                                     description="stagecraft command-line tools")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    show = commands.add_parser(
        "show-converted", help="print the code AutoGraph generates for a function",
        description="Print the code AutoGraph generates for a function in a Python file.")
    show.add_argument("target", metavar="FILE.py:FUNCTION",
                      help="the file and the function in it (Class.method for a method)")
    commands.add_parser(
        "warmup", help="compile the kernel library into the disk cache ahead of time",
        description="Compile the kernel library and common staged programs into the disk "
                    "caches, so that later processes load machine code instead of compiling.")
    args = parser.parse_args(argv)
    if args.command == "warmup":
        from stagecraft.staging.warmup import warmup  # lazy import: only this command
        print("stagecraft warmup: compiling into the disk cache (once per installation)")
        print(f"done in {warmup():.1f} s")
        return 0
    if args.command == "show-converted":
        try:
            source = show_converted(args.target)
        except UsageError as e:
            parser.exit(2, f"{parser.prog} show-converted: error: {e}\n")
        except ConversionError as e:
            parser.exit(1, f"{parser.prog} show-converted: error: {e}\n")
        sys.stdout.write(source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
