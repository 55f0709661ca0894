"""AutoGraph error messages: the first line names the variable (or function), says what went
wrong and where in the user's file; errors raised inside converted code have tracebacks that
point at the user's lines."""
from __future__ import annotations

import inspect
import os
import traceback

import pytest

import stagecraft as tf
from stagecraft.ir.errors import ConversionError

HERE = os.path.abspath(__file__)


def _line_of(fn, text: str) -> int:
    """The line number in this file of the first line of ``fn`` containing ``text``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def _first_line(excinfo: pytest.ExceptionInfo) -> str:
    return str(excinfo.value).splitlines()[0]


# ============================================================================= if

def defined_in_if_only(x):
    if x > 0:
        y = x * 2
    return y


def defined_in_else_only(x):
    if x > 0:
        pass
    else:
        y = 3
    return y


def test_variable_defined_only_in_if_branch():
    with pytest.raises(UnboundLocalError) as e:
        tf.function(defined_in_if_only)(tf.constant(1))
    line = _line_of(defined_in_if_only, "if x > 0")
    assert _first_line(e).startswith(
        f"'y' must also be initialized in the else branch ({HERE}:{line}):")


def test_variable_defined_only_in_else_branch():
    with pytest.raises(UnboundLocalError) as e:
        tf.function(defined_in_else_only)(tf.constant(1))
    line = _line_of(defined_in_else_only, "if x > 0")
    assert _first_line(e).startswith(
        f"'y' must also be initialized in the if branch ({HERE}:{line}):")


def test_variable_defined_in_one_branch_is_fine_when_unused_after():
    def f(x):
        if x > 0:
            tmp = x * 2
            x = tmp
        return x

    assert int(tf.function(f)(tf.constant(3))) == 6


def test_variable_defined_in_one_branch_python_cond_is_python_semantics():
    with pytest.raises(UnboundLocalError, match="'y' referenced before assignment"):
        tf.function(defined_in_if_only)(-1)


def dtype_differs(x):
    if x > 0:
        y = tf.constant(1)
    else:
        y = tf.constant(1.0)
    return y


def test_dtype_change_across_branches():
    with pytest.raises(TypeError) as e:
        tf.function(dtype_differs)(tf.constant(1))
    line = _line_of(dtype_differs, "if x > 0")
    assert _first_line(e).startswith(
        f"'y' is i32[] in the if branch but f32[] in the else branch ({HERE}:{line});")
    assert "tf.cast(y, tf.int32)" in _first_line(e)


def none_in_one_branch(x):
    if x > 0:
        y = None
    else:
        y = x
    return y


def test_none_in_one_branch():
    with pytest.raises(ValueError) as e:
        tf.function(none_in_one_branch)(tf.constant(1))
    line = _line_of(none_in_one_branch, "if x > 0")
    assert _first_line(e).startswith(
        f"'y' is None in the if branch of a tensor-dependent if but a value in the other "
        f"({HERE}:{line});")


def python_value_differs(x):
    if x > 0:
        mode = "up"
    else:
        mode = "down"
    return mode


def test_python_value_set_differently_by_staged_branches():
    with pytest.raises(ValueError) as e:
        tf.function(python_value_differs)(tf.constant(1))
    assert _first_line(e).startswith("'mode' is a Python value set differently by the branches "
                                     "of a tensor-dependent if ('up' vs 'down', ")


# ============================================================================= loops

def dtype_changes_in_loop(n):
    x = tf.constant(1)
    i = 0
    while i < n:
        x = tf.cast(x, tf.float32) * 2.0
        i += 1
    return x


def shape_changes_in_loop(n):
    x = tf.constant([1])
    while n > 0:
        x = tf.concat([x, x], 0)
        n -= 1
    return x


def structure_changes_in_loop(n):
    s = (tf.constant(0),)
    while n > 0:
        s = (tf.constant(0), tf.constant(1))
        n -= 1
    return s


def test_dtype_change_across_loop_iterations():
    with pytest.raises(TypeError) as e:
        tf.function(dtype_changes_in_loop)(tf.constant(3))
    line = _line_of(dtype_changes_in_loop, "while")
    assert _first_line(e) == (f"while_loop: 'x' is i32[] before the loop but f32[] after one "
                              f"iteration ({HERE}:{line}). Cast it in the loop body, e.g. "
                              f"tf.cast(x, tf.int32).")


def test_shape_change_across_loop_iterations():
    with pytest.raises(ValueError) as e:
        tf.function(shape_changes_in_loop)(tf.constant(2))
    line = _line_of(shape_changes_in_loop, "while")
    assert _first_line(e).startswith(
        f"while_loop: 'x' enters the loop with shape [1], but has shape [2] after one iteration "
        f"({HERE}:{line}).")
    assert "shape_invariants" in _first_line(e)


def test_structure_change_across_loop_iterations():
    with pytest.raises(ValueError) as e:
        tf.function(structure_changes_in_loop)(tf.constant(2))
    line = _line_of(structure_changes_in_loop, "while n > 0")
    assert _first_line(e).startswith(
        f"'s' changes structure inside a tensor-dependent while loop (('*',) before, "
        f"('*', '*') after one iteration, {HERE}:{line});")


def python_str_changed_by_loop(n):
    s = "a"
    i = 0
    while i < n:
        s = s + "b"
        i += 1
    return i, s


def number_becomes_str_in_loop(n):
    k = 0
    i = 0
    while i < n:
        k = "a"
        i += 1
    return i, k


def test_python_value_changed_by_staged_loop():
    with pytest.raises(ValueError) as e:
        tf.function(python_str_changed_by_loop)(tf.constant(3))
    line = _line_of(python_str_changed_by_loop, "while i < n")
    assert _first_line(e).startswith(
        f"'s' is a Python value that a tensor-dependent while loop changes ('a' -> 'ab', "
        f"{HERE}:{line}); only tensors can change in a staged loop.")


def test_loop_variable_becomes_python_object():
    with pytest.raises(ValueError) as e:
        tf.function(number_becomes_str_in_loop)(tf.constant(3))
    line = _line_of(number_becomes_str_in_loop, "while i < n")
    assert _first_line(e).startswith(
        f"'k' is a loop variable of the tensor-dependent loop at {HERE}:{line}, but one "
        f"iteration sets it to the Python str 'a';")


def loop_creates_and_uses_after(n):
    for i in tf.range(n):
        y = i * 2
    return y


def test_loop_must_iterate_at_least_once():
    from stagecraft.ir.errors import InvalidArgumentError
    f = tf.function(loop_creates_and_uses_after)
    assert int(f(tf.constant(3))) == 4
    with pytest.raises(InvalidArgumentError) as e:
        f(tf.constant(0))
    line = _line_of(loop_creates_and_uses_after, "for i in")
    assert _first_line(e).startswith(
        f"The loop at {HERE}:{line} must iterate at least once to initialize 'y',")


def tensor_break_in_python_list_loop(x):
    for c in [1, 2, 3]:
        x = x * c
        if x > 10:
            break
    return x


def tensor_return_in_python_list_loop(x):
    for c in [1, 2, 3]:
        if x > c:
            return c
    return x


@pytest.mark.parametrize("fn", [tensor_break_in_python_list_loop,
                                tensor_return_in_python_list_loop])
def test_tensor_break_in_python_for_over_list(fn):
    with pytest.raises(ValueError) as e:
        tf.function(fn)(tf.constant(3))
    line = _line_of(fn, "for c in")
    first = _first_line(e)
    assert first.startswith(
        f"A break (or return) that depends on a tensor inside a Python for loop ({HERE}:{line}):"
        f" the loop iterates over a Python list")
    assert "`for i in tf.range(n):`" in first  # the fix
    # with Python values the loop is fine
    assert fn(3) == tf.function(fn)(3)


# ============================================================================= conversion

def a_generator(x):
    yield x


def test_yield_is_a_conversion_error_naming_function_and_line():
    with pytest.raises(ConversionError) as e:
        tf.function(a_generator)(tf.constant(1))
    line = _line_of(a_generator, "yield")
    assert _first_line(e).startswith(
        f"{HERE}:{line}: cannot convert 'a_generator': it contains a generator (yield)")


def test_function_without_source_runs_unconverted_with_a_warning(caplog):
    ns: dict = {}
    exec("lam = lambda x: x + 1 if x > 0 else x", ns)
    with caplog.at_level("WARNING", logger="stagecraft"):
        with pytest.raises(tf.errors.OperatorNotAllowedInGraphError):
            tf.function(ns["lam"])(tf.constant(1))  # the tensor ternary was not converted
    assert "AutoGraph could not convert '<lambda>' (<string>:1) and runs it unconverted" in \
        caplog.text
    exec("def g(x):\n    return x\n", ns)
    assert int(tf.function(ns["g"])(tf.constant(1))) == 1
    # to_code has nothing to show: an error
    with pytest.raises(ConversionError, match="Cannot convert 'g': its source code"):
        tf.autograph.to_code(ns["g"])


def test_to_code_of_generator_is_conversion_error():
    with pytest.raises(ConversionError, match="cannot convert 'a_generator'"):
        tf.autograph.to_code(a_generator)


# ============================================================================= tracebacks

def bad_reshape_in_branch(x):
    if x[0] > 0:
        y = tf.reshape(x, [5])
    else:
        y = x
    return y


def _helper_bad_index(x):
    i = 0
    while i < 2:
        x = x + 1
        i += 1
    return x["key"]


def calls_bad_helper(x):
    if x > 0:
        x = x - 1
    return _helper_bad_index(x)


def _frames(e: BaseException) -> list[tuple[str, int]]:
    return [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]


def test_traceback_points_to_user_line_in_staged_branch():
    with pytest.raises(Exception) as e:
        tf.function(bad_reshape_in_branch)(tf.constant([1, 2, 3]))
    frames = _frames(e.value)
    assert (HERE, _line_of(bad_reshape_in_branch, "tf.reshape")) in frames
    # the converted function's own frame is at the if statement, not its last line
    assert (HERE, _line_of(bad_reshape_in_branch, "if x[0] > 0")) in frames
    # the innermost frame of the user's file is the failing line
    mine = [f for f in frames if f[0] == HERE]
    assert mine[-1] == (HERE, _line_of(bad_reshape_in_branch, "tf.reshape"))


def test_traceback_points_into_converted_helper():
    with pytest.raises(Exception) as e:
        tf.function(calls_bad_helper)(tf.constant(3))
    frames = _frames(e.value)
    assert (HERE, _line_of(calls_bad_helper, "return _helper_bad_index")) in frames
    assert [f for f in frames if f[0] == HERE][-1] == \
        (HERE, _line_of(_helper_bad_index, 'x["key"]'))


def test_converted_code_has_users_filename_and_first_line():
    from stagecraft.converters.api import convert
    converted = convert(bad_reshape_in_branch)
    assert converted.__code__.co_filename == HERE
    assert converted.__code__.co_firstlineno == bad_reshape_in_branch.__code__.co_firstlineno


def appends_in_tensor_loop(n):
    items = []
    for i in tf.range(n):
        items.append(i)
    return tf.stack(items)


def appends_in_python_loop(n):
    items = []
    for i in range(3):
        items.append(i * n)
    return tf.stack(items)


def test_list_append_in_a_staged_loop_names_the_list_and_the_fix():
    with pytest.raises(ValueError) as e:
        tf.function(appends_in_tensor_loop)(tf.constant(3))
    line = _line_of(appends_in_tensor_loop, "for i in")
    assert _first_line(e).startswith(
        f"'items' is a Python list that a tensor-dependent loop changes in place "
        f"({HERE}:{line}); the staged loop runs its body only once")
    assert "tf.TensorArray" in _first_line(e)


def test_list_append_in_a_python_loop_still_works():
    assert tf.function(appends_in_python_loop)(tf.constant(2)).numpy().tolist() == [0, 2, 4]
