"""stagecraft: a multi-stage, Python-embedded tensor DSL with TensorFlow 2's API.

    import stagecraft as tf
    x = tf.constant([[2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.matmul(x, x)
    tape.gradient(y, x)   # [[4.]]
"""
from stagecraft.ir import dtypes as dtypes
from stagecraft.ir.dtypes import DType, as_dtype
from stagecraft.ir.shapes import TensorShape
from stagecraft.eager.tensor import Tensor, newaxis
from stagecraft.eager.context import executing_eagerly
from stagecraft.eager.conversion import constant, convert_to_tensor
from stagecraft.ops import operators as _operators  # installs the tensor operators
from stagecraft.ops.math_ops import *  # noqa: F401,F403  (TF exports math ops at the top level)
from stagecraft.ops.math_ops import MATH_ONLY as _math_only
from stagecraft.ops.array_ops import *  # noqa: F401,F403
from stagecraft.ops.clip_ops import clip_by_global_norm, clip_by_norm
from stagecraft.ops.functional_ops import foldl, foldr, map_fn, scan
from stagecraft.ops.indexing_ops import (argsort, boolean_mask, gather_nd, scatter_nd, sort,
                                        tensor_scatter_nd_add, tensor_scatter_nd_sub,
                                        tensor_scatter_nd_update)
from stagecraft.ops.manip_ops import (linspace, meshgrid, pad, repeat, reverse, roll, slice,  # noqa: A004
                                      split, tensordot)
from stagecraft.ops.segment_ops import searchsorted, unique, unique_with_counts
from stagecraft.ops.einsum_ops import einsum
from stagecraft.ops.complex_ops import complex  # noqa: A004 (TensorFlow's name)
from stagecraft.ops.vectorize_ops import vectorized_map
from stagecraft.ops.space_batch_ops import (batch_to_space, space_to_batch,  # noqa: F401
                                            space_to_batch_nd)
from stagecraft.ops.counting_ops import (dynamic_partition, dynamic_stitch,
                                         histogram_fixed_width, histogram_fixed_width_bins,
                                         sequence_mask, unravel_index)
from stagecraft.ops.stable_math_ops import reduce_logsumexp
from stagecraft.ops.image_dtype import saturate_cast
from stagecraft.ops.arithmetic_ops import realdiv, scalar_mul, truncatemod
from stagecraft.ops.flow_ops import (case, control_dependencies, group, identity_n, no_op,
                                     switch_case, tuple)  # noqa: A004 (TensorFlow's names)
from stagecraft.ops.shape_ops import (broadcast_dynamic_shape, broadcast_static_shape,
                                      ensure_shape, reverse_sequence, shape_n, strided_slice)
from stagecraft.ops.scatter_extrema_ops import tensor_scatter_nd_max, tensor_scatter_nd_min
from stagecraft.ops.introspection_ops import (get_logger, inside_function, is_symbolic_tensor,
                                              is_tensor, timestamp)
from stagecraft.ops.gradient_helpers import grad_pass_through, recompute_grad
from stagecraft.ops.linalg_sqrtm import matrix_square_root
from stagecraft import errors, linalg, math, nest, nn, random
from stagecraft import bitwise
from stagecraft import signal
from stagecraft.linalg import eig, eigvals, norm
from stagecraft.autodiff.tape import GradientTape, UnconnectedGradients
from stagecraft.autodiff.custom_gradient import custom_gradient
from stagecraft.state.variables import Variable
from stagecraft.state.variable_policies import VariableAggregation, VariableSynchronization
from stagecraft.state.module import Module
from stagecraft.staging.tensor_spec import TensorSpec
from stagecraft import config, debugging
from stagecraft.devices.device_spec import DeviceSpec
from stagecraft.devices.device import device, list_devices
from stagecraft.staging.concrete_function import ConcreteFunction
from stagecraft.staging.function import Function, function
from stagecraft.staging.cond import cond
from stagecraft.staging.while_loop import while_loop
from stagecraft.ops.logging_ops import print_ as print  # noqa: A001 (TensorFlow's name)
from stagecraft.ops.logging_ops import Assert
from stagecraft.ops.check_ops import assert_equal, assert_greater, assert_less, assert_rank
from stagecraft.ops.script_ops import numpy_function, py_function
from stagecraft.eager.scopes import get_current_name_scope, init_scope, name_scope
from stagecraft.ops.tensor_array import TensorArray
from stagecraft import autograph
from stagecraft.autograph import show_converted
from stagecraft.staging.compiled import compiled_source, show_compiled
from stagecraft import train
from stagecraft import distribute
from stagecraft import saved_model

# Namespaces imported on first use (PEP 562), which keeps `import stagecraft` quick: Keras's
# layers, tf.data and tf.summary are a third of the import time and many programs use none.
_LAZY = ("keras", "data", "summary", "image", "io", "version")
# TF 2's top-level initializer classes are Keras's (importing them loads Keras's initializers).
_LAZY_NAMES = dict.fromkeys(("zeros_initializer", "ones_initializer", "constant_initializer",
                             "random_normal_initializer", "random_uniform_initializer"),
                            "stagecraft.ops.init_ops")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib
        module = importlib.import_module(f"stagecraft.{name}")
        globals()[name] = module
        return module
    if name in _LAZY_NAMES:
        import importlib
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'stagecraft' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_NAMES))

del _operators  # imported for its effect only
for _name in _math_only:  # TensorFlow has these in tf.math only
    del globals()[_name]
del _math_only, _name

bool = dtypes.bool_  # noqa: A001 (TensorFlow's name)
float16 = half = dtypes.float16
bfloat16 = dtypes.bfloat16
int8 = dtypes.int8
int16 = dtypes.int16
int32 = dtypes.int32
int64 = dtypes.int64
uint8 = dtypes.uint8
uint16 = dtypes.uint16
uint32 = dtypes.uint32
uint64 = dtypes.uint64
float32 = dtypes.float32
float64 = dtypes.float64
complex64 = dtypes.complex64
complex128 = dtypes.complex128

__version__ = "0.1.0"
