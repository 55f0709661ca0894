"""PNG / GIF / BMP codecs (stagecraft's own) and JPEG (Pillow, the optional `images` extra):
values against files written by another encoder (Pillow, stored below as bytes), round trips
over every PNG colour type, depth, filter type and interlacing, and corrupt or hostile files,
which must raise InvalidArgumentError, never crash, hang or allocate without limit."""
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stagecraft as tf
from stagecraft.errors import InvalidArgumentError
from stagecraft.ops import gif_codec, png_codec

# A 6x5 image of four colours, and a gray ramp, written by Pillow.
_TABLE = np.array([[200, 10, 30], [0, 128, 255], [17, 17, 17], [250, 250, 5]], np.uint8)
_Y, _X = np.mgrid[0:5, 0:6]
IMAGE = _TABLE[(_X * _X + _Y) % 4]
GRAY = (_X * 40 + _Y * 9).astype(np.uint8)[..., None]

PNG_RGB = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000006000000050802000000e93a0ab10000002e4944415478da63"
    "38c125c7d0f01f99646068f82f282888420a0a0afefac58a4c32fcfac57a824b0e9964c0340b00371022f0a7"
    "99282e0000000049454e44ae426082")
PNG_PALETTE = bytes.fromhex(  # 2-bit palette
    "89504e470d0a1a0a0000000d49484452000000060000000502030000001b3675750000000c504c5445fafa05"
    "0080ff111111c80a1e35e847420000001849444154789c63bcfb9931ed178bd20f46e3bf8c773f0300366207"
    "536810abff0000000049454e44ae426082")
PNG_GRAY = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000060000000508000000004333c23a0000001849444154789c63"
    "64d0d0d0d0d060e2e4e4e4e4e4c44a010024da01aa5aa08dd10000000049454e44ae426082")
GIF = bytes.fromhex(
    "47494638376106000500810000fafa050080ff111111c80a1e2c000000000600050000081800070410283080"
    "008306050050a810c000870e090e0c1010003b")
BMP_RGB = bytes.fromhex(
    "424d9a0000000000000036000000280000000600000005000000010018000000000064000000c40e0000c40e"
    "000000000000000000001e0ac8ff80001e0ac8ff80001e0ac8ff8000000005fafa1e0ac805fafa1e0ac805fa"
    "fa1e0ac8000011111105fafa11111105fafa11111105fafa0000ff8000111111ff8000111111ff8000111111"
    "00001e0ac8ff80001e0ac8ff80001e0ac8ff80000000")
FILES = [PNG_RGB, PNG_PALETTE, PNG_GRAY, GIF, BMP_RGB]


def test_files_from_another_encoder_decode_to_their_pixels():
    assert np.array_equal(tf.io.decode_png(PNG_RGB).numpy(), IMAGE)
    assert np.array_equal(tf.io.decode_png(PNG_PALETTE).numpy(), IMAGE)
    assert np.array_equal(tf.io.decode_png(PNG_GRAY).numpy(), GRAY)
    assert np.array_equal(tf.io.decode_gif(GIF).numpy(), IMAGE[None])
    assert np.array_equal(tf.io.decode_bmp(BMP_RGB).numpy(), IMAGE)
    for data, want in zip(FILES, [IMAGE, IMAGE, GRAY, IMAGE[None], IMAGE]):
        assert np.array_equal(tf.io.decode_image(data).numpy(), want)
        assert tf.image.decode_image(data).dtype == tf.uint8


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_png_round_trips_every_filter_and_interlacing(channels, dtype):
    rng = np.random.default_rng(channels)
    for h, w in ((1, 1), (3, 2), (9, 13)):
        x = rng.integers(0, np.iinfo(dtype).max, (h, w, channels), endpoint=True).astype(dtype)
        for interlace in (False, True):
            for filter_type in (None, 0, 1, 2, 3, 4):
                data = png_codec.encode(x, interlace=interlace, filter_type=filter_type)
                got = tf.io.decode_png(data, dtype=tf.as_dtype(dtype.__name__)).numpy()
                assert np.array_equal(got, x), (h, w, interlace, filter_type)
    assert np.array_equal(tf.io.decode_png(tf.io.encode_png(tf.constant(x))).numpy(),
                          x if dtype == np.uint8 else (x >> 8).astype(np.uint8))


def test_png_depth_and_channel_conversions():
    x = np.array([[[0, 128, 255, 7]]], np.uint8)
    data = tf.io.encode_png(x)
    assert tf.io.decode_png(data, dtype=tf.uint16).numpy().tolist() == [[[0, 128 * 257,
                                                                         65535, 7 * 257]]]
    assert tf.io.decode_png(data, channels=3).numpy().tolist() == [[[0, 128, 255]]]
    gray = tf.io.decode_png(data, channels=1).numpy()[0, 0, 0]
    assert gray == (6968 * 0 + 23434 * 128 + 2366 * 255 + 16384) >> 15
    assert tf.io.decode_png(PNG_GRAY, channels=4).numpy()[0, 1].tolist() == [40, 40, 40, 255]


