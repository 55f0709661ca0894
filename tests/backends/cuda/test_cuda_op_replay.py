"""Eager ops replayed from the recording of their launches (``numba_cuda/op_replay.py``), for
every op of the op table: five calls with one signature (the fourth and fifth replay where the
op can be), each on new input buffers, must all give what the op gives when run plainly. After
each call its inputs and result are overwritten with other bytes and kept alive, so a replay
that read or returned a buffer of an earlier call would show."""
from __future__ import annotations

import numpy as np
import pytest

from stagecraft.backends.numba_cuda import eager, memory
from stagecraft.backends.numba_cuda.op_replay import Replayed, Template
from stagecraft.backends.numba_cuda.recording import recording
from stagecraft.ir import OPS

from support.compare import assert_arrays_match
from support.op_examples import as_list, cases

pytestmark = pytest.mark.cuda


def _spoil(array) -> None:
    """Overwrites a device array with bytes no op example holds (0x5A in every byte)."""
    if array.size:
        if array.dtype.kind == "V":   # (bfloat16: written as its bits)
            array = memory.view_as(array, np.uint16)
        raw = np.full(array.size * array.dtype.itemsize, 0x5A, np.uint8)
        memory.copy_into(array, memory.to_device(raw.view(array.dtype).reshape(array.shape)))


@pytest.mark.parametrize("name", sorted(OPS))
def test_five_calls_of_one_signature_equal_a_plain_run(name):
    every = cases(name)   # (the first and the last dtype: a half-precision one for some ops)
    for d, ex in {id(c): c for c in (every[0], every[-1])}.values():
        _five_calls(name, d, ex)


def _five_calls(name, d, ex) -> None:
    op = OPS[name]
    kept = []
    for call in range(5):
        inputs = [memory.to_device(np.asarray(x)) for x in ex.inputs]
        actual = eager.run(name, inputs, dict(ex.attrs))
        # what a new plan's first call gives on copies of the inputs (it runs plainly)
        fresh = [memory.to_device(memory.to_host(x)) for x in inputs]
        plan, values = eager._Plan.make(op, eager.TABLE[name], fresh, dict(ex.attrs))
        expected = plan.run(values)
        where = f"{name}[{d.name}] call {call + 1}"
        for a, e in zip(as_list(actual), as_list(expected)):
            assert_arrays_match(memory.to_host(a), memory.to_host(e), where)
        for array in inputs + as_list(actual):
            if memory.is_device_array(array):
                _spoil(array)
        kept.append((inputs, actual))   # (alive: their buffers are not made again)


def test_layout_and_reduction_ops_replay():
    """Ops whose host code plans layouts and launches replay from their fourth call."""
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    calls = [("transpose", [x], {"perm": (1, 0)}),
             ("reduce_max", [x], {"axes": (1,), "keepdims": False}),
             ("concat", [x, x + 1], {"axis": 0})]
    for name, values, attrs in calls:
        for _ in range(4):
            eager.run(name, [memory.to_device(v) for v in values], dict(attrs))
        plans = [p for key, p in eager._PLANS.items() if key[0] == name]
        assert any(isinstance(p.run, Replayed) and p.run.replaying for p in plans), name


def test_a_call_whose_inputs_share_a_buffer_is_replayed_only_for_such_calls():
    from stagecraft.backends.numba_cuda.kernels.shape import concat
    op = Replayed(lambda xs: concat(list(xs), 0, (4,)))
    a = memory.to_device(np.float32([1, 2]))
    for _ in range(3):
        op([a, a])
    assert op.replaying
    b = memory.to_device(np.float32([5, 6]))
    assert memory.to_host(op([a, b])).tolist() == [1, 2, 5, 6]   # (run plainly)
    assert memory.to_host(op([b, b])).tolist() == [5, 6, 5, 6]   # (replayed)


def test_a_replay_reads_each_guard_again_and_goes_on_only_if_it_is_the_recorded_value():
    from stagecraft.backends.numba_cuda.kernels.shape import full

    def reads(xs):   # (a value read on the host decides the work: a guard)
        return full((2,), 1 if memory.scalar(xs[0]) > 0 else 2, np.int32)
    op = Replayed(reads)
    outs = [memory.to_host(op([memory.to_device(np.int32(n))])).tolist() for n in (5, 5, 5, 5)]
    assert outs == [[1, 1]] * 4 and op.replaying
    assert memory.to_host(op([memory.to_device(np.int32(-1))])).tolist() == [2, 2]
    assert op.replaying   # (one miss: an error, say, is no reason to stop)
    assert memory.to_host(op([memory.to_device(np.int32(5))])).tolist() == [1, 1]
    assert op.replaying and not op._off
    for n in (-1, 3):     # (two misses in a row, as data-dependent work gives: stop)
        expected = [2, 2] if n < 0 else [1, 1]
        assert memory.to_host(op([memory.to_device(np.int32(n))])).tolist() == expected
    assert not op.replaying and op._off


def test_a_gather_with_a_bad_index_raises_when_replayed():
    good = np.array([0, 2], np.int32)
    params = memory.to_device(np.arange(3.0, dtype=np.float32))
    attrs = {"axis": 0, "batch_dims": 0}
    for _ in range(4):
        eager.run("gather", [params, memory.to_device(good)], attrs)
    assert any(p.run.replaying for key, p in eager._PLANS.items() if key[0] == "gather")
    with pytest.raises(IndexError, match=r"indices\[1\] = 3 is not in \[0, 3\)"):
        eager.run("gather", [params, memory.to_device(np.array([0, 3], np.int32))], attrs)
    out = eager.run("gather", [params, memory.to_device(np.array([2, 1], np.int32))], attrs)
    assert memory.to_host(out).tolist() == [2.0, 1.0]


