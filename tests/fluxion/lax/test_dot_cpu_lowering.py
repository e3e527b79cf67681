"""dot_general's CPU lowering: a float32 ``x^T @ g`` over many rows (the weight gradient of
``x @ w``) is handed to XLA as ``dot(barrier(transpose(x)), g)`` behind a second barrier, which
XLA:CPU runs as a YNNPACK fusion instead of an Eigen contraction. The values are those of the
plain contraction up to the summation order; everything else lowers as before."""

from __future__ import annotations

import sys

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax

pytestmark = pytest.mark.skipif(fluxion.default_backend() != "cpu", reason="the CPU lowering")

DOT = sys.modules["fluxion.lax.dot"]
DN = (((0,), (0,)), ((), ()))


def _weight_grad(x, g):
    return lax.dot_general(x, g, DN)


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(2048, 64, 64), (2048, 64, 2), (256, 4, 64), (512, 512, 10)],
                         ids=str)
def test_transposed_form_is_lowered_and_matches_jax(shape):
    k, m, n = shape
    x, g = _rand((k, m), 0), _rand((k, n), 1)
    f = fluxion.jit(_weight_grad)
    text = f.lower(x, g).as_text()
    assert text.count("stablehlo.optimization_barrier") == 2
    assert "stablehlo.transpose" in text
    compiled = f.lower(x, g).compile().as_text()
    assert "lhs_contracting_dims={0}, rhs_contracting_dims={0}" not in compiled
    ours = np.asarray(f(x, g))
    ref = np.asarray(jax.jit(lambda a, b: jax.lax.dot_general(a, b, DN))(x, g))
    exact = x.astype(np.float64).T @ g.astype(np.float64)
    scale = np.abs(x).astype(np.float64).T @ np.abs(g).astype(np.float64)
    # another summation order: as close to the float64 sums as jax's float32 result is
    assert np.max(np.abs(ours - exact) / scale) < 4 * max(np.max(np.abs(ref - exact) / scale), 1e-7)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", [
    ((128, 64), (128, 64), DN, np.float32),           # too few rows
    ((2048, 784), (2048, 64), DN, np.float32),        # too wide
    ((2048, 64), (2048, 1), DN, np.float32),          # a column: XLA fuses it as it is
    ((2048, 64), (2048, 64), DN, np.float16),         # not float32
    ((2048, 64), (64, 8), (((1,), (0,)), ((), ())), np.float32),   # already x @ w
    ((4, 512, 8), (4, 512, 8), (((1,), (1,)), ((0,), (0,))), np.float32),  # batched
], ids=["rows", "wide", "column", "f16", "plain", "batched"])
def test_other_contractions_lower_as_before(case):
    ls, rs, dn, dtype = case
    x, g = _rand(ls, 2, dtype), _rand(rs, 3, dtype)
    f = fluxion.jit(lambda a, b: lax.dot_general(a, b, dn))
    assert "optimization_barrier" not in f.lower(x, g).as_text()
    ref = jax.jit(lambda a, b: jax.lax.dot_general(a, b, dn))(x, g)
    np.testing.assert_array_equal(np.asarray(f(x, g)), np.asarray(ref))


def test_weight_gradient_of_a_matmul_takes_the_form(monkeypatch):
    x, w = _rand((1024, 32), 4), _rand((32, 16), 5)

    def loss(w, x):
        return fnp.sum(fnp.tanh(x @ w))

    grad = fluxion.jit(fluxion.grad(loss))
    assert grad.lower(w, x).as_text().count("stablehlo.optimization_barrier") == 2
    ours = np.asarray(grad(w, x))
    monkeypatch.setattr(DOT, "CPU_TRANSPOSED_MIN_ROWS", 10 ** 9)
    plain = fluxion.jit(fluxion.grad(loss))
    assert "optimization_barrier" not in plain.lower(w, x).as_text()
    np.testing.assert_allclose(ours, np.asarray(plain(w, x)), rtol=1e-5, atol=1e-5)
    ref = jax.jit(jax.grad(lambda w, x: jax.numpy.sum(jax.numpy.tanh(x @ w))))(w, x)
    np.testing.assert_allclose(ours, np.asarray(ref), rtol=1e-5, atol=1e-5)