def test_staged_decode_of_python_bytes_is_a_constant():
    @tf.function
    def f():
        return tf.cast(tf.io.decode_png(PNG_RGB), tf.int32) + 1
    assert np.array_equal(f().numpy(), IMAGE.astype(np.int32) + 1)


def test_decode_image_dtype_and_animation_options():
    assert tf.io.decode_image(GIF, expand_animations=False).shape == [5, 6, 3]
    scaled = tf.io.decode_image(PNG_RGB, dtype=tf.float32).numpy()
    assert np.allclose(scaled, IMAGE / 255.0)
    with pytest.raises(InvalidArgumentError, match="unknown image format"):
        tf.io.decode_image(b"not an image at all")
    with pytest.raises(ValueError, match="GIF has 3 channels"):
        tf.io.decode_image(GIF, channels=1)
    assert bool(tf.io.is_jpeg(b"\xff\xd8\xff\xdb")) and not bool(tf.io.is_jpeg(PNG_RGB))


def test_bmp_channels_must_match_the_file():
    with pytest.raises(InvalidArgumentError, match="does not match the file's 3"):
        tf.io.decode_bmp(BMP_RGB, channels=4)


def test_gif_frames_compose_over_the_previous_frame():
    # two frames: a 2x2 red screen, then a 1x1 frame at (1, 1) with transparent index 1
    # (graphic control extension) painting nothing, then one painting blue at (0, 1)
    def lzw_frame(indices, left, top, w, h):
        # codes of width 3 (min size 2): clear (4), one code per index, end (5); the table
        # grows past 8 entries only after 4 codes, so keep frames small
        codes = [4] + list(indices) + [5]
        bits, n, out = 0, 0, bytearray()
        for k, c in enumerate(codes):
            size = 3 if k < 5 else 4
            bits |= c << n
            n += size
        while n > 0:
            out.append(bits & 0xFF)
            bits >>= 8
            n -= 8
        return (b"\x2c" + struct.pack("<HHHHB", left, top, w, h, 0) + b"\x02"
                + bytes([len(out)]) + bytes(out) + b"\x00")
    table = bytes([255, 0, 0, 0, 0, 0, 0, 0, 255, 9, 9, 9])  # red, black, blue, gray
    head = b"GIF89a" + struct.pack("<HHBBB", 2, 2, 0x81, 0, 0) + table
    gce = b"\x21\xf9\x04\x01\x00\x00\x01\x00"
    data = (head + lzw_frame([0, 0, 0, 0], 0, 0, 2, 2) + gce + lzw_frame([1], 1, 1, 1, 1)
            + lzw_frame([2], 1, 0, 1, 1) + b"\x3b")
    frames = tf.io.decode_gif(data).numpy()
    red, blue = [255, 0, 0], [0, 0, 255]
    assert frames.shape == (3, 2, 2, 3)
    assert frames[1].tolist() == [[red, red], [red, red]]  # transparent: kept
    assert frames[2].tolist() == [[red, blue], [red, red]]


@pytest.mark.parametrize("data", FILES, ids=["png_rgb", "png_palette", "png_gray", "gif",
                                             "bmp"])
def test_every_truncation_raises_invalid_argument(data):
    for n in range(len(data)):
        with pytest.raises(InvalidArgumentError):
            tf.io.decode_image(data[:n] if n >= 3 else data[:n] + b"\x00" * 8)


def test_corrupt_png_crc_and_oversized_header_are_refused_before_allocating():
    bad = bytearray(PNG_RGB)
    bad[40] ^= 0xFF
    with pytest.raises(InvalidArgumentError, match="CRC"):
        tf.io.decode_png(bytes(bad))

    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))
    huge = (png_codec.SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 1 << 20, 1 << 20, 8,
                                                              6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))
    with pytest.raises(InvalidArgumentError, match="over the limit"):
        tf.io.decode_png(huge)
    # a zlib stream that inflates to far more than the header allows stops at the limit
    bomb = (png_codec.SIGNATURE + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(bytes(50_000_000))) + chunk(b"IEND", b""))
    with pytest.raises(InvalidArgumentError, match="more bytes"):
        tf.io.decode_png(bomb)
    gif = (b"GIF89a" + struct.pack("<HHBBB", 60000, 60000, 0x80, 0, 0) + bytes(6) + b"\x2c"
           + struct.pack("<HHHHB", 0, 0, 60000, 60000, 0) + b"\x08\x00\x3b")
    with pytest.raises(InvalidArgumentError, match="over the limit"):
        gif_codec.decode(gif)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.integers(0, len(FILES) - 1),
       edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1,
                      max_size=4))
def test_fuzzed_files_decode_or_raise_invalid_argument(which, edits):
    data = bytearray(FILES[which])
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        image = tf.io.decode_image(bytes(data)).numpy()
    except InvalidArgumentError:
        return
    assert image.dtype == np.uint8 and image.size > 0


