"""Numba lowerings of the FFT ops (``ir/ops/fft.py``) onto the kernels of
:mod:`stagecraft.backends.numba_cpu.kernels.fft`: the input becomes a contiguous complex128
array, each transformed axis in turn is viewed as the middle axis of ``(outer, n, inner)``
(cropped or padded to its length first, for ``rfft``/``irfft``), and the result is cast to the
op's dtype. ``LOWERINGS`` holds them; :mod:`.lowerings` registers them in ``LOWER``.
"""
from __future__ import annotations

from stagecraft.backends.codegen.lowering import Lowerings
from stagecraft.backends.codegen.source import np_type, tuple_text
from stagecraft.ir.graph import Eqn

LOWERINGS = Lowerings("Numba", missing='compile this function with backend="reference"')
lowers = LOWERINGS.lowers


def _product(dims: list[str]) -> str:
    return " * ".join(f"({d})" for d in dims) if dims else "1"


class _Axes:
    """A complex128 working array in generated code and its current dims (source text)."""

    def __init__(self, cg, x):
        self.cg, self.dims = cg, list(cg.dims(x))
        self.name = cg.fresh("spectrum")
        cg.line(f"{self.name} = np.ascontiguousarray({cg.array(x)}).astype(np.complex128)")

    def _view(self, axis: int) -> str:
        d = self.dims
        return (f"{self.name}.reshape(({_product(d[:axis])}, {d[axis]}, "
                f"{_product(d[axis + 1:])}))")

    def apply(self, axis: int, kernel: str, arg: str, new_dim: str | None = None) -> None:
        self.cg.line(f"{self.name} = K.{kernel}({self._view(axis)}, {arg})")
        if new_dim is not None:
            self.dims[axis] = new_dim

    def result(self) -> str:
        return f"{self.name}.reshape({tuple_text(self.dims)})"


@lowers("fft")
def _fft(cg, e: Eqn) -> None:
    x, rank, inverse = e.inputs[0], e.params["rank"], bool(e.params["inverse"])
    t = _Axes(cg, x)
    for axis in range(len(t.dims) - rank, len(t.dims)):
        t.apply(axis, "fft_axis3", str(inverse))
    cg.define_array(e.outputs[0], f"{t.result()}.astype({np_type(e.outputs[0].type.dtype)})")


@lowers("rfft")
def _rfft(cg, e: Eqn) -> None:
    x, rank, length = e.inputs[0], e.params["rank"], tuple(e.params["fft_length"])
    t = _Axes(cg, x)
    axes = range(len(t.dims) - rank, len(t.dims))
    for axis, n in zip(axes, length):
        t.apply(axis, "fit_axis3", str(n), str(n))
        t.apply(axis, "fft_axis3", "False")
    t.apply(axes[-1], "fit_axis3", str(length[-1] // 2 + 1), str(length[-1] // 2 + 1))
    cg.define_array(e.outputs[0], f"{t.result()}.astype({np_type(e.outputs[0].type.dtype)})")


@lowers("irfft")
def _irfft(cg, e: Eqn) -> None:
    x, rank, length = e.inputs[0], e.params["rank"], tuple(e.params["fft_length"])
    t = _Axes(cg, x)
    axes = list(range(len(t.dims) - rank, len(t.dims)))
    half = length[-1] // 2 + 1
    for axis, n in zip(axes[:-1], length[:-1]):
        t.apply(axis, "fit_axis3", str(n), str(n))
        t.apply(axis, "fft_axis3", "True")
    t.apply(axes[-1], "fit_axis3", str(half), str(half))
    t.apply(axes[-1], "hermitian_axis3", str(length[-1]), str(length[-1]))
    t.apply(axes[-1], "fft_axis3", "True")
    real = np_type(e.outputs[0].type.dtype)
    cg.define_array(e.outputs[0], f"np.ascontiguousarray({t.result()}.real).astype({real})")
