"""``stagecraft.image``: TensorFlow 2's ``tf.image`` — resizing, crops and flips, colour
spaces and adjustments, random augmentations, image measures and non-max suppression.

Images are [height, width, channels] or batches [batch, height, width, channels]. Every op is
composed of stagecraft primitives, so it runs eagerly, inside ``tf.function`` (any backend) and
in ``tf.data`` map functions, and is differentiable where TensorFlow's is.

>>> import stagecraft as tf
>>> tf.image.resize(tf.zeros([4, 4, 3]), [2, 2]).shape
TensorShape([2, 2, 3])
"""
from stagecraft.ops.image_bbox_sampling import (sample_distorted_bounding_box,
                                                stateless_sample_distorted_bounding_box)
from stagecraft.ops.image_color import (adjust_brightness, adjust_contrast, adjust_gamma,
                                        adjust_hue, adjust_saturation, grayscale_to_rgb,
                                        hsv_to_rgb, per_image_standardization, rgb_to_grayscale,
                                        rgb_to_hsv, rgb_to_yiq, rgb_to_yuv, yiq_to_rgb,
                                        yuv_to_rgb)
from stagecraft.ops.image_draw import draw_bounding_boxes
from stagecraft.ops.image_dtype import convert_image_dtype
from stagecraft.ops.image_geometry import (central_crop, crop_to_bounding_box, extract_patches,
                                           flip_left_right, flip_up_down, pad_to_bounding_box,
                                           resize_with_crop_or_pad, rot90, transpose)
from stagecraft.ops.image_metrics import (image_gradients, psnr, sobel_edges, ssim,
                                          ssim_multiscale, total_variation)
from stagecraft.ops.image_nms import (combined_non_max_suppression, non_max_suppression,
                                      non_max_suppression_overlaps, non_max_suppression_padded,
                                      non_max_suppression_with_scores)
from stagecraft.ops.image_random import (random_brightness, random_contrast, random_crop,
                                         random_flip_left_right, random_flip_up_down, random_hue,
                                         random_saturation, stateless_random_brightness,
                                         stateless_random_contrast, stateless_random_crop,
                                         stateless_random_flip_left_right,
                                         stateless_random_flip_up_down, stateless_random_hue,
                                         stateless_random_saturation)
from stagecraft.ops.image_resize import (ResizeMethod, crop_and_resize, resize,
                                         resize_with_pad)
from stagecraft.ops.image_codecs import (decode_bmp, decode_gif, decode_image, decode_png,
                                         encode_png, is_jpeg)
from stagecraft.ops.image_jpeg_ops import (adjust_jpeg_quality, decode_and_crop_jpeg,
                                           decode_jpeg, encode_jpeg, extract_jpeg_shape,
                                           random_jpeg_quality, stateless_random_jpeg_quality)

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
           "adjust_saturation", "central_crop", "combined_non_max_suppression",
           "convert_image_dtype", "crop_and_resize",
           "crop_to_bounding_box", "draw_bounding_boxes",
           "extract_patches", "flip_left_right", "flip_up_down", "grayscale_to_rgb",
           "hsv_to_rgb", "image_gradients", "non_max_suppression", "non_max_suppression_overlaps",
           "non_max_suppression_padded", "non_max_suppression_with_scores", "pad_to_bounding_box",
           "per_image_standardization", "psnr", "random_brightness", "random_contrast",
           "random_crop", "random_flip_left_right", "random_flip_up_down", "random_hue",
           "random_saturation", "resize", "resize_with_crop_or_pad", "resize_with_pad",
           "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv", "rot90",
           "sample_distorted_bounding_box", "sobel_edges",
           "ssim", "ssim_multiscale", "stateless_random_brightness",
           "stateless_random_contrast", "stateless_random_crop",
           "stateless_random_flip_left_right", "stateless_random_flip_up_down",
           "stateless_random_hue", "stateless_random_saturation",
           "stateless_sample_distorted_bounding_box", "total_variation",
           "transpose", "yiq_to_rgb", "yuv_to_rgb",
           "decode_bmp", "decode_gif", "decode_image", "decode_jpeg", "decode_png",
           "encode_jpeg", "encode_png", "is_jpeg", "adjust_jpeg_quality",
           "decode_and_crop_jpeg", "extract_jpeg_shape", "random_jpeg_quality",
           "stateless_random_jpeg_quality"]
