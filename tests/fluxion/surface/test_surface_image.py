"""fluxion.image (resize, scale_and_translate) against jax.image."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_close, assert_same

import fluxion
from fluxion import image

X = np.random.RandomState(0).rand(5, 7, 2).astype(np.float32)
METHODS = ["linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area"]


def test_resize_like_jax():
    def run(lib):  # every method in one jit per library: one compilation each
        return lib.jit(lambda x: [lib.image.resize(x, shape, m, antialias=aa)
                                  for m in METHODS for shape, aa in (((9, 4, 2), True),
                                                                     ((3, 11, 2), False))])(X)
    assert_close(run(fluxion), run(jax), 1e-5)


def test_resize_nearest_and_dtypes():
    xi = (X * 10).astype(np.int32)
    assert_same(image.resize(xi, (3, 9, 2), "nearest"), jax.image.resize(xi, (3, 9, 2), "nearest"))
    assert image.resize(xi, (3, 7, 2), "linear").dtype == jax.image.resize(xi, (3, 7, 2),
                                                                           "linear").dtype
    with pytest.raises(ValueError, match="shape"):
        image.resize(X, (3, 3), "linear")
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(X, (3, 3, 2), "bogus")


def test_scale_and_translate_like_jax():
    scale = np.array([1.3, 0.7], np.float32)
    shift = np.array([0.5, -1.0], np.float32)

    def run(lib):
        def f(x, s, t):
            outs = [lib.image.scale_and_translate(x, (6, 6, 2), (0, 1), s, t, m)
                    for m in ("lanczos3", "linear")]
            grad = lib.grad(lambda s_: lib.image.scale_and_translate(
                x, (6, 6, 2), (0, 1), s_, t, "linear").sum())(s)
            return outs, grad
        return lib.jit(f)(X, scale, shift)

    assert_close(run(fluxion), run(jax), 1e-4)
    with pytest.raises(ValueError, match="Nearest"):
        image.scale_and_translate(X, (6, 6, 2), (0, 1), scale, shift, "nearest")
