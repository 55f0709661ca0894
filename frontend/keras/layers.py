"""``keras.layers``: the layer base class and the core layers.

>>> import stagecraft as tf
>>> tf.keras.layers.Dense(3)(tf.ones([2, 4])).shape
TensorShape([2, 3])
"""
from stagecraft.keras.adaptive_pooling import (AdaptiveAveragePooling1D, AdaptiveAveragePooling2D,
                                               AdaptiveAveragePooling3D, AdaptiveMaxPooling1D,
                                               AdaptiveMaxPooling2D, AdaptiveMaxPooling3D)
from stagecraft.keras.activation_layers import (ELU, LeakyReLU, PReLU, ReLU, Softmax,
                                                ThresholdedReLU)
from stagecraft.keras import serialization as _serialization
from stagecraft.keras.attention import (AdditiveAttention, Attention, GroupedQueryAttention,
                                        GroupQueryAttention, MultiHeadAttention)
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.basic_layers import Dropout, Embedding, LayerNormalization, Normalization
from stagecraft.keras.conv_layers import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose,
                                          Conv3D, Conv3DTranspose, DepthwiseConv1D,
                                          DepthwiseConv2D, SeparableConv1D, SeparableConv2D)
from stagecraft.keras.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from stagecraft.keras.core_layers import Activation, Dense, Flatten
from stagecraft.keras.einsum_dense import EinsumDense, Identity
from stagecraft.keras.functional import Input, InputLayer
from stagecraft.keras.input_spec import InputSpec
from stagecraft.keras.integer_lookup import IntegerLookup
from stagecraft.keras.group_normalization import (GroupNormalization, RMSNormalization,
                                                  UnitNormalization)
from stagecraft.keras.normalization_layers import BatchNormalization
from stagecraft.keras.pooling_layers import (AveragePooling1D, AveragePooling2D,
                                             AveragePooling3D, AvgPool1D, AvgPool2D, AvgPool3D,
                                             GlobalAveragePooling1D, GlobalAveragePooling2D,
                                             GlobalAveragePooling3D, GlobalAvgPool1D,
                                             GlobalAvgPool2D, GlobalAvgPool3D, GlobalMaxPool1D,
                                             GlobalMaxPool2D, GlobalMaxPool3D,
                                             GlobalMaxPooling1D, GlobalMaxPooling2D,
                                             GlobalMaxPooling3D, MaxPool1D, MaxPool2D, MaxPool3D,
                                             MaxPooling1D, MaxPooling2D, MaxPooling3D)
from stagecraft.keras.mixing_layers import CutMix, MixUp
from stagecraft.keras.merging_layers import (Add, Average, Concatenate, Dot, Lambda, Maximum,
                                             Minimum, Multiply, Subtract, add, average,
                                             concatenate, dot, maximum, minimum, multiply,
                                             subtract)
from stagecraft.keras.preprocessing_layers import (AutoContrast, CategoryEncoding, CenterCrop,
                                                   Discretization, Pipeline, RandomBrightness,
                                                   RandomContrast, RandomCrop, RandomGrayscale,
                                                   RandomInvert,
                                                   RandomFlip, RandomHeight, RandomRotation,
                                                   RandomTranslation, RandomWidth, RandomZoom,
                                                   Rescaling, Resizing)
from stagecraft.keras.rnn_wrappers import StackedRNNCells, TimeDistributed, Wrapper
from stagecraft.keras.wrapper_layers import ReversibleEmbedding, SpectralNormalization, TFSMLayer
from stagecraft.keras.regularization_layers import (ActivityRegularization, AlphaDropout,
                                                    GaussianDropout, GaussianNoise,
                                                    SpatialDropout1D, SpatialDropout2D,
                                                    SpatialDropout3D)
from stagecraft.keras.reshaping_layers import (Cropping1D, Cropping2D, Cropping3D, Permute,
                                               RepeatVector, Reshape, UpSampling1D,
                                               UpSampling2D, UpSampling3D, ZeroPadding1D,
                                               ZeroPadding2D, ZeroPadding3D)
from stagecraft.keras.recurrent import (GRU, LSTM, RNN, Bidirectional, GRUCell, LSTMCell,
                                        SimpleRNN, SimpleRNNCell)

