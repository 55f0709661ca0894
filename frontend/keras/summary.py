"""``Model.summary()``: TensorFlow 2 Keras's table of layers, output shapes and parameters."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np


def count_params(weights: list) -> int:
    """Number of scalars in ``weights``, each counted once."""
    unique = {id(w): w for w in weights}.values()
    return int(sum(np.prod(w.shape.as_list(), dtype=np.int64) for w in unique))


def _row(fields: list, positions: list) -> str:
    # Keras's layout: each field cut at its column end, one space before the next.
    line = ""
    for i, field in enumerate(fields):
        if i > 0:
            line = line[:-1] + " "
        line += str(field)
        line = line[:positions[i]]
        line += " " * (positions[i] - len(line))
    return line


def summarize(model: Any, line_length: int | None = None, positions: list | None = None,
              print_fn: Callable[[str], Any] | None = None) -> None:
    """Prints ``model``'s summary one line at a time through ``print_fn`` (default ``print``)."""
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling "
                         "`build()` or by calling the model on a batch of data.")
    print_fn = print if print_fn is None else print_fn
    line_length = line_length or 65
    positions = positions or [.45, .85, 1.]
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_fn(_row(["Layer (type)", "Output Shape", "Param #"], positions))
    print_fn("=" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        shape = getattr(layer, "_summary_output_shape", None) or "multiple"
        name = f"{layer.name} ({type(layer).__name__})"
        print_fn(_row([name, shape, count_params(layer.weights)], positions))
        print_fn(("=" if i == len(layers) - 1 else "_") * line_length)
    if not layers:
        print_fn("=" * line_length)
    trainable = count_params(model.trainable_weights)
    print_fn(f"Total params: {count_params(model.weights):,}")
    print_fn(f"Trainable params: {trainable:,}")
    print_fn(f"Non-trainable params: {count_params(model.non_trainable_weights):,}")
    print_fn("_" * line_length)
