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
from stagecraft.tensor import Tensor, newaxis
from stagecraft.context import executing_eagerly
from stagecraft.convert import constant, convert_to_tensor
from stagecraft.math_ops import *  # noqa: F401,F403  (TF exports math ops at the top level)
from stagecraft.array_ops import *  # noqa: F401,F403
from stagecraft.clip_ops import clip_by_norm
from stagecraft import errors, linalg, math, nest, nn, random
from stagecraft.tape import GradientTape, UnconnectedGradients
from stagecraft.custom_gradient import custom_gradient
from stagecraft.variables import Variable
from stagecraft.variable_policies import VariableAggregation, VariableSynchronization
from stagecraft.module import Module
from stagecraft.tensor_spec import TensorSpec
from stagecraft import config, debugging
from stagecraft.device_spec import DeviceSpec
from stagecraft.device import device, list_devices
from stagecraft.function import ConcreteFunction, Function, function
from stagecraft.control_flow import cond, while_loop
from stagecraft.logging_ops import print_ as print  # noqa: A001 (TensorFlow's name)
from stagecraft.script_ops import py_function
from stagecraft.scopes import get_current_name_scope, init_scope, name_scope
from stagecraft.tensor_array import TensorArray
from stagecraft import autograph
from stagecraft.autograph import show_converted
from stagecraft.compiled import compiled_source, show_compiled
from stagecraft import keras
from stagecraft import train
from stagecraft import saved_model

bool = dtypes.bool_  # noqa: A001 (TensorFlow's name)
int32 = dtypes.int32
int64 = dtypes.int64
float32 = dtypes.float32
float64 = dtypes.float64

__version__ = "0.1.0"