__all__ = ["Activation", "Add", "Average", "Bidirectional", "Concatenate", "Conv1D",
           "Conv1DTranspose", "Conv2D", "Conv2DTranspose", "Conv3D", "Conv3DTranspose",
           "Dense", "DepthwiseConv1D", "DepthwiseConv2D", "Dropout", "Embedding",
           "Flatten", "GRU", "GRUCell", "Input", "InputLayer", "LSTM", "LSTMCell",
           "Lambda", "Layer", "LayerNormalization", "Maximum", "Minimum",
           "MultiHeadAttention", "Multiply", "Normalization", "RNN", "SeparableConv1D",
           "SeparableConv2D", "SimpleRNN", "SimpleRNNCell", "Subtract"]
__all__ += ["AveragePooling1D", "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D",
            "AvgPool3D", "BatchNormalization", "GlobalAveragePooling1D",
            "GlobalAveragePooling2D", "GlobalAveragePooling3D", "GlobalAvgPool1D",
            "GlobalAvgPool2D", "GlobalAvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D",
            "GlobalMaxPool3D", "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
            "MaxPool1D", "MaxPool2D", "MaxPool3D", "MaxPooling1D", "MaxPooling2D",
            "MaxPooling3D"]
__all__ += ["Cropping1D", "Cropping2D", "Cropping3D", "Permute", "RepeatVector", "Reshape",
            "UpSampling1D", "UpSampling2D", "UpSampling3D", "ZeroPadding1D", "ZeroPadding2D",
            "ZeroPadding3D"]
__all__ += ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax", "ThresholdedReLU", "Dot", "add",
            "average", "concatenate", "dot", "maximum", "minimum", "multiply", "subtract",
            "ActivityRegularization", "AlphaDropout", "GaussianDropout", "GaussianNoise",
            "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D"]
__all__ += ["CategoryEncoding", "CenterCrop", "Discretization", "RandomBrightness",
            "RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation", "RandomTranslation",
            "RandomZoom", "Rescaling", "Resizing"]
__all__ += ["StackedRNNCells", "TimeDistributed", "Wrapper"]
__all__ += ["AdditiveAttention", "Attention"]
__all__ += ["EinsumDense", "GroupNormalization", "Identity", "RMSNormalization",
            "UnitNormalization"]

# Keras's longer names of the convolution layers.
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
Convolution1DTranspose, Convolution2DTranspose, Convolution3DTranspose = (
    Conv1DTranspose, Conv2DTranspose, Conv3DTranspose)
SeparableConvolution1D, SeparableConvolution2D = SeparableConv1D, SeparableConv2D
__all__ += ["Convolution1D", "Convolution1DTranspose", "Convolution2D", "Convolution2DTranspose",
            "Convolution3D", "Convolution3DTranspose", "SeparableConvolution1D",
            "SeparableConvolution2D"]


def serialize(layer: Layer) -> dict:
    """A layer's ``{'class_name': ..., 'config': ...}`` (what ``deserialize`` rebuilds).

    >>> import stagecraft as tf
    >>> tf.keras.layers.serialize(tf.keras.layers.Dense(3, name="d"))["class_name"]
    'Dense'
    """
    return _serialization.serialize(layer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """A new layer from ``serialize``'s output; only built-in layer classes and those in
    ``custom_objects`` can be created (a config runs no code).

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.deserialize({"class_name": "LeakyReLU",
    ...                                      "config": {"negative_slope": 0.1}})
    >>> type(layer).__name__, layer.negative_slope
    ('LeakyReLU', 0.1)
    """
    return _serialization.deserialize(config, custom_objects)


__all__ += ["InputSpec", "RandomHeight", "RandomWidth", "deserialize", "serialize"]
__all__ += ["AutoContrast", "Pipeline", "RandomGrayscale", "RandomInvert"]
__all__ += ["AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
            "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D", "AdaptiveMaxPooling3D"]
__all__ += ["ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"]
__all__ += ["IntegerLookup"]
__all__ += ["GroupQueryAttention", "GroupedQueryAttention"]
__all__ += ["ReversibleEmbedding", "SpectralNormalization", "TFSMLayer"]
__all__ += ["CutMix", "MixUp"]
