"""Primitives between real and complex tensors: ``complex(real, imag)``, ``real``, ``imag``,
``conj`` and ``angle``. As in TensorFlow, float32 pairs with complex64 and float64 with
complex128, and nothing converts between real and complex implicitly."""
from __future__ import annotations

import dataclasses

import numpy as np

from stagecraft.ir import dtypes as dt
from stagecraft.ir.ops.elementwise import binary, unary

C = dt.COMPLEX


def _to_complex(d: dt.DType) -> dt.DType:
    return dt.complex64 if d is dt.float32 else dt.complex128


def _real_part(d: dt.DType) -> dt.DType:
    return d.real_dtype


def _complex_kernel(re, im):
    re, im = np.asarray(re), np.asarray(im)
    out = np.empty(np.broadcast_shapes(re.shape, im.shape),
                   np.complex64 if re.dtype == np.float32 else np.complex128)
    out.real, out.imag = re, im  # (re + 1j * im would turn an infinite part into NaN)
    return out


complex_op = binary("complex", _complex_kernel, (dt.float32, dt.float64),
                    "The complex number real + imag * i (complex64 from float32 parts, "
                    "complex128 from float64), with broadcasting.", out=_to_complex)
real_op = unary("real", lambda x: np.real(x).copy(), C,
                "The real part of a complex tensor, as its real dtype.", out=_real_part)
imag_op = unary("imag", lambda x: np.imag(x).copy(), C,
                "The imaginary part of a complex tensor, as its real dtype.", out=_real_part)
conj_op = unary("conj", np.conj, C, "The complex conjugate real - imag * i.")
angle_op = unary("angle", np.angle, C,
                 "The argument atan2(imag, real) of a complex tensor, in (-pi, pi], as its "
                 "real dtype.", out=_real_part, avoid=(0.0,))

# The generated tests run the classic dtypes by default, which these ops have none of: they
# test both complex dtypes instead.
real_op, imag_op, conj_op, angle_op = (dataclasses.replace(op, test_dtypes=C) for op in (
    real_op, imag_op, conj_op, angle_op))
