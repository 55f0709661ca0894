"""tf.image against NumPy references written from TensorFlow 2's documented definitions
(per-pixel loops for the resize kernels, ``colorsys`` for HSV, direct windows for SSIM, a
plain greedy loop for non-max suppression): each op eagerly, staged on the reference
interpreter and on Numba, and, where differentiable, its gradient against central finite
differences. Plus seeding of the random ops, tf.data use, and the error messages."""
from __future__ import annotations

import colorsys
import heapq
import math
import zlib

import numpy as np
import pytest

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError

rng = np.random.default_rng(18)
IMG = rng.uniform(0.05, 0.95, size=(2, 4, 5, 3))      # a batch of RGB images in (0, 1)
ONE = IMG[0]                                           # one image [h, w, c]
GRAY = rng.uniform(size=(1, 5, 6, 2))
U8 = rng.integers(0, 256, size=(3, 4, 3)).astype(np.uint8)
F32 = np.float32


# ------------------------------------------------------------------ resize references

def _coord(i: int, n_in: int, n_out: int) -> float:
    """TF's half-pixel source coordinate, computed in float32 as its kernels do."""
    return float((F32(i) + F32(0.5)) * (F32(n_in) / F32(n_out)) - F32(0.5))


def ref_bilinear(x, oh, ow):
    n, h, w, c = x.shape
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            fy, fx = _coord(i, h, oh), _coord(j, w, ow)
            y0, x0 = math.floor(fy), math.floor(fx)
            dy, dx = fy - y0, fx - x0
            ya, yb = min(max(y0, 0), h - 1), min(max(y0 + 1, 0), h - 1)
            xa, xb = min(max(x0, 0), w - 1), min(max(x0 + 1, 0), w - 1)
            top = x[:, ya, xa] * (1 - dx) + x[:, ya, xb] * dx
            bottom = x[:, yb, xa] * (1 - dx) + x[:, yb, xb] * dx
            out[:, i, j] = top * (1 - dy) + bottom * dy
    return out


def ref_nearest(x, oh, ow):
    n, h, w, c = x.shape
    rows = [min(int(np.floor((F32(i) + F32(0.5)) * (F32(h) / F32(oh)))), h - 1)
            for i in range(oh)]
    cols = [min(int(np.floor((F32(j) + F32(0.5)) * (F32(w) / F32(ow)))), w - 1)
            for j in range(ow)]
    return x[:, rows][:, :, cols]


def _keys(d):
    """Keys' cubic convolution kernel with a = -0.5."""
    a, d = -0.5, abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


def _cubic_taps(i, n_in, n_out):
    """TF's bicubic taps of one output pixel: the fractional offset rounded to 1/1024, taps
    outside the image dropped and the rest renormalized."""
    f = _coord(i, n_in, n_out)
    base = math.floor(f)
    t = round((f - base) * 1024) / 1024
    taps = [(base + k, _keys(t - k)) for k in (-1, 0, 1, 2) if 0 <= base + k < n_in]
    total = sum(w for _, w in taps)
    return [(j, w / total) for j, w in taps]


def ref_bicubic(x, oh, ow):
    n, h, w, c = x.shape
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            for yy, wy in _cubic_taps(i, h, oh):
                for xx, wx in _cubic_taps(j, w, ow):
                    out[:, i, j] += wy * wx * x[:, yy, xx]
    return out


def ref_area(x, oh, ow):
    """Each output pixel is the mean of the input area it covers (partial pixels weighted)."""
    n, h, w, c = x.shape
    sy, sx = h / oh, w / ow
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            for yy in range(h):
                cy = max(0.0, min(yy + 1, (i + 1) * sy) - max(yy, i * sy))
                for xx in range(w):
                    cx = max(0.0, min(xx + 1, (j + 1) * sx) - max(xx, j * sx))
                    out[:, i, j] += cy * cx * x[:, yy, xx]
    return out / (sy * sx)


def _lanczos3(d):
    d = abs(d)
    if d > 3:
        return 0.0
    if d < 1e-3:
        return 1.0
    return 3 * math.sin(math.pi * d) * math.sin(math.pi * d / 3) / (math.pi * d) ** 2


def _triangle(d):
    return max(0.0, 1 - abs(d))


def ref_scaled_kernel(kernel, antialias):
    """TF's scale_and_translate: the kernel centered on (i + 0.5) * in / out, stretched by the
    downscale factor when antialiasing, sampled at input pixel centers, normalized."""
    def weights(i, n_in, n_out):
        center = (i + 0.5) * n_in / n_out
        stretch = max(n_in / n_out, 1.0) if antialias else 1.0
        w = np.array([kernel((j + 0.5 - center) / stretch) for j in range(n_in)])
        return w / w.sum()

    def run(x, oh, ow):
        n, h, w, c = x.shape
        out = np.zeros((n, oh, ow, c))
        for i in range(oh):
            wy = weights(i, h, oh)
            for j in range(ow):
                out[:, i, j] = np.einsum("y,x,nyxc->nc", wy, weights(j, w, ow), x)
        return out
    return run


