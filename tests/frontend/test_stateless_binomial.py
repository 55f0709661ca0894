"""tf.random.stateless_binomial: frequencies against the binomial pmf (both samplers, inversion
and BTRS, and the p > 1/2 reflection), TensorFlow's broadcasting of counts and probs into the
sample shape, output dtypes, the edge values, purity in the seed eagerly and staged, and
errors."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import stagecraft as tf


@pytest.mark.parametrize("n, p", [(6.0, 0.3), (40.0, 0.6), (1000.0, 0.5), (200.0, 0.97)])
def test_frequencies_match_the_pmf(n, p):
    x = tf.random.stateless_binomial([20000], seed=[5, 6], counts=n, probs=p).numpy()
    assert x.min() >= 0 and x.max() <= n
    # a chi-square test over the values holding most of the mass
    lo, hi = stats.binom.ppf([0.001, 0.999], n, p).astype(int)
    edges = np.arange(lo, hi + 2)
    observed = np.histogram(np.clip(x, lo, hi), bins=edges - 0.5)[0]
    expected = np.diff(stats.binom.cdf(edges - 1, n, p))
    expected[0] += stats.binom.cdf(lo - 1, n, p)
    expected[-1] += stats.binom.sf(hi, n, p)
    chi2 = (((observed - x.size * expected) ** 2) / (x.size * expected)).sum()
    assert stats.chi2.sf(chi2, len(edges) - 2) > 1e-4, chi2


def test_counts_and_probs_broadcast_into_the_rightmost_dimensions():
    x = tf.random.stateless_binomial([3, 2, 4], seed=[1, 2], counts=[[5.0], [50.0]],
                                     probs=[0.0, 0.5, 1.0, 0.2])
    assert x.shape == [3, 2, 4] and x.dtype == tf.int32
    v = x.numpy()
    assert (v[..., 0] == 0).all()
    assert (v[:, 0, 2] == 5).all() and (v[:, 1, 2] == 50).all()
    assert (v[:, 0, :] <= 5).all()


def test_edge_values_and_output_dtypes():
    x = tf.random.stateless_binomial([4], seed=[1, 2], counts=[0.0, -3.0, 7.0, 9.0],
                                     probs=[0.5, 0.5, -1.0, 2.0], output_dtype=tf.float64)
    assert x.dtype == tf.float64 and x.numpy().tolist() == [0.0, 0.0, 0.0, 9.0]
    y = tf.random.stateless_binomial([2], seed=[1, 2], counts=3, probs=0.5,
                                     output_dtype=tf.int64)
    assert y.dtype == tf.int64


def test_a_pure_function_of_the_seed_eager_and_staged():
    def draw(seed):
        return tf.random.stateless_binomial([50, 3], seed, [4.0, 30.0, 900.0], [0.2, 0.7, 0.5])

    eager = draw([3, 4]).numpy()
    assert (eager == draw([3, 4]).numpy()).all()
    assert not (eager == draw([3, 5]).numpy()).all()
    for backend in ("reference", "numba"):
        staged = tf.function(draw, backend=backend)(tf.constant([3, 4]))
        np.testing.assert_array_equal(staged.numpy(), eager)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="must broadcast to the sample shape"):
        tf.random.stateless_binomial([3], seed=[1, 2], counts=[1.0, 2.0], probs=0.5)
    with pytest.raises(TypeError, match="output_dtype must be one of"):
        tf.random.stateless_binomial([3], seed=[1, 2], counts=1.0, probs=0.5,
                                     output_dtype=tf.bool)
    with pytest.raises(ValueError, match="seed must be an integer tensor of shape"):
        tf.random.stateless_binomial([3], seed=[1, 2, 3], counts=1.0, probs=0.5)
