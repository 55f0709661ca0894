"""AutoGraph's reference behaviours (autograph.md §6): every sample runs three ways — the plain
Python function on Python values, the plain function on eager tensors, and ``tf.function``
staged on tensors — and must agree on results (numerically), stdout and exception types.

The samples are module-level functions of this file (converted code needs source)."""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.ir.errors import InvalidArgumentError

# Staged tests of the staging and AutoGraph issues: compiled by Numba (what users get by
# default), and run again inside tf.device("/gpu:0") (marker cuda).
pytestmark = [pytest.mark.backend("numba"), pytest.mark.gpu_placements]


# ============================================================================= harness

def _tensor(v: Any) -> Any:
    if isinstance(v, (bool, int, float, list)):
        return tf.constant(v)
    return v


def _numpy(x: Any) -> Any:
    if isinstance(x, tf.Tensor):
        return x.numpy()
    if isinstance(x, dict):
        return {k: _numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_numpy(v) for v in x]
    return x


def _assert_same(expected: Any, actual: Any, where: str) -> None:
    expected, actual = _numpy(expected), _numpy(actual)
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for k in expected:
            _assert_same(expected[k], actual[k], f"{where}[{k!r}]")
        return
    if isinstance(expected, list) and not _numeric_list(expected):
        assert isinstance(actual, list) and len(actual) == len(expected), \
            f"{where}: {expected!r} vs {actual!r}"
        for k, (e, a) in enumerate(zip(expected, actual)):
            _assert_same(e, a, f"{where}[{k}]")
        return
    if expected is None:
        assert actual is None, f"{where}: None vs {actual!r}"
        return
    e, a = np.asarray(expected), np.asarray(actual)
    assert e.shape == a.shape, f"{where}: shape {e.shape} vs {a.shape}"
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=1e-5,
                               err_msg=where)


def _numeric_list(x: list) -> bool:
    return all(isinstance(v, (int, float, bool, np.generic)) or
               (isinstance(v, list) and _numeric_list(v)) for v in x)


def _outcome(fn: Callable, args: tuple, capsys: Any) -> tuple[str, Any, str]:
    capsys.readouterr()
    try:
        result = fn(*args)
        kind = "value"
    except Exception as e:  # noqa: BLE001 - the exception is the outcome
        result, kind = e, "raise"
    return kind, result, capsys.readouterr().out


def check(fn: Callable, capsys: Any, *args: Any, eager_stdout: bool = True,
          raises: type | None = None) -> Any:
    """Runs ``fn`` three ways and checks that they agree. Returns the Python result."""
    py = _outcome(fn, args, capsys)
    targs = tuple(_tensor(a) for a in args)
    eager = _outcome(fn, targs, capsys)
    staged = _outcome(tf.function(fn), targs, capsys)
    if raises is not None:
        assert py[0] == "raise" and isinstance(py[1], raises), py
    for label, other in (("eager", eager), ("staged", staged)):
        where = f"{fn.__name__}{args} {label}"
        if py[0] == "raise":
            assert other[0] == "raise", f"{where}: Python raised {py[1]!r}, got {other[1]!r}"
            assert isinstance(other[1], type(py[1])), f"{where}: {py[1]!r} vs {other[1]!r}"
        else:
            if other[0] == "raise":
                raise AssertionError(f"{where} raised") from other[1]
            _assert_same(py[1], other[1], where)
    assert staged[2] == py[2], f"stdout: {py[2]!r} vs staged {staged[2]!r}"
    if eager_stdout:
        assert eager[2] == py[2], f"stdout: {py[2]!r} vs eager {eager[2]!r}"
    return py[1]


# ============================================================================= if

def if_elif_else(x):
    if x > 0:
        y = x * 2
    elif x < -5:
        y = x - 1
    else:
        y = -x
    return y


def nested_if(x, y):
    if x > 0:
        if y > 0:
            z = x + y
        else:
            z = x - y
        z = z * 2
    else:
        if y > x:
            z = y
        else:
            z = x
    return z


def if_without_else(x):
    y = 1
    if x > 2:
        y = y + x
    return y


