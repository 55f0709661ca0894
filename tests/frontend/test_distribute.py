"""Remote devices (stagecraft.distribute) against the in-process transport: placement, handles,
copies and their gradients, shipped functions, remote variables, checkpoints and failures,
without Ray (tests/frontend/test_distribute_ray.py runs the same paths on a Ray cluster)."""
import os

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.devices import device as device_module
from stagecraft.distribute import wire
from stagecraft.distribute.transport import InProcessTransport
from stagecraft.ir import OPS
from stagecraft.ir.types import TensorType

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
LOCAL = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def transport():
    t = InProcessTransport()
    tf.distribute.connect(num_workers=2, transport=t, timeout=5.0)
    yield t
    tf.distribute.disconnect()


# ------------------------------------------------------------------ connecting

def test_devices_are_listed_while_connected(transport):
    assert tf.list_devices()[-2:] == [W0, W1]
    names = [d.name for d in tf.config.list_logical_devices("CPU")]
    assert names == ["/device:CPU:0", W0, W1]
    assert tf.config.list_physical_devices("CPU") == \
        [tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    tf.distribute.disconnect()
    assert W0 not in tf.list_devices()
    assert [d.name for d in tf.config.list_logical_devices("CPU")] == ["/device:CPU:0"]


def test_logical_device_objects_work_as_scopes(transport):
    worker = tf.config.list_logical_devices("CPU")[-1]
    with tf.device(worker):
        assert tf.constant(1.0).device == W1


def test_unknown_remote_device_lists_the_cluster(transport):
    with tf.device("/job:worker/task:5"):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            tf.constant(1.0) + 1.0
    assert "'/job:worker/task:5'" in str(e.value) and W1 in str(e.value)
    with tf.device("/job:worker"):  # two tasks: the name is ambiguous
        with pytest.raises(tf.errors.InvalidArgumentError, match="add /task:<i>"):
            tf.constant(1.0) + 1.0


def test_soft_placement_on_a_worker(transport):
    with tf.device("/job:worker/task:1/device:GPU:0"):  # these workers have no GPU
        assert (tf.constant(1.0) + 1.0).device == W1
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device("/job:worker/task:1/device:GPU:0"):
            with pytest.raises(tf.errors.InvalidArgumentError, match="the task has no such device"):
                tf.constant(1.0) + 1.0
    finally:
        tf.config.set_soft_device_placement(True)


def test_connect_checks_its_arguments():
    with pytest.raises(ValueError, match="num_workers"):
        tf.distribute.connect(num_workers=0, transport="in_process")
    with pytest.raises(ValueError, match="localhost"):
        tf.distribute.connect(job="localhost", transport="in_process")
    with pytest.raises(ValueError, match="transport"):
        tf.distribute.connect(transport="carrier-pigeon")
    with pytest.raises(ValueError, match="timeout"):
        tf.distribute.connect(timeout=0, transport="in_process")


def test_cluster_spec_and_experimental_connect_to_cluster():
    spec = tf.train.ClusterSpec({"worker": ["a:1", "b:1", "c:1"]})
    assert spec.num_tasks("worker") == 3 and spec.jobs == ["worker"]
    assert tf.train.ClusterSpec(spec) == spec
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("ps")
    with pytest.raises(TypeError, match="list or a dict"):
        tf.train.ClusterSpec({"worker": "a:1"})
    try:
        tf.config.experimental_connect_to_cluster(spec, protocol="in_process")
        assert tf.list_devices()[-1] == "/job:worker/replica:0/task:2/device:CPU:0"
    finally:
        tf.distribute.disconnect()
    two_jobs = {"worker": ["a:1"], "ps": ["b:1"]}
    with pytest.raises(tf.errors.InvalidArgumentError, match="one remote job"):
        tf.config.experimental_connect_to_cluster(two_jobs, protocol="in_process")


def test_importing_stagecraft_does_not_import_ray():
    import subprocess
    import sys
    code = ("import sys, stagecraft as tf; tf.distribute.connect(transport='in_process'); "
            "tf.distribute.disconnect(); print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_not_connected_says_how_to_connect():
    with tf.device("/job:worker/task:0"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="tf.distribute.connect"):
            tf.constant(1.0) * 2.0


# ------------------------------------------------------------------ eager ops

def test_remote_ops_equal_local_ones(transport):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    local = tf.nn.relu(tf.matmul(tf.constant(x), tf.transpose(tf.constant(x))) - 10.0)
    with tf.device("/job:worker/task:1"):
        a = tf.constant(x)
        remote = tf.nn.relu(tf.matmul(a, tf.transpose(a)) - 10.0)
    assert a.device == W1 and remote.device == W1
    assert type(remote).__name__ == "RemoteTensor"
    np.testing.assert_array_equal(remote.numpy(), local.numpy())
    assert remote.shape == local.shape and remote.dtype == local.dtype
    # No scope: ops run where their remote input lives; "/cpu:0" brings them back.
    assert (remote + 1.0).device == W1
    with tf.device("/cpu:0"):
        back = remote + 1.0
    assert back.device == LOCAL and type(back) is tf.Tensor
    assert remote.cpu().device == LOCAL
    assert float(tf.reduce_sum(remote).cpu()) == float(tf.reduce_sum(local))


def test_an_op_and_its_read_are_one_request(transport):
    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0, 2.0])
        before = transport.requests
        y = x * 2.0 + 1.0           # two ops, dispatched without waiting
        assert transport.requests == before + 2
    assert y.numpy().tolist() == [3.0, 5.0]  # small: the reply of its op carried it
    assert transport.requests == before + 2


