"""Devices: DeviceSpec parsing, device scopes, listing, soft placement, Tensor.device, copies
and their gradients, variables on devices, and tf.function under GPU scopes (checklist 107-113
of semantics.md). Tests marked ``cuda`` need a GPU:0: a real GPU or Numba's CUDA simulator
(NUMBA_ENABLE_CUDASIM=1, tiny tensors)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import stagecraft as tf

from stagecraft.devices import device as device_module  # tf.device is the scope
from stagecraft.eager import placement

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"

needs_gpu = [pytest.mark.cuda,
             pytest.mark.skipif(device_module.gpu_kind() == "none",
                                reason="needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1")]


def cuda(fn):
    for mark in needs_gpu:
        fn = mark(fn)
    return fn


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as a machine without a GPU (even under the simulator)."""
    monkeypatch.setattr(device_module, "_detected", "none")


@pytest.fixture(autouse=True)
def _restore_switches():
    yield
    tf.config.set_soft_device_placement(True)
    tf.config.experimental.set_device_policy(None)


# ------------------------------------------------------------------ DeviceSpec (107-109)

def test_parse_the_papers_device_name():  # 107
    s = tf.DeviceSpec.from_string("/job:training/task:2/device:GPU:0")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == \
        ("training", None, 2, "GPU", 0)
    assert s.to_string() == "/job:training/task:2/device:GPU:0"


def test_short_and_long_forms_are_equal():  # 108
    names = ["gpu:0", "/GPU:0", "/device:GPU:0", "/gpu:0", "/device:gpu:0"]
    specs = [tf.DeviceSpec.from_string(n) for n in names]
    assert all(s == specs[0] for s in specs)
    assert {s.to_string() for s in specs} == {"/device:GPU:0"}
    assert len({hash(s) for s in specs}) == 1
    assert tf.DeviceSpec.from_string("CPU").to_string() == "/device:CPU:*"
    assert tf.DeviceSpec.from_string("/cpu:*").to_string() == "/device:CPU:*"
    assert tf.DeviceSpec.from_string("").to_string() == ""


def test_full_name_round_trips():
    s = tf.DeviceSpec.from_string(GPU)
    assert (s.job, s.replica, s.task) == ("localhost", 0, 0)
    assert s.to_string() == GPU
    assert tf.DeviceSpec(job="localhost", replica=0, task=0, device_type="gpu",
                         device_index=0) == s


def test_two_device_types_raise():  # 109
    with pytest.raises(ValueError) as e:
        tf.DeviceSpec.from_string("/cpu:0/gpu:0")
    assert str(e.value).startswith("Multiple device types are not allowed while parsing the "
                                   "device spec: '/cpu:0/gpu:0'.")
    with pytest.raises(ValueError, match="Multiple device types"):
        tf.DeviceSpec.from_string("/device:CPU:0/GPU:1")


def test_unknown_attribute_raises():  # 109
    with pytest.raises(ValueError) as e:
        tf.DeviceSpec.from_string("/foo:1")
    assert str(e.value).startswith("Unknown attribute 'foo' is encountered while parsing the "
                                   "device spec: '/foo:1'.")
    with pytest.raises(ValueError, match="Unknown attribute 'job'"):
        tf.DeviceSpec.from_string("/job:a:b")


def test_bad_indices_raise():
    with pytest.raises(ValueError, match="Invalid device index 'x' in the device spec 'gpu:x'"):
        tf.DeviceSpec.from_string("gpu:x")
    with pytest.raises(ValueError, match="Invalid task 'two'"):
        tf.DeviceSpec.from_string("/job:w/task:two")
    with pytest.raises(ValueError, match="replica must be an integer"):
        tf.DeviceSpec(replica="r")
    with pytest.raises(TypeError, match="A device name must be a string"):
        tf.DeviceSpec.from_string(0)