def ref_patches(x, k, s, r, padding):
    n, h, w, c = x.shape
    span = [(k[0] - 1) * r[0] + 1, (k[1] - 1) * r[1] + 1]
    if padding == "VALID":
        oh, ow = (h - span[0]) // s[0] + 1, (w - span[1]) // s[1] + 1
        x_p = x
    else:
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph = max((oh - 1) * s[0] + span[0] - h, 0)
        pw = max((ow - 1) * s[1] + span[1] - w, 0)
        x_p = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    out = np.zeros((n, oh, ow, k[0] * k[1] * c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            window = x_p[:, i * s[0]:i * s[0] + span[0]:r[0], j * s[1]:j * s[1] + span[1]:r[1]]
            out[:, i, j] = window.reshape(n, -1)
    return out


def ref_crop_and_resize(x, boxes, index, ch, cw, method="bilinear", extrapolation=0.0):
    """Each crop pixel samples image index[b] at y1 (h - 1) + i (y2 - y1) (h - 1) / (ch - 1)
    (the box middle when ch is 1), likewise for x; outside the image: the extrapolation."""
    n, h, w, c = x.shape
    out = np.full((len(boxes), ch, cw, c), extrapolation, float)

    def points(lo, hi, size, count):
        if count == 1:
            return [0.5 * (lo + hi) * (size - 1)]
        return [lo * (size - 1) + k * (hi - lo) * (size - 1) / (count - 1) for k in range(count)]

    for b, (y1, x1, y2, x2) in enumerate(boxes):
        img = x[index[b]]
        for i, fy in enumerate(points(y1, y2, h, ch)):
            for j, fx in enumerate(points(x1, x2, w, cw)):
                if not (0 <= fy <= h - 1 and 0 <= fx <= w - 1):
                    continue
                if method == "nearest":  # round half away from zero
                    out[b, i, j] = img[int(math.floor(fy + 0.5)), int(math.floor(fx + 0.5))]
                    continue
                t, l = math.floor(fy), math.floor(fx)
                bt, r = math.ceil(fy), math.ceil(fx)
                dy, dx = fy - t, fx - l
                top = img[t, l] + (img[t, r] - img[t, l]) * dx
                bottom = img[bt, l] + (img[bt, r] - img[bt, l]) * dx
                out[b, i, j] = top + (bottom - top) * dy
    return out


CROP_BOXES = np.array([[0.1, 0.2, 0.8, 0.9], [0.9, 0.05, 0.3, 0.7], [-0.2, 0.1, 0.6, 1.3]])


def ref_draw_boxes(x, boxes, colors):
    """TF's outline drawing: edges at int(coordinate * (size - 1)), clamped spans, edges
    outside the image skipped, inverted or wholly outside boxes skipped."""
    out = x.copy()
    n, h, w, depth = x.shape
    for b in range(n):
        for i, (y0, x0, y1, x1) in enumerate(boxes[b]):
            color = [1.0] * depth if depth == 1 else colors[i % len(colors)][:depth]
            top, bottom = int(y0 * (h - 1)), int(y1 * (h - 1))
            left, right = int(x0 * (w - 1)), int(x1 * (w - 1))
            if top > bottom or left > right or top >= h or bottom < 0 or left >= w or right < 0:
                continue
            r0, r1, c0, c1 = max(top, 0), min(bottom, h - 1), max(left, 0), min(right, w - 1)
            for row in (top, bottom):
                if 0 <= row < h:
                    out[b, row, c0:c1 + 1] = color
            for col in (left, right):
                if 0 <= col < w:
                    out[b, r0:r1 + 1, col] = color
    return out


DRAW_BOXES = np.array([[[0.1, 0.2, 0.8, 0.9], [-0.3, 0.5, 0.5, 1.4], [0.6, 0.6, 0.2, 0.9]],
                       [[0.0, 0.0, 1.0, 1.0], [0.4, -0.2, 1.5, 0.3], [1.2, 0.0, 1.5, 1.0]]])
DRAW_COLORS = [[1.0, 0.0, 0.0, 1.0], [0.0, 0.5, 1.0, 1.0]]


# ------------------------------------------------------------------- colour references

def _per_pixel(fn, x):
    flat = x.reshape(-1, 3)
    return np.array([fn(*p) for p in flat]).reshape(x.shape)


def ref_saturation(x, f):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb(h, min(max(s * f, 0), 1), v)
    return _per_pixel(one, x)


def ref_hue(x, delta):
    def one(r, g, b):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        return colorsys.hsv_to_rgb((h + delta) % 1.0, s, v)
    return _per_pixel(one, x)


def ref_contrast(x, f):
    mean = x.mean(axis=(-3, -2), keepdims=True)
    return (x - mean) * f + mean


def ref_standardize(x):
    mean = x.mean(axis=(-3, -2, -1), keepdims=True)
    std = x.std(axis=(-3, -2, -1), keepdims=True)
    return (x - mean) / np.maximum(std, 1 / np.sqrt(np.prod(x.shape[-3:])))


# ------------------------------------------------------------------ measure references

def ref_sobel(x):
    p = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)], mode="reflect")
    ky = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], float)
    n, h, w, c = x.shape
    out = np.zeros((n, h, w, c, 2))
    for i in range(h):
        for j in range(w):
            win = p[:, i:i + 3, j:j + 3]
            out[:, i, j, :, 0] = np.einsum("ab,nabc->nc", ky, win)
            out[:, i, j, :, 1] = np.einsum("ab,nabc->nc", ky.T, win)
    return out


def ref_tv(x):
    return (np.abs(np.diff(x, axis=-3)).sum(axis=(-3, -2, -1))
            + np.abs(np.diff(x, axis=-2)).sum(axis=(-3, -2, -1)))


def ref_psnr(a, b, peak):
    return 10 * np.log10(peak ** 2 / ((a - b) ** 2).mean(axis=(-3, -2, -1)))


def _gauss2d(size, sigma):
    c = np.arange(size) - (size - 1) / 2
    g = np.exp(-(c[:, None] ** 2 + c[None, :] ** 2) / (2 * sigma ** 2))
    return g / g.sum()


def _ssim_maps(a, b, peak, size, sigma):
    """Per-pixel luminance and contrast-structure over every VALID window (a direct loop)."""
    g = _gauss2d(size, sigma)
    c1, c2 = (0.01 * peak) ** 2, (0.03 * peak) ** 2
    h, w = a.shape[-3] - size + 1, a.shape[-2] - size + 1
    lum = np.zeros(a.shape[:-3] + (h, w, a.shape[-1]))
    cs = np.zeros_like(lum)
    for i in range(h):
        for j in range(w):
            wa, wb = a[..., i:i + size, j:j + size, :], b[..., i:i + size, j:j + size, :]

            def mean(t):
                return np.einsum("ij,...ijc->...c", g, t)
            ma, mb = mean(wa), mean(wb)
            va, vb, cov = mean(wa * wa) - ma ** 2, mean(wb * wb) - mb ** 2, mean(wa * wb) - ma * mb
            lum[..., i, j, :] = (2 * ma * mb + c1) / (ma ** 2 + mb ** 2 + c1)
            cs[..., i, j, :] = (2 * cov + c2) / (va + vb + c2)
    return lum, cs


def ref_ssim(a, b, peak, size, sigma=1.5):
    lum, cs = _ssim_maps(a, b, peak, size, sigma)
    return (lum * cs).mean(axis=(-3, -2, -1))


def ref_ms_ssim(a, b, peak, weights, size):
    parts = []
    for k in range(len(weights)):
        if k:
            def down(t):
                if t.shape[-3] % 2:
                    t = np.concatenate([t, t[..., -1:, :, :]], axis=-3)
                if t.shape[-2] % 2:
                    t = np.concatenate([t, t[..., -1:, :]], axis=-2)
                return (t[..., 0::2, 0::2, :] + t[..., 1::2, 0::2, :] + t[..., 0::2, 1::2, :]
                        + t[..., 1::2, 1::2, :]) / 4
            a, b = down(a), down(b)
        lum, cs = _ssim_maps(a, b, peak, size, 1.5)
        parts.append(np.maximum(cs.mean(axis=(-3, -2)), 0))
    parts[-1] = np.maximum((lum * cs).mean(axis=(-3, -2)), 0)
    return np.prod([p ** wt for p, wt in zip(parts, weights)], axis=0).mean(-1)


