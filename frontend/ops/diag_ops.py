"""``tf.linalg.diag``, ``diag_part`` and ``set_diag`` with TensorFlow's ``k`` (one diagonal or
a ``(low, high)`` band), ``num_rows`` / ``num_cols``, ``padding_value`` and ``align``
(TensorFlow's MatrixDiagV3 family).

A band of diagonals is stored as rows of one array, the top diagonal (``high``) first; a
diagonal shorter than the longest is padded, superdiagonals (the main one included) on the
side the first half of ``align`` names and subdiagonals on the side of its second half
(``"RIGHT_LEFT"``, the default: superdiagonals flush right, subdiagonals flush left).

The plain main diagonal uses the ``diag`` / ``diag_part`` primitives; every other form is a
``gather`` over the flattened matrices with an index table computed once from the static
matrix dimensions (one extra slot holds the padding value), so gradients come from gather's
rule and the batch dimensions may be unknown until run time.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.eager.bind import bind
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import OPS
from stagecraft.ops.array_ops import concat, gather, reshape, shape, zeros_like

__all__ = ["diag", "diag_part", "set_diag"]

_ALIGNS = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")


def _band(k: Any, what: str) -> tuple[int, int]:
    """``k`` as (low, high): an int, or a pair with low <= high."""
    if isinstance(k, Tensor):
        try:
            k = k.numpy()
        except Exception:  # a symbolic tensor: the band shapes the result
            raise ValueError(f"{what}: k must be known when the function is traced (an int or "
                             f"a pair of ints), got a symbolic tensor.") from None
    ks = np.asarray(k).reshape(-1)
    if ks.size not in (1, 2) or not np.issubdtype(ks.dtype, np.integer):
        raise ValueError(f"{what}: k must be an int or a (low, high) pair of ints, got {k!r}.")
    low, high = int(ks[0]), int(ks[-1])
    if low > high:
        raise ValueError(f"{what}: the band's lower diagonal k[0]={low} must not lie above its "
                         f"upper one k[1]={high}.")
    return low, high


def _check_align(align: str, what: str) -> str:
    if align not in _ALIGNS:
        raise ValueError(f"{what}: align must be one of {', '.join(_ALIGNS)}, got {align!r}.")
    return align


def _length(rows: int, cols: int, d: int) -> int:
    """The length of diagonal ``d`` of a [rows, cols] matrix."""
    return max(0, min(rows + min(0, d), cols - max(0, d)))


def _slots(rows: int, cols: int, low: int, high: int, width: int,
           align: str) -> tuple[np.ndarray, np.ndarray]:
    """For every element of the band: its flat position in the [rows, cols] matrix and its
    flat position in the [num_diags, width] stored diagonals."""
    first, second = align.split("_")
    matrix, stored = [], []
    for row, d in enumerate(range(high, low - 1, -1)):
        n = _length(rows, cols, d)
        i = np.arange(n) + max(0, -d)
        right = (first if d >= 0 else second) == "RIGHT"
        matrix.append(i * cols + i + d)
        stored.append(row * width + np.arange(n) + (width - n if right else 0))
    return np.concatenate(matrix).astype(np.int64), np.concatenate(stored).astype(np.int64)


def _flat(x: Tensor, keep: int, size: int) -> Tensor:
    """``x`` with all but its leading ``keep`` dimensions merged into one of ``size``."""
    lead = x.shape.as_list()[:keep]
    if None not in lead:
        return reshape(x, lead + [size])
    return reshape(x, concat([shape(x)[:keep], [size]], 0))


def _unflat(x: Tensor, keep: int, dims: list) -> Tensor:
    """``x`` [..., prod(dims)] with its last dimension split into ``dims``."""
    lead = x.shape.as_list()[:keep]
    if None not in lead:
        return reshape(x, lead + dims)
    return reshape(x, concat([shape(x)[:keep], dims], 0))


def _with_padding(flat: Tensor, padding_value: Any) -> Tensor:
    """``flat`` [..., n] with one more slot [..., n + 1] holding ``padding_value``."""
    pad = convert_to_tensor(padding_value, dtype=flat.dtype)
    if pad.shape.rank != 0:
        raise ValueError(f"padding_value must be a scalar, got shape {pad.shape}.")
    return concat([flat, zeros_like(flat[..., :1]) + pad], -1)


def diag(diagonal: Any, name: str = "diag", k: Any = 0, num_rows: Any = -1,
         num_cols: Any = -1, padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """Matrices [..., num_rows, num_cols] with ``diagonal`` on diagonal ``k`` (0 the main one,
    > 0 above, < 0 below) and ``padding_value`` elsewhere. With a band ``k = (low, high)``,
    ``diagonal`` is [..., high - low + 1, max_len], the top diagonal first, shorter ones padded
    as ``align`` says. ``num_rows`` / ``num_cols`` default to the smallest square matrix
    holding the diagonals (one given: the other is the smallest that fits).

    >>> import stagecraft as tf
    >>> tf.linalg.diag([1, 2]).numpy().tolist()
    [[1, 0], [0, 2]]
    >>> tf.linalg.diag([[1, 2], [3, 4]], k=(-1, 0), padding_value=9).numpy().tolist()
    [[1, 9], [3, 2]]
    >>> tf.linalg.diag([5, 6], k=1, num_cols=4).numpy().tolist()
    [[0, 5, 0, 0], [0, 0, 6, 0]]
    """
    what = "tf.linalg.diag"
    d = convert_to_tensor(diagonal)
    low, high = _band(k, what)
    _check_align(align, what)
    num_rows, num_cols = int(num_rows), int(num_cols)
    plain = (low == high == 0 and num_rows == num_cols == -1 and
             isinstance(padding_value, (int, float)) and padding_value == 0)
    if plain and d.shape.rank is not None and d.shape.rank >= 1:
        return bind(OPS["diag"], d)
    band = low != high
    need = 2 if band else 1
    dims = d.shape.as_list()
    if len(dims) < need or None in dims[-need:]:
        raise ValueError(f"{what}: diagonal must have rank >= {need} with its last {need} "
                         f"dimension(s) known for k=({low}, {high}), got shape {d.shape}.")
    width = dims[-1]
    if band and dims[-2] != high - low + 1:
        raise ValueError(f"{what}: a band k=({low}, {high}) takes {high - low + 1} diagonals "
                         f"(diagonal[..., i, :] is diagonal k[1] - i), got {dims[-2]}.")
    min_rows, min_cols = width - min(high, 0), width + max(low, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if num_rows < min_rows or num_cols < min_cols or (num_rows != min_rows and
                                                     num_cols != min_cols):
        raise ValueError(f"{what}: diagonals of length {width} at k=({low}, {high}) do not fit "
                         f"a {num_rows}x{num_cols} matrix: it needs at least {min_rows} rows and "
                         f"{min_cols} columns, exactly that many of one (the longest diagonal "
                         f"fills one dimension).")
    matrix, stored = _slots(num_rows, num_cols, low, high, width, align)
    size = (high - low + 1) * width
    table = np.full(num_rows * num_cols, size, np.int64)   # `size`: the padding slot
    table[matrix] = stored
    keep = len(dims) - need
    flat = _with_padding(_flat(d, keep, size), padding_value)
    return _unflat(gather(flat, table, axis=keep), keep, [num_rows, num_cols])


def _matrix(x: Any, what: str) -> tuple[Tensor, int, int]:
    x = convert_to_tensor(x)
    dims = x.shape.as_list()
    if len(dims) < 2 or None in dims[-2:]:
        raise ValueError(f"{what}: input must have rank >= 2 with known matrix dimensions, got "
                         f"shape {x.shape}.")
    return x, dims[-2], dims[-1]


def _band_width(rows: int, cols: int, low: int, high: int, what: str) -> int:
    if not (-rows < low and high < cols):
        raise ValueError(f"{what}: k=({low}, {high}) reaches outside a {rows}x{cols} matrix "
                         f"(diagonals run from {1 - rows} to {cols - 1}).")
    return max(_length(rows, cols, d) for d in range(low, high + 1))


def diag_part(input: Any, name: str = "diag_part", k: Any = 0,  # noqa: A002
              padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """Diagonal ``k`` of the last two dimensions [..., len]; for a band ``k = (low, high)``
    the diagonals [..., high - low + 1, max_len], the top one first, shorter ones padded with
    ``padding_value`` as ``align`` says.

    >>> import stagecraft as tf
    >>> x = tf.reshape(tf.range(1, 10), [3, 3])
    >>> tf.linalg.diag_part(x).numpy().tolist()
    [1, 5, 9]
    >>> tf.linalg.diag_part(x, k=(-1, 1)).numpy().tolist()
    [[0, 2, 6], [1, 5, 9], [4, 8, 0]]
    """
    what = "tf.linalg.diag_part"
    x, rows, cols = _matrix(input, what)
    low, high = _band(k, what)
    _check_align(align, what)
    if low == high == 0:
        return bind(OPS["diag_part"], x)
    width = _band_width(rows, cols, low, high, what)
    matrix, stored = _slots(rows, cols, low, high, width, align)
    n = high - low + 1
    table = np.full(n * width, rows * cols, np.int64)   # `rows * cols`: the padding slot
    table[stored] = matrix
    keep = x.shape.rank - 2
    flat = _with_padding(_flat(x, keep, rows * cols), padding_value)
    out = gather(flat, table, axis=keep)
    return _unflat(out, keep, [n, width] if low != high else [width])


def set_diag(input: Any, diagonal: Any, name: str = "set_diag", k: Any = 0,  # noqa: A002
             align: str = "RIGHT_LEFT") -> Tensor:
    """``input`` with diagonal ``k`` (or the band ``k = (low, high)``, laid out as
    ``diag_part`` returns it) replaced by ``diagonal``.

    >>> import stagecraft as tf
    >>> tf.linalg.set_diag(tf.zeros([2, 3]), [1.0, 2.0], k=1).numpy().tolist()
    [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
    >>> tf.linalg.set_diag(tf.zeros([2, 2], tf.int32), [[1, 2], [3, 0]], k=(-1, 0)).numpy()
    array([[1, 0],
           [3, 2]], dtype=int32)
    """
    what = "tf.linalg.set_diag"
    x, rows, cols = _matrix(input, what)
    low, high = _band(k, what)
    _check_align(align, what)
    width = _band_width(rows, cols, low, high, what)
    n = high - low + 1
    d = convert_to_tensor(diagonal, dtype=x.dtype)
    want = [n, width] if low != high else [width]
    got = d.shape.as_list()
    if got[len(got) - len(want):] != want:
        raise ValueError(f"{what}: diagonal must end in dimensions {want} for a "
                         f"{rows}x{cols} matrix and k=({low}, {high}), got shape {d.shape}.")
    matrix, stored = _slots(rows, cols, low, high, width, align)
    table = np.arange(rows * cols, dtype=np.int64)
    table[matrix] = rows * cols + stored
    keep = x.shape.rank - 2
    if d.shape.rank - len(want) != keep:
        raise ValueError(f"{what}: diagonal needs the batch dimensions of input "
                         f"{x.shape.as_list()[:keep]}, got shape {d.shape}.")
    both = concat([_flat(x, keep, rows * cols), _flat(d, keep, n * width)], keep)
    return _unflat(gather(both, table, axis=keep), keep, [rows, cols])
