"""The differential conformance sample (../shared/conformance): every case whose features exist
must agree with TensorFlow's stored results. NOT_YET names the features that later issues add;
remove an entry when its issue lands, so its cases count."""
import importlib.util
import inspect
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE = os.path.join(os.path.dirname(ROOT), "shared", "conformance")
NOT_YET: tuple[str, ...] = ()  # every feature the suite uses has landed (tf.device: issue 7)
# TensorFlow limitations that stagecraft lifts on purpose (README, "deliberate deviations");
# tests/converters check the values stagecraft gives instead.
SUPPORTED_BEYOND_TF = ("case_errors_while_true_with_tensor_break",)

if not os.path.isdir(SUITE):
    pytest.skip("the shared conformance suite is not checked out beside the repository",
                allow_module_level=True)


def _load(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_scope_cases() -> list[str]:
    sys.path.insert(0, SUITE)
    try:
        runner = _load("conformance_run", os.path.join(SUITE, "run.py"))
        cases = runner.discover()
    finally:
        sys.path.remove(SUITE)
    return [name for _, name, fn in cases
            if not any(word in inspect.getsource(fn) for word in NOT_YET)
            and name not in SUPPORTED_BEYOND_TF]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("conformance") / "stagecraft.json"
    subprocess.run([sys.executable, "run.py", "--impl", "stagecraft", "--out", str(out)],
                   cwd=SUITE, check=True, capture_output=True)
    with open(out) as fh:
        return json.load(fh)["cases"]


@pytest.mark.parametrize("case", _in_scope_cases())
def test_case_agrees_with_tensorflow(case: str, results: dict) -> None:
    compare = _load("conformance_compare", os.path.join(SUITE, "compare.py"))
    with open(os.path.join(SUITE, "expected", "tensorflow.json")) as fh:
        expected = json.load(fh)["cases"]
    ok, why = compare.compare_case(case, expected.get(case), results.get(case), "tensorflow",
                                   "stagecraft")
    assert ok, why
