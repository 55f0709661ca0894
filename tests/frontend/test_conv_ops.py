"""tf.nn convolutions against a direct-loop reference written from TensorFlow's definition
(``out[b, i, j, k] = sum_{di, dj, q} in[b, s_h*i + r_h*di - pad_top, s_w*j + r_w*dj - pad_left,
q] * filter[di, dj, q, k]``, zero outside the input), eagerly and staged (reference interpreter
and Numba); transposes as the exact tape gradient of the convolution; gradients against finite
differences (first and second order); and the error messages."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import stagecraft as tf

rng = np.random.default_rng(11)


# ---------------------------------------------------------------------- reference

def same_pads(sizes, ks, strides, rates):
    """TensorFlow's SAME padding: total = max((ceil(n/s) - 1)*s + (k-1)*r + 1 - n, 0)."""
    pads = []
    for n, k, s, r in zip(sizes, ks, strides, rates):
        total = max((-(-n // s) - 1) * s + (k - 1) * r + 1 - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def direct_conv(x, w, strides, rates, pads, groups=1):
    """Channels-last N-D convolution by its definition, one multiply-add at a time."""
    nd = x.ndim - 2
    ks, (cg, cout) = w.shape[:nd], w.shape[nd:]
    og = cout // groups
    out_sizes = [(x.shape[1 + i] + sum(pads[i]) - (ks[i] - 1) * rates[i] - 1) // strides[i] + 1
                 for i in range(nd)]
    y = np.zeros((x.shape[0], *out_sizes, cout))
    for b, o in itertools.product(range(x.shape[0]), itertools.product(*map(range, out_sizes))):
        for k in itertools.product(*map(range, ks)):
            at = [o[i] * strides[i] + k[i] * rates[i] - pads[i][0] for i in range(nd)]
            if any(not 0 <= p < x.shape[1 + i] for i, p in enumerate(at)):
                continue
            for c_out in range(cout):
                g = c_out // og
                for q in range(cg):
                    y[(b, *o, c_out)] += x[(b, *at, g * cg + q)] * w[(*k, q, c_out)]
    return y


def reference(x, w, strides, padding, rates, groups=1):
    nd = x.ndim - 2
    if padding == "SAME":
        pads = same_pads(x.shape[1:-1], w.shape[:nd], strides, rates)
    elif padding == "VALID":
        pads = [(0, 0)] * nd
    else:
        pads = padding
    return direct_conv(x, w, strides, rates, pads, groups)


def depthwise_reference(x, w, strides, padding, rates):
    kh, kw, c, m = w.shape
    return reference(x, w.reshape(kh, kw, 1, c * m), strides, padding, rates, groups=c)


def nchw(x):
    return np.moveaxis(x, -1, 1)


def nhwc(x):
    return np.moveaxis(x, 1, -1)


def arr(*shape):
    return rng.normal(size=shape)


# ---------------------------------------------------------------------- cases

X2, W2 = arr(2, 7, 6, 3), arr(3, 2, 3, 4)
XG, WG = arr(1, 5, 6, 4), arr(2, 3, 2, 6)           # 2 groups
X1, W1 = arr(2, 9, 3), arr(3, 3, 2)
X3, W3 = arr(1, 4, 5, 4, 2), arr(2, 3, 2, 2, 3)
XD, WD = arr(1, 6, 5, 3), arr(3, 3, 3, 2)           # depthwise, multiplier 2
PW = arr(1, 1, 6, 4)

# name: (stagecraft function of the inputs, reference of the NumPy inputs, inputs)
CASES = {
    "conv2d_same": (lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"),
                    lambda x, w: reference(x, w, (1, 1), "SAME", (1, 1)), (X2, W2)),
    "conv2d_valid_strided": (lambda x, w: tf.nn.conv2d(x, w, [1, 2, 3, 1], "VALID"),
                             lambda x, w: reference(x, w, (2, 3), "VALID", (1, 1)), (X2, W2)),
    "conv2d_same_strided_dilated": (
        lambda x, w: tf.nn.conv2d(x, w, 2, "SAME", dilations=[2, 1]),
        lambda x, w: reference(x, w, (2, 2), "SAME", (2, 1)), (X2, W2)),
    "conv2d_explicit": (
        lambda x, w: tf.nn.conv2d(x, w, [1, 2], [[0, 0], [2, 1], [0, 3], [0, 0]]),
        lambda x, w: reference(x, w, (1, 2), [(2, 1), (0, 3)], (1, 1)), (X2, W2)),
    "conv2d_nchw": (
        lambda x, w: tf.nn.conv2d(x, w, 2, "SAME", data_format="NCHW"),
        lambda x, w: nchw(reference(nhwc(x), w, (2, 2), "SAME", (1, 1))), (nchw(X2), W2)),
    "conv2d_grouped": (lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"),
                       lambda x, w: reference(x, w, (1, 1), "SAME", (1, 1), 2), (XG, WG)),
    "conv1d": (lambda x, w: tf.nn.conv1d(x, w, 2, "SAME", dilations=2),
               lambda x, w: reference(x, w, (2,), "SAME", (2,)), (X1, W1)),
    "conv1d_ncw": (lambda x, w: tf.nn.conv1d(x, w, 1, "VALID", data_format="NCW"),
                   lambda x, w: nchw(reference(nhwc(x), w, (1,), "VALID", (1,))),
                   (nchw(X1), W1)),
    "conv3d": (lambda x, w: tf.nn.conv3d(x, w, [1, 1, 2, 1, 1], "SAME"),
               lambda x, w: reference(x, w, (1, 2, 1), "SAME", (1, 1, 1)), (X3, W3)),
    "convolution_3d_dilated": (
        lambda x, w: tf.nn.convolution(x, w, padding="VALID", dilations=[1, 2, 1]),
        lambda x, w: reference(x, w, (1, 1, 1), "VALID", (1, 2, 1)), (X3, W3)),
    "convolution_ncw": (
        lambda x, w: tf.nn.convolution(x, w, 2, "SAME", data_format="NCW"),
        lambda x, w: nchw(reference(nhwc(x), w, (2,), "SAME", (1,))), (nchw(X1), W1)),
    "convolution_1d": (lambda x, w: tf.nn.convolution(x, w, strides=[3], padding="SAME"),
                       lambda x, w: reference(x, w, (3,), "SAME", (1,)), (X1, W1)),
    "depthwise_conv2d": (
        lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 1, 1], "SAME", dilations=[1, 2]),
        lambda x, w: depthwise_reference(x, w, (2, 1), "SAME", (1, 2)), (XD, WD)),
    "separable_conv2d": (
        lambda x, w, p: tf.nn.separable_conv2d(x, w, p, [1, 1, 1, 1], "VALID"),
        lambda x, w, p: reference(depthwise_reference(x, w, (1, 1), "VALID", (1, 1)), p,
                                  (1, 1), "VALID", (1, 1)), (XD, WD, PW)),
    "atrous_conv2d": (lambda x, w: tf.nn.atrous_conv2d(x, w, 2, "SAME"),
                      lambda x, w: reference(x, w, (1, 1), "SAME", (2, 2)), (X2, W2)),
    "conv2d_extra_batch_dims": (
        lambda x, w: tf.nn.conv2d(x, w, 1, "VALID"),
        lambda x, w: reference(x.reshape(4, 5, 4, 3), w, (1, 1), "VALID", (1, 1)).reshape(
            2, 2, 3, 3, 4), (arr(2, 2, 5, 4, 3), W2)),
}

# The staged Numba backend is checked on a sample by default (each case compiles a new
# function); the rest run with --full-matrix.
NUMBA_SAMPLE = ["conv2d_same_strided_dilated", "conv2d_grouped", "conv1d", "conv3d"]
NUMBA = [pytest.param(n, marks=() if n in NUMBA_SAMPLE else (pytest.mark.full_matrix,))
         for n in CASES]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("how", ["eager", "reference"])
def test_matches_the_direct_loop_reference(name, how):
    fn, ref, args = CASES[name]
    run = fn if how == "eager" else tf.function(fn, backend=how)
    got = run(*[tf.constant(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref(*args), rtol=1e-10, atol=1e-10)


@pytest.mark.backend("numba")
@pytest.mark.parametrize("name", NUMBA)
def test_staged_numba_matches_the_reference(name):
    fn, ref, args = CASES[name]
    got = tf.function(fn, backend="numba")(*[tf.constant(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref(*args), rtol=1e-10, atol=1e-10)


# Padded + dilated (the contiguous-run path), grouped + strided (the per-group path), and a
# strided 1x1: every branch of the im2col / col2im kernels.
NUMBA_GRADS = [
    (X2, W2, dict(strides=1, padding=[[0, 0], [2, 0], [1, 2], [0, 0]], dilations=[1, 2])),
    (XG, WG, dict(strides=[2, 1], padding="SAME")),
    pytest.param(arr(2, 5, 4, 6), arr(1, 1, 6, 3), dict(strides=2, padding="VALID"),
                 marks=pytest.mark.full_matrix),
]


@pytest.mark.backend("numba")
@pytest.mark.parametrize("x, w, kw", NUMBA_GRADS)
def test_staged_numba_gradients_match_eager(x, w, kw):
    def grads(x, w, dy):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.conv2d(x, w, **kw)
        return [y] + tape.gradient(y, [x, w], output_gradients=dy)

    args = [tf.constant(x), tf.constant(w)]
    dy = tf.constant(arr(*tf.nn.conv2d(*args, **kw).shape))
    eager = grads(*args, dy)
    staged = tf.function(grads, backend="numba")(*args, dy)
    for e, s in zip(eager, staged):
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)


def test_float32_stays_float32():
    y = tf.nn.conv2d(X2.astype(np.float32), W2.astype(np.float32), 1, "SAME")
    assert y.dtype == tf.float32
    np.testing.assert_allclose(y.numpy(), reference(X2, W2, (1, 1), "SAME", (1, 1)),
                               rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------- transposes

# name: (transpose call on (dy, w), forward conv on (x, w), x shape)
TRANSPOSES = {
    "conv2d_transpose": (
        lambda dy, w: tf.nn.conv2d_transpose(dy, w, [2, 7, 6, 3], [1, 2, 3, 1], "SAME"),
        lambda x, w: tf.nn.conv2d(x, w, [2, 3], "SAME"), (2, 7, 6, 3), (3, 2, 3, 4)),
    "conv2d_transpose_valid_dilated": (
        lambda dy, w: tf.nn.conv2d_transpose(dy, w, [2, 7, 6, 3], 1, "VALID", dilations=2),
        lambda x, w: tf.nn.conv2d(x, w, 1, "VALID", dilations=2), (2, 7, 6, 3), (3, 2, 3, 4)),
    "conv2d_transpose_nchw": (
        lambda dy, w: tf.nn.conv2d_transpose(dy, w, [2, 3, 7, 6], 2, "SAME",
                                             data_format="NCHW"),
        lambda x, w: tf.nn.conv2d(x, w, 2, "SAME", data_format="NCHW"), (2, 3, 7, 6),
        (3, 2, 3, 4)),
    "conv2d_transpose_explicit": (
        lambda dy, w: tf.nn.conv2d_transpose(dy, w, [1, 5, 5, 2], 2,
                                             [[0, 0], [1, 0], [2, 1], [0, 0]]),
        lambda x, w: tf.nn.conv2d(x, w, 2, [[0, 0], [1, 0], [2, 1], [0, 0]]), (1, 5, 5, 2),
        (3, 3, 2, 3)),
    "conv1d_transpose": (
        lambda dy, w: tf.nn.conv1d_transpose(dy, w, [2, 9, 3], 2),
        lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"), (2, 9, 3), (3, 3, 2)),
    "conv3d_transpose": (
        lambda dy, w: tf.nn.conv3d_transpose(dy, w, [1, 4, 5, 4, 2], [1, 2, 1, 2, 1], "VALID"),
        lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 2, 1], "VALID"), (1, 4, 5, 4, 2),
        (2, 3, 2, 2, 3)),
    "conv_transpose": (
        lambda dy, w: tf.nn.conv_transpose(dy, w, [2, 7, 6, 3], 2),
        lambda x, w: tf.nn.convolution(x, w, 2, "SAME"), (2, 7, 6, 3), (3, 2, 3, 4)),
}


@pytest.mark.parametrize("name", list(TRANSPOSES))
def test_transpose_is_the_gradient_of_the_convolution(name):
    transpose, forward, x_shape, w_shape = TRANSPOSES[name]
    x, w = tf.constant(arr(*x_shape)), tf.constant(arr(*w_shape))
    dy = tf.constant(arr(*forward(x, w).shape))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = forward(x, w)
    expected = tape.gradient(y, x, output_gradients=dy).numpy()
    np.testing.assert_allclose(transpose(dy, w).numpy(), expected, rtol=1e-10, atol=1e-10)
    staged = tf.function(transpose, backend="reference")(dy, w).numpy()
    np.testing.assert_allclose(staged, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_depthwise_backprops_are_the_gradients_of_depthwise_conv2d(data_format):
    x, w = XD if data_format == "NHWC" else nchw(XD), WD
    kw = dict(strides=[1, 2, 1, 1] if data_format == "NHWC" else [1, 1, 2, 1], padding="SAME",
              data_format=data_format, dilations=[1, 2])
    tx, tw = tf.constant(x), tf.constant(w)
    dy = tf.constant(arr(*tf.nn.depthwise_conv2d(tx, tw, **kw).shape))
    with tf.GradientTape() as tape:
        tape.watch([tx, tw])
        y = tf.nn.depthwise_conv2d(tx, tw, **kw)
    gx, gw = tape.gradient(y, [tx, tw], output_gradients=dy)
    np.testing.assert_allclose(
        tf.nn.depthwise_conv2d_backprop_input(list(x.shape), tw, dy, **kw).numpy(), gx.numpy(),
        rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        tf.nn.depthwise_conv2d_backprop_filter(tx, list(w.shape), dy, **kw).numpy(),
        gw.numpy(), rtol=1e-10, atol=1e-12)


def test_atrous_conv2d_transpose_is_the_gradient_of_atrous_conv2d():
    x, w = tf.constant(X2), tf.constant(W2)
    dy = tf.constant(arr(*tf.nn.atrous_conv2d(x, w, 2, "SAME").shape))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.atrous_conv2d(x, w, 2, "SAME")
    np.testing.assert_allclose(
        tf.nn.atrous_conv2d_transpose(dy, w, list(X2.shape), 2, "SAME").numpy(),
        tape.gradient(y, x, output_gradients=dy).numpy(), rtol=1e-10, atol=1e-12)


def test_conv2d_transpose_adjoint_identity():
    # <conv(x), dy> == <x, conv_transpose(dy)>, independently of the tape.
    x, w, dy = arr(1, 6, 6, 2), arr(3, 3, 2, 3), arr(1, 3, 3, 3)
    lhs = np.sum(reference(x, w, (2, 2), "SAME", (1, 1)) * dy)
    rhs = np.sum(x * tf.nn.conv2d_transpose(dy, w, [1, 6, 6, 2], 2).numpy())
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


# ---------------------------------------------------------------------- gradients

def _numeric_gradient(f, args, i, eps=1e-6):
    grad = np.zeros_like(args[i])
    for idx in np.ndindex(args[i].shape):
        total = 0.0
        for sign in (1, -1):
            moved = [a.copy() for a in args]
            moved[i][idx] += sign * eps
            total += sign * f(*moved)
        grad[idx] = total / (2 * eps)
    return grad


# (function of (x, w), x shape, w shape): tiny shapes, every input differentiated
GRAD_CASES = {
    "conv2d_strided_same": (lambda x, w: tf.nn.conv2d(x, w, 2, "SAME"), (1, 4, 5, 2),
                            (3, 2, 2, 2)),
    "conv2d_grouped_dilated": (lambda x, w: tf.nn.conv2d(x, w, 1, "VALID", dilations=2),
                               (1, 5, 5, 4), (2, 2, 2, 2)),
    "conv1d_explicit": (lambda x, w: tf.nn.conv1d(x, w, 2, [[0, 0], [1, 2], [0, 0]]),
                        (2, 5, 2), (3, 2, 2)),
    "conv3d": (lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME"), (1, 3, 2, 3, 1),
               (2, 2, 2, 1, 2)),
    "conv2d_transpose": (lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 5, 4, 2], 2, "SAME"),
                         (1, 3, 2, 3), (2, 3, 2, 3)),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_match_finite_differences(name):
    fn, xs, ws = GRAD_CASES[name]
    args = [arr(*xs), arr(*ws)]
    weights = arr(*fn(tf.constant(args[0]), tf.constant(args[1])).shape)

    def objective(*a):
        return float(tf.reduce_sum(fn(*[tf.constant(v) for v in a]) * weights))

    tensors = [tf.constant(a) for a in args]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        value = tf.reduce_sum(fn(*tensors) * weights)
    grads = tape.gradient(value, tensors)
    for i in range(2):
        np.testing.assert_allclose(grads[i].numpy(), _numeric_gradient(objective, args, i),
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["conv2d_strided_same", "conv2d_grouped_dilated",
                                  "conv2d_transpose"])
def test_second_order_gradients_match_finite_differences(name):
    # f(x, w) = sum(conv(x, w)^2 * u) / 2; the gradient of <grad f, v> (a Hessian-vector
    # product, through the VJPs of conv_backprop_input / conv_backprop_filter) against finite
    # differences of the first-order gradient.
    fn, xs, ws = GRAD_CASES[name]
    args = [arr(*xs), arr(*ws)]
    u = np.abs(arr(*fn(tf.constant(args[0]), tf.constant(args[1])).shape)) + 0.5
    vs = [arr(*xs), arr(*ws)]

    def grad_dot_v(*a):
        ts = [tf.constant(v) for v in a]
        with tf.GradientTape() as tape:
            tape.watch(ts)
            y = fn(*ts)
            f = tf.reduce_sum(y * y * u) * 0.5
        g = tape.gradient(f, ts)
        return sum(float(tf.reduce_sum(gi * vi)) for gi, vi in zip(g, vs))

    ts = [tf.constant(a) for a in args]
    with tf.GradientTape() as outer:
        outer.watch(ts)
        with tf.GradientTape() as inner:
            inner.watch(ts)
            y = fn(*ts)
            f = tf.reduce_sum(y * y * u) * 0.5
        g = inner.gradient(f, ts)
        gv = tf.reduce_sum(g[0] * vs[0]) + tf.reduce_sum(g[1] * vs[1])
    hv = outer.gradient(gv, ts)
    for i in range(2):
        np.testing.assert_allclose(hv[i].numpy(), _numeric_gradient(grad_dot_v, args, i),
                                   rtol=1e-5, atol=1e-7)


def test_staged_gradient_matches_eager():
    x, w = tf.constant(X2), tf.constant(W2)

    def grads(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.nn.conv2d(x, w, 2, "SAME", dilations=1)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, [x, w])

    eager = grads(x, w)
    staged = tf.function(grads, backend="reference")(x, w)
    for e, s in zip(eager, staged):
        np.testing.assert_allclose(s.numpy(), e.numpy(), rtol=1e-10)


def test_variables_get_gradients():
    w = tf.Variable(W2)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.nn.conv2d(tf.constant(X2), w, 1, "VALID"))
    # The loss is linear in w: its gradient is the sum of each filter tap's input windows.
    expected = np.zeros_like(W2)
    for i, j in np.ndindex(3, 2):
        expected[i, j] = X2[:, i:i + 5, j:j + 5, :].sum(axis=(0, 1, 2))[:, None]
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), expected, rtol=1e-10)


# ---------------------------------------------------------------------- errors

ERRORS = [
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 2, 4]), 1, "SAME"),
     "conv2d: input depth must be evenly divisible by filter depth: 3 vs 2 (the input's "
     "channel dimension has size 3, the filters' in_channels, dimension 2 of (3, 3, 2, 4), "
     "is 2)."),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 4]), tf.zeros([3, 3, 2, 3]), 1, "SAME"),
     "conv2d: output depth must be evenly divisible by number of groups"),
    (lambda: tf.nn.conv2d(tf.zeros([5, 5, 3]), tf.zeros([3, 3, 3, 4]), 1, "SAME"),
     "conv2d: the input must have rank >= 4 ([batch, height, width, channels]), got shape "
     "(5, 5, 3)."),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 4]), 1, "SAME"),
     "conv2d: the filters must have rank 4 ([filter_height, filter_width, in_channels, "
     "out_channels]), got shape (3, 3, 4)."),
    (lambda: tf.nn.conv2d(tf.zeros([1, 1, 2, 1]), tf.zeros([3, 3, 1, 1]), 1, "VALID"),
     "conv2d: Computed output size would be negative: -1 [input_size: 1, "
     "effective_filter_size: 3, stride: 1] in spatial dimension 0"),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), 1, "same"),
     "conv2d: padding must be 'SAME', 'VALID' or a list of explicit [before, after] pairs, "
     "got 'same'"),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), 1,
                          [[1, 0], [1, 1], [1, 1], [0, 0]]),
     "conv2d: Nonzero explicit padding in the batch or depth dimensions is not supported"),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), [2, 1, 1, 1],
                          "SAME"),
     "conv2d: strides [2, 1, 1, 1] must be 1 in the batch and channel dimensions"),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), [1, 2, 3], "SAME"),
     "conv2d: strides must be an int >= 1 or a list of 1, 2 or 4 such ints, got [1, 2, 3]."),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), 1, "SAME",
                          data_format="NCW"),
     "conv2d: data_format must be one of ['NHWC', 'NCHW'] for 2 spatial dimension(s), got "
     "'NCW'."),
    (lambda: tf.nn.conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1], tf.float64), 1,
                          "SAME"),
     "conv: 'input' is float32 but 'filters' is float64"),
    (lambda: tf.nn.conv2d_transpose(tf.zeros([1, 3, 3, 2]), tf.zeros([3, 3, 1, 2]),
                                    [1, 7, 7, 1], 2, "SAME"),
     "conv2d_transpose: output_shape [1, 7, 7, 1] does not match the input: a convolution "
     "of spatial size 7 (spatial dimension 0) with filter size 3, stride 2, dilation 1 and "
     "padding 'SAME' gives 4, but the input has 3."),
    (lambda: tf.nn.conv2d_transpose(tf.zeros([1, 3, 3, 2]), tf.zeros([3, 3, 1, 3]),
                                    [1, 6, 6, 1], 2, "SAME"),
     "conv2d_transpose: the input has 2 channels but the filters (3, 3, 1, 3) expect 3"),
    (lambda: tf.nn.depthwise_conv2d(tf.zeros([1, 5, 5, 3]), tf.zeros([3, 3, 2, 1]),
                                    [1, 1, 1, 1], "SAME"),
     "depthwise_conv2d: the filter's in_channels (dimension 2 of (3, 3, 2, 1)) is 2 but the "
     "input has 3 channels (shape (1, 5, 5, 3)); they must be equal."),
    (lambda: tf.nn.convolution(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]),
                               data_format="NCW"),
     "convolution: data_format must be one of ['NHWC', 'NCHW'] for 2 spatial dimension(s)"),
    (lambda: tf.nn.atrous_conv2d(tf.zeros([1, 5, 5, 1]), tf.zeros([3, 3, 1, 1]), 0, "SAME"),
     "atrous_conv2d: rate must be a positive int, got 0."),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_error_messages(case):
    call, message = ERRORS[case]
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).splitlines()[0].startswith(message)


def test_backprop_ops_are_not_top_level():
    assert not hasattr(tf.nn, "conv2d_backprop_input")
    assert not hasattr(tf, "conv2d")