def ref_iou(p, q):
    ya, xa, yb, xb = min(p[0], p[2]), min(p[1], p[3]), max(p[0], p[2]), max(p[1], p[3])
    yc, xc, yd, xd = min(q[0], q[2]), min(q[1], q[3]), max(q[0], q[2]), max(q[1], q[3])
    area_p, area_q = (yb - ya) * (xb - xa), (yd - yc) * (xd - xc)
    if area_p <= 0 or area_q <= 0:
        return 0.0
    inter = max(min(yb, yd) - max(ya, yc), 0) * max(min(xb, xd) - max(xa, xc), 0)
    return inter / (area_p + area_q - inter)


def ref_soft_nms(similarity, scores, limit, thr, score_t=-np.inf, sigma=0.0, strict=False):
    """TF's selection loop: a priority queue of candidates (ties: lower index first), each
    popped candidate compared with the boxes selected since it was last looked at; a
    similarity >= thr suppresses it, soft-NMS decays its score and re-queues it."""
    scale = -0.5 / sigma if sigma > 0 else 0.0
    queue = [(-s, i, 0) for i, s in enumerate(scores) if s > score_t]
    heapq.heapify(queue)
    chosen, kept = [], []
    while len(chosen) < limit and queue:
        neg, i, begin = heapq.heappop(queue)
        score = original = -neg
        hard = False
        for j in range(len(chosen) - 1, begin - 1, -1):
            sim = similarity(i, chosen[j])
            score *= math.exp(scale * sim * sim) if sim <= thr else 0.0
            if sim > thr or (sim == thr and not strict):
                hard = True
                break
            if score <= score_t:
                break
        if hard:
            continue
        if score == original:
            chosen.append(i)
            kept.append(score)
        elif score > score_t:
            heapq.heappush(queue, (-score, i, len(chosen)))
    return np.array(chosen, np.int32), np.array(kept)


def ref_nms(boxes, scores, limit, iou_t, score_t=-np.inf):
    return ref_soft_nms(lambda i, j: ref_iou(boxes[i], boxes[j]), scores, limit, iou_t,
                        score_t)[0]


BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                  [1, 1, 0, 0], [0, 10.1, 1, 11.1], [0, 100, 1, 101], [5, 5, 5, 6]], float)
SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3, 0.3, 0.99])