def if_two_vars_and_local(x):
    a, b = 1, 2
    if x > 0:
        tmp = x * 10  # branch-local, not used after
        a = tmp + 1
        b = a - x
    return a, b


@pytest.mark.parametrize("x", [3, -7, -2, 0])
def test_if_elif_else(x, capsys):
    check(if_elif_else, capsys, x)


@pytest.mark.parametrize("x,y", [(1, 2), (1, -2), (-1, 2), (-3, -4)])
def test_nested_if(x, y, capsys):
    check(nested_if, capsys, x, y)


@pytest.mark.parametrize("x", [5, 1])
def test_if_without_else_modifies_var(x, capsys):
    check(if_without_else, capsys, x)


@pytest.mark.parametrize("x", [2, -2])
def test_if_branch_local_temporaries(x, capsys):
    check(if_two_vars_and_local, capsys, x)


# ============================================================================= while

def while_tensor_cond(n):
    total = 0
    i = 0
    while i < n:
        total += i * i
        i += 1
    return total, i


def while_python_cond(x):
    k = 1
    while k < 20:
        x = x + k
        k = k * 3
    return x


def while_nested(n):
    total = 0
    i = 0
    while i < n:
        j = 0
        while j < i:
            total += j
            j += 1
        i += 1
    return total


@pytest.mark.parametrize("n", [0, 1, 6])
def test_while_tensor_cond(n, capsys):
    check(while_tensor_cond, capsys, n)


@pytest.mark.parametrize("x", [0, 2.5])
def test_while_python_cond_inside_function(x, capsys):
    check(while_python_cond, capsys, x)


@pytest.mark.parametrize("n", [0, 4])
def test_while_nested(n, capsys):
    check(while_nested, capsys, n)


# ============================================================================= for

