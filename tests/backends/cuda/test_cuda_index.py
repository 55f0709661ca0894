"""kernels/index.py: the flat-position offset the strided kernels read through, against NumPy's
unravelling of every valid position (the outermost coordinate takes no remainder)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from stagecraft.backends.numba_cuda.kernels.index import offset

shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


@given(shapes.flatmap(lambda shape: st.tuples(
    st.just(shape), st.lists(st.integers(-7, 9), min_size=len(shape),
                             max_size=len(shape)).map(tuple))))
def test_offset_is_the_dot_of_coordinates_and_strides(case):
    shape, strides = case
    for i in range(int(np.prod(shape))):
        expected = int(np.dot(np.unravel_index(i, shape), strides))
        assert offset(i, shape, strides) == expected, (i, shape, strides)