# name: (stagecraft function, NumPy reference, arguments, differentiable)
CASES = {
    "resize_bilinear_up": (lambda x: tf.image.resize(x, [7, 8]),
                           lambda x: ref_bilinear(x, 7, 8), (IMG,), True),
    "resize_bilinear_down_3d": (lambda x: tf.image.resize(x, [3, 2]),
                                lambda x: ref_bilinear(x[None], 3, 2)[0], (ONE,), True),
    "resize_nearest": (lambda x: tf.image.resize(x, [6, 3], "nearest"),
                       lambda x: ref_nearest(x, 6, 3), (IMG,), True),
    "resize_bicubic": (lambda x: tf.image.resize(x, [7, 3], tf.image.ResizeMethod.BICUBIC),
                       lambda x: ref_bicubic(x, 7, 3), (IMG,), True),
    "resize_area": (lambda x: tf.image.resize(x, [3, 2], "area"),
                    lambda x: ref_area(x, 3, 2), (IMG,), True),
    "resize_area_up": (lambda x: tf.image.resize(x, [5, 7], "area"),
                       lambda x: ref_area(x, 5, 7), (IMG,), True),
    "resize_antialias": (lambda x: tf.image.resize(x, [2, 3], antialias=True),
                         lambda x: ref_scaled_kernel(_triangle, True)(x, 2, 3), (IMG,), True),
    "resize_lanczos3": (lambda x: tf.image.resize(x, [6, 3], "lanczos3"),
                        lambda x: ref_scaled_kernel(_lanczos3, False)(x, 6, 3), (IMG,), True),
    "resize_aspect": (lambda x: tf.image.resize(x, [8, 8], preserve_aspect_ratio=True),
                      lambda x: ref_bilinear(x, 6, 8), (IMG,), True),
    "resize_with_pad": (lambda x: tf.image.resize_with_pad(x, 6, 6),
                        # TF pads by the unrounded size (4.8 rows): 0 rows above, 2 below
                        lambda x: np.pad(ref_bilinear(x, 4, 6), [(0, 0), (0, 2), (0, 0),
                                                                 (0, 0)]), (IMG,), True),
    "crop_and_resize": (lambda x: tf.image.crop_and_resize(x, CROP_BOXES, [1, 0, 1], [3, 4]),
                        lambda x: ref_crop_and_resize(x, CROP_BOXES, [1, 0, 1], 3, 4),
                        (IMG,), True),
    "crop_and_resize_nearest": (
        lambda x: tf.image.crop_and_resize(x, CROP_BOXES, [0, 0, 1], [2, 1], "nearest", 0.5),
        lambda x: ref_crop_and_resize(x, CROP_BOXES, [0, 0, 1], 2, 1, "nearest", 0.5),
        (IMG,), True),
    "crop_and_resize_boxes": (
        lambda b: tf.image.crop_and_resize(tf.constant(IMG), b, [0, 1], [3, 2]),
        lambda b: ref_crop_and_resize(IMG, b, [0, 1], 3, 2), (CROP_BOXES[:2],), True),
    "draw_bounding_boxes": (lambda x: tf.image.draw_bounding_boxes(x, DRAW_BOXES, DRAW_COLORS),
                            lambda x: ref_draw_boxes(x, DRAW_BOXES, DRAW_COLORS), (IMG,), True),
    "draw_bounding_boxes_gray": (
        lambda x: tf.image.draw_bounding_boxes(x, DRAW_BOXES, DRAW_COLORS),
        lambda x: ref_draw_boxes(x, DRAW_BOXES, DRAW_COLORS), (IMG[..., :1],), True),
    "flip_left_right": (tf.image.flip_left_right, lambda x: x[..., ::-1, :], (IMG,), True),
    "flip_up_down": (tf.image.flip_up_down, lambda x: x[..., ::-1, :, :], (ONE,), True),
    "rot90": (lambda x: tf.image.rot90(x), lambda x: np.rot90(x, 1, (1, 2)), (IMG,), True),
    "rot90_k3": (lambda x: tf.image.rot90(x, k=-1), lambda x: np.rot90(x, 3, (0, 1)), (ONE,),
                 True),
    "transpose": (tf.image.transpose, lambda x: x.transpose(0, 2, 1, 3), (IMG,), True),
    "central_crop": (lambda x: tf.image.central_crop(x, 0.5),
                     lambda x: x[:, 1:3, 1:4], (IMG,), True),
    "crop_to_bounding_box": (lambda x: tf.image.crop_to_bounding_box(x, 1, 2, 2, 3),
                             lambda x: x[1:3, 2:5], (ONE,), True),
    "pad_to_bounding_box": (lambda x: tf.image.pad_to_bounding_box(x, 2, 1, 7, 6),
                            lambda x: np.pad(x, [(0, 0), (2, 1), (1, 0), (0, 0)]), (IMG,), True),
    "resize_with_crop_or_pad": (lambda x: tf.image.resize_with_crop_or_pad(x, 7, 2),
                                lambda x: np.pad(x[:, 1:3], [(1, 2), (0, 0), (0, 0)]),
                                (ONE,), True),
    "extract_patches_valid": (
        lambda x: tf.image.extract_patches(x, [1, 2, 3, 1], [1, 1, 2, 1], [1, 1, 1, 1], "VALID"),
        lambda x: ref_patches(x, (2, 3), (1, 2), (1, 1), "VALID"), (IMG,), True),
    "extract_patches_same_rates": (
        lambda x: tf.image.extract_patches(x, [1, 2, 2, 1], [1, 2, 3, 1], [1, 2, 1, 1], "SAME"),
        lambda x: ref_patches(x, (2, 2), (2, 3), (2, 1), "SAME"), (IMG,), True),
    "rgb_to_grayscale": (tf.image.rgb_to_grayscale,
                         lambda x: (x @ [0.2989, 0.5870, 0.1140])[..., None], (IMG,), True),
    "grayscale_to_rgb": (tf.image.grayscale_to_rgb, lambda x: np.repeat(x[..., :1], 3, -1),
                         (GRAY[..., :1],), True),
    "rgb_to_hsv": (tf.image.rgb_to_hsv, lambda x: _per_pixel(colorsys.rgb_to_hsv, x), (IMG,),
                   True),
    "hsv_to_rgb": (tf.image.hsv_to_rgb, lambda x: _per_pixel(colorsys.hsv_to_rgb, x), (IMG,),
                   True),
    "yiq_round_trip": (lambda x: tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(x)), lambda x: x,
                       (IMG,), True),
    "yuv_round_trip": (lambda x: tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(x)), lambda x: x,
                       (IMG,), True),
    "rgb_to_yiq_luma": (lambda x: tf.image.rgb_to_yiq(x)[..., 0],
                        lambda x: x @ [0.299, 0.587, 0.114], (IMG,), True),
    "rgb_to_yuv_luma": (lambda x: tf.image.rgb_to_yuv(x)[..., 0],
                        lambda x: x @ [0.299, 0.587, 0.114], (IMG,), True),
    "adjust_brightness": (lambda x: tf.image.adjust_brightness(x, 0.2), lambda x: x + 0.2,
                          (IMG,), True),
    "adjust_contrast": (lambda x: tf.image.adjust_contrast(x, 1.7),
                        lambda x: ref_contrast(x, 1.7), (IMG,), True),
    "adjust_gamma": (lambda x: tf.image.adjust_gamma(x, 2.2, 0.9), lambda x: 0.9 * x ** 2.2,
                     (IMG,), True),
    "adjust_saturation": (lambda x: tf.image.adjust_saturation(x, 0.6),
                          lambda x: ref_saturation(x, 0.6), (IMG,), True),
    "adjust_saturation_clips": (lambda x: tf.image.adjust_saturation(x, 3.0),
                                lambda x: ref_saturation(x, 3.0), (ONE,), True),
    "adjust_hue": (lambda x: tf.image.adjust_hue(x, 0.3), lambda x: ref_hue(x, 0.3), (IMG,),
                   True),
    "adjust_hue_negative": (lambda x: tf.image.adjust_hue(x, -0.7),
                            lambda x: ref_hue(x, -0.7), (ONE,), True),
    "per_image_standardization": (tf.image.per_image_standardization, ref_standardize,
                                  (IMG,), True),
    "image_gradients": (lambda x: tf.stack(tf.image.image_gradients(x)),
                        lambda x: np.stack([np.pad(np.diff(x, axis=1), [(0, 0), (0, 1), (0, 0),
                                                                        (0, 0)]),
                                            np.pad(np.diff(x, axis=2), [(0, 0), (0, 0), (0, 1),
                                                                        (0, 0)])]),
                        (IMG,), True),
    "sobel_edges": (tf.image.sobel_edges, ref_sobel, (IMG,), True),
    "total_variation": (tf.image.total_variation, ref_tv, (IMG,), True),
    "total_variation_3d": (tf.image.total_variation, ref_tv, (ONE,), True),
    "psnr": (lambda a, b: tf.image.psnr(a, b, 1.0), lambda a, b: ref_psnr(a, b, 1.0),
             (IMG, IMG[::-1]), True),
    "ssim": (lambda a, b: tf.image.ssim(a, b, 1.0, filter_size=3),
             lambda a, b: ref_ssim(a, b, 1.0, 3), (IMG, IMG[:, ::-1]), True),
    "ssim_sigma": (lambda a, b: tf.image.ssim(a, b, 2.0, filter_size=4, filter_sigma=0.8),
                   lambda a, b: ref_ssim(a, b, 2.0, 4, 0.8), (GRAY, GRAY[..., ::-1]), True),
    "ssim_multiscale": (lambda a, b: tf.image.ssim_multiscale(a, b, 1.0, (0.4, 0.6),
                                                              filter_size=2),
                        lambda a, b: ref_ms_ssim(a, b, 1.0, (0.4, 0.6), 2),
                        (GRAY, 0.8 * GRAY + 0.1 * GRAY[:, ::-1]), True),
    "non_max_suppression": (lambda b, s: tf.image.non_max_suppression(b, s, 5, 0.4),
                            lambda b, s: ref_nms(b, s, 5, 0.4), (BOXES, SCORES), False),
    "non_max_suppression_limits": (
        lambda b, s: tf.image.non_max_suppression(b, s, 2, 0.05, score_threshold=0.8),
        lambda b, s: ref_nms(b, s, 2, 0.05, 0.8), (BOXES, SCORES), False),
}
# Ops that return float32 whatever the input (TF's rule), compared at float32 precision.
FLOAT32_OUT = {n for n in CASES if n.startswith(("resize", "per_image", "psnr", "ssim",
                                                 "adjust", "rgb_to_gray", "crop_and_resize"))}
