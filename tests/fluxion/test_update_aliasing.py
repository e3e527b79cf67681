"""In-place updates whose update reads their own operand through a reshape.

XLA:CPU writes such an update in place and reads values it has already overwritten (openxla/xla
#49176): ``jax.jit`` of jax 0.10.2 gives wrong numbers on the CPU. Fluxion's CPU lowering
(``fluxion.backend.update_aliasing``) writes them out of place. Here: the right numbers (NumPy's)
under jit, vmap and grad on every platform, and on the CPU that the workaround is what makes them
right and that the compiled program of every other update is the one it was.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.lax import gather_scatter, slicing

ON_CPU = fluxion.default_backend() == "cpu"
nested = fluxion.jit(lambda a, b: a.reshape(2, 3, 2).at[:, 1:].set(b.reshape(2, 2, 2)))


def _np_set(x, where, value):
    y = np.array(x, copy=True)
    y[where] = value
    return y


def _np_add(x, where, value):
    y = np.array(x, copy=True)
    y[where] = y[where] + value
    return y


def _np_reproducer(x):
    return _np_set(x.reshape(2, 3, 2), np.s_[:, 1:], x[:4].reshape(2, 2, 2)).reshape(6, 2)


def _one(x):  # a start index of 1 that is only known when the program runs
    return (x[0, 0] != x[0, 0]).astype(np.int32) + 1


# name -> (fluxion function of x: (6, 2), NumPy function giving the right answer)
CASES = {
    # the reproducer: the operand is a reshape of the buffer the update is sliced from
    "reshape_then_set": (
        lambda x: x.reshape(2, 3, 2).at[:, 1:].set(x[:4].reshape(2, 2, 2)),
        lambda x: _np_set(x.reshape(2, 3, 2), np.s_[:, 1:], x[:4].reshape(2, 2, 2))),
    "reshape_then_set_computed": (
        lambda x: x.reshape(2, 3, 2).at[:, 1:].set(x[:4].reshape(2, 2, 2) * x[1:5].reshape(2, 2, 2)),
        lambda x: _np_set(x.reshape(2, 3, 2), np.s_[:, 1:],
                          x[:4].reshape(2, 2, 2) * x[1:5].reshape(2, 2, 2))),
    # a reshape of the result that XLA moves in front of the update
    "set_then_reshape": (
        lambda x: x.at[1:].set(x[:-1]).reshape(1, 6, 2),
        lambda x: _np_set(x, np.s_[1:], x[:-1]).reshape(1, 6, 2)),
    "add_then_reshape": (
        lambda x: x.at[1:].add(x[:-1]).reshape(6, 1, 2),
        lambda x: _np_add(x, np.s_[1:], x[:-1]).reshape(6, 1, 2)),
    "part_then_reshape": (
        lambda x: x.at[2:4].set(x[1:3]).reshape(1, 6, 2),
        lambda x: _np_set(x, np.s_[2:4], x[1:3]).reshape(1, 6, 2)),
    "then_squeeze": (
        lambda x: x[None].at[:, 1:].set(x[None, :-1])[0],
        lambda x: _np_set(x, np.s_[1:], x[:-1])),
    "dynamic_update_slice": (
        lambda x: lax.dynamic_update_slice(x, x[:5], (1, 0)).reshape(1, 6, 2),
        lambda x: _np_set(x, np.s_[1:], x[:5]).reshape(1, 6, 2)),
    "dynamic_update_slice_traced_start": (
        lambda x: lax.dynamic_update_slice(x, x[:5], (_one(x), 0)).reshape(1, 6, 2),
        lambda x: _np_set(x, np.s_[1:], x[:5]).reshape(1, 6, 2)),
    "dynamic_update_slice_in_dim": (
        lambda x: lax.dynamic_update_slice_in_dim(x, x[:5], 1, axis=0).reshape(6, 2, 1),
        lambda x: _np_set(x, np.s_[1:], x[:5]).reshape(6, 2, 1)),
    "computed_operand": (
        lambda x: (lambda b: lax.dynamic_update_slice(b, b[:5], (1, 0)).reshape(1, 6, 2))(x + x),
        lambda x: _np_set(x + x, np.s_[1:], (x + x)[:5]).reshape(1, 6, 2)),
    # the operand and the update meet only inside a nested jit
    "nested_jit": (
        lambda x: nested(x, x[:4]),
        lambda x: _np_set(x.reshape(2, 3, 2), np.s_[:, 1:], x[:4].reshape(2, 2, 2))),
    "fori_loop_body": (
        lambda x: lax.fori_loop(0, 2, lambda i, c: c.reshape(2, 3, 2).at[:, 1:].set(
            c[:4].reshape(2, 2, 2)).reshape(6, 2), x),
        lambda x: _np_set(_np_reproducer(x).reshape(2, 3, 2), np.s_[:, 1:],
                          _np_reproducer(x)[:4].reshape(2, 2, 2)).reshape(6, 2)),
}
LINEAR = [n for n in CASES if n != "reshape_then_set_computed"]
DTYPES = [np.float32, np.int32, np.bool_, np.complex64, np.float16, ml_dtypes.bfloat16]


def _values(dtype, shape=(6, 2), seed=0):
    rng = np.random.RandomState(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.rand(*shape) > 0.5
    v = rng.randint(1, 50, size=shape)
    if np.dtype(dtype).kind == "c":
        return (v + 1j * rng.randint(1, 50, size=shape)).astype(dtype)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_gives_numpy_result(name, dtype):
    ours, ref = CASES[name]
    if name == "add_then_reshape" and np.dtype(dtype) == np.bool_:
        pytest.skip("add of booleans")
    x = _values(dtype)
    got = np.asarray(fluxion.jit(ours)(jnp.asarray(x)))
    np.testing.assert_array_equal(got, ref(x))


@pytest.mark.parametrize("shape,dtype", [((1000, 100), np.float32), ((64, 16), np.bool_),
                                         ((4, 1, 1), np.int32)])
def test_large_and_small_shifts(shape, dtype):
    x = _values(dtype, shape)
    n = shape[0]
    got = fluxion.jit(lambda x: x.at[1:].set(x[:-1]).reshape((1,) + shape))(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), _np_set(x, np.s_[1:], x[:-1])[None])
    h = n // 2
    got = fluxion.jit(lambda x: x.reshape((2, h) + shape[1:]).at[:, 1:].set(
        x[:n - 2].reshape((2, h - 1) + shape[1:])))(jnp.asarray(x))
    want = _np_set(x.reshape((2, h) + shape[1:]), np.s_[:, 1:],
                   x[:n - 2].reshape((2, h - 1) + shape[1:]))
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("name", ["reshape_then_set", "set_then_reshape", "add_then_reshape",
                                  "dynamic_update_slice", "nested_jit"])
def test_vmap_gives_numpy_result(name):
    ours, ref = CASES[name]
    xs = _values(np.float32, (3, 6, 2))
    got = np.asarray(fluxion.jit(fluxion.vmap(ours))(jnp.asarray(xs)))
    np.testing.assert_array_equal(got, np.stack([ref(x) for x in xs]))


def _np_grad(ref, x, w):
    """d/dx sum(w * ref(x)) of a linear ``ref``: its Jacobian, transposed, times ``w``."""
    basis = np.eye(x.size, dtype=x.dtype).reshape((x.size,) + x.shape)
    jac = np.stack([ref(e).ravel() for e in basis], axis=1)  # (out, in)
    return (jac.T @ w.ravel()).reshape(x.shape)


@pytest.mark.parametrize("name", LINEAR)
def test_value_and_grad_give_numpy_result(name):
    ours, ref = CASES[name]
    x = _values(np.float32)
    w = _values(np.float32, np.shape(ref(x)), seed=1)
    loss = lambda x: (ours(x) * w).sum()  # noqa: E731
    value, grad = fluxion.jit(fluxion.value_and_grad(loss))(jnp.asarray(x))
    np.testing.assert_allclose(np.asarray(value), (ref(x) * w).sum(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(grad), _np_grad(ref, x, w), rtol=1e-6)


# ---------------------------------------------------------------- the CPU's compiled programs

_UPDATES = [slicing.dynamic_update_slice_p] + [
    getattr(gather_scatter, f"scatter{s}_p") for s in ("", "_add", "_sub", "_mul", "_min", "_max")]


def _compiled(fn, *args):
    text = fluxion.jit(fn).lower(*args).compile().as_text()
    return re.sub(r", metadata=\{[^}]*\}", "", text)


def _compiled_without_workaround(monkeypatch, fn, *args):
    with monkeypatch.context() as m:
        for p in _UPDATES:
            m.delitem(p.platform_lowerings, "cpu")
        return _compiled(fn, *args)


cpu_only = pytest.mark.skipif(not ON_CPU, reason="the workaround is XLA:CPU's")

UNAFFECTED = {  # updates whose update does not read their operand through a reshape
    "at_set_in_loop": lambda x: lax.fori_loop(
        0, 6, lambda i, c: c.at[i].set(jnp.full(c.shape[1:], i, c.dtype)), x),
    "recurrence_in_loop": lambda x: lax.fori_loop(1, 6, lambda t, h: h.at[t].set(h[t - 1] * 2), x),
    "shift_not_reshaped": lambda x: x.at[1:].set(x[:-1]),
    "reshape_other_update": lambda x: x.reshape(2, 3, 2).at[:, 1:].set(
        (x * 3)[:4].reshape(2, 2, 2) @ jnp.eye(2, dtype=x.dtype)),
    "at_add_then_reshape": lambda x: x.at[np.array([0, 2])].add(1.0).reshape(1, 6, 2),
    "dynamic_update_slice_then_reshape": lambda x: lax.dynamic_update_slice(
        x, jnp.ones((2, 2), x.dtype), (_one(x), 0)).reshape(1, 12),
}


@cpu_only
@pytest.mark.parametrize("name", sorted(UNAFFECTED))
def test_other_updates_compile_as_before(monkeypatch, name):
    x = jnp.asarray(_values(np.float32))
    fn = UNAFFECTED[name]
    text = _compiled(fn, x)
    assert text == _compiled_without_workaround(monkeypatch, fn, x)
    assert "reduce-precision" not in text


@cpu_only
def test_update_in_loop_stays_in_place():
    x = jnp.asarray(_values(np.float32, (100, 8)))
    text = _compiled(UNAFFECTED["at_set_in_loop"], x)
    body = text[text.index("%fused_computation"):]
    # the loop body's fusion updates its parameter's buffer: the root is the update itself
    assert re.search(r"ROOT %\S+ = f32\[100,8\]\{1,0\} dynamic-update-slice\(%param_0,", body)


@cpu_only
@pytest.mark.parametrize("name", ["reshape_then_set", "set_then_reshape", "nested_jit"])
def test_workaround_is_what_makes_it_right(monkeypatch, name):
    ours, ref = CASES[name]
    x = _values(np.float32)
    assert "reduce-precision" in _compiled(ours, jnp.asarray(x))
    with monkeypatch.context() as m:
        for p in _UPDATES:
            m.delitem(p.platform_lowerings, "cpu")
        plain = np.asarray(fluxion.jit(lambda x: ours(x))(jnp.asarray(x)))
    # without it XLA:CPU (jaxlib 0.10.2) reads values it has overwritten; when this fails, XLA
    # computes these right and fluxion.backend.update_aliasing may go
    assert not np.array_equal(plain, ref(x))
