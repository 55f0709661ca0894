"""Runs the examples in every stagecraft module's docstrings (pytest's --doctest-modules cannot:
it imports the folders under their folder names, not the stagecraft.* package names)."""
import doctest
import importlib
import pkgutil

import pytest

import stagecraft


def _modules() -> list[str]:
    names = ["stagecraft"]
    for info in pkgutil.walk_packages(stagecraft.__path__, prefix="stagecraft."):
        names.append(info.name)
    for sub in ("ir", "backends", "converters"):
        pkg = importlib.import_module(f"stagecraft.{sub}")
        names += [i.name for i in pkgutil.walk_packages(pkg.__path__, prefix=f"stagecraft.{sub}.")]
    return sorted(set(names))


# Modules whose examples need an optional extra (skipped where it is not installed).
_EXTRA = {"stagecraft.ops.image_jpeg_ops": "PIL"}


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    if name in _EXTRA:
        pytest.importorskip(_EXTRA[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_public_functions_have_examples() -> None:
    """Every public op wrapper documents itself; the namespaces are complete."""
    for ns in (stagecraft, stagecraft.math, stagecraft.nn, stagecraft.linalg, stagecraft.random):
        for name in getattr(ns, "__all__", [n for n in dir(ns) if not n.startswith("_")]):
            obj = getattr(ns, name)
            if callable(obj) and getattr(obj, "__module__", "").startswith("stagecraft"):
                assert obj.__doc__, f"{ns.__name__}.{name} has no docstring"
