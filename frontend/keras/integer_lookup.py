"""``keras.layers.IntegerLookup``: maps integer tokens to contiguous indices through a
vocabulary (given, or learned by ``adapt`` from token frequencies), and back with
``invert=True``; with Keras's index layout (mask token at 0 when set, then the OOV indices,
then the vocabulary), defaults and output modes."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagecraft.data import Dataset
from stagecraft.eager.conversion import convert_to_tensor
from stagecraft.eager.tensor import Tensor
from stagecraft.ir import dtypes as _dt
from stagecraft.keras import serialization
from stagecraft.keras.base_layer import Layer
from stagecraft.keras.preprocessing_layers import _encode
from stagecraft.ops import array_ops as _a
from stagecraft.ops import check_ops
from stagecraft.ops import math_ops as _m
from stagecraft.ops import segment_ops as _seg

__all__ = ["IntegerLookup"]

_MODES = ("int", "one_hot", "multi_hot", "count")


@serialization.register
class IntegerLookup(Layer):
    """Integer tokens to indices: ``mask_token`` (if set) is index 0, the
    ``num_oov_indices`` out-of-vocabulary indices come next (a token not in the vocabulary
    goes to ``token mod num_oov_indices`` among them), then the vocabulary in order.
    ``adapt`` learns the vocabulary: tokens by decreasing count (ties: larger token first),
    at most ``max_tokens`` indices in all. ``output_mode`` ``'int'`` (int64 indices),
    ``'one_hot'``, ``'multi_hot'`` or ``'count'``; ``invert=True`` maps indices back.

    >>> import stagecraft as tf
    >>> layer = tf.keras.layers.IntegerLookup(vocabulary=[12, 36, 1138, 42])
    >>> layer(tf.constant([[12, 1138, 42], [42, 1000, 36]])).numpy().tolist()
    [[1, 3, 4], [4, 0, 2]]
    >>> layer.get_vocabulary()
    [-1, 12, 36, 1138, 42]
    """

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: int | None = None, oov_token: int = -1, vocabulary: Any = None,
                 vocabulary_dtype: str = "int64", idf_weights: Any = None, invert: bool = False,
                 output_mode: str = "int", sparse: bool = False,
                 pad_to_max_tokens: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if output_mode not in _MODES:
            raise ValueError(f"IntegerLookup: unsupported output_mode {output_mode!r}; expected "
                             f"one of {_MODES} ('tf_idf' is not supported).")
        if sparse or idf_weights is not None:
            raise ValueError("IntegerLookup: sparse=True and idf_weights are not supported.")
        if invert and output_mode != "int":
            raise ValueError("IntegerLookup: invert=True needs output_mode='int'.")
        if isinstance(num_oov_indices, bool) or not isinstance(num_oov_indices, int) or \
                num_oov_indices < 0:
            raise ValueError(f"IntegerLookup: num_oov_indices must be an integer >= 0; got "
                             f"{num_oov_indices!r}.")
        if max_tokens is not None and max_tokens <= num_oov_indices + (mask_token is not None):
            raise ValueError(f"IntegerLookup: max_tokens ({max_tokens}) must leave room for the "
                             f"mask and OOV indices.")
        self.max_tokens, self.num_oov_indices = max_tokens, num_oov_indices
        self.mask_token, self.oov_token = mask_token, int(oov_token)
        self.vocabulary_dtype = _dt.as_dtype(vocabulary_dtype).name
        self.invert, self.output_mode = bool(invert), output_mode
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        self._vocab: list[int] = []
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    # ------------------------------------------------------------------ vocabulary
    def _special(self) -> list[int]:
        return ([] if self.mask_token is None else [int(self.mask_token)]) + \
            [self.oov_token] * self.num_oov_indices

    def set_vocabulary(self, vocabulary: Any) -> None:
        """Sets the vocabulary (the tokens after the mask and OOV indices), in order."""
        tokens = [int(t) for t in np.asarray(vocabulary).reshape(-1)]
        if len(set(tokens)) != len(tokens):
            raise ValueError("IntegerLookup: the vocabulary has repeated tokens.")
        special = set(self._special())
        clash = [t for t in tokens if t in special]
        if clash:
            raise ValueError(f"IntegerLookup: the vocabulary holds the mask or OOV token "
                             f"{clash[0]}; leave special tokens out of it.")
        if self.max_tokens is not None and len(tokens) + len(self._special()) > self.max_tokens:
            raise ValueError(f"IntegerLookup: a vocabulary of {len(tokens)} tokens exceeds "
                             f"max_tokens={self.max_tokens} with the special indices.")
        self._vocab = tokens

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[int]:
        """The tokens by index (with the mask and OOV tokens first, by default)."""
        return (self._special() if include_special_tokens else []) + list(self._vocab)

    def vocabulary_size(self) -> int:
        """The number of indices (special ones included)."""
        return len(self._special()) + len(self._vocab)

    def adapt(self, data: Any, batch_size: Any = None, steps: Any = None) -> None:
        """Learns the vocabulary from ``data`` (an array, a tensor or a dataset of batches):
        tokens by decreasing count, ties broken by the larger token first (Keras's order)."""
        batches = [np.asarray(b.numpy()) for b in data] if isinstance(data, Dataset) else \
            [np.asarray(data.numpy() if hasattr(data, "numpy") else data)]
        values = np.concatenate([b.reshape(-1) for b in batches]).astype(np.int64)
        tokens, counts = np.unique(values, return_counts=True)
        keep = ~np.isin(tokens, self._special())  # special tokens are not learned
        tokens, counts = tokens[keep], counts[keep]
        order = np.lexsort((tokens, counts))[::-1]
        if self.max_tokens is not None:
            order = order[:self.max_tokens - len(self._special())]
        self._vocab = [int(t) for t in tokens[order]]

    # --------------------------------------------------------------------- calling
    def _convert_input(self, x: Any) -> Any:
        return convert_to_tensor(x)  # integer tokens: no cast to the layer's float dtype

    def _depth(self) -> int:
        if self.pad_to_max_tokens and self.max_tokens is not None:
            return self.max_tokens
        return self.vocabulary_size()

    def _lookup(self, tokens: Tensor) -> Tensor:
        x = _m.cast(tokens, _dt.int64)
        start = 0 if self.mask_token is None else 1
        if self.num_oov_indices > 1:
            oov = _m.add(_m.floormod(x, self.num_oov_indices), start)
        else:
            oov = _m.add(_m.multiply(x, 0), start)
        found = _m.not_equal(x, x)  # all False: nothing found yet
        index = oov
        if self._vocab:
            order = np.argsort(self._vocab, kind="stable")
            keys = np.asarray(self._vocab, np.int64)[order]
            slots = (order + start + self.num_oov_indices).astype(np.int64)
            pos = _seg.searchsorted(convert_to_tensor(keys), _a.reshape(x, [-1]), side="left",
                                    out_type=_dt.int64)
            pos = _a.reshape(_m.minimum(pos, len(keys) - 1), _a.shape(x))
            found = _m.equal(_a.gather(convert_to_tensor(keys), pos), x)
            index = _m.where(found, _a.gather(convert_to_tensor(slots), pos), oov)
        if self.mask_token is not None:
            is_mask = _m.equal(x, int(self.mask_token))
            found = _m.logical_or(found, is_mask)
            index = _m.where(is_mask, _m.multiply(index, 0), index)
        if self.num_oov_indices == 0:  # Keras: an unknown token is an error, not an index
            check_ops.assert_equal(found, True, message=f"{self.name}: a token is not in the "
                                   f"vocabulary and num_oov_indices=0 leaves it no index")
        return index

    def _invert(self, indices: Tensor) -> Tensor:
        table = convert_to_tensor(np.asarray(self.get_vocabulary(), np.int64))
        i = _m.cast(indices, _dt.int64)
        inside = _m.logical_and(_m.greater_equal(i, 0), _m.less(i, self.vocabulary_size()))
        tokens = _a.gather(table, _m.where(inside, i, _m.multiply(i, 0)))
        return _m.where(inside, tokens, _m.add(_m.multiply(tokens, 0), self.oov_token))

    def call(self, inputs: Tensor) -> Tensor:
        if self.invert:
            out = self._invert(inputs)
            return _m.cast(out, _dt.as_dtype(self.vocabulary_dtype))
        index = self._lookup(inputs)
        if self.output_mode == "int":
            return index
        return _encode(index, self._depth(), self.output_mode, self._dtype)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "mask_token": self.mask_token,
                "oov_token": self.oov_token, "vocabulary": list(self._vocab) or None,
                "vocabulary_dtype": self.vocabulary_dtype, "invert": self.invert,
                "output_mode": self.output_mode, "pad_to_max_tokens": self.pad_to_max_tokens}
