"""The eager dispatch of ops on GPU tensors (eager/bind.py's GPU path): GPU tensors alone, or with
a Python number, go straight to the GPU op library, with or without a GPU device scope; Python
numbers stay NumPy scalars (kernel arguments) outside gradient tapes; everything else (other
scopes, CPU or remote inputs, tapes, numbers a dtype cannot hold) takes the general path, whose
results and errors these match."""
from __future__ import annotations

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.devices import device as device_module
from stagecraft.eager import bind as bind_module
from stagecraft.eager import placement

GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(device_module.gpu_kind() == "none",
                                 reason="needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1")]


@pytest.fixture
def library_calls(monkeypatch):
    """The inputs every call of the GPU op library gets, by op name."""
    seen: list = []
    real = placement.kernels()

    class Recording:
        @staticmethod
        def run(name, inputs, attrs):
            seen.append((name, list(inputs)))
            return real.run(name, inputs, attrs)
    monkeypatch.setattr(placement, "_cuda_eager", Recording)
    return seen


def gpu(values, dtype=None):
    with tf.device("/gpu:0"):
        return tf.constant(values, dtype=dtype)


@pytest.mark.parametrize("scope", [None, "/gpu:0", "/device:GPU:0"])
def test_gpu_tensors_run_on_the_gpu_with_or_without_a_scope(scope, library_calls):
    x, y = gpu([1.0, 2.0]), gpu([10.0, 20.0])
    with tf.device(scope):
        z, e, n = x + y, tf.exp(x), tf.add_n([x, y, x])
    for t in (z, e, n):
        assert t.device == GPU
    assert z.numpy().tolist() == [11.0, 22.0] and n.numpy().tolist() == [12.0, 24.0]
    assert np.allclose(e.numpy(), np.exp([1.0, 2.0]))
    assert [name for name, _ in library_calls][:2] == ["add", "exp"]


@pytest.mark.parametrize("dtype, number", [(tf.float32, 2.5), (tf.float64, 2), (tf.int32, 3),
                                           (tf.uint8, 100), (tf.int64, -(2 ** 40))])
def test_python_numbers_stay_host_scalars_of_the_tensors_dtype(dtype, number, library_calls):
    x = gpu([1, 2], dtype)
    for z, expected in [(x * number, np.array([1, 2], dtype.as_numpy_dtype) * number),
                        (number - x, number - np.array([1, 2], dtype.as_numpy_dtype))]:
        assert z.device == GPU and z.dtype == dtype
        assert z.numpy().tolist() == expected.astype(dtype.as_numpy_dtype).tolist()
    scalars = [v for _, inputs in library_calls for v in inputs if isinstance(v, np.generic)]
    assert len(scalars) == 2 and all(s.dtype == dtype.as_numpy_dtype for s in scalars)


def test_a_number_object_passed_again_is_the_same_scalar_and_signed_zeros_stay_apart(
        library_calls):
    """Python numbers become kernel scalars kept by the number object's identity (a launch
    passing the same scalar object skips packing it): a number passed again gives the same
    scalar, and numbers that compare equal but differ (0.0 and -0.0, 1 and 1.0) do not."""
    x = gpu([1.0, 2.0])
    half = 0.5
    a, b = x * half, half * x
    zeros = [x * 0.0, x * -0.0, x * float("-0")]
    assert [np.signbit(z.numpy()).tolist() for z in zeros] == [[False] * 2, [True] * 2,
                                                                [True] * 2]
    scalars = [inputs[1] if isinstance(inputs[1], np.generic) else inputs[0]
               for _, inputs in library_calls]
    assert scalars[0] is scalars[1] and a.numpy().tolist() == b.numpy().tolist() == [0.5, 1.0]
    y = gpu([1.0, 2.0], tf.float64)
    assert (y * half).dtype == tf.float64   # (the same number for another dtype: its own)
    assert library_calls[-1][1][1].dtype == np.float64


def test_numbers_a_dtype_cannot_hold_raise_as_on_the_cpu():
    for number in (1.5, 2 ** 40):
        with pytest.raises(TypeError) as cpu_error:
            tf.constant([1, 2]) + number
        with pytest.raises(TypeError) as gpu_error:
            gpu([1, 2]) + number
        assert str(gpu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]