def test_read_and_write_file(tmp_path):
    path = tmp_path / "image.png"
    tf.io.write_file(str(path), tf.io.encode_png(IMAGE))
    assert np.array_equal(tf.io.decode_png(tf.io.read_file(str(path))).numpy(), IMAGE)

    @tf.function
    def f():
        return tf.io.read_file(str(path))
    with pytest.raises(RuntimeError, match="once, while tracing"):
        f()


def test_jpeg_through_the_images_extra():
    pytest.importorskip("PIL")  # decode_jpeg / encode_jpeg are Pillow's (the `images` extra)
    smooth = np.broadcast_to(np.linspace(0, 255, 16, dtype=np.uint8)[None, :, None],
                             (16, 16, 3)).copy()
    data = tf.io.encode_jpeg(smooth, quality=100)
    assert bool(tf.io.is_jpeg(data))
    back = tf.io.decode_image(data).numpy()
    assert back.shape == (16, 16, 3) and np.abs(back.astype(int) - smooth).max() <= 3
    assert tf.io.decode_jpeg(data, channels=1).shape == [16, 16, 1]
    assert tf.io.decode_jpeg(data, ratio=2).shape == [8, 8, 3]
    with pytest.raises(InvalidArgumentError, match="JPEG data is corrupt"):
        tf.io.decode_jpeg(data[:len(data) // 2])
    rng = np.random.default_rng(0)
    for _ in range(100):  # corrupted files decode to something or raise InvalidArgumentError
        bad = bytearray(data)
        for pos in rng.integers(3, len(bad), 3):
            bad[int(pos)] = int(rng.integers(0, 256))
        try:
            assert tf.io.decode_jpeg(bytes(bad)).dtype == tf.uint8
        except InvalidArgumentError:
            pass


def test_jpeg_shape_crop_and_quality_augmentations():
    pytest.importorskip("PIL")  # these are built on the Pillow JPEG codec (`images` extra)
    y, x = np.mgrid[0:32, 0:24]
    smooth = np.stack([x / 23, y / 31, (x + y) / 54], -1).astype(np.float32)
    data = tf.io.encode_jpeg(tf.image.convert_image_dtype(smooth, tf.uint8))
    assert tf.io.extract_jpeg_shape(data, tf.int64).numpy().tolist() == [32, 24, 3]
    full = tf.io.decode_jpeg(data).numpy()
    crop = tf.image.decode_and_crop_jpeg(data, [3, 5, 10, 7]).numpy()
    assert np.array_equal(crop, full[3:13, 5:12])
    with pytest.raises(InvalidArgumentError, match="not inside"):
        tf.io.decode_and_crop_jpeg(data, [30, 0, 5, 5])
    errors = [float(np.abs(tf.image.adjust_jpeg_quality(smooth, q).numpy() - smooth).mean())
              for q in (95, 5)]
    assert errors[0] < 0.01 < errors[1]
    staged = tf.function(lambda im, q: tf.image.adjust_jpeg_quality(im, q),
                         input_signature=[tf.TensorSpec([None, None, 3]),
                                          tf.TensorSpec([], tf.int32)])
    np.testing.assert_array_equal(staged(smooth, tf.constant(60)).numpy(),
                                  tf.image.adjust_jpeg_quality(smooth, 60).numpy())
    a = tf.image.stateless_random_jpeg_quality(smooth, 10, 90, seed=[3, 4]).numpy()
    assert np.array_equal(a, tf.image.stateless_random_jpeg_quality(smooth, 10, 90,
                                                                    seed=[3, 4]).numpy())
    with pytest.raises(ValueError, match="min_jpeg_quality < max_jpeg_quality"):
        tf.image.random_jpeg_quality(smooth, 50, 50)


def test_jpeg_without_pillow_says_how_to_enable_it(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)  # as if Pillow were missing
    with pytest.raises(ImportError, match=r"decode_jpeg needs Pillow.*stagecraft\[images\]"):
        tf.io.decode_image(b"\xff\xd8\xff\xe0" + bytes(16))
    with pytest.raises(ImportError, match="encode_jpeg needs Pillow"):
        tf.io.encode_jpeg(IMAGE)
    assert np.array_equal(tf.io.decode_png(PNG_RGB).numpy(), IMAGE)  # PNG needs nothing


def test_symbolic_contents_and_images_are_refused_with_a_reason():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.uint8)])
    def decode(raw):
        return tf.io.decode_png(raw)
    with pytest.raises(TypeError, match="no string dtype"):
        decode(np.frombuffer(PNG_RGB, np.uint8))
    # eagerly a uint8 tensor of the file's bytes is accepted
    assert np.array_equal(tf.io.decode_png(tf.constant(np.frombuffer(PNG_RGB, np.uint8))).numpy(),
                          IMAGE)
    with pytest.raises(TypeError, match="outside @function"):
        tf.function(lambda x: tf.io.encode_png(x))(tf.constant(IMAGE))