def test_merge_replace_and_repr():
    train = tf.DeviceSpec.from_string("/job:train/task:1")
    merged = train.make_merged_spec(tf.DeviceSpec.from_string("/device:GPU:1"))
    assert merged.to_string() == "/job:train/task:1/device:GPU:1"
    assert train.make_merged_spec(tf.DeviceSpec(task=3)).task == 3
    assert repr(merged) == "DeviceSpec(job='train', task=1, device_type='GPU', device_index=1)"
    assert merged.replace(device_type="CPU", device_index=0).to_string() == \
        "/job:train/task:1/device:CPU:0"
    assert str(merged) == merged.to_string()
    with pytest.raises(TypeError, match="unknown field"):
        merged.replace(gpu=1)
    with pytest.raises(TypeError, match="expected a DeviceSpec"):
        train.make_merged_spec("/gpu:0")


# -------------------------------------------------------------------- scopes (110)

def test_nested_scopes_merge_field_wise():  # 110
    with tf.device("/job:train"):
        with tf.device("/device:GPU:1") as spec:
            assert spec.to_string() == "/job:train/device:GPU:1"
            assert device_module.current_device() == spec
            with tf.device("/cpu:0") as inner:
                assert inner.to_string() == "/job:train/device:CPU:0"
            with tf.device(None) as cleared:
                assert cleared is None and device_module.current_device() is None
        assert device_module.current_device().to_string() == "/job:train"
    assert device_module.current_device() is None


def test_scope_accepts_specs_and_logical_devices_and_restores_after_errors():
    with tf.device(tf.DeviceSpec(device_type="CPU", device_index=0)) as spec:
        assert spec.to_string() == "/device:CPU:0"
    with tf.device(tf.config.list_logical_devices("CPU")[0]) as spec:
        assert spec.to_string() == "/device:CPU:0"
    with pytest.raises(KeyError):
        with tf.device("/gpu:0"):
            raise KeyError("boom")
    assert device_module.current_device() is None


def test_bad_scope_arguments():
    with pytest.raises(RuntimeError) as e:
        tf.device(lambda op: "/cpu:0")
    assert str(e.value).startswith("tf.device does not support functions when eager "
                                   "execution is enabled")
    with pytest.raises(ValueError, match="Expecting a string device name"):
        tf.device(3)
    with pytest.raises(ValueError, match="Unknown attribute 'foo'"):
        tf.device("/foo:1")


# ------------------------------------------------------------------------- listing

def test_listing_without_a_gpu(no_gpu):
    assert tf.list_devices() == [CPU]
    assert tf.config.list_logical_devices() == [
        device_module.LogicalDevice(name="/device:CPU:0", device_type="CPU")]
    assert repr(tf.config.list_physical_devices()) == \
        "[PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')]"
    assert tf.config.list_logical_devices("GPU") == []
    assert tf.config.list_physical_devices("GPU") == []
    assert tf.config.experimental.list_physical_devices("CPU")[0].device_type == "CPU"
    with pytest.raises(TypeError, match="device_type must be a string"):
        tf.config.list_logical_devices(1)


@cuda
def test_listing_with_a_gpu():
    assert tf.list_devices() == [CPU, GPU]
    assert tf.config.list_logical_devices("GPU") == [
        device_module.LogicalDevice(name="/device:GPU:0", device_type="GPU")]
    assert [d.name for d in tf.config.list_physical_devices()] == [
        "/physical_device:CPU:0", "/physical_device:GPU:0"]


def test_import_does_not_load_numba_cuda():
    code = ("import sys, stagecraft as tf; x = tf.constant(1.0) + 1.0; "
            "assert 'numba.cuda' not in sys.modules, 'numba.cuda imported'; print('ok')")
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# --------------------------------------------------- Tensor.device, soft placement (111, 112)

def test_tensor_device_default():  # 111
    x = tf.constant([1.0])
    assert x.device == CPU
    assert (x + 1.0).device == CPU
    assert tf.Variable(1.0).device == CPU
    with tf.device("/cpu:0"):
        assert (x * 2.0).device == CPU


def test_gpu_scope_without_a_gpu_runs_on_the_cpu(no_gpu):  # 112, soft placement on
    assert tf.config.get_soft_device_placement() is True
    x = tf.constant([1.0, 2.0])
    with tf.device("/gpu:0"):
        y = x * 3.0 + 1.0
        z = tf.reduce_sum(tf.constant([[1, 2], [3, 4]]), axis=0)
        v = tf.Variable([1.0])
    assert y.device == CPU and y.numpy().tolist() == [4.0, 7.0]
    assert z.numpy().tolist() == [4, 6]
    assert v.device == CPU and z.device == CPU


