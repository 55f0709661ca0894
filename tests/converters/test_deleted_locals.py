"""``del`` of a local inside converted control flow: the state closures of a tensor ``if``
must not read an emptied cell (``NameError: cannot access free variable`` before)."""
from __future__ import annotations

import pytest

import stagecraft as tf


def deletes_in_both_branches(x):
    t = x * 2.0
    if x > 0:
        y = t + 1.0
        del t
    else:
        y = x - 1.0
        del t
    return y


def reads_after_delete(x):
    t = x
    del t
    return t


@pytest.mark.parametrize("backend", ["reference", "numba"])
def test_local_deleted_in_both_branches_of_a_tensor_if(backend):
    f = tf.function(deletes_in_both_branches, backend=backend)
    assert float(f(tf.constant(2.0))) == 5.0
    assert float(f(tf.constant(-2.0))) == -3.0


def test_reading_a_deleted_local_is_still_an_unbound_local_error():
    with pytest.raises(UnboundLocalError):
        reads_after_delete(1.0)
    with pytest.raises(UnboundLocalError):
        tf.function(reads_after_delete, backend="reference")(tf.constant(1.0))
