"""``keras.layers``: the layer base class and the core layers.

>>> import stagecraft as tf
>>> tf.keras.layers.Dense(3)(tf.ones([2, 4])).shape
TensorShape([2, 3])
"""
from stagecraft.keras.activation_layers import (ELU, LeakyReLU, PReLU, ReLU, Softmax,
                                                ThresholdedReLU)
from stagecraft.keras.attention import AdditiveAttention, Attention, MultiHeadAttention
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.basic_layers import Dropout, Embedding, LayerNormalization, Normalization
from stagecraft.keras.conv_layers import (Conv1D, Conv1DTranspose, Conv2D, Conv2DTranspose,
                                          Conv3D, Conv3DTranspose, DepthwiseConv1D,
                                          DepthwiseConv2D, SeparableConv1D, SeparableConv2D)
from stagecraft.keras.core_layers import Activation, Dense, Flatten
from stagecraft.keras.functional import Input, InputLayer
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
from stagecraft.keras.merging_layers import (Add, Average, Concatenate, Dot, Lambda, Maximum,
                                             Minimum, Multiply, Subtract, add, average,
                                             concatenate, dot, maximum, minimum, multiply,
                                             subtract)
from stagecraft.keras.preprocessing_layers import (CategoryEncoding, CenterCrop, Discretization,
                                                   RandomBrightness, RandomContrast, RandomCrop,
                                                   RandomFlip, RandomRotation,
                                                   RandomTranslation, RandomZoom, Rescaling,
                                                   Resizing)
from stagecraft.keras.rnn_wrappers import StackedRNNCells, TimeDistributed, Wrapper
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