def test_gpu_scope_without_a_gpu_raises_with_soft_placement_off(no_gpu):  # 112
    tf.config.set_soft_device_placement(False)
    assert tf.config.get_soft_device_placement() is False
    x = tf.constant([1.0])
    with tf.device("/gpu:0"):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            x + x
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.Variable(1.0)
        with pytest.raises(tf.errors.InvalidArgumentError, match="for tf.constant: no such"):
            tf.constant(1.0)
    assert str(e.value).startswith(
        "Could not satisfy device specification '/job:localhost/replica:0/task:0/device:GPU:0' "
        "for op 'add': no such device on this machine (available: "
        "[/job:localhost/replica:0/task:0/device:CPU:0]).")
    assert "set_soft_device_placement(True)" in str(e.value)
    assert "test_devices.py" in str(e.value)  # where: the user's line
    with tf.device("/cpu:0"):
        assert (x + x).device == CPU  # the CPU is always satisfiable


def test_missing_cpu_index_and_remote_jobs():
    x = tf.constant(1.0)
    with tf.device("/cpu:1"):
        assert float(x + 1.0) == 2.0  # soft placement: CPU:0
    tf.config.set_soft_device_placement(False)
    with tf.device("/cpu:1"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="device:CPU:1"):
            x + 1.0
    tf.config.set_soft_device_placement(True)
    with tf.device("/job:worker/task:1"):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            x + 1.0
    assert str(e.value).startswith("Could not satisfy device specification "
                                   "'/job:worker/replica:0/task:1' for op 'add'")
    assert "not connected to a cluster" in str(e.value)
    assert "tf.distribute.connect" in str(e.value)
    with tf.device("/job:localhost/replica:0/task:0"):
        assert float(x + 1.0) == 2.0


def test_gpu_copy_without_a_gpu_raises(no_gpu):
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.constant(1.0).gpu()
    assert str(e.value).startswith("Cannot copy a tensor to GPU:0: this machine has no CUDA GPU")
    with pytest.raises(ValueError, match="stagecraft uses one GPU"):
        tf.constant(1.0).gpu(1)
    x = tf.constant([1.0])
    assert x.cpu() is x


def test_device_policy_switch():
    assert tf.config.experimental.get_device_policy() == "silent"
    tf.config.experimental.set_device_policy("warn")
    assert tf.config.experimental.get_device_policy() == "warn"
    with pytest.raises(ValueError, match="Not a valid device policy: 'loud'"):
        tf.config.experimental.set_device_policy("loud")


def test_function_under_a_soft_placed_gpu_scope_does_not_retrace(no_gpu):
    f = tf.function(lambda x: x * 2.0)
    x = tf.constant([1.0])
    assert f(x).numpy().tolist() == [2.0]
    with tf.device("/gpu:0"):
        y = f(x)
    assert y.device == CPU and y.numpy().tolist() == [2.0]
    assert f.experimental_get_tracing_count() == 1
    tf.config.set_soft_device_placement(False)
    with tf.device("/gpu:0"):
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Could not satisfy device specification .* for a "
                                 "tf.function call"):
            f(x)


# ----------------------------------------------------------- GPU (simulator or real)

@cuda
def test_gpu_and_cpu_copies():
    x = tf.constant([1.0, 2.0])
    g = x.gpu()
    assert type(g) is not type(x) and isinstance(g, tf.Tensor)
    assert g.device == GPU and g.shape == [2] and g.dtype == tf.float32
    assert g.numpy().tolist() == [1.0, 2.0]
    assert repr(g) == repr(x) and str(g) == str(x)
    assert g.gpu() is g
    c = g.cpu()
    assert c.device == CPU and c.numpy().tolist() == [1.0, 2.0]
    s = tf.constant(3).gpu()
    assert s.shape == [] and int(s) == 3 and float(s) == 3.0 and bool(s)
    assert len(g) == 2 and np.asarray(g).tolist() == [1.0, 2.0]


