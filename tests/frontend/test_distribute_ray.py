"""Remote devices on a real Ray cluster: one local cluster (127.0.0.1, no dashboard) with two
worker actors, started once. The in-process tests (test_distribute.py) cover the logic in
detail; these check that the same paths work across processes: values, gradients, shipped
functions, variables, remote errors, and a worker killed in the middle of a call.

The checks run inside one test so that the cluster starts once per test session even when
pytest-xdist spreads a module's tests over several processes (starting one costs seconds)."""
import os
import time

import numpy as np
import pytest

import stagecraft as tf

ray = pytest.importorskip("ray", reason="Ray is the optional 'distributed' extra")

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"


def check_workers_are_separate_processes():
    cluster = tf.distribute.connected()
    pids = {cluster.wait(i, cluster.submit(i, "hello"))["pid"] for i in range(2)}
    assert len(pids | {os.getpid()}) == 3
    assert tf.list_devices()[-2:] == [W0, W1]


def check_values_and_gradients_equal_local():
    x = tf.constant(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    w = tf.constant(np.linspace(0.5, -0.5, 12, dtype=np.float32).reshape(3, 4))
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        local = tf.reduce_sum(tf.tanh(tf.matmul(x, w)) ** 2)
    expected = tape.gradient(local, [x, w])
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        with tf.device("/job:worker/task:0"):
            h = tf.tanh(tf.matmul(x, w))
        with tf.device("/job:worker/task:1"):
            remote = tf.reduce_sum(h ** 2)
    assert h.device == W0 and remote.device == W1
    assert float(remote) == pytest.approx(float(local), rel=1e-6)
    for g, e in zip(tape.gradient(remote, [x, w]), expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)
    with tf.device("/job:worker/task:0"):
        big = tf.ones([300, 300]) * 2.0  # larger than a reply carries: fetched
    assert float(big.numpy().sum()) == 180000.0


@tf.function
def _affine(x, w):
    return tf.nn.relu(tf.matmul(x, w) - 1.0)


def check_functions_and_variables():
    x, w = tf.ones([4, 3]), tf.fill([3, 2], 0.5)
    with tf.device("/job:worker/task:1"):
        first = _affine(x, w)
        second = _affine(x * 3.0, w)
        v = tf.Variable(tf.zeros([4, 2]))
        v.assign_add(second)
    np.testing.assert_array_equal(first.numpy(), _affine(x, w).numpy())
    np.testing.assert_array_equal(v.numpy(), _affine(x * 3.0, w).numpy())
    cluster = tf.distribute.connected()
    digest = cluster._shipment(_affine.get_concrete_function(x, w))[0]
    assert cluster.wait(1, cluster.submit(1, "has_function", digest))
    assert not cluster.wait(0, cluster.submit(0, "has_function", digest))


def check_remote_errors_name_the_device_and_carry_the_traceback():
    with tf.device("/job:worker/task:1"):
        bad = tf.gather(tf.constant([1.0, 2.0]), tf.constant([7]))
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        bad.numpy()
    assert str(e.value).startswith(f"on {W1}: ") and f"Remote traceback (on {W1})" in str(e.value)


@tf.function
def _slow(x):
    # about a second of matmuls on the worker
    return tf.while_loop(lambda i, y: i < 400, lambda i, y: (i + 1, tf.tanh(tf.matmul(y, y))),
                         (tf.constant(0), x))[1]


def check_killing_a_worker_mid_call_then_reconnecting():
    with tf.device("/job:worker/task:1"):
        pending = _slow(tf.fill([200, 200], 0.01))
    time.sleep(0.2)
    tf.distribute.connected().kill(1)
    start = time.perf_counter()
    with pytest.raises(tf.errors.UnavailableError) as e:
        pending.numpy()
    assert time.perf_counter() - start < 30.0 and W1 in str(e.value)
    with tf.device("/job:worker/task:0"):
        assert float(tf.constant(2.0) * 2.0) == 4.0  # the other worker still answers
    tf.distribute.connect(num_workers=2, timeout=60.0)
    with tf.device("/job:worker/task:1"):
        assert float(tf.constant(2.0) * 3.0) == 6.0


def test_remote_devices_on_a_ray_cluster():
    # Ray is started here (not by connect), so that reconnecting starts only new actors.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             _node_ip_address="127.0.0.1", configure_logging=False)
    try:
        tf.distribute.connect(num_workers=2, timeout=60.0)
        check_workers_are_separate_processes()
        check_values_and_gradients_equal_local()
        check_functions_and_variables()
        check_remote_errors_name_the_device_and_carry_the_traceback()
        check_killing_a_worker_mid_call_then_reconnecting()
    finally:
        tf.distribute.disconnect()
        ray.shutdown()