# TF's YIQ and YUV matrices are inverses of each other to about 1e-4.
TOLERANCE = {"yiq_round_trip": 2e-4, "yuv_round_trip": 2e-4}


# Numba compiles cost seconds each: the default run compiles a case of HSV where-chains and
# one of a while loop (and test_resize_with_unknown_batch_size_staged the resize gathers);
# --full-matrix compiles every case.
NUMBA_SAMPLE = {"adjust_hue", "non_max_suppression"}
RUNS = [(how, name) if how != "numba" or name in NUMBA_SAMPLE else
        pytest.param(how, name, marks=pytest.mark.full_matrix)
        for how in ("eager", "reference", "numba") for name in CASES]


@pytest.mark.parametrize("how,name", RUNS)
def test_values_match_numpy(name, how):
    fn, ref, args, _ = CASES[name]
    tensors = [tf.constant(a) for a in args]
    run = fn if how == "eager" else tf.function(fn, backend=how)
    got = run(*tensors).numpy()
    want = ref(*args)
    assert got.shape == want.shape
    tol = TOLERANCE.get(name, 2e-5 if name in FLOAT32_OUT else 1e-9)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[3]])
def test_gradients_match_finite_differences(name):
    """The gradient's projections on a few random directions against central differences
    along them (a full Jacobian by finite differences costs one pair of runs per pixel)."""
    fn, ref, args, _ = CASES[name]
    draw = np.random.default_rng(zlib.crc32(name.encode()))
    weights = draw.normal(size=np.shape(ref(*args)))
    x = tf.Variable(args[0])
    rest = [tf.constant(a) for a in args[1:]]

    def objective():
        return tf.reduce_sum(tf.cast(fn(x, *rest), tf.float64) * weights)

    with tf.GradientTape() as tape:
        value = objective()
    grad = tf.convert_to_tensor(tape.gradient(value, x)).numpy()
    # float32 results: a larger step (small enough to stay clear of the kinks of max/min and
    # of the HSV hue sectors), a looser match
    coarse = name in FLOAT32_OUT
    eps = 3e-4 if coarse else 1e-6
    for _ in range(3):
        direction = draw.normal(size=args[0].shape)
        ends = []
        for sign in (1, -1):
            x.assign(args[0] + sign * eps * direction)
            ends.append(float(objective()))
        numeric = (ends[0] - ends[1]) / (2 * eps)
        np.testing.assert_allclose((grad * direction).sum(), numeric,
                                   rtol=2e-3 if coarse else 1e-6, atol=5e-3 if coarse else 1e-8)


def test_resize_matches_tensorflows_documented_outputs():
    x = tf.reshape(tf.constant([1.0, 2.0, 3.0, 4.0]), [2, 2, 1])
    assert tf.image.resize(x, [3, 3])[..., 0].numpy().tolist() == [
        [1.0, 1.5, 2.0], [2.0, 2.5, 3.0], [3.0, 3.5, 4.0]]
    assert tf.image.resize(x, [4, 4], "nearest")[..., 0].numpy().tolist() == [
        [1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 4.0, 4.0], [3.0, 3.0, 4.0, 4.0]]
    # 'nearest' keeps the dtype; the interpolating methods return float32
    assert tf.image.resize(tf.constant(U8), [2, 2], "nearest").dtype == tf.uint8
    assert tf.image.resize(tf.constant(U8), [2, 2], "bicubic").dtype == tf.float32
    assert tf.image.resize(tf.constant(ONE), [2, 2]).dtype == tf.float32
    same = tf.image.resize(tf.constant(ONE), [4, 5])
    np.testing.assert_allclose(same.numpy(), ONE.astype(np.float32))


@pytest.mark.parametrize("method", ["bilinear", "bicubic", "area", "gaussian", "mitchellcubic",
                                    "lanczos5"])
def test_every_interpolating_resize_preserves_constants(method):
    y = tf.image.resize(tf.fill([1, 5, 7, 2], 3.5), [3, 11], method, antialias=True)
    np.testing.assert_allclose(y.numpy(), 3.5, rtol=1e-6)


def test_resize_with_unknown_batch_size_staged():
    f = tf.function(lambda x: tf.image.resize(x, [3, 3]), backend="numba",
                    input_signature=[tf.TensorSpec([None, 4, 5, 3], tf.float64)])
    np.testing.assert_allclose(f(tf.constant(IMG)).numpy(), ref_bilinear(IMG, 3, 3), rtol=2e-5)


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
def test_resize_of_images_whose_size_is_known_only_at_run_time(method):
    f = tf.function(lambda x: tf.image.resize(x, [7, 3], method), backend="reference",
                    input_signature=[tf.TensorSpec([None, None, None, 3], tf.float64)])
    ref = ref_bilinear if method == "bilinear" else ref_nearest
    for shape in ((2, 4, 5, 3), (1, 9, 2, 3)):
        x = rng.uniform(size=shape)
        out = f(tf.constant(x))
        assert out.shape == (shape[0], 7, 3, 3)
        np.testing.assert_allclose(out.numpy(), ref(x, 7, 3), rtol=2e-5, atol=2e-6)


def test_convert_image_dtype_follows_tensorflows_scaling():
    conv = tf.image.convert_image_dtype
    np.testing.assert_allclose(conv(tf.constant(U8), tf.float32).numpy(),
                               U8.astype(np.float32) * F32(1 / 255))
    assert conv(tf.constant([0.0, 0.5, 1.0, 1.2]), tf.uint8).numpy().tolist()[:3] == [0, 127, 255]
    assert conv(tf.constant([-0.2, 1.2]), tf.uint8, saturate=True).numpy().tolist() == [0, 255]
    assert conv(tf.constant([0, 255], tf.uint8), tf.int16).numpy().tolist() == [0, 32640]
    assert conv(tf.constant([0, 32767], tf.int16), tf.uint8).numpy().tolist() == [0, 255]
    assert conv(tf.constant([0.25], tf.float64), tf.float32).dtype == tf.float32
    with pytest.raises(AttributeError, match="floating point or integer"):
        conv(tf.constant([True]), tf.float32)


def test_adjust_ops_work_in_float_and_cast_back():
    x = tf.constant(U8)
    y = tf.image.adjust_brightness(x, 0.1)
    want = np.clip(U8.astype(np.float32) * F32(1 / 255) + F32(0.1), 0, 1) * F32(255.5)
    assert y.dtype == tf.uint8
    np.testing.assert_array_equal(y.numpy(), want.astype(np.uint8))
    assert tf.image.adjust_contrast(x, 2.0).dtype == tf.uint8
    assert tf.image.adjust_hue(x, 0.1).dtype == tf.uint8
    assert tf.image.rgb_to_grayscale(x).dtype == tf.uint8
    assert tf.image.per_image_standardization(x).dtype == tf.float32