def test_two_recordings_that_differ_end_replaying():
    from stagecraft.backends.numba_cuda.kernels.shape import full
    seeds = iter(range(10))

    def seeded(xs):   # (a scalar from outside the signature, as a host-side seed would be)
        return full((1,), next(seeds), np.int64)
    op = Replayed(seeded)
    outs = [int(memory.to_host(op([memory.to_device(np.int64(0))]))[0]) for _ in range(5)]
    assert outs == [0, 1, 2, 3, 4] and not op.replaying and op._off


def test_a_template_names_inputs_made_buffers_reshapes_and_fixed_arrays():
    from stagecraft.backends.numba_cuda.kernels.shape import copy_view
    fixed = memory.to_device(np.float32([9]))
    x = memory.to_device(np.zeros((2, 3), np.float32))
    with recording() as rec:
        made = copy_view(x, lambda a: a.reshape(6))   # (a made buffer, one launch)
        result = (made.reshape((3, 2)), x.reshape((6,)), fixed)
    template = Template.of(rec, [x], result)
    assert template.result == (("new", 0, (3, 2)), ("in", 0, (6,)), ("fixed", fixed))
    with recording() as rec:
        part = copy_view(x, lambda a: a.reshape(6))
    assert Template.of(rec, [x], part[2:]) is None   # (a slice of a buffer has no slot)
    with recording() as rec:
        alone = memory.empty((6,), np.float32)
    assert Template.of(rec, [x], alone) is None      # (no launch: nothing to gain)


def test_a_library_call_is_replayed_over_the_new_calls_arrays():
    """A library call (cuBLAS's, in conv) is a closure over its arrays: the replay calls the
    same code with this call's arrays in their places."""
    from stagecraft.backends.numba_cuda import launcher
    from stagecraft.backends.numba_cuda.kernels.shape import _copy_kernel, copy_view
    from stagecraft.backends.numba_cuda.launch import grid

    def run(xs):
        staged = copy_view(xs[0], lambda a: a[::-1])    # (a launch of its own)
        out = memory.empty((3,), np.float32)

        def call(stream):   # (a "library" copying staged into out, issued outside recordings)
            launcher.launch_now(_copy_kernel(), grid(3), [out, staged, 0, (3,), (1,)])
        launcher.library_call(call)
        return out
    op = Replayed(run)
    for i in range(5):
        x = memory.to_device(np.float32([1, 2, 3]) * (i + 1))
        assert memory.to_host(op([x])).tolist() == [3.0 * (i + 1), 2.0 * (i + 1), i + 1.0]
    assert op.replaying


# The GPU path of a replay (launches packed into driver parameters by launcher.Bound), checked
# without a GPU: gpu_host.py's stand-in runs Numba's real array classes over fake addresses, and
# cuda.core's launch and the driver's cuLaunchKernel are replaced by a list of the parameters
# they were given (the driver's read through its parameter pointers).
STAND_IN = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import gpu_host
gpu_host.stand_in_gpu()
import ctypes
import cuda.core
import numpy as np
from stagecraft.backends.numba_cuda import eager, launcher, memory
launches = []
cuda.core.launch = lambda stream, config, function, *params: launches.append(
    [getattr(p, "value", p) for p in params])

def cu_launch_kernel(function, gx, gy, gz, bx, by, bz, shmem, stream, params, extra):
    pointers = [ctypes.c_void_p.from_address(params + 8 * j).value
                for j in range(len(function.param_types))]
    launches.append([t.from_address(p).value for t, p in zip(function.param_types, pointers)])
    return (0,)
launcher._DRIVER[:] = [cu_launch_kernel, 0]
calls = [("transpose", 1, {"perm": (1, 0)}), ("reduce_max", 1, {"axes": (1,), "keepdims": False}),
         ("concat", 2, {"axis": 0})]
seen = {}
for name, n, attrs in calls:
    for _ in range(5):
        xs = [memory.to_device(np.ones((4, 300), np.float32)) for _ in range(n)]
        del launches[:]
        y = eager.run(name, xs, attrs)
        seen.setdefault(name, []).append(([memory.address(x) for x in xs], memory.address(y),
                                          [list(p) for p in launches]))
print(json.dumps(seen))
"""


def test_replayed_launches_pack_the_new_calls_buffers_like_a_plain_launch():
    import json
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    out = subprocess.run([sys.executable, "-c", STAND_IN,
                          os.path.join(root, "examples", "benchmarks")],
                         env=env, capture_output=True, text=True, timeout=300, check=True)
    for name, runs in json.loads(out.stdout).items():
        shapes = set()
        for inputs, result, launches in runs:
            marks = {a: f"input {i}" for i, a in enumerate(inputs)}
            marks[result] = "result"
            # (the parameters with this call's buffers named: a launch reading an earlier
            # call's buffer, or a replay packing anything else differently, would differ)
            named = [[marks.get(p, p) for p in launch] for launch in launches]
            assert "result" in str(named) and all(f"input {i}" in str(named)
                                                  for i in range(len(inputs))), name
            shapes.add(json.dumps([[p if isinstance(p, str) or abs(p) < 1 << 39 else "other"
                                    for p in launch] for launch in named]))
        assert len(shapes) == 1, f"{name}: calls packed differently: {shapes}"
