"""The eager CUDA library's per-signature plans (eager._PLANS, elementwise.Call): a repeated call
does no typing or inference, a new shape, dtype, attr or table entry gets its own plan, host
scalars of elementwise ops are kernel arguments that change per call, and launch parameters
changed between calls are followed."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import config, eager, memory
from stagecraft.backends.numba_cuda.detect import detect
from stagecraft.backends.numba_cuda.kernels import elementwise
from stagecraft.ir import dtypes as dt
from stagecraft.ir.errors import InvalidArgumentError

pytestmark = pytest.mark.cuda


def dev(values, dtype=np.float32):
    return memory.to_device(np.asarray(values, dtype))


def host(array):
    return memory.to_host(array)


@pytest.fixture
def typings(monkeypatch):
    """Counts the input typings eager.run does (one per input of a call it plans)."""
    seen = []
    real = eager.TensorType

    def counting(*args):
        seen.append(args)
        return real(*args)
    monkeypatch.setattr(eager, "TensorType", counting)
    return seen


def test_a_repeated_call_reuses_its_plan(typings):
    x, y = dev([1, 2, 3]), dev([10, 20, 30])
    assert host(eager.run("add", [x, y], {})).tolist() == [11, 22, 33]
    planned = len(typings)
    assert planned == 2
    # new arrays of the same signature: no typing, no inference, new values
    assert host(eager.run("add", [dev([4, 5, 6]), y], {})).tolist() == [14, 25, 36]
    assert len(typings) == planned


@pytest.mark.parametrize("other", [
    lambda: dev([[1, 2, 3], [4, 5, 6]]),          # another shape (now broadcast)
    lambda: dev([1, 2, 3], np.float64),           # another dtype
    lambda: dev([7]),                             # a one-element operand
])
def test_a_new_signature_gets_its_own_plan(typings, other):
    x = dev([1, 2, 3])
    eager.run("multiply", [x, dev([2, 2, 2])], {})
    before = len(typings)
    y = other()
    if y.dtype != x.dtype:
        with pytest.raises(InvalidArgumentError, match="multiply: 'x' is float32 but 'y' is"):
            eager.run("multiply", [x, y], {})
        return
    out = eager.run("multiply", [x, y], {})
    assert len(typings) == before + 2
    assert np.array_equal(host(out), host(x) * host(y))


def test_plans_are_keyed_by_attrs_and_their_types():
    x = dev([[1, 2], [3, 4]])
    assert host(eager.run("reduce_sum", [x], {"axes": (0,), "keepdims": False})).tolist() == [4, 6]
    assert host(eager.run("reduce_sum", [x], {"axes": (1,), "keepdims": False})).tolist() == [3, 7]
    kept = eager.run("reduce_sum", [x], {"axes": (1,), "keepdims": True})
    assert kept.shape == (2, 1)
    keys = [k for k in eager._PLANS if k[0] == "reduce_sum" and k[1][1] == (2, 2)]
    assert {k[2] for k in keys} >= {(("axes", tuple, (0,)), ("keepdims", bool, False)),
                                    (("axes", tuple, (1,)), ("keepdims", bool, True))}


def test_unhashable_attrs_run_without_a_plan():
    x = dev([[1, 2, 3]])
    out = eager.run("transpose", [x], {"perm": [1, 0]})
    assert host(out).tolist() == [[1], [2], [3]]
    assert not [k for k in eager._PLANS if k[0] == "transpose"
                and ("perm", list, [1, 0]) in k[2]]


def test_a_replaced_table_entry_is_not_bypassed(monkeypatch):
    x = dev([1, 2])
    eager.run("negative", [x], {})
    monkeypatch.setitem(eager.TABLE, "negative", lambda xs, a, t: "replaced")
    assert eager.run("negative", [x], {}) == "replaced"


def test_inference_errors_are_raised_on_every_call():
    x, y = dev([1, 2, 3]), dev([1, 2])
    for _ in range(2):
        with pytest.raises(InvalidArgumentError, match="add: Incompatible shapes"):
            eager.run("add", [x, y], {})


def test_a_planned_integer_check_still_raises_per_call():
    x = dev([7, 8], np.int32)
    assert host(eager.run("floordiv", [x, dev([2, 3], np.int32)], {})).tolist() == [3, 2]
    with pytest.raises(ZeroDivisionError, match="Integer division by zero"):
        eager.run("floordiv", [x, dev([2, 0], np.int32)], {})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.int64])
def test_host_scalars_are_kernel_arguments_that_change_per_call(dtype):
    x = dev([1, 2, 3], dtype)
    for k in (2, 3):
        scalar = np.dtype(dtype).type(k)
        out = eager.run("multiply", [x, scalar], {})
        assert out.dtype == np.dtype(dtype) and host(out).tolist() == [k, 2 * k, 3 * k]
        flipped = eager.run("add", [scalar, x], {})
        assert host(flipped).tolist() == [k + 1, k + 2, k + 3]
    key = eager._signature("multiply", [x, np.dtype(dtype).type(2)], {})
    assert eager._PLANS[key].uploads == ()   # the scalar is not copied to the device


def test_scalars_a_kernel_cannot_take_are_uploaded_every_call():
    for x, scalar in [(dev([1.5, 2.5], np.float16), np.float16(2)),     # half: widened
                      (dev([1 + 1j], np.complex64), np.complex64(2j))]:  # complex
        first = eager.run("multiply", [x, scalar], {})
        second = eager.run("multiply", [x, scalar * 2], {})
        assert first.dtype == x.dtype
        assert np.array_equal(host(first), host(x) * scalar)
        assert np.array_equal(host(second), host(x) * (scalar * 2))
        assert eager._PLANS[eager._signature("multiply", [x, scalar], {})].uploads == (1,)
    # host arrays and scalars of other ops too
    rows = dev([[1, 2], [3, 4]])
    for k in (1, 0):
        picked = eager.run("gather", [rows, np.int32(k)], {"axis": 0, "batch_dims": 0})
        assert host(picked).tolist() == [[3, 4], [1, 2]][1 - k]


def test_identity_of_a_host_scalar_is_a_device_array():
    out = eager.run("identity", [np.float32(3)], {})
    assert memory.is_device_array(out) and host(out) == 3


def test_an_elementwise_call_follows_launch_parameter_changes(monkeypatch):
    x = dev(np.arange(40))
    call = elementwise.prepared("negative", (elementwise.signature(x),), dt.float32, (40,))
    assert host(call([x])).tolist() == (-np.arange(40)).tolist()
    dims = call.launch.dims
    monkeypatch.setattr(config, "THREADS_PER_BLOCK", 8)
    monkeypatch.setattr(config, "MAX_BLOCKS", 2)   # (the simulator's; a GPU's is larger)
    assert host(call([x])).tolist() == (-np.arange(40)).tolist()
    assert call.launch.dims == (2, 8) != dims
    kernel = call.launch.kernel
    monkeypatch.setattr(elementwise, "FORCE_DEVICE_NUMPY", True)
    call([x])
    # (the GPU spelling's kernel: on a GPU it is the one that ran all along)
    assert (call.launch.kernel is not kernel) == (detect() == "simulator")


def test_an_empty_output_launches_nothing():
    x = dev(np.zeros((0, 3)))
    out = eager.run("exp", [x], {})
    assert out.shape == (0, 3) and out.dtype == np.float32