def _seeded_ops():
    return {
        "flip_lr": lambda x, s: tf.image.stateless_random_flip_left_right(x, s),
        "flip_ud": lambda x, s: tf.image.stateless_random_flip_up_down(x, s),
        "brightness": lambda x, s: tf.image.stateless_random_brightness(x, 0.2, s),
        "contrast": lambda x, s: tf.image.stateless_random_contrast(x, 0.5, 1.5, s),
        "saturation": lambda x, s: tf.image.stateless_random_saturation(x, 0.5, 1.5, s),
        "hue": lambda x, s: tf.image.stateless_random_hue(x, 0.3, s),
        "crop": lambda x, s: tf.image.stateless_random_crop(x, [2, 3, 2, 3], s),
    }


@pytest.mark.parametrize("op", list(_seeded_ops()))
def test_stateless_random_ops_depend_only_on_the_seed(op):
    fn = _seeded_ops()[op]
    x = tf.constant(IMG)
    a = fn(x, [3, 4]).numpy()
    np.testing.assert_array_equal(a, fn(x, [3, 4]).numpy())
    staged = tf.function(fn, backend="reference")(x, tf.constant([3, 4]))
    np.testing.assert_allclose(staged.numpy(), a, rtol=1e-6)
    outcomes = {fn(x, [k, 1]).numpy().tobytes() for k in range(12)}
    assert len(outcomes) > 1


def test_random_ops_draw_from_the_allowed_range():
    x = tf.constant(IMG)
    for seed in range(8):
        f = tf.image.random_flip_left_right(x, seed=seed).numpy()
        for i in range(2):  # each image of the batch flips on its own
            assert np.array_equal(f[i], IMG[i]) or np.array_equal(f[i], IMG[i, :, ::-1])
        c = tf.image.random_crop(x, [1, 2, 5, 3], seed=seed).numpy()
        assert any(np.array_equal(c, IMG[n:n + 1, r:r + 2]) for n in range(2) for r in range(3))
        delta = tf.image.random_brightness(x, 0.1, seed=seed).numpy() - IMG
        assert np.ptp(delta) < 1e-6 and -0.1 <= delta.mean() <= 0.1
    tf.random.set_seed(5)
    a = tf.image.random_hue(x, 0.4).numpy()
    tf.random.set_seed(5)
    np.testing.assert_array_equal(a, tf.image.random_hue(x, 0.4).numpy())


def test_random_ops_draw_anew_on_each_staged_call():
    f = tf.function(lambda x: tf.image.random_crop(x, [1, 1, 1, 1]), backend="reference")
    x = tf.constant(np.arange(40.0).reshape(2, 4, 5, 1))
    assert len({float(f(x)[0, 0, 0, 0]) for _ in range(10)}) > 1
    g = tf.function(lambda x: tf.image.random_contrast(x, 0.2, 1.8), backend="reference")
    assert len({g(tf.constant(IMG)).numpy().tobytes() for _ in range(4)}) > 1


def test_image_ops_in_a_dataset_map():
    ds = tf.data.Dataset.from_tensor_slices(IMG).map(
        lambda im: tf.image.stateless_random_flip_left_right(
            tf.image.resize(im, [3, 3]), seed=[1, 2]))
    out = np.stack([e.numpy() for e in ds])
    want = ref_bilinear(IMG, 3, 3)
    for o, w in zip(out, want):
        assert np.allclose(o, w, atol=2e-6) or np.allclose(o, w[:, ::-1], atol=2e-6)
    crops = tf.data.Dataset.from_tensor_slices(np.repeat(IMG, 3, axis=0)).map(
        lambda im: tf.image.random_crop(tf.image.random_flip_left_right(im), [2, 2, 3]))
    seen = set()
    for crop, im in zip(crops, np.repeat(IMG, 3, axis=0)):
        c = crop.numpy()
        seen.add(c.tobytes())
        assert any(np.array_equal(c, v[r:r + 2, q:q + 2]) for v in (im, im[:, ::-1])
                   for r in range(3) for q in range(4))
    assert len(seen) > 1


def test_rot90_with_a_run_time_k():
    sq = tf.constant(IMG[:, :4, :4])
    f = tf.function(lambda x, k: tf.image.rot90(x, k), backend="reference")
    for k in range(-1, 5):
        np.testing.assert_array_equal(f(sq, tf.constant(k)).numpy(),
                                      np.rot90(IMG[:, :4, :4], k, (1, 2)))


def test_crop_with_run_time_offsets_keeps_a_static_shape():
    f = tf.function(lambda x, o: tf.image.crop_to_bounding_box(x, o, o + 1, 2, 2),
                    backend="reference")
    out = f(tf.constant(IMG), tf.constant(1))
    assert out.shape == (2, 2, 2, 3)
    np.testing.assert_array_equal(out.numpy(), IMG[:, 1:3, 2:4])


def test_non_max_suppression_output_size_is_dynamic_when_staged():
    seen = []

    @tf.function(backend="reference")
    def f(b, s):
        out = tf.image.non_max_suppression(b, s, 6, 0.4)
        seen.append(out.shape.as_list())
        return out

    got = f(tf.constant(BOXES), tf.constant(SCORES)).numpy()
    np.testing.assert_array_equal(got, ref_nms(BOXES, SCORES, 6, 0.4))
    assert seen == [[None]]


@pytest.mark.parametrize("how", ["eager", "reference"])
def test_soft_non_max_suppression_decays_scores(how):
    boxes = rng.uniform(0, 1, size=(12, 4)) * [4, 4, 4, 4]
    scores = rng.uniform(0.1, 1, size=12)

    def fn(b, s):
        return tf.image.non_max_suppression_with_scores(b, s, 8, 0.7, 0.2, soft_nms_sigma=0.4)
    run = fn if how == "eager" else tf.function(fn, backend=how)
    idx, kept = run(tf.constant(boxes), tf.constant(scores))
    want_idx, want_kept = ref_soft_nms(lambda i, j: ref_iou(boxes[i], boxes[j]), scores, 8,
                                       0.7, 0.2, 0.4)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    np.testing.assert_allclose(kept.numpy(), want_kept, rtol=1e-5)
    hard_idx, hard_kept = tf.image.non_max_suppression_with_scores(boxes, scores, 8, 0.3)
    np.testing.assert_array_equal(hard_idx.numpy(), ref_nms(boxes, scores, 8, 0.3))
    np.testing.assert_allclose(hard_kept.numpy(), scores[hard_idx.numpy()], rtol=1e-6)


