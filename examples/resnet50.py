"""ResNet-50, the model the paper measures (its Figure 3), written with Keras layers the way
TensorFlow's eager ResNet-50 example writes it: bottleneck blocks as Keras models, a
``call(inputs, training)`` method, and a training step that computes gradients with a tape.

Staging it is "decorating two functions", as the paper says: the model's ``call`` and the
function that applies the gradients.

    python examples/resnet50.py              # a few steps on random 64x64 images, both ways
    python examples/resnet50.py --size 224   # the paper's image size
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import stagecraft as tf

layers = tf.keras.layers


class Bottleneck(tf.keras.Model):
    """1x1, 3x3 and 1x1 convolutions, each followed by batch normalization, plus a shortcut
    (a strided 1x1 projection in the first block of a stage, the identity otherwise)."""

    def __init__(self, filters: tuple[int, int, int], stage: int, block: str,
                 strides: int = 1, projection: bool = False):
        super().__init__(name=f"res{stage}{block}")
        f1, f2, f3 = filters
        conv, bn = f"res{stage}{block}_branch", f"bn{stage}{block}_branch"
        self.conv2a = layers.Conv2D(f1, 1, strides=strides, name=conv + "2a")
        self.bn2a = layers.BatchNormalization(name=bn + "2a")
        self.conv2b = layers.Conv2D(f2, 3, padding="same", name=conv + "2b")
        self.bn2b = layers.BatchNormalization(name=bn + "2b")
        self.conv2c = layers.Conv2D(f3, 1, name=conv + "2c")
        self.bn2c = layers.BatchNormalization(name=bn + "2c")
        self.projection = projection
        if projection:
            self.conv1 = layers.Conv2D(f3, 1, strides=strides, name=conv + "1")
            self.bn1 = layers.BatchNormalization(name=bn + "1")

    def call(self, inputs, training=False):
        x = tf.nn.relu(self.bn2a(self.conv2a(inputs), training=training))
        x = tf.nn.relu(self.bn2b(self.conv2b(x), training=training))
        x = self.bn2c(self.conv2c(x), training=training)
        shortcut = self.bn1(self.conv1(inputs), training=training) if self.projection \
            else inputs
        return tf.nn.relu(x + shortcut)


class ResNet50(tf.keras.Model):
    """ResNet-50 for channels_last images: a 7x7/2 convolution and 3x3/2 max pooling, then
    3, 4, 6 and 3 bottleneck blocks, global average pooling and a 1000-way dense layer
    (the logits)."""

    def __init__(self, classes: int = 1000):
        super().__init__(name="resnet50")
        self.conv1 = layers.Conv2D(64, 7, strides=2, padding="same", name="conv1")
        self.bn_conv1 = layers.BatchNormalization(name="bn_conv1")
        self.max_pool = layers.MaxPooling2D(3, strides=2)
        self.blocks = []
        for stage, (filters, count) in enumerate(
                (((64, 64, 256), 3), ((128, 128, 512), 4), ((256, 256, 1024), 6),
                 ((512, 512, 2048), 3)), start=2):
            for i in range(count):
                self.blocks.append(Bottleneck(filters, stage, "abcdef"[i],
                                              strides=2 if i == 0 and stage > 2 else 1,
                                              projection=i == 0))
        # TF's example uses 7x7 average pooling, which is the global average at 224x224;
        # the global one also serves the smaller images of quick runs.
        self.avg_pool = layers.GlobalAveragePooling2D()
        self.fc1000 = layers.Dense(classes, name="fc1000")

    def call(self, inputs, training=True):
        x = tf.nn.relu(self.bn_conv1(self.conv1(inputs), training=training))
        x = self.max_pool(x)
        for block in self.blocks:
            x = block(x, training=training)
        return self.fc1000(self.avg_pool(x))


def loss_fn(logits, labels):
    """Mean softmax cross-entropy against one-hot labels."""
    return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def compute_gradients(model, images, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(model(images, training=True), labels)
    return loss, tape.gradient(loss, model.trainable_variables)


def apply_gradients(optimizer, gradients, variables):
    optimizer.apply_gradients(zip(gradients, variables))


def make_trainer(staged: bool, classes: int = 1000, lr: float = 0.01,
                 backend: str | None = None):
    """A model and its training step; ``staged`` decorates ``model.call`` and the gradient
    application with ``tf.function`` (on ``backend``, default the configured one), as the
    paper does."""
    model = ResNet50(classes)
    optimizer = tf.keras.optimizers.SGD(lr)
    apply = apply_gradients
    if staged:
        model.call = tf.function(model.call, backend=backend)
        apply = tf.function(apply_gradients, backend=backend)

    def step(images, labels):
        loss, grads = compute_gradients(model, images, labels)
        apply(optimizer, grads, model.trainable_variables)
        return loss
    return model, step


def random_batch(batch: int, size: int, classes: int = 1000, seed: int = 0):
    rng = np.random.default_rng(seed)
    images = tf.constant(rng.random((batch, size, size, 3), dtype=np.float32))
    labels = tf.one_hot(tf.constant(rng.integers(0, classes, batch)), classes)
    return images, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=64, help="image size (the paper: 224)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--backend", default="reference", choices=["reference", "numba"],
                        help="where the staged functions run (Numba compiles a ResNet-50 "
                             "step for many minutes; see the README)")
    args = parser.parse_args()
    tf.config.set_compile_mode("sync")
    images, labels = random_batch(args.batch, args.size)
    for staged in (False, True):
        model, step = make_trainer(staged, backend=args.backend)
        losses, times = [], []
        for _ in range(args.steps + 1):  # the first step builds (and traces) the model
            start = time.perf_counter()
            losses.append(float(step(images, labels)))
            times.append(time.perf_counter() - start)
        print(f"{'staged' if staged else 'eager '}: {model.count_params():,} parameters, "
              f"losses {' '.join(f'{v:.3f}' for v in losses)}, "
              f"median {np.median(times[1:]):.3f} s/step after the first "
              f"({times[0]:.1f} s)")


if __name__ == "__main__":
    main()
