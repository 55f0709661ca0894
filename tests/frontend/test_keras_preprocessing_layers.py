"""tf.keras preprocessing layers: the projective transform against a NumPy transcription of
TensorFlow's ImageProjectiveTransformV3 rules, augmentations with fixed factors against
NumPy, encodings, adapt, gradients and a staged check (issue 18)."""
import math

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.keras.image_transform import rotation_matrix, transform

layers = tf.keras.layers
RNG = np.random.default_rng(11)


def map_coord(c, n, mode):
    """TensorFlow's map_coord for one coordinate."""
    if mode == "constant":
        return c
    if mode == "reflect":
        if c < 0:
            if n <= 1:
                c = 0.0
            else:
                sz2 = 2 * n
                c = sz2 * int(-c / sz2) + c
                c = c + sz2 if c < -n else -c - 1
        elif c > n - 1:
            if n <= 1:
                c = 0.0
            else:
                sz2 = 2 * n
                c -= sz2 * int(c / sz2)
                if c >= n:
                    c = sz2 - c - 1
    elif mode == "wrap":
        if c < 0:
            c = 0.0 if n <= 1 else c + n * (int(-c / (n - 1)) + 1)
        elif c > n - 1:
            c = 0.0 if n <= 1 else c - n * int(c / (n - 1))
    return min(max(c, 0.0), n - 1.0)


def transform_ref(images, t, interpolation, fill_mode, fill=0.0):
    b, h, w, c = images.shape
    out = np.zeros_like(images)

    def read(i, y, x):
        y, x = int(y), int(x)
        return images[i, y, x] if 0 <= y < h and 0 <= x < w else np.full(c, fill)
    for i in range(b):
        a = t[i]
        for y in range(h):
            for x in range(w):
                k = a[6] * x + a[7] * y + 1
                if k == 0:
                    out[i, y, x] = fill
                    continue
                sx = map_coord((a[0] * x + a[1] * y + a[2]) / k, w, fill_mode)
                sy = map_coord((a[3] * x + a[4] * y + a[5]) / k, h, fill_mode)
                if interpolation == "nearest":
                    out[i, y, x] = read(i, math.copysign(math.floor(abs(sy) + 0.5), sy),
                                        math.copysign(math.floor(abs(sx) + 0.5), sx))
                else:
                    x0, y0 = math.floor(sx), math.floor(sy)
                    top = (x0 + 1 - sx) * read(i, y0, x0) + (sx - x0) * read(i, y0, x0 + 1)
                    bottom = (x0 + 1 - sx) * read(i, y0 + 1, x0) + (sx - x0) * read(
                        i, y0 + 1, x0 + 1)
                    out[i, y, x] = (y0 + 1 - sy) * top + (sy - y0) * bottom
    return out


IMAGES = RNG.random((2, 5, 6, 2)).astype(np.float32)
TRANSFORMS = np.array([[0.8, -0.5, 2.3, 0.45, 1.1, -1.7, 0.0, 0.0],
                       [1.3, 0.2, -4.6, -0.3, 0.9, 3.2, 0.02, -0.03]], np.float32)