@pytest.mark.parametrize("how", ["eager", "reference"])
def test_padded_non_max_suppression_over_a_batch(how):
    boxes = np.stack([BOXES, BOXES[::-1]])
    scores = np.stack([SCORES, SCORES])

    def fn(b, s):
        return tf.image.non_max_suppression_padded(b, s, 6, 0.4, pad_to_max_output_size=True)
    run = fn if how == "eager" else tf.function(fn, backend=how)
    idx, count = run(tf.constant(boxes), tf.constant(scores))
    for row in range(2):
        want = ref_nms(boxes[row], scores[row], 6, 0.4)
        assert int(count[row]) == len(want)
        np.testing.assert_array_equal(idx[row].numpy(), np.pad(want, [0, 6 - len(want)]))
    one, n = tf.image.non_max_suppression_padded(BOXES, SCORES, 3, 0.4)
    np.testing.assert_array_equal(one.numpy(), ref_nms(BOXES, SCORES, 3, 0.4))
    assert int(n) == 3


def test_non_max_suppression_overlaps_uses_the_given_matrix():
    m = rng.uniform(size=(7, 7))
    m = (m + m.T) / 2
    scores = rng.uniform(size=7)
    got = tf.image.non_max_suppression_overlaps(m, scores, 5, 0.6, 0.1).numpy()
    np.testing.assert_array_equal(got, ref_soft_nms(lambda i, j: m[i, j], scores, 5, 0.6,
                                                    0.1)[0])


def ref_combined_nms(boxes, scores, per_class, total, thr, score_t, pad_per_class, clip):
    batch, n, q, _ = boxes.shape
    k = scores.shape[2]
    size = min(per_class * k, total) if pad_per_class else total
    out = [np.zeros((batch, size, 4)), np.zeros((batch, size)), np.zeros((batch, size)),
           np.zeros(batch, np.int32)]
    for b in range(batch):
        found = []
        for c in range(k):
            bx = boxes[b, :, 0 if q == 1 else c]
            idx, kept = ref_soft_nms(lambda i, j: ref_iou(bx[i], bx[j]), scores[b, :, c],
                                     per_class, thr, score_t, strict=True)
            found += [(-sc, c, r, bx[i]) for r, (i, sc) in enumerate(zip(idx, kept))]
        found = sorted(found, key=lambda t: t[:3])[:size]
        for r, (neg, c, _, box) in enumerate(found):
            out[0][b, r] = np.clip(box, 0, 1) if clip else box
            out[1][b, r], out[2][b, r] = -neg, c
        out[3][b] = len(found)
    return out


@pytest.mark.parametrize("q,per_class,pad_per_class,clip", [(1, 2, False, True),
                                                             (3, 1, True, False)])
def test_combined_non_max_suppression(q, per_class, pad_per_class, clip):
    boxes = rng.uniform(-0.2, 1.2, size=(2, 6, q, 4))
    scores = rng.uniform(size=(2, 6, 3))
    got = tf.image.combined_non_max_suppression(boxes, scores, per_class, 5, 0.3, 0.2,
                                                pad_per_class=pad_per_class, clip_boxes=clip)
    want = ref_combined_nms(boxes, scores, per_class, 5, 0.3, 0.2, pad_per_class, clip)
    assert got[0].shape == want[0].shape
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-7)


def test_non_max_suppression_at_a_zero_threshold_keeps_one_box():
    # TF 2 compares IoU >= iou_threshold, so even disjoint boxes (IoU 0) are suppressed
    assert tf.image.non_max_suppression(BOXES, SCORES, 8, 0.0).numpy().tolist() == [7]


def ref_distorted_box(height, width, boxes, draws, min_covered, ratios, areas):
    """TF's rejection sampling of a crop, one attempt per row of draws in [0, 1) (aspect
    ratio, height, top, left), in float32 like its kernel; the whole image when none fits."""
    f = np.float32
    pixel_boxes = [(int(b[0] * height), int(b[1] * width), int(b[2] * height), int(b[3] * width))
                   for b in boxes]
    for u in draws:
        ratio = f(u[0]) * f(ratios[1] - ratios[0]) + f(ratios[0])
        lo_area, hi_area = f(areas[0]) * f(height * width), f(areas[1]) * f(height * width)
        lo_h, hi_h = int(np.rint(np.sqrt(lo_area / ratio))), int(np.rint(np.sqrt(hi_area / ratio)))
        if np.rint(hi_h * ratio) > width:
            hi_h = int(np.floor((width + f(0.5) - f(1e-7)) / ratio))
            if np.rint(hi_h * ratio) > width:
                hi_h -= 1
        hi_h = min(hi_h, height)
        lo_h = min(lo_h, hi_h)
        h = lo_h + int(np.floor(u[1] * f(hi_h - lo_h + 1)))
        w = int(np.rint(h * ratio))
        if w * h < lo_area:
            h += 1
            w = int(np.rint(h * ratio))
        if w * h > hi_area:
            h -= 1
            w = int(np.rint(h * ratio))
        if not (lo_area <= w * h <= hi_area and 0 < w <= width and 0 < h <= height):
            continue
        y, x = int(np.floor(u[2] * f(height - h))), int(np.floor(u[3] * f(width - w)))
        for by0, bx0, by1, bx1 in pixel_boxes:
            area = (by1 - by0) * (bx1 - bx0)
            inter = (max(min(y + h, by1) - max(y, by0), 0) * max(min(x + w, bx1) - max(x, bx0), 0))
            if area >= 1 and inter / area >= min_covered:
                return [y, x, 0], [h, w, -1]
    return [0, 0, 0], [height, width, -1]


@pytest.mark.parametrize("seed", range(6))
def test_sample_distorted_bounding_box_follows_tensorflows_sampling(seed):
    boxes = [[0.1, 0.2, 0.5, 0.9], [0.6, 0.0, 0.95, 0.3]]
    args = dict(min_object_covered=0.6, aspect_ratio_range=(0.5, 2.0), area_range=(0.1, 0.8),
                max_attempts=20)
    begin, size, window = tf.image.stateless_sample_distorted_bounding_box(
        [30, 50, 3], [boxes], [seed, 7], **args)
    draws = tf.random.stateless_uniform([20, 4], [seed, 7]).numpy()
    want_begin, want_size = ref_distorted_box(30, 50, boxes, draws, 0.6, (0.5, 2.0), (0.1, 0.8))
    assert begin.numpy().tolist() == want_begin and size.numpy().tolist() == want_size
    y, x, h, w = want_begin[0], want_begin[1], want_size[0], want_size[1]
    np.testing.assert_allclose(window.numpy(), [[[y / 30, x / 50, (y + h) / 30, (x + w) / 50]]],
                               rtol=1e-6)
    staged = tf.function(lambda s: tf.image.stateless_sample_distorted_bounding_box(
        [30, 50, 3], [boxes], s, **args), backend="reference")(tf.constant([seed, 7]))
    assert staged[0].numpy().tolist() == want_begin
    crop = tf.slice(tf.zeros([30, 50, 3]), begin, size)
    assert crop.shape == (h, w, 3)