def test_under_a_tape_numbers_become_gpu_tensors_and_gradients_flow(library_calls):
    x = gpu([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * 3.0 + x * x)
    g = tape.gradient(y, x)
    assert g.device == GPU and g.numpy().tolist() == [5.0, 7.0]
    assert not [v for _, inputs in library_calls for v in inputs if isinstance(v, np.generic)]


def test_under_a_tape_a_number_object_is_uploaded_once(monkeypatch):
    """Tapes record tensors, so under one a Python number becomes a GPU constant; the same
    number object gives the same constant (a training loop's `w * 0.5` uploads once, not at
    every step), and numbers that compare equal but differ (0.0 and -0.0) stay apart."""
    uploads = []
    real = placement.to_device_array
    monkeypatch.setattr(placement, "to_device_array",
                        lambda value: uploads.append(np.shape(value)) or real(value))
    monkeypatch.setattr(bind_module, "_DEVICE_CONSTANTS", {})   # (small ints are shared)
    with tf.device("/gpu:0"):
        w = tf.Variable([1.0, -2.0])
    half, zero, minus_zero = 0.5, 0.0, -0.0
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * half * w + zero * w) + 2 * tf.reduce_sum(minus_zero * w)
        grad = tape.gradient(loss, w)
        assert grad.device == GPU and grad.numpy().tolist() == [1.0, -2.0]
    assert len(uploads) == 4   # (0.5, 0.0, -0.0 and the int 2 for float32, once each)
    with tf.GradientTape() as tape:
        tape.watch(w)
        signs = np.signbit([(zero * w).numpy(), (minus_zero * w).numpy()])
    assert signs.tolist() == [[False, True], [True, False]]


def test_the_backward_pass_of_a_gpu_loss_uploads_nothing(monkeypatch):
    """The seed of a GPU target's gradient (ones) is made on the GPU: an upload would be a
    synchronous host-to-device copy in the middle of every training step, the host waiting
    for the whole forward pass."""
    uploads = []
    real = placement.to_device_array
    monkeypatch.setattr(placement, "to_device_array",
                        lambda value: uploads.append(np.shape(value)) or real(value))
    w = tf.Variable(np.ones((3, 2), np.float32))
    with tf.device("/gpu:0"):
        w_gpu = tf.Variable(np.ones((3, 2), np.float32))
    x = gpu(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w_gpu)))
    uploads.clear()
    grad = tape.gradient(loss, w_gpu)
    assert uploads == [] and grad.device == GPU
    with tf.GradientTape() as tape:   # (the same on the CPU, for the values)
        cpu_loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x.numpy()), w)))
    np.testing.assert_allclose(grad.numpy(), tape.gradient(cpu_loss, w).numpy(), rtol=1e-6)


LOSSES = {
    "mean squared error": lambda out, y, labels: tf.reduce_mean(tf.square(out - y)) * 0.5,
    "sparse cross-entropy": lambda out, y, labels: tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels, out)),
    "one_hot cross-entropy": lambda out, y, labels: tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits(tf.one_hot(labels, 2), out)),
}


@pytest.mark.parametrize("loss_name", list(LOSSES))
def test_an_eager_training_step_on_the_gpu_copies_nothing_between_host_and_device(
        monkeypatch, loss_name):
    """After its first step, an eager GPU training step (a dense layer, relu, a loss, its
    gradients, SGD updates with a Python number) neither uploads nor reads a value: each of
    those would be a copy the host waits on in every step. (The losses: the fused
    cross-entropy, and one_hot's default 1 and 0, kept on the GPU.)"""
    from stagecraft.backends.numba_cuda import memory
    rng = np.random.default_rng(0)
    with tf.device("/gpu:0"):
        x = tf.constant(rng.standard_normal((8, 4)).astype(np.float32))
        y = tf.constant(rng.standard_normal((8, 2)).astype(np.float32))
        labels = tf.constant(rng.integers(0, 2, 8).astype(np.int32))
        params = [tf.Variable(rng.standard_normal(s).astype(np.float32))
                  for s in [(4, 16), (16,), (16, 2), (2,)]]

    def step():
        w1, b1, w2, b2 = params
        with tf.GradientTape() as tape:
            out = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
            loss = LOSSES[loss_name](out, y, labels)
        for v, g in zip(params, tape.gradient(loss, params)):
            v.assign_sub(0.1 * g)
        return loss
    first = step()
    copies = []   # (every upload and read goes through these two, of the simulator's cuda)
    cuda, arrays = memory.cuda_module(), type(x._value)
    monkeypatch.setattr(cuda, "to_device", lambda *a, real=cuda.to_device, **k: (
        copies.append("upload"), real(*a, **k))[1])
    monkeypatch.setattr(arrays, "copy_to_host", lambda *a, real=arrays.copy_to_host, **k: (
        copies.append("read"), real(*a, **k))[1])
    second = step()
    assert copies == [] and second.device == GPU
    monkeypatch.undo()
    assert float(second) < float(first)


