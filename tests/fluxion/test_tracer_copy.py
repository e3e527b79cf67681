"""``copy.copy`` / ``copy.deepcopy`` of traced values, against JAX: a traced copy of the value (JAX's
tracers copy themselves with ``self.copy()``), never a clone of the tracer and its interpreter, so
``dataclasses.astuple``/``asdict`` (which deep-copy fields) work inside jit, scan, grad and vmap."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax_

jax = pytest.importorskip("jax")
jnp = jax.numpy


@dataclasses.dataclass
class _State:
    position: object
    momentum: object


for _lib in (fluxion, jax):  # a pytree on both sides, as jax_md's dataclasses are
    _lib.tree_util.register_pytree_node(_State, lambda s: ((s.position, s.momentum), None),
                                        lambda _, c: _State(*c))


def _body(lib, np_):
    def step(carry, i):
        pos, mom = dataclasses.astuple(carry)  # deep-copies both fields
        mom = copy.copy(mom) * 0.5 + i
        return _State(pos + mom, mom), np_.sum(mom)

    def run(x):
        carry, ys = lib.lax.scan(step, _State(x, copy.deepcopy(x) * 2.0), np_.arange(3.0))
        return carry.position, ys
    return run


def _check(got, want):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.weak_type == want.weak_type


def test_astuple_in_a_jitted_scan_matches_jax():
    x = np.arange(4.0, dtype=np.float32)
    got = fluxion.jit(_body(fluxion, fnp))(fnp.asarray(x))
    want = jax.jit(_body(jax, jnp))(x)
    for g, w in zip(got, want):
        _check(g, w)


@pytest.mark.parametrize("which", ["copy", "deepcopy"])
def test_copies_under_grad_vmap_jit_match_jax(which):
    cp = copy.copy if which == "copy" else copy.deepcopy

    def f(x):
        y = cp(x)
        return (y * y).sum() + cp(x.sum())

    x = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    _check(fluxion.grad(f)(fnp.asarray(x)), jax.grad(f)(x))
    _check(fluxion.vmap(f)(fnp.asarray(x)), jax.vmap(f)(x))
    _check(fluxion.jit(f)(fnp.asarray(x)), jax.jit(f)(x))
    # a weakly typed traced value stays weak, as in JAX
    _check(fluxion.jit(lambda s: cp(s * 2))(1.5), jax.jit(lambda s: cp(s * 2))(1.5))


def test_copy_is_a_new_value_of_the_same_trace():
    seen = {}

    def f(x):
        seen["same"] = copy.deepcopy(x) is x
        return flax_.add(copy.deepcopy(x), x)

    np.testing.assert_allclose(np.asarray(fluxion.jit(f)(fnp.ones(2))), [2.0, 2.0])
    assert seen["same"] is False
