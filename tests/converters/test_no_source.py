"""Functions whose source cannot be found (``exec``, ``python -c``, a REPL) run unconverted,
as in TensorFlow, but with a WARNING on the ``stagecraft`` logger naming the function and
why; lambdas inside multi-line literals have source and are converted."""
from __future__ import annotations

import logging
import subprocess
import sys

import pytest

import stagecraft as tf

LAMBDAS = {
    "double": lambda x: x * 2.0,
    "absolute": lambda x: (x
                           if x > 0 else -x),
}


def _exec_functions() -> dict:
    namespace: dict = {}
    exec("def twice(x):\n"
         "    return x * 2\n"
         "def sign(x):\n"
         "    if x > 0:\n"
         "        return x\n"
         "    return -x\n", {"tf": tf}, namespace)
    return namespace


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_lambda_in_a_multi_line_literal_is_converted(backend, caplog):
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        f = tf.function(LAMBDAS["absolute"], backend=backend)
        assert float(f(tf.constant(-3.0))) == 3.0  # the tensor ternary was converted
        assert float(tf.function(LAMBDAS["double"], backend=backend)(tf.constant(2.0))) == 4.0
    assert not [r for r in caplog.records if "could not convert" in r.getMessage()]


def test_exec_function_runs_unconverted_with_a_warning(caplog):
    twice = _exec_functions()["twice"]
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        assert float(tf.function(twice, backend="reference")(tf.constant(2.0))) == 4.0
    (record,) = [r for r in caplog.records if "could not convert" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.name == "stagecraft"
    assert record.getMessage().splitlines()[0] == (
        "AutoGraph could not convert 'twice' (<string>:1) and runs it unconverted: its source "
        "code is not available. Python if/while/for on a symbolic tensor inside it will raise "
        "OperatorNotAllowedInGraphError.")


def test_exec_function_with_tensor_if_still_raises_the_clear_error(caplog):
    sign = _exec_functions()["sign"]
    f = tf.function(sign, backend="reference")
    with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
        f(tf.constant(2.0))
    assert float(f(-2.0)) == 2.0  # Python values: plain Python control flow


def test_python_dash_c_function_warns_and_runs():
    program = ("import stagecraft as tf\n"
               "def f(x):\n"
               "    return x + 1\n"
               "print(int(tf.function(f, backend='reference')(tf.constant(1))))\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "2"
    assert "AutoGraph could not convert 'f' (<string>:2) and runs it unconverted" in out.stderr


SAME_LINE = (lambda x: x * 2.0 if x > 0 else x, lambda x: -x if x > 0 else x * 3.0)  # noqa: E731


def test_lambdas_with_the_same_arguments_on_one_line_are_told_apart():
    """Their code's column positions (Python 3.11+) say which lambda each one is."""
    double, negate = (tf.function(fn, backend="reference") for fn in SAME_LINE)
    assert float(double(tf.constant(2.0))) == 4.0 and float(double(tf.constant(-2.0))) == -2.0
    assert float(negate(tf.constant(2.0))) == -2.0 and float(negate(tf.constant(-2.0))) == -6.0