def test_large_results_stay_on_the_worker_until_read(transport):
    with tf.device("/job:worker/task:0"):
        big = tf.ones([200, 200]) * 3.0
    before = transport.requests
    assert big.numpy().sum() == 120000.0
    assert transport.requests == before + 1  # one fetch


def test_data_dependent_shapes_wait_for_the_worker(transport):
    with tf.device("/job:worker/task:1"):
        y, idx = tf.unique(tf.constant([3, 1, 3, 2]))
    assert y.shape == (3,) and y.numpy().tolist() == [3, 1, 2]
    assert idx.numpy().tolist() == [0, 1, 0, 2]


def test_tensors_move_between_workers(transport):
    with tf.device("/job:worker/task:0"):
        a = tf.constant([1.0, 2.0]) * 2.0
    with tf.device("/job:worker/task:1"):
        b = a + 1.0
    assert b.device == W1 and b.numpy().tolist() == [3.0, 5.0]


def test_inference_errors_are_raised_at_the_op(transport):
    with tf.device("/job:worker/task:0"):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            tf.ones([2, 3]) + tf.ones([4])
    assert "  at " in str(e.value) and __file__ in str(e.value)


def test_kernel_errors_name_the_device_and_carry_the_remote_traceback(transport):
    with tf.device("/job:worker/task:1"):
        bad = tf.gather(tf.constant([1.0, 2.0]), tf.constant([5]))  # checked by the kernel
        later = bad * 2.0  # uses the failed result: fails with the same error
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        later.numpy()
    text = str(e.value)
    assert text.startswith(f"on {W1}: ") and "gather" in text
    assert f"Remote traceback (on {W1})" in text and "Traceback" in text
    with tf.device("/job:worker/task:1"):
        assert float(tf.constant(2.0) * 2.0) == 4.0  # the worker is fine


def test_dead_variables_are_freed_on_the_worker(transport):
    with tf.device("/job:worker/task:0"):
        v = tf.Variable(1.0)
    assert len(transport.servers[0].variables) == 1
    del v
    with tf.device("/job:worker/task:0"):
        (tf.constant(1.0) * 2.0).numpy()
    assert transport.servers[0].variables == {}


def test_handles_are_freed_on_the_worker(transport):
    with tf.device("/job:worker/task:0"):
        x = tf.ones([3]) * 2.0
        x.numpy()
        held = len(transport.servers[0].tensors)
        del x
        (tf.ones([3]) * 2.0).numpy()  # the next request carries the free list
    assert len(transport.servers[0].tensors) <= held


@pytest.mark.cuda
@pytest.mark.skipif(device_module.gpu_kind() == "none",
                    reason="needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1")
def test_copies_between_a_worker_and_the_gpu(transport):
    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0, 2.0]) * 2.0
    g = x.gpu()
    assert g.device.endswith("GPU:0") and g.numpy().tolist() == [2.0, 4.0]
    with tf.device("/job:worker/task:0"):
        y = g + 1.0
    assert y.device == W0 and y.numpy().tolist() == [3.0, 5.0]


@pytest.mark.cuda
@pytest.mark.skipif(device_module.gpu_kind() == "none",
                    reason="needs a CUDA GPU or NUMBA_ENABLE_CUDASIM=1")