# first line of each error: (call, exception type, text it contains)
ERRORS = {
    "flip_rank": (lambda: tf.image.flip_left_right(tf.zeros([2, 2])), ValueError,
                  "must have either 3 (HWC) or 4 (NHWC) dimensions"),
    "resize_rank": (lambda: tf.image.resize(tf.zeros([2, 2, 2, 2, 1]), [1, 1]), ValueError,
                    "'images' (shape (2, 2, 2, 2, 1)) must have either 3"),
    "resize_size": (lambda: tf.image.resize(tf.zeros([2, 2, 1]), [1, 2, 3]), ValueError,
                    "'size' must be a 1-D int32 Tensor of 2 elements"),
    "resize_method": (lambda: tf.image.resize(tf.zeros([2, 2, 1]), [1, 1], "cubic"), ValueError,
                      "method 'cubic' is not one of"),
    "crop_too_big": (lambda: tf.image.crop_to_bounding_box(tf.zeros([4, 4, 1]), 2, 0, 3, 1),
                     ValueError, "height (4) must be >= offset_height + target_height"),
    "crop_offset": (lambda: tf.image.crop_to_bounding_box(tf.zeros([4, 4, 1]), -1, 0, 1, 1),
                    ValueError, "offset_height must be >= 0"),
    "pad_too_small": (lambda: tf.image.pad_to_bounding_box(tf.zeros([4, 4, 1]), 0, 1, 4, 4),
                      ValueError, "width (4) must be <= target_width - offset_width"),
    "central_fraction": (lambda: tf.image.central_crop(tf.zeros([4, 4, 1]), 1.5), ValueError,
                         "central_fraction must be within (0, 1]"),
    "patches_rank": (lambda: tf.image.extract_patches(tf.zeros([4, 4, 1]), [1, 2, 2, 1],
                                                      [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                     ValueError, "must have 4 (NHWC) dimensions"),
    "patches_sizes": (lambda: tf.image.extract_patches(tf.zeros([1, 4, 4, 1]), [2, 2],
                                                       [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                      ValueError, "sizes must be [1, rows, cols, 1]"),
    "gray_channels": (lambda: tf.image.grayscale_to_rgb(tf.zeros([2, 2, 3])), ValueError,
                      "last dimension of a grayscale image should be size 1"),
    "rgb_channels": (lambda: tf.image.rgb_to_hsv(tf.zeros([2, 2, 4])), ValueError,
                     "the last dimension of 'images' must be 3"),
    "hsv_ints": (lambda: tf.image.rgb_to_hsv(tf.zeros([2, 2, 3], tf.int32)), TypeError,
                 "must be float32 or float64"),
    "hue_delta": (lambda: tf.image.adjust_hue(tf.zeros([1, 1, 3]), 1.5), ValueError,
                  "delta must be in the interval [-1, 1]"),
    "gamma": (lambda: tf.image.adjust_gamma(tf.zeros([1, 1, 3]), -1.0), ValueError,
              "gamma should be a non-negative real number"),
    "random_hue": (lambda: tf.image.random_hue(tf.zeros([1, 1, 3]), 0.6), ValueError,
                   "max_delta must be <= 0.5"),
    "random_contrast": (lambda: tf.image.random_contrast(tf.zeros([1, 1, 3]), 0.5, 0.5),
                        ValueError, "upper must be > lower"),
    "random_crop": (lambda: tf.image.random_crop(tf.zeros([2, 2, 3]), [3, 2, 3]),
                    InvalidArgumentError, "need value.shape >= size"),
    "stateless_seed": (lambda: tf.image.stateless_random_flip_up_down(tf.zeros([1, 1, 3]), 3),
                       ValueError, "seed must be an integer tensor of shape [2]"),
    "ssim_filter": (lambda: tf.image.ssim(tf.zeros([4, 4, 1]), tf.zeros([4, 4, 1]), 1.0),
                    InvalidArgumentError, "must be at least filter_size (11)"),
    "ssim_shapes": (lambda: tf.image.psnr(tf.zeros([4, 4, 1]), tf.zeros([4, 5, 1]), 1.0),
                    ValueError, "must have the same height, width and channels"),
    "gradients_rank": (lambda: tf.image.image_gradients(tf.zeros([4, 4, 1])), ValueError,
                       "must have 4 (NHWC) dimensions"),
    "crop_size": (lambda: tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), [[0, 0, 1, 1]], [0],
                                                   [0, 2]), ValueError,
                  "the new size must be positive"),
    "crop_boxes": (lambda: tf.image.crop_and_resize(tf.zeros([1, 4, 4, 1]), [[0, 0, 1]], [0],
                                                    [2, 2]), ValueError,
                   "boxes must have shape [num_boxes, 4]"),
    "distort_boxes": (lambda: tf.image.sample_distorted_bounding_box([4, 4, 3], [[[0, 0, 2, 1]]]),
                      InvalidArgumentError, "coordinates must be in [0.0, 1.0]"),
    "distort_none": (lambda: tf.image.sample_distorted_bounding_box([4, 4, 3], tf.zeros([1, 0, 4])),
                     InvalidArgumentError, "no bounding boxes given"),
    "nms_iou": (lambda: tf.image.non_max_suppression(BOXES, SCORES, 2, 1.5),
                InvalidArgumentError, "iou_threshold must be in [0, 1]"),
    "nms_boxes": (lambda: tf.image.non_max_suppression(BOXES[:, :3], SCORES, 2), ValueError,
                  "boxes must have shape [num_boxes, 4]"),
    "unknown_size": (lambda: tf.function(
        lambda x: tf.image.resize(x, [2, 2], "bicubic"),
        input_signature=[tf.TensorSpec([None, None, 3])])(tf.zeros([2, 2, 3])), ValueError,
        "method 'bicubic' needs the image's height and width when the function is traced"),
    "unknown_size_pad": (lambda: tf.function(
        lambda x: tf.image.pad_to_bounding_box(x, 0, 0, 4, 4),
        input_signature=[tf.TensorSpec([None, None, 3])])(tf.zeros([2, 2, 3])), ValueError,
        "height and width must be known when the function is traced"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_say_what_is_wrong(name):
    call, kind, text = ERRORS[name]
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value).splitlines()[0]