def for_range(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def for_range_start_stop_step(n):
    s = 0
    for i in range(1, n, 2):
        s = s * 2 + i
    return s


def for_tf_range(n):
    s = 0
    for i in tf.range(n):
        s += i
    return s


def for_rows(x):
    total = 0.0
    for row in x:
        total += row[0] * row[1]
    return total


def for_python_list(x):
    for c in [1, 2, 3]:
        x = x * c + 1
    return x


def for_uses_iterate_after(n):
    i = -1
    for i in range(n):
        pass
    return i


def for_alters_iterate(n):
    s = 0
    for i in range(n):
        i = 3 * i + 1
        s += i
    return s


def successive_loops(n):
    a = 0
    for i in range(n):
        a += i
    b = a
    while b > 0:
        b -= 2
    return a, b


@pytest.mark.parametrize("n", [0, 1, 5])
def test_for_range(n, capsys):
    check(for_range, capsys, n)


@pytest.mark.parametrize("n", [1, 8])
def test_for_range_start_stop_step(n, capsys):
    check(for_range_start_stop_step, capsys, n)


@pytest.mark.parametrize("n", [0, 4])
def test_for_tf_range(n, capsys):
    check(for_tf_range, capsys, n)


def test_for_over_tensor_rows(capsys):
    check(for_rows, capsys, [[1.0, 2.0], [3.0, 4.0], [5.0, -1.0]])


@pytest.mark.parametrize("x", [1, 0.5])
def test_for_over_python_list(x, capsys):
    check(for_python_list, capsys, x)


@pytest.mark.parametrize("n", [0, 3])
def test_for_iterate_used_after_loop(n, capsys):
    check(for_uses_iterate_after, capsys, n)


def test_for_alters_iterate_in_body(capsys):
    check(for_alters_iterate, capsys, 4)


@pytest.mark.parametrize("n", [0, 5])
def test_successive_loops(n, capsys):
    check(successive_loops, capsys, n)


# ============================================================================= break/continue/else

def for_break_continue_else(n):
    s = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        if i > 6:
            break
        s += i
    else:
        s = s + 100
    return s


def while_break_continue_else(n):
    s = 0
    i = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        if s > 10:
            break
        s += i
    else:
        s = -s
    return s, i


def inner_break_does_not_stop_outer(n):
    count = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            count += 1
    return count


def break_and_continue_in_if_else(n):
    s = 0
    for i in range(n):
        if i < 2:
            continue
        else:
            if i > 4:
                break
        s += i
    return s


@pytest.mark.parametrize("n", [0, 5, 12])
def test_for_break_continue_else(n, capsys):
    check(for_break_continue_else, capsys, n)


@pytest.mark.parametrize("n", [0, 4, 20])
def test_while_break_continue_else(n, capsys):
    check(while_break_continue_else, capsys, n)


@pytest.mark.parametrize("n", [0, 4])
def test_inner_break(n, capsys):
    check(inner_break_does_not_stop_outer, capsys, n)


@pytest.mark.parametrize("n", [3, 8])
def test_break_and_continue_in_if_else(n, capsys):
    check(break_and_continue_in_if_else, capsys, n)


# ============================================================================= returns

def early_return_in_if(x):
    if x > 0:
        return x * 2
    return -x


def return_in_both_branches(x):
    if x > 0:
        if x > 10:
            return x - 10
        else:
            return x + 10
    else:
        return 0 * x


def return_inside_tensor_loop(n):
    i = 0
    while i < n:
        if i * i > 10:
            return i
        i += 1
    return -1


def return_inside_for(n):
    for i in range(n):
        if i > 2:
            return i * 10
    return -1


@pytest.mark.parametrize("x", [3, -3])
def test_early_return_in_if(x, capsys):
    check(early_return_in_if, capsys, x)


@pytest.mark.parametrize("x", [3, 30, -3])
def test_return_in_all_branches(x, capsys):
    check(return_in_both_branches, capsys, x)


@pytest.mark.parametrize("n", [0, 2, 10])
def test_return_inside_tensor_while(n, capsys):
    check(return_inside_tensor_loop, capsys, n)


@pytest.mark.parametrize("n", [0, 2, 10])
def test_return_inside_for_range(n, capsys):
    check(return_inside_for, capsys, n)


# ============================================================================= functions

def _helper_clip(x, limit):
    # undecorated, with tensor control flow: converted when called from converted code
    if x > limit:
        x = limit
    while x < -limit:
        x = x + limit
    return x


def calls_helper(x):
    return _helper_clip(x, 5) + _helper_clip(-x, 3)


def nested_function_and_lambda(x):
    def inner(y):
        if y > 0:
            return y * 2
        return y - 1

    plus_one = lambda z: z + 1  # noqa: E731
    return inner(plus_one(x))


def closure_reads_loop_variable(n):
    s = 0
    i = 0

    def get_i():
        return i

    while i < n:
        s += get_i()
        i += 1
    return s


def lambda_with_ternary(x):
    f = lambda v: v * 2 if v > 0 else -v  # noqa: E731
    return f(x) + f(-x)


@pytest.mark.parametrize("x", [7, -2, 20])
def test_calls_to_undecorated_helper(x, capsys):
    check(calls_helper, capsys, x)


@pytest.mark.parametrize("x", [3, -5])
def test_nested_function_and_lambda(x, capsys):
    check(nested_function_and_lambda, capsys, x)


@pytest.mark.parametrize("n", [0, 5])
def test_closure_reads_variable_the_loop_modifies(n, capsys):
    check(closure_reads_loop_variable, capsys, n)


@pytest.mark.parametrize("x", [2, -3])
def test_lambda_with_ternary(x, capsys):
    check(lambda_with_ternary, capsys, x)


def test_helper_is_converted_recursively():
    staged = tf.function(calls_helper)
    assert int(staged(tf.constant(7))) == calls_helper(7)
    graph = staged.get_concrete_function(tf.constant(7)).graph
    text = str(graph)
    assert "cond" in text and "while" in text


# ============================================================================= expressions

def logical_ops(a, b):
    return (a > 0 and b > 0), (a > 0 or b > 0), not (a > b), (a > 0 and b > 0 or a < -5)


def bool_values(a, b):
    return a and b, a or b, not a


def if_expression(x):
    y = x * 2 if x > 0 else -x
    z = (1 if y > 4 else 2) if x > -10 else 3
    return y + z


def chained_comparison(x):
    return 0 < x < 10, -1 <= x * 2 <= 8 == 8, x != 2


_CALLS = []


def _noisy(v):
    _CALLS.append(v)
    print("evaluated")
    return v


def chained_comparison_evaluates_once(x):
    return 0 < _noisy(x) < 10


def mixed_python_and_tensor_logic(x, flag):
    if flag and x > 0:
        x = x + 1
    if not flag or x < 0:
        x = x - 1
    return x


@pytest.mark.parametrize("a,b", [(1, 2), (1, -2), (-1, 2), (-9, -1)])
def test_and_or_not_on_comparisons(a, b, capsys):
    check(logical_ops, capsys, a, b)


@pytest.mark.parametrize("a,b", [(True, False), (False, True), (True, True)])
def test_and_or_not_on_bools(a, b, capsys):
    check(bool_values, capsys, a, b)


def test_and_or_short_circuit_python_values():
    from stagecraft.converters.api import convert

    calls = []

    def never(v):
        calls.append(v)
        return v

    def f(a):
        return a or never(1), a and never(2)

    assert convert(f)(5) == (5, 2) and calls == [2]
    assert convert(f)(0) == (1, 0) and calls == [2, 1]


@pytest.mark.parametrize("x", [3, 1, -4, -20])
def test_conditional_expressions(x, capsys):
    check(if_expression, capsys, x)


@pytest.mark.parametrize("x", [5, 12, -1, 2])
def test_chained_comparison(x, capsys):
    check(chained_comparison, capsys, x)


@pytest.mark.parametrize("x", [5, 12])
def test_chained_comparison_middle_evaluated_once(x, capsys):
    _CALLS.clear()
    out = check(chained_comparison_evaluates_once, capsys, x)
    assert out == (x < 10)
    assert len(_CALLS) == 3  # once per way of running: Python, eager, one trace


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("x", [2, -2])
def test_python_bool_and_tensor_mixed(x, flag, capsys):
    # ``flag`` stays a Python bool (a static argument) while x becomes a tensor
    py = mixed_python_and_tensor_logic(x, flag)
    staged = tf.function(mixed_python_and_tensor_logic)(tf.constant(x), flag)
    assert int(staged) == py


# ============================================================================= containers

def dict_item_in_branches(x):
    d = {"a": x, "b": 0}
    if x > 0:
        d["b"] = x * 3
    else:
        d["b"] = x - 3
        d["a"] = 0 * x
    return d


def list_item_in_branches_and_loop(x):
    lst = [x, 0]
    if x > 1:
        lst[1] = x + 1
    i = 0
    while i < 3:
        lst[0] = lst[0] * 2
        i += 1
    return lst


def dict_state_only_loop(n):
    y = {"b": n}
    while y["b"] > 0:
        y["b"] = y["b"] - 2
    return y["b"]


@pytest.mark.parametrize("x", [2, -2])
def test_dict_item_assignment_in_branches(x, capsys):
    check(dict_item_in_branches, capsys, x)


@pytest.mark.parametrize("x", [3, 1])
def test_list_item_assignment_in_branch_and_loop(x, capsys):
    check(list_item_in_branches_and_loop, capsys, x)


@pytest.mark.parametrize("n", [0, 7])
def test_dict_item_as_loop_state(n, capsys):
    check(dict_state_only_loop, capsys, n)


# ============================================================================= TensorArray

def tensor_array_for(n):
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    for i in tf.range(n):
        ta = ta.write(i, i * i)
    return ta.stack()


def tensor_array_while_fixed_size(n):
    ta = tf.TensorArray(tf.float32, size=n)
    i = 0
    while i < n:
        ta = ta.write(i, tf.cast(i, tf.float32) * 0.5)
        i += 1
    return ta.stack()


def tensor_array_nested_loops(n):
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[])
    k = 0
    for i in range(n):
        for j in range(i):
            ta = ta.write(k, i * 10 + j)
            k += 1
    return ta.stack()