def test_worker_gpus_run_ops_functions_and_variables():
    tf.distribute.connect(num_workers=2, transport="in_process", worker_gpus=1)
    try:
        gpu1 = "/job:worker/replica:0/task:1/device:GPU:0"
        assert gpu1 in tf.list_devices()
        assert gpu1 in [d.name for d in tf.config.list_logical_devices("GPU")]
        x = tf.constant([[1.0, -2.0], [3.0, 4.0]])
        with tf.GradientTape() as tape:
            tape.watch(x)
            local = tf.reduce_sum(tf.nn.relu(tf.matmul(x, x)) * 2.0)
        expected = tape.gradient(local, x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            with tf.device(gpu1):
                y = tf.nn.relu(tf.matmul(x, x)) * 2.0
            remote = tf.reduce_sum(y)
        assert y.device == gpu1 and float(remote) == float(local)
        np.testing.assert_allclose(tape.gradient(remote, x).numpy(), expected.numpy())
        with tf.device(gpu1):
            v = tf.Variable([1.0, 2.0])
            out = _affine(tf.ones([2, 3]), tf.fill([3, 4], 0.5), tf.zeros([4]))
        assert v.device == gpu1 and out.device == gpu1
        assert out.numpy().tolist() == [[1.5] * 4] * 2
        v.assign_add([1.0, 1.0])
        assert v.numpy().tolist() == [2.0, 3.0]
        with tf.device("/job:worker/task:1"):  # the task's CPU: copied on the worker
            assert (y + 1.0).device == W1
    finally:
        tf.distribute.disconnect()


# ------------------------------------------------------------------ gradients

def _loss(x, w):
    return tf.reduce_sum(tf.tanh(tf.matmul(x, w)) * 3.0)


def test_gradients_through_remote_ops_equal_local(transport):
    x = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    w = tf.constant(np.linspace(0.5, -0.5, 12, dtype=np.float32).reshape(3, 4))
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        local = _loss(x, w)
    expected = tape.gradient(local, [x, w])
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        with tf.device("/job:worker/task:0"):
            h = tf.tanh(tf.matmul(x, w))      # x, w copied to task 0 (recorded)
        with tf.device("/job:worker/task:1"):
            remote = tf.reduce_sum(h * 3.0)   # h copied task 0 -> task 1
    got = tape.gradient(remote, [x, w])
    assert float(remote) == pytest.approx(float(local), rel=1e-6)
    for g, e in zip(got, expected):
        assert g.device == LOCAL  # the copies' gradients bring it back
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


# ------------------------------------------------------------------ functions

@tf.function
def _affine(x, w, b):
    return tf.nn.relu(tf.matmul(x, w) + b)


def test_functions_ship_once_and_equal_local(transport):
    x, w, b = tf.ones([2, 3]), tf.fill([3, 4], 0.5), tf.constant([1.0, -2.0, 0.0, 1.0])
    local = _affine(x, w, b)
    with tf.device("/job:worker/task:1"):
        first = _affine(x, w, b)
        second = _affine(x * 2.0, w, b)
    assert first.device == W1
    np.testing.assert_array_equal(first.numpy(), local.numpy())
    np.testing.assert_array_equal(second.numpy(), _affine(x * 2.0, w, b).numpy())
    server = transport.servers[1]
    assert len(server.functions) == 1  # registered once, cached by digest
    assert transport.servers[0].functions == {}


def test_functions_run_where_their_remote_arguments_live(transport):
    with tf.device("/job:worker/task:0"):
        x = tf.ones([2, 3])
    y = _affine(x, tf.ones([3, 4]), tf.zeros([4]))
    assert y.device == W0 and y.numpy().tolist() == [[3.0] * 4] * 2


def test_gradients_through_a_remote_function_equal_local(transport):
    x, w, b = tf.ones([2, 3]), tf.fill([3, 4], 0.5), tf.constant([1.0, -2.0, 0.0, 1.0])
    with tf.GradientTape() as tape:
        tape.watch([w, b])
        local = tf.reduce_sum(_affine(x, w, b) ** 2)
    expected = tape.gradient(local, [w, b])
    with tf.GradientTape() as tape:
        tape.watch([w, b])
        with tf.device("/job:worker/task:0"):
            remote = tf.reduce_sum(_affine(x, w, b) ** 2)
    got = tape.gradient(remote, [w, b])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


def test_a_function_with_a_python_callable_cannot_be_shipped(transport):
    @tf.function
    def f(x):
        return tf.py_function(lambda t: t * 2.0, [x], tf.float32)
    with tf.device("/job:worker/task:0"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="cannot be sent to a worker"):
            f(tf.constant(1.0))


# ------------------------------------------------------------------ variables

def test_remote_variables_live_on_their_worker(transport):
    with tf.device("/job:worker/task:1"):
        v = tf.Variable([1.0, 2.0], name="w")
    assert isinstance(v, tf.Variable) and v.device == W1 and v.name == "w:0"
    assert len(transport.servers[1].variables) == 1
    v.assign([3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub([0.5, 0.5])
    assert v.numpy().tolist() == [3.5, 4.5]
    assert (v * 2.0).device == W1
    with pytest.raises(ValueError, match="Shape mismatch"):
        v.assign([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(v * v)
    assert tape.gradient(loss, v).numpy().tolist() == [7.0, 9.0]


def test_functions_update_remote_variables_in_place(transport):
    with tf.device("/job:worker/task:0"):
        v = tf.Variable(tf.zeros([2]))

    @tf.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * 2.0

    with tf.device("/job:worker/task:0"):
        assert step(tf.ones([2])).numpy().tolist() == [2.0, 2.0]
    assert step(tf.ones([2])).numpy().tolist() == [4.0, 4.0]  # runs where v lives
    assert v.numpy().tolist() == [2.0, 2.0]
    with tf.device("/job:worker/task:1"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="lives on"):
            step(tf.ones([2]))


def test_local_variables_assigned_by_a_remote_function_are_written_back(transport):
    v = tf.Variable(1.0)

    @tf.function
    def bump(x):
        v.assign_add(x)
        return v * 1.0

    with tf.device("/job:worker/task:1"):
        out = bump(tf.constant(2.0))
    assert out.device == W1 and float(out) == 3.0 and float(v) == 3.0
    assert v.device == LOCAL


def test_checkpoints_gather_remote_variables(transport, tmp_path):
    with tf.device("/job:worker/task:0"):
        a = tf.Variable([1.0, 2.0])
    with tf.device("/job:worker/task:1"):
        b = tf.Variable(5.0)
    path = tf.train.Checkpoint(a=a, b=b).save(os.path.join(tmp_path, "ckpt"))
    a.assign([0.0, 0.0])
    b.assign(0.0)
    tf.train.Checkpoint(a=a, b=b).restore(path).assert_consumed()
    assert a.numpy().tolist() == [1.0, 2.0] and float(b) == 5.0
    local = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(a=local, b=tf.Variable(0.0)).restore(path)
    assert local.numpy().tolist() == [1.0, 2.0]


def test_variables_from_remote_tensors_stay_there(transport):
    with tf.device("/job:worker/task:1"):
        t = tf.ones([2]) * 3.0
    v = tf.Variable(t)
    assert v.device == W1 and v.numpy().tolist() == [3.0, 3.0]


# ------------------------------------------------------------------ failures

def test_a_dead_worker_raises_and_the_program_can_reconnect(transport):
    with tf.device("/job:worker/task:1"):
        x = tf.constant([1.0]) * 2.0
        transport.kill(1)
        y = x * 2.0  # dispatched without waiting: the error comes with the read
    with pytest.raises(tf.errors.UnavailableError) as e:
        y.numpy()
    assert W1 in str(e.value) and "connect again" in str(e.value)
    with tf.device("/job:worker/task:1"):
        with pytest.raises(tf.errors.UnavailableError, match="task:1"):
            tf.constant(1.0) + 1.0
    with tf.device("/job:worker/task:0"):
        assert float(tf.constant(1.0) + 1.0) == 2.0  # the other worker still works
    tf.distribute.connect(num_workers=2, transport="in_process")
    with tf.device("/job:worker/task:1"):
        assert float(tf.constant(1.0) + 1.0) == 2.0
    with pytest.raises(tf.errors.UnavailableError, match="disconnected"):
        x.numpy()


def test_a_silent_worker_times_out(transport):
    transport.hang(0)
    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0]) * 2.0
    with pytest.raises(tf.errors.DeadlineExceededError, match="within 5.0 s"):
        x.numpy()


def test_values_after_disconnect_raise():
    tf.distribute.connect(num_workers=1, transport="in_process")
    with tf.device("/job:worker/task:0"):
        x = tf.constant([1.0]) * 2.0
    tf.distribute.disconnect()
    with pytest.raises(tf.errors.UnavailableError, match="disconnected"):
        x.numpy()
    with pytest.raises(tf.errors.InvalidArgumentError, match="no longer connected"):
        x + 1.0


# ------------------------------------------------------------------ the wire

def test_op_documents_are_validated_on_the_worker():
    ty = TensorType(tf.float32, (2,))
    text, arrays = wire.encode_op(OPS["add"], {}, [ty, ty], [ty])
    assert wire.decode_op(text, arrays)[0] is OPS["add"]
    with pytest.raises(ValueError, match="unknown op"):
        wire.decode_op(text.replace('"add"', '"os.system"'), arrays)
    with pytest.raises(ValueError, match="object"):
        wire.check_array(np.array([object()]), "x")


# ------------------------------------------------------------------ the examples

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_examples_run_without_ray(tmp_path):
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "distributed_training.py"),
                          "--transport", "in_process", "--batch", "64", "--steps", "2"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert "speed-up of 2 workers over 1" in out
    checks = [float(line.split("local) ")[1].split(";")[0]) for line in out.splitlines()
              if "gradient check" in line]
    assert len(checks) == 2 and max(checks) < 1e-5
    path = tmp_path / "remote.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "benchmarks", "remote.py"),
                    "--transport", "in_process", "--number", "5", "--json", str(path)],
                   capture_output=True, text=True, check=True, timeout=300)
    rows = json.loads(path.read_text())["rows"]
    assert len(rows) == 5 and all(r["median_ms"] > 0 for r in rows)
