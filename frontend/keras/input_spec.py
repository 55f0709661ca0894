"""``keras.layers.InputSpec``: what a layer accepts (rank, dtype, shape, known axis sizes).
A layer that sets ``self.input_spec`` has every call's inputs checked against it before
``build`` and ``call``, with Keras's error messages."""
from __future__ import annotations

from typing import Any

from stagecraft.eager import nest
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt

__all__ = ["InputSpec", "assert_input_compatibility"]


class InputSpec:
    """The rank (``ndim``, ``min_ndim``, ``max_ndim``), ``dtype``, ``shape`` (None for any
    size) and known axis sizes (``axes={-1: 16}``) a layer's input must have.

    >>> import stagecraft as tf
    >>> spec = tf.keras.layers.InputSpec(min_ndim=2, axes={-1: 3})
    >>> spec.min_ndim, spec.axes
    (2, {-1: 3})
    """

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None, optional: bool = False):
        self.dtype = None if dtype is None else _dt.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        self.allow_last_axis_squeeze = bool(allow_last_axis_squeeze)
        self.name, self.optional = name, bool(optional)
        for axis in self.axes:
            if self.ndim is not None and not -self.ndim <= axis < self.ndim:
                raise ValueError(f"InputSpec: axis {axis} is out of range for ndim={self.ndim}.")

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim,
                "max_ndim": self.max_ndim, "min_ndim": self.min_ndim, "axes": self.axes}

    @classmethod
    def from_config(cls, config: dict) -> "InputSpec":
        """An ``InputSpec`` from ``get_config``'s output."""
        return cls(**config)

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.get_config().items() if v not in (None, {})]
        return f"InputSpec({', '.join(parts)})"


def assert_input_compatibility(input_spec: Any, inputs: Any, layer_name: str) -> None:
    """Raises ``ValueError`` (Keras's messages) where ``inputs`` break ``input_spec``."""
    specs = [s for s in nest.flatten(input_spec)]
    xs = [x for x in nest.flatten(inputs)]
    if len(xs) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received '
                         f'{len(xs)} input tensors.')
    for i, (spec, x) in enumerate(zip(specs, xs)):
        if spec is None or not isinstance(x, Tensor):
            continue
        shape, rank = x.shape, x.shape.rank
        where = f'Input {i} of layer "{layer_name}" is incompatible with the layer'
        full = f"Full shape received: {tuple(shape.as_list()) if rank is not None else None}"
        if rank is not None:
            if spec.ndim is not None and rank != spec.ndim and not (
                    spec.allow_last_axis_squeeze and abs(rank - spec.ndim) == 1):
                raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={rank}. {full}")
            if spec.max_ndim is not None and rank > spec.max_ndim:
                raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found "
                                 f"ndim={rank}. {full}")
            if spec.min_ndim is not None and rank < spec.min_ndim:
                raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found "
                                 f"ndim={rank}. {full}")
        if spec.dtype is not None and x.dtype.name != spec.dtype:
            raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={x.dtype.name}.")
        if rank is None:
            continue
        for axis, value in spec.axes.items():
            if value is not None and -rank <= axis < rank and shape[axis] is not None and \
                    shape[axis] != value:
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value "
                                 f"{value}, but received input with shape "
                                 f"{tuple(shape.as_list())}")
        if spec.shape is not None and rank == len(spec.shape):
            for want, got in zip(spec.shape, shape.as_list()):
                if want is not None and got is not None and want != got:
                    raise ValueError(f"{where}: expected shape={spec.shape}, found "
                                     f"shape={tuple(shape.as_list())}")