@cuda
def test_eager_ops_run_on_the_gpu():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    g = x.gpu()
    y = g * 2.0 + 1.0
    assert y.device == GPU and y.numpy().tolist() == [[3.0, 5.0], [7.0, 9.0]]
    m = tf.matmul(g, g)
    assert m.device == GPU and m.numpy().tolist() == tf.matmul(x, x).numpy().tolist()
    r = tf.reduce_sum(g, axis=1)
    assert r.device == GPU and r.numpy().tolist() == [3.0, 7.0]
    with tf.device("/gpu:0"):
        z = x + x  # CPU inputs, GPU scope: copied to the GPU
        n = tf.constant([1, 2]) * 3
    assert z.device == GPU and z.numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]
    assert n.device == GPU and n.numpy().tolist() == [3, 6]


@cuda
def test_constants_are_created_on_the_scopes_device():
    with tf.device("/gpu:0"):
        c = tf.constant([1.0, 2.0])
        s = tf.constant(0, shape=[2, 2])
        with tf.device("/cpu:0"):
            h = tf.constant(1.0)
    assert c.device == GPU and c.numpy().tolist() == [1.0, 2.0]
    assert s.device == GPU and s.dtype == tf.int32 and s.numpy().tolist() == [[0, 0], [0, 0]]
    assert h.device == CPU
    assert tf.constant(c) is c  # a tensor stays where it is


@cuda
def test_inputs_on_two_devices_are_copied():  # 113, policy silent
    g, c = tf.constant([1.0, 2.0]).gpu(), tf.constant([10.0, 20.0])
    y = g + c  # no scope: the op runs where its GPU input is
    assert y.device == GPU and y.numpy().tolist() == [11.0, 22.0]
    with tf.device("/cpu:0"):
        z = g + g  # the scope wins: GPU inputs are copied to the CPU
    assert z.device == CPU and z.numpy().tolist() == [2.0, 4.0]


@cuda
def test_explicit_device_policy_rejects_cross_device_inputs(caplog):  # 113
    g, c = tf.constant([1.0]).gpu(), tf.constant([2.0])
    tf.config.experimental.set_device_policy("explicit")
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        g + c
    assert str(e.value).startswith(
        f"Tensors on conflicting devices: add: input #1 was expected to be on {GPU} but is "
        f"actually on {CPU} (operation running on {GPU}).")
    assert (g + 1.0).device == GPU  # Python values are converted on the op's device
    tf.config.experimental.set_device_policy("silent_for_int32")
    assert (tf.constant([1]).gpu() + tf.constant([2])).numpy().tolist() == [3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="conflicting devices"):
        g + c
    tf.config.experimental.set_device_policy("warn")
    with caplog.at_level(logging.WARNING, logger="stagecraft"):
        assert (g + c).numpy().tolist() == [3.0]
    assert "was expected to be on" in caplog.text


@cuda
def test_one_hot_defaults_belong_to_the_op_device_under_the_explicit_policy():
    # one_hot's default 1 and 0 are made where the op runs, as Python values are
    idx = tf.constant([0, 2]).gpu()
    tf.config.experimental.set_device_policy("explicit")
    hot = tf.one_hot(idx, 3)
    assert hot.device == GPU and hot.numpy().tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="conflicting devices"):
        tf.one_hot(idx, 3, on_value=tf.constant(5.0))   # a CPU tensor the user made


@cuda
def test_gradients_flow_through_copies():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum((x.gpu() * x.gpu()).cpu() * 3.0)
    g = tape.gradient(y, x)
    assert g.device == CPU and g.numpy().tolist() == [6.0, 12.0]
    # A GPU source whose use is on the CPU: its gradient comes back to the GPU.
    xg = tf.constant([3.0]).gpu()
    with tf.GradientTape() as tape:
        tape.watch(xg)
        with tf.device("/cpu:0"):
            z = xg * xg
    gg = tape.gradient(z, xg)
    assert gg.device == GPU and gg.numpy().tolist() == [6.0]


@cuda
def test_second_order_gradient_through_copies():
    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = (x.gpu() ** 3).cpu()
        dy = inner.gradient(y, x)
    assert float(dy) == 27.0
    assert float(outer.gradient(dy, x)) == 18.0