@pytest.mark.parametrize("n", [1, 4])
def test_tensor_array_accumulation_in_for(n, capsys):
    check(tensor_array_for, capsys, n)


@pytest.mark.parametrize("n", [1, 3])
def test_tensor_array_accumulation_in_while(n, capsys):
    check(tensor_array_while_fixed_size, capsys, n)


@pytest.mark.parametrize("n", [0, 4])
def test_tensor_array_nested_loops(n, capsys):
    check(tensor_array_nested_loops, capsys, n)


# ============================================================================= loop-created variables

def loop_creates_variable(n):
    for i in range(n):
        y = i * 2
    return y


def while_creates_variable(n):
    i = 0
    while i < n:
        y = i + 100
        i += 1
    return y


@pytest.mark.parametrize("n", [1, 3])
def test_loop_creates_variable_legal_when_iterating(n, capsys):
    check(loop_creates_variable, capsys, n)
    check(while_creates_variable, capsys, n)


@pytest.mark.parametrize("fn", [loop_creates_variable, while_creates_variable])
def test_loop_creates_variable_zero_iterations(fn):
    with pytest.raises(UnboundLocalError):
        fn(0)  # Python semantics
    with pytest.raises(UnboundLocalError):
        fn(tf.constant(0))  # eager tensors run as Python
    staged = tf.function(fn)
    assert int(staged(tf.constant(2))) == fn(2)
    with pytest.raises(InvalidArgumentError, match="must iterate at least once"):
        staged(tf.constant(0))


