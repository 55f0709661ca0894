"""``stagecraft.linalg``: matrix products and diagonals."""
from __future__ import annotations

from typing import Any

from stagecraft.ops.array_ops import eye
from stagecraft.eager.bind import bind
from stagecraft.ir import OPS
from stagecraft.ops.math_ops import matmul
from stagecraft.eager.tensor import Tensor
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.ops.array_ops import transpose


def diag(diagonal: Any, name: str = "diag") -> Tensor:
    """Square matrices with ``diagonal`` on the main diagonal (batched over leading dims).

    >>> import stagecraft as tf
    >>> tf.linalg.diag([1, 2]).numpy().tolist()
    [[1, 0], [0, 2]]
    """
    return bind(OPS["diag"], diagonal)


def diag_part(input: Any, name: str = "diag_part") -> Tensor:  # noqa: A002
    """The main diagonal of the last two dimensions."""
    return bind(OPS["diag_part"], input)


def matrix_transpose(a: Any, name: str = "matrix_transpose") -> Tensor:
    """Swaps the last two dimensions."""
    a = convert_to_tensor(a)
    perm = list(range(a.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return transpose(a, perm)


__all__ = ["matmul", "diag", "diag_part", "eye", "matrix_transpose"]