@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_transform_matches_tensorflow_rules(fill_mode, interpolation):
    got = transform(tf.constant(IMAGES), tf.constant(TRANSFORMS), interpolation, fill_mode,
                    0.5).numpy()
    want = transform_ref(IMAGES.astype(np.float64), TRANSFORMS.astype(np.float64),
                         interpolation, fill_mode, 0.5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_transform_gradient_is_the_adjoint():
    x = tf.constant(IMAGES.astype(np.float32))
    w = RNG.random(IMAGES.shape).astype(np.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(transform(x, tf.constant(TRANSFORMS), "bilinear", "reflect") * w)
    grad = tape.gradient(y, x).numpy()
    # The map is linear in the image: the gradient's entry (i) is the output for e_i.
    for flat in [0, 17, 41, 77]:
        e = np.zeros(IMAGES.size, np.float64)
        e[flat] = 1
        e = e.reshape(IMAGES.shape)
        want = (transform_ref(e, TRANSFORMS.astype(np.float64), "bilinear", "reflect") * w).sum()
        np.testing.assert_allclose(grad.flat[flat], want, rtol=1e-4, atol=1e-5)


def test_fixed_factor_augmentations_match_numpy():
    img = RNG.random((1, 4, 4, 1)).astype(np.float32)
    got = layers.RandomRotation((0.25, 0.25))(img, training=True).numpy()
    np.testing.assert_allclose(got[0, :, :, 0], np.rot90(img[0, :, :, 0]), atol=1e-5)
    shifted = layers.RandomTranslation((0.25, 0.25), (-0.5, -0.5), fill_mode="constant")(
        img, training=True).numpy()[0, :, :, 0]
    want = np.zeros((4, 4), np.float32)
    want[1:, :2] = img[0, :3, 2:, 0]  # down by 1, left by 2
    np.testing.assert_allclose(shifted, want, atol=1e-6)
    zoomed = layers.RandomZoom((-0.5, -0.5), interpolation="nearest")(img, training=True)
    t = np.array([[0.5, 0, 0.75, 0, 0.5, 0.75, 0, 0]])
    np.testing.assert_allclose(zoomed.numpy(), transform_ref(img, t, "nearest", "reflect"),
                               atol=1e-6)
    for layer in [layers.RandomRotation(0.3), layers.RandomZoom(0.3),
                  layers.RandomTranslation(0.3, 0.3)]:  # inference: unchanged
        np.testing.assert_array_equal(layer(img, training=False).numpy(), img)


def test_rotation_matrix_keeps_the_center():
    t = rotation_matrix(tf.constant([0.7]), tf.constant(5.0), tf.constant(7.0)).numpy()[0]
    cx, cy = 3.0, 2.0
    np.testing.assert_allclose([t[0] * cx + t[1] * cy + t[2], t[3] * cx + t[4] * cy + t[5]],
                               [cx, cy], atol=1e-5)


def test_random_flip_crop_contrast_brightness():
    imgs = RNG.random((32, 3, 4, 1)).astype(np.float32) * 255
    flipped = layers.RandomFlip("horizontal", seed=1)(imgs).numpy()
    same = [np.array_equal(f, i) for f, i in zip(flipped, imgs)]
    mirrored = [np.array_equal(f, i[:, ::-1]) for f, i in zip(flipped, imgs)]
    assert all(a or b for a, b in zip(same, mirrored)) and any(same) and any(mirrored)
    crop = layers.RandomCrop(2, 2, seed=3)(imgs, training=True).numpy()
    found = [(i, j) for i in range(2) for j in range(3)
             if np.array_equal(crop, imgs[:, i:i + 2, j:j + 2])]
    assert len(found) == 1  # one window for the whole batch
    center = layers.RandomCrop(2, 2)(imgs[:, :, :3], training=False).numpy()
    np.testing.assert_allclose(center, layers.Resizing(2, 2, crop_to_aspect_ratio=True)(
        imgs[:, :, :3]).numpy())
    contrast = layers.RandomContrast((0.5, 0.5), seed=2)(imgs).numpy()
    mean = imgs.mean(axis=(1, 2), keepdims=True)
    scale = ((contrast - mean) / (imgs - mean))
    unclipped = (contrast > 0) & (contrast < 255)
    per_image = [np.ptp(s[u]) if u.any() else 0 for s, u in zip(scale, unclipped)]
    assert max(per_image) < 1e-3 and 0.5 <= scale[unclipped].min() <= scale[unclipped].max() <= 1.5
    bright = layers.RandomBrightness((0.1, 0.2), value_range=(0, 255), seed=4)(imgs).numpy()
    delta = bright - imgs
    ok = bright < 255
    assert np.all((delta[ok] >= 0.1 * 255 - 1e-3) & (delta[ok] <= 0.2 * 255 + 1e-3))
    assert bright.max() <= 255


def test_resizing_center_crop_rescaling():
    img = np.arange(2 * 6 * 4 * 1, dtype=np.float32).reshape(2, 6, 4, 1)
    got = layers.CenterCrop(2, 2)(img).numpy()
    np.testing.assert_array_equal(got, img[:, 2:4, 1:3])
    up = layers.CenterCrop(8, 8)(img).numpy()  # smaller than the target: crop + resize
    np.testing.assert_allclose(up, tf.image.resize(img[:, 1:5, :, :], [8, 8]).numpy())
    assert layers.Resizing(3, 2, interpolation="nearest")(img).shape == [2, 3, 2, 1]
    np.testing.assert_allclose(layers.Rescaling([0.5], offset=1.0)(img).numpy(), img * 0.5 + 1)
    for layer in [layers.Resizing(3, 2, crop_to_aspect_ratio=True), layers.CenterCrop(2, 2),
                  layers.RandomRotation(0.1, fill_mode="constant", fill_value=1.0),
                  layers.RandomZoom(0.1, (0.1, 0.2)), layers.Rescaling(2.0, 1.0),
                  layers.RandomContrast(0.2), layers.RandomBrightness(0.1)]:
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_discretization_and_category_encoding_match_numpy():
    x = RNG.normal(size=(3, 5))
    edges = [-1.0, 0.0, 0.5]
    got = layers.Discretization(bin_boundaries=edges)(x).numpy()
    np.testing.assert_array_equal(got, np.digitize(x, edges))
    hot = layers.Discretization(bin_boundaries=edges, output_mode="count")(x).numpy()
    np.testing.assert_array_equal(hot, np.stack([np.bincount(r, minlength=4)
                                                 for r in np.digitize(x, edges)]))
    layer = layers.Discretization(num_bins=4, epsilon=0.01)
    data = RNG.random(10000)
    layer.adapt(data)
    np.testing.assert_allclose(layer.bin_boundaries, [0.25, 0.5, 0.75], atol=0.02)
    ids = np.array([[0, 2, 2], [3, 1, 1]])
    np.testing.assert_array_equal(
        layers.CategoryEncoding(4)(ids).numpy(), [[1, 0, 1, 0], [0, 1, 0, 1]])
    np.testing.assert_array_equal(
        layers.CategoryEncoding(4, output_mode="one_hot")(np.array([3, 0])).numpy(),
        [[0, 0, 0, 1], [1, 0, 0, 0]])
    weights = np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float32)
    np.testing.assert_allclose(
        layers.CategoryEncoding(4, output_mode="count")(ids, count_weights=weights).numpy(),
        [[0.5, 0, 3.0, 0], [0, 2.0, 0, 1.0]])
    with pytest.raises(Exception) as e:
        layers.CategoryEncoding(3)(np.array([[0, 3]]))
    assert "input values must be in [0, num_tokens=3)" in str(e.value)


def test_staged_pipeline_matches_eager():
    model = tf.keras.Sequential([layers.Rescaling(1 / 255), layers.RandomFlip(),
                                 layers.RandomRotation(0.2), layers.RandomZoom(0.1),
                                 layers.Resizing(3, 3)])
    imgs = tf.constant(RNG.random((2, 5, 5, 3)).astype(np.float32) * 255)
    staged = tf.function(lambda x, training: model(x, training=training))
    np.testing.assert_allclose(staged(imgs, False).numpy(), model(imgs, training=False).numpy(),
                               rtol=1e-6)
    out = staged(imgs, True).numpy()
    assert out.shape == (2, 3, 3, 3) and np.isfinite(out).all()


def test_errors_name_the_problem():
    with pytest.raises(ValueError) as e:
        layers.RandomTranslation(1.5, 0.1)
    assert str(e.value).startswith("RandomTranslation: height_factor bounds must be in")
    with pytest.raises(NotImplementedError) as e:
        layers.RandomRotation(0.1, fill_mode="mirror")
    assert "unknown fill_mode 'mirror'" in str(e.value)
    with pytest.raises(ValueError) as e:
        layers.Discretization(num_bins=3)(np.zeros(2))
    assert "call adapt(data) first" in str(e.value)
    with pytest.raises(ValueError) as e:
        layers.Resizing(0, 2)
    assert str(e.value) == "Resizing: height must be a positive integer; got 0."


def test_color_layers_and_pipeline():
    imgs = (RNG.random((16, 3, 3, 3)) * 200 + 20).astype(np.float32)
    gray = layers.RandomGrayscale(factor=0.5, seed=3)(imgs).numpy()
    lum = (imgs @ np.array([0.2989, 0.587, 0.114], np.float32))[..., None]
    made_gray = [np.allclose(g, np.repeat(l, 3, -1), atol=1e-3) for g, l in zip(gray, lum)]
    kept = [np.array_equal(g, i) for g, i in zip(gray, imgs)]
    assert all(a or b for a, b in zip(made_gray, kept)) and any(made_gray) and any(kept)
    np.testing.assert_array_equal(layers.RandomGrayscale(1.0)(imgs, training=False).numpy(), imgs)
    inverted = layers.RandomInvert(value_range=(10, 250))(imgs).numpy()
    np.testing.assert_allclose(inverted, 260 - imgs, rtol=1e-6)
    stretched = layers.AutoContrast()(imgs).numpy()
    low, high = imgs.min((1, 2), keepdims=True), imgs.max((1, 2), keepdims=True)
    np.testing.assert_allclose(stretched, (imgs - low) * 255 / (high - low), rtol=1e-4, atol=1e-3)
    flat = np.full((1, 2, 2, 1), 7.0, np.float32)
    np.testing.assert_array_equal(layers.AutoContrast()(flat).numpy(), flat)
    pipe = layers.Pipeline([layers.RandomInvert(), layers.Rescaling(1 / 255)])
    np.testing.assert_allclose(pipe(imgs).numpy(), (255 - imgs) / 255, rtol=1e-5)
    np.testing.assert_allclose(pipe(imgs, training=False).numpy(), imgs / 255, rtol=1e-6)
    again = layers.Pipeline.from_config(pipe.get_config())
    assert [type(x).__name__ for x in again.layers] == ["RandomInvert", "Rescaling"]


def test_integer_lookup_layouts_adapt_invert_and_encodings():
    data = np.array([7, 3, 3, 9, 7, 3, 5, 5, 0, 11])
    layer = layers.IntegerLookup(mask_token=0, num_oov_indices=2, max_tokens=6)
    layer.adapt(data)
    # counts 3:3, 7:2, 5:2, 9:1, 11:1; ties go to the larger token; 3 places left
    assert layer.get_vocabulary() == [0, -1, -1, 3, 7, 5]
    got = layer(tf.constant([[3, 0, 5, 9, 10]])).numpy()
    assert got.tolist() == [[3, 0, 5, 9 % 2 + 1, 10 % 2 + 1]] and got.dtype == np.int64
    inverse = layers.IntegerLookup(vocabulary=[3, 7, 5], mask_token=0, invert=True)
    assert inverse(tf.constant([0, 1, 2, 3, 4, 9])).numpy().tolist() == [0, -1, 3, 7, 5, -1]
    hot = layers.IntegerLookup(vocabulary=[4, 8], output_mode="multi_hot", max_tokens=5,
                               pad_to_max_tokens=True)
    np.testing.assert_array_equal(hot(np.array([[8, 8, 2], [4, 4, 4]])).numpy(),
                                  [[1, 0, 1, 0, 0], [0, 1, 0, 0, 0]])
    count = layers.IntegerLookup(vocabulary=[4, 8], output_mode="count")
    np.testing.assert_array_equal(count(np.array([[8, 8, 2]])).numpy(), [[1, 0, 2]])
    staged = tf.function(lambda v: layer(v))(tf.constant([[3, 0, 5, 9, 10]]))
    np.testing.assert_array_equal(staged.numpy(), got)
    again = layers.IntegerLookup.from_config(layer.get_config())
    assert again.get_vocabulary() == layer.get_vocabulary()
    strict = layers.IntegerLookup(vocabulary=[1, 2], num_oov_indices=0)
    assert strict(tf.constant([2, 1])).numpy().tolist() == [1, 0]
    with pytest.raises(Exception) as e:
        strict(tf.constant([3]))
    assert "a token is not in the vocabulary and num_oov_indices=0" in str(e.value)
    with pytest.raises(ValueError) as e:
        layers.IntegerLookup(vocabulary=[1, -1])
    assert "the vocabulary holds the mask or OOV token -1" in str(e.value)


@pytest.mark.parametrize("cls", [layers.MixUp, layers.CutMix], ids=lambda c: c.__name__)
def test_batch_mixing_images_and_labels_agree(cls):
    n = 8
    images = np.broadcast_to(np.arange(n, dtype=np.float32)[:, None, None, None],
                             (n, 6, 6, 1)).copy()  # image i is filled with i
    labels = np.eye(n, dtype=np.float32)
    out = cls(seed=5)({"images": images, "labels": labels})
    got_images, got_labels = out["images"].numpy(), out["labels"].numpy()
    np.testing.assert_allclose(got_labels.sum(1), 1.0, rtol=1e-5)
    assert (got_labels.max(1) < 1 - 1e-6).any()  # some images were mixed
    for i in range(n):
        partners = [j for j in range(n) if j != i and got_labels[i, j] > 1e-6]
        assert len(partners) <= 1
        w = got_labels[i, i] if partners else 1.0
        j = partners[0] if partners else i
        if cls is layers.MixUp:  # a convex combination with the same weight as the labels
            np.testing.assert_allclose(got_images[i], w * i + (1 - w) * j, rtol=1e-4,
                                       atol=1e-4)
        else:  # pixels come from i or j; the label weight is the share kept from i
            values = set(np.unique(got_images[i]).tolist())
            assert values <= {float(i), float(j)}
            if j != i:
                np.testing.assert_allclose((got_images[i] == i).mean(), w, atol=1e-6)
    np.testing.assert_array_equal(cls()(images, training=False).numpy(), images)
    assert cls.from_config(cls(seed=3).get_config()).seed == 3


def test_base_class_hooks_name_what_a_subclass_must_define():
    # The private bases of the new layer families: a subclass that forgets its hook learns
    # which method to write (called unbound, since the bases are not meant to be built).
    from stagecraft.keras import attention, mixing_layers, preprocessing_layers

    class Custom:
        pass

    hooks = [(attention._QueryValueAttention._build_from, 3, "_build_from(query, key, value)"),
             (attention._BaseDenseAttention._scores, 2, "_scores(query, key)"),
             (mixing_layers._Mixing._mix_images, 2, "_mix_images(images, other)"),
             (preprocessing_layers._RandomLayer._augment, 1, "_augment(images)")]
    for hook, n_args, signature in hooks:
        with pytest.raises(NotImplementedError) as e:
            hook(Custom(), *[None] * n_args)
        assert str(e.value).startswith(f"Custom must define {signature}")
