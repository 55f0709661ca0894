"""show_converted(f, trace=True): per converted if/while/for, whether the last trace of f ran it
as Python or staged it, and which variables it carried."""
from __future__ import annotations

import inspect
from typing import Callable

import pytest

import stagecraft as tf
from stagecraft.converters import api
from stagecraft.converters.operators import trace_report


def _loc(fn: Callable, text: str) -> str:
    """'file:line' of the first line of ``fn`` containing ``text``."""
    fn = getattr(fn, "python_function", fn)
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return f"{fn.__code__.co_filename}:{first + k}"
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def _report(text: str) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """The report lines of ``text``: loc -> (kind, mode, carried names)."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("#   "):
            continue
        loc, kind, rest = line[4:].split(None, 2)
        if rest == "not reached":
            out[loc] = (kind, "not reached", ())
            continue
        mode, _, carried = rest.partition("  carries: ")
        names = () if carried == "nothing" else tuple(carried.split(", "))
        out[loc] = (kind, mode.strip(), names)
    return out


def branchy(x, n):
    s = tf.zeros_like(x)
    for i in range(n):
        s = s + x
    while x > 0:
        x = x - 1
    if n > 2:
        s = s * 2
    return s + x


def test_python_and_staged_statements_with_their_carried_variables(capsys) -> None:
    f = tf.function(branchy)
    f(tf.constant(3), 3)
    text = tf.show_converted(f, trace=True)
    printed = capsys.readouterr().out
    assert printed == text
    assert text.startswith(tf.autograph.to_code(f))  # the code, then the report
    assert "# Trace report (last trace of branchy):" in text
    report = _report(text)
    assert report == {
        _loc(branchy, "for i in"): ("for", "python", ("s",)),  # i: not used after
        _loc(branchy, "while x"): ("while", "staged", ("x",)),
        _loc(branchy, "if n > 2"): ("if", "python", ("s",)),
    }


def test_the_report_is_the_last_traces() -> None:
    f = tf.function(branchy)
    f(5, tf.constant(3))  # x a Python int: the while runs as Python; n a tensor: staged
    report = _report(api.trace_report_text(f))
    assert report[_loc(branchy, "while x")][1] == "python"
    assert report[_loc(branchy, "if n > 2")][1] == "staged"
    assert report[_loc(branchy, "for i in")][1] == "staged"  # range(tensor) is a staged loop
    f(tf.constant(5), 1)  # a retrace: now the other way round
    report = _report(api.trace_report_text(f))
    assert report[_loc(branchy, "while x")][1] == "staged"
    assert report[_loc(branchy, "if n > 2")][1] == "python"
    assert report[_loc(branchy, "for i in")][1] == "python"
    f(5, tf.constant(3))  # a cache hit traces nothing: the report stays the last trace's
    assert _report(api.trace_report_text(f))[_loc(branchy, "while x")][1] == "staged"


def test_to_code_is_unchanged_by_tracing() -> None:
    f = tf.function(branchy)
    before = tf.autograph.to_code(f)
    f(tf.constant(1), 2)
    assert tf.autograph.to_code(f) == before
    assert "Trace report" not in before
    assert "Trace report" not in tf.show_converted(f)


def nested(x):
    if x > 0:
        if x > 10:
            x = x - 10
    return x


def test_statements_not_reached_are_reported() -> None:
    f = tf.function(nested)
    f(-1)  # Python: the outer if is false, the inner one never runs
    report = _report(api.trace_report_text(f))
    assert report[_loc(nested, "if x > 0")] == ("if", "python", ("x",))
    assert report[_loc(nested, "if x > 10")] == ("if", "not reached", ())
    f(tf.constant(1))  # staged: both branches traced, so both ifs are
    report = _report(api.trace_report_text(f))
    assert report[_loc(nested, "if x > 0")] == ("if", "staged", ("x",))
    assert report[_loc(nested, "if x > 10")] == ("if", "staged", ("x",))


def test_a_function_never_traced_says_so() -> None:
    text = api.trace_report_text(tf.function(nested))
    assert "has not been traced yet: call it first" in text
    assert all(v[1] == "not reached" for v in _report(text).values())


def test_a_function_without_autograph_says_nothing_was_converted() -> None:
    f = tf.function(nested, autograph=False)
    f(3)
    text = api.trace_report_text(f)
    assert "traced without AutoGraph (autograph=False)" in text
    assert all(v[1] == "not reached" for v in _report(text).values())


def helper(v, k):
    if k > 1:
        v = v + 1
    return v


def caller(x):
    for _ in tf.range(2):
        x = helper(x, 3)
    return x


def test_statements_of_called_functions_are_listed_after_the_functions_own() -> None:
    f = tf.function(caller)
    f(tf.constant(1))
    text = api.trace_report_text(f)
    own, _, called = text.partition("# In functions it called:")
    assert _report(own) == {_loc(caller, "for _ in"): ("for", "staged", ("x",))}
    assert _report(called) == {_loc(helper, "if k > 1"): ("if", "python", ("v",))}
    # The helper's own report (a plain function): its last run, which was in that trace.
    assert _report(api.trace_report_text(helper)) == {
        _loc(helper, "if k > 1"): ("if", "python", ("v",))}


def test_a_plain_converted_function_reports_its_last_run() -> None:
    def local(x):
        while x < 3:
            x += 1
        return x
    assert "has not run converted yet" in api.trace_report_text(local)
    assert api.convert(local)(0) == 3
    text = tf.show_converted(local, trace=True)
    assert f"# Trace report (last run of {local.__qualname__}):" in text
    assert _report(text) == {_loc(local, "while x < 3"): ("while", "python", ("x",))}


class Model:
    @tf.function
    def call(self, x):
        if x > 0:
            x = -x
        return x


def test_methods_report_through_the_instance_and_the_class() -> None:
    m = Model()
    m.call(tf.constant(2.0))
    expected = {_loc(Model.call, "if x > 0"): ("if", "staged", ("x",))}
    assert _report(api.trace_report_text(m.call)) == expected
    assert _report(api.trace_report_text(Model.call)) == expected


def test_get_concrete_function_records_too() -> None:
    f = tf.function(nested)
    concrete = f.get_concrete_function(tf.TensorSpec([], tf.int32))
    assert isinstance(concrete._trace_report, trace_report.Report)
    assert f._last_trace_report is concrete._trace_report
    assert concrete._trace_report.get(_loc(nested, "if x > 0")).mode == "staged"


def test_recordings_nest_and_each_keeps_its_own_decisions() -> None:
    with trace_report.recording() as outer:
        trace_report.record("if", "a.py:1", "python", ("x",))
        with trace_report.recording() as inner:
            trace_report.record("while", "b.py:2", "staged", ("y", "z"))
        trace_report.record("if", "a.py:1", "staged", ("x",))
    assert [e.loc for e in outer.entries()] == ["a.py:1"]
    assert outer.get("a.py:1").mode == "python+staged"
    assert outer.get("a.py:1").count == 2
    assert inner.get("b.py:2").names == ("y", "z")
    assert trace_report.latest("b.py:2").mode == "staged"  # remembered after the recording


def test_the_process_wide_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_report, "_LATEST_LIMIT", 3)
    for k in range(5):
        trace_report.record("if", f"bound.py:{k}", "python", ())
    assert trace_report.latest("bound.py:0") is None
    assert trace_report.latest("bound.py:4").kind == "if"
    assert len(trace_report._latest) <= 3