# ============================================================================= while True

def while_true_tensor_break(x):
    while True:
        x = x * 2
        if x > 100:
            break
    return x


def while_true_return(x):
    n = 0
    while True:
        n += 1
        x = x - 7
        if x < 0:
            return n
    return -1


@pytest.mark.parametrize("x", [3, 200, 60])
def test_while_true_with_tensor_break(x, capsys):
    # stagecraft supports this (TensorFlow raises: the loop starts as a Python loop)
    check(while_true_tensor_break, capsys, x)


@pytest.mark.parametrize("x", [3, 50])
def test_while_true_with_tensor_return(x, capsys):
    check(while_true_return, capsys, x)


# ============================================================================= print

def print_in_branches(x):
    print("start")
    if x > 0:
        print("positive", x)
    else:
        print("not positive", x)
    return x


def print_in_loop(n):
    i = 0
    while i < n:
        print("step", i)
        i += 1
    print("done", i)
    return i


def print_python_values(x):
    print("values:", 1, 2.5, "s", sep="|")
    return x + 1


@pytest.mark.parametrize("x", [2, -2])
def test_print_tensor_in_branches(x, capsys):
    check(print_in_branches, capsys, x, eager_stdout=False)


def test_print_in_staged_loop_runs_each_iteration(capsys):
    check(print_in_loop, capsys, 3, eager_stdout=False)


def test_print_python_values(capsys):
    check(print_python_values, capsys, 1)


def test_eager_print_shows_tensor_repr(capsys):
    print_in_branches(tf.constant(4))
    out = capsys.readouterr().out
    assert out.startswith("start\npositive ") and re.search(r"Tensor\(4", out)


# ============================================================================= exceptions

def raises_in_branch(x):
    if x > 100:
        raise ValueError("too big")
    return x


def missing_key(x):
    d = {"a": x}
    if x > 0:
        d["a"] = x + 1
    return d["b"]


def test_exception_type_matches_python(capsys):
    check(raises_in_branch, capsys, 101, raises=ValueError)
    check(missing_key, capsys, 7, raises=KeyError)


def test_python_raise_in_staged_branch_raises_while_tracing():
    # As in TensorFlow, both branches of a tensor-dependent if are traced, so a Python
    # ``raise`` in one of them raises even when that branch would not run.
    assert raises_in_branch(1) == 1
    with pytest.raises(ValueError, match="too big"):
        tf.function(raises_in_branch)(tf.constant(1))


def test_undefined_in_python_branch_is_unbound_local(capsys):
    def f(x):
        if x > 0:
            y = 1
        return y

    def g(x):
        return f(x) + 1

    with pytest.raises(UnboundLocalError):
        f(-1)
    with pytest.raises(UnboundLocalError, match="'y' referenced before assignment"):
        tf.function(f)(-1)
    # an undefined return value of a converted helper raises at the call
    with pytest.raises(UnboundLocalError, match="'y' referenced before assignment"):
        tf.function(g)(-1)
    assert int(tf.function(g)(1)) == 2