@cuda
def test_gpu_errors_match_the_cpu_ones():
    a, b = tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError) as cpu_error:
        a + b
    with pytest.raises(tf.errors.InvalidArgumentError) as gpu_error:
        a.gpu() + b.gpu()
    assert str(gpu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant([1]).gpu() + tf.constant([1.0]).gpu()


@cuda
def test_ops_without_a_gpu_kernel_fall_back_to_the_cpu(monkeypatch):
    class NoKernels:
        @staticmethod
        def run(name, inputs, attrs):
            raise NotImplementedError(f"no CUDA kernel for {name}")

    monkeypatch.setattr(placement, "_cuda_eager", NoKernels)
    g = tf.constant([1.0]).gpu()
    y = g + 1.0
    assert y.device == CPU and y.numpy().tolist() == [2.0]
    tf.config.set_soft_device_placement(False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="it has no GPU kernel"):
        g + 1.0


@cuda
def test_variables_on_the_gpu():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0])
    assert v.device == GPU and v.numpy().tolist() == [1.0, 2.0]
    assert v.read_value().device == GPU
    v.assign_add([1.0, 1.0])
    v.assign_sub(tf.constant([0.5, 0.5]).gpu())
    assert v.device == GPU and v.numpy().tolist() == [1.5, 2.5]
    v.assign(tf.constant([4.0, 5.0]))
    assert v.numpy().tolist() == [4.0, 5.0] and np.asarray(v).tolist() == [4.0, 5.0]
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    g = tape.gradient(y, v)
    assert g.device == GPU and g.numpy().tolist() == [8.0, 10.0]
    w = tf.Variable(tf.constant(2.0).gpu())  # a variable lives where its initial value does
    assert w.device == GPU and float(w) == 2.0
    assert "numpy=array([4., 5.], dtype=float32)" in repr(v)


@cuda
def test_trace_cache_key_includes_the_device():
    f = tf.function(lambda x: x * 2.0 + 1.0)
    x = tf.constant([1.0, 2.0])
    assert f(x).device == CPU
    y = f(x.gpu())  # GPU inputs: a separate trace whose results are on the GPU
    assert y.device == GPU and y.numpy().tolist() == [3.0, 5.0]
    assert f.experimental_get_tracing_count() == 2
    with tf.device("/gpu:0"):
        z = f(x)  # under a GPU scope: the GPU trace
        z2 = f(x)  # (the fast path keys by device too)
    assert z.device == GPU and z2.device == GPU and z2.numpy().tolist() == [3.0, 5.0]
    assert f.experimental_get_tracing_count() == 2
    for _ in range(3):  # the fast path never hands the GPU trace to CPU calls or back
        assert f(x).device == CPU
        assert f(x.gpu()).device == GPU
    with tf.device("/cpu:0"):
        assert f(x.gpu()).device == CPU
    assert f.experimental_get_tracing_count() == 2


@cuda
def test_function_under_a_gpu_scope_with_variables_and_gradients():
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0])

    @tf.function
    def step(x):
        v.assign_add(x)
        return tf.reduce_sum(v * x)

    x = tf.constant([1.0, 1.0])
    r = step(x)  # a CPU call capturing a GPU variable: the variable stays on the GPU
    assert r.device == CPU and float(r) == 5.0
    assert v.device == GPU and v.numpy().tolist() == [2.0, 3.0]
    with tf.device("/gpu:0"):
        r = step(x)
    assert r.device == GPU and float(r) == 7.0 and v.numpy().tolist() == [3.0, 4.0]

    g = tf.function(lambda a: tf.reduce_sum(a * a * v))
    xg = tf.constant([1.0, 2.0]).gpu()
    with tf.GradientTape() as tape:
        tape.watch(xg)
        y = g(xg)
    assert y.device == GPU
    grad = tape.gradient(y, xg)
    assert grad.device == GPU and grad.numpy().tolist() == [6.0, 16.0]


@cuda
def test_custom_gradient_outputs_stay_on_the_gpu():
    @tf.custom_gradient
    def double(x):
        return x * 2.0, lambda g: g * 2.0

    x = tf.constant([1.0, 2.0]).gpu()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    assert y.device.endswith("GPU:0")
    assert tape.gradient(y, x).numpy().tolist() == [2.0, 2.0]