def test_the_seed_of_a_gpu_target_is_not_recorded_by_an_outer_tape():
    x = gpu(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x * 2.0
        dy = inner.gradient(y, x)
    assert dy.device == GPU and float(dy) == 2.0 and outer.gradient(dy, x) is None


def test_dtype_mismatches_raise_the_cpu_error():
    with pytest.raises(tf.errors.InvalidArgumentError) as cpu_error:
        tf.constant([1]) + tf.constant([1.0])
    with pytest.raises(tf.errors.InvalidArgumentError) as gpu_error:
        gpu([1]) + gpu([1.0])
    assert str(gpu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="which exp does not support"):
        tf.exp(gpu([1, 2]))


@pytest.mark.parametrize("values", [([True], [False]), ([1], [1.0])])
def test_binary_ops_on_dtypes_they_refuse_raise_before_the_op_library(values, library_calls):
    with pytest.raises(tf.errors.InvalidArgumentError) as cpu_error:
        tf.add(tf.constant(values[0]), tf.constant(values[1]))
    with pytest.raises(tf.errors.InvalidArgumentError) as gpu_error:
        tf.add(gpu(values[0]), gpu(values[1]))
    assert str(gpu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]
    assert library_calls == []


@pytest.mark.parametrize("op, values", [(tf.exp, [1, 2]), (tf.math.negative, [True]),
                                        (tf.math.logical_not, [1.0])])
def test_unary_ops_on_dtypes_they_refuse_raise_before_the_op_library(op, values,
                                                                      library_calls):
    with pytest.raises(tf.errors.InvalidArgumentError) as cpu_error:
        op(tf.constant(values))
    with pytest.raises(tf.errors.InvalidArgumentError) as gpu_error:
        op(gpu(values))
    assert str(gpu_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]
    assert library_calls == []


def test_other_scopes_and_inputs_take_the_general_path():
    x = gpu([1.0, 2.0])
    with tf.device("/cpu:0"):
        assert (x + x).device == CPU and (x * 2.0).device == CPU
    assert (x + tf.constant([1.0, 1.0])).device == GPU      # a CPU input is copied over
    with pytest.raises(tf.errors.InvalidArgumentError, match="not connected to a cluster"):
        with tf.device("/job:worker/device:GPU:0"):
            x + x


def test_gpu_scopes_are_remembered_by_spec(monkeypatch):
    x = gpu([1.0])
    with tf.device("/gpu:0"):
        x + x
    assert tf.DeviceSpec.from_string("/gpu:0") in bind_module._GPU_SPECS
    assert not any(s.device_type == "CPU" for s in bind_module._GPU_SPECS)


def test_gpu_variables_are_read_once_and_run_without_copies(library_calls):
    with tf.device("/gpu:0"):
        v = tf.Variable([1.0, 2.0])
    x = gpu([3.0, 4.0])
    assert (x + v).numpy().tolist() == [4.0, 6.0] and (v * 2.0).device == GPU
    assert (2.0 * v).numpy().tolist() == [2.0, 4.0] and tf.exp(v).device == GPU
    assert all(v._value is inputs[0] or v._value is inputs[-1]
               for _, inputs in library_calls)       # the variable's own buffer, not a copy
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(v * x + v)
    reads = [r for r in tape._records if r.op is None and r.inputs[0] is v]
    assert len(reads) == 2   # one per op that read it
    assert tape.gradient(y, v).numpy().tolist() == [4.0, 5.0]
    cpu_variable = tf.Variable([1.0, 1.0])
    assert (x + cpu_variable).device == GPU   # a CPU variable is copied over, as before
