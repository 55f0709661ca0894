"""The checks pass alone: unsupported constructs are rejected up front with the user's
file:line and the function's name; everything else passes through unchanged."""
from __future__ import annotations

import pytest

from pass_snippets import after, expect
from stagecraft.converters.passes import checks
from stagecraft.ir.errors import ConversionError


def test_ordinary_function_is_unchanged():
    src = """
        def f(x):
            if x > 0:
                x = [i for i in range(3)]
            return lambda y: y + x
    """
    assert after(checks, src) == expect("""
        def f(x):
            if (x > 0):
                x = [i for i in range(3)]
            return (lambda y: (y + x))
    """)


@pytest.mark.parametrize("body,what,line", [
    ("x = 1\n    yield x", "a generator (yield)", 3),
    ("yield from range(x)", "a generator (yield)", 2),
    ("return (yield)", "a generator (yield)", 2),
    ("sc__x = 1", "the reserved name 'sc__x'", 2),
])
def test_rejected_constructs_name_function_and_line(body, what, line):
    with pytest.raises(ConversionError) as e:
        after(checks, f"def my_fn(x):\n    {body}\n")
    assert str(e.value).startswith(f"f.py:{line}: cannot convert 'my_fn': it contains {what}")
    assert "autograph=False" in str(e.value)


def test_async_code_is_rejected():
    with pytest.raises(ConversionError, match=r"f.py:2: cannot convert 'f': it contains async code"):
        after(checks, "def f(x):\n    async def g():\n        await x\n")
