"""State created inside ``nnx.scan``'s body (graph mode, as ``nnx.compat.scan``), against flax.nnx
on real jax: new Variables of a scanned module argument are stacked on its axis and written back;
new state under a carried or broadcast axis is refused with flax's error types."""

from __future__ import annotations

import flax.nnx as fnnx
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
import fluxion_nn as nnx

LIBS = ((nnx, fjnp, fluxion), (fnnx, jjnp, jax))


def _stacked_bridge_mlp(lib):
    bridge = lib.bridge

    class Dense(bridge.Module):
        dout: int

        @bridge.compact
        def __call__(self, x):
            return x @ self.param("w", lib.initializers.normal(), (x.shape[-1], self.dout))

    class MLP(bridge.Module):
        dim: int
        num_layers: int

        def setup(self):
            @lib.compat.split_rngs(splits=self.num_layers)
            @lib.compat.vmap(in_axes=(lib.StateAxes({lib.RngState: 0, ...: None}),),
                             axis_size=self.num_layers, transform_metadata={lib.PARTITION_NAME: None})
            def create_block(parent):
                parent.block = Dense(self.dim)

            create_block(self)

        def __call__(self, x):
            # the block's parameters are made on its first call, inside the scan
            @lib.compat.split_rngs(splits=self.num_layers)
            @lib.compat.scan(in_axes=(0, lib.Carry), out_axes=lib.Carry,
                             transform_metadata={lib.PARTITION_NAME: None})
            def forward(block, x):
                return block(x)

            return forward(self.block, x)

    return MLP(dim=4, num_layers=3)


@pytest.mark.slow  # 2.4 s under load 5 (each side's first init compiles); the plain nnx case
def test_bridge_params_created_in_scan_are_stacked_like_flax():  # below covers the mechanism
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    results = []
    for lib, jnp, jx in LIBS:
        model = _stacked_bridge_mlp(lib)
        variables = model.init(jx.random.key(0), jnp.asarray(x))
        y = model.apply(variables, jnp.asarray(x))
        w = variables["params"]["block"]["w"]
        assert sorted(variables) == ["params"] and sorted(variables["params"]["block"]) == ["w"]
        assert w.shape == (3, 4, 4) and w.dtype == jnp.float32
        assert y.shape == (2, 4) and y.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(y), x @ np.asarray(w[0]) @ np.asarray(w[1])
                                   @ np.asarray(w[2]), rtol=1e-5, atol=1e-6)
        results.append((np.asarray(w), np.asarray(y)))
    # the same keys reach the initializer on both sides
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-5, atol=1e-6)


def _run_new_state(lib, jnp):
    class M(lib.Module):
        def __init__(self, a):
            self.a = lib.Param(a)

    m = M(jnp.ones((2, 3)))

    @lib.compat.scan(in_axes=(0, lib.Carry), out_axes=(lib.Carry, 0))
    def f(m, x):
        m.b = lib.BatchStat(x * 2 + m.a[...].sum())
        m.a[...] = m.a[...] + 1
        return x + 1, x * 3

    c, ys = f(m, jnp.arange(4.0))
    m2 = M(jnp.ones((3, 2)))

    @lib.compat.scan(in_axes=(lib.StateAxes({lib.Param: 1, ...: None}), lib.Carry),
                     out_axes=lib.Carry)
    def g(m, x):
        m.e = lib.Param(x + m.a[...])
        return x

    g(m2, jnp.zeros((3,)))
    return m, c, ys, m2


def test_new_variables_in_scanned_modules_like_flax():
    (m, c, ys, m2), (fm, fc, fys, fm2) = (_run_new_state(lib, jnp) for lib, jnp, _ in LIBS)
    assert type(m.b) is nnx.BatchStat and type(m2.e) is nnx.Param
    for ours, theirs in ((m.b, fm.b), (m.a, fm.a), (c, fc), (ys, fys), (m2.e, fm2.e)):
        ours, theirs = (v[...] if isinstance(v, (nnx.Variable, fnnx.Variable)) else v
                        for v in (ours, theirs))
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        assert getattr(ours, "weak_type", False) == getattr(theirs, "weak_type", False)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert m.b.shape == (2, 4) and m2.e.shape == (3, 2)  # stacked on the argument's axis


@pytest.mark.parametrize("case", ["carried", "broadcast"])
def test_new_state_under_carry_or_broadcast_is_refused_like_flax(case):
    errors = []
    for lib, jnp, _ in LIBS:
        class M(lib.Module):
            def __init__(self):
                self.a = lib.Param(jnp.ones((2, 3)))

        if case == "carried":
            axes, xs = (lib.Carry, 0), jnp.zeros((2, 3))

            def body(m, x):
                m.c = lib.Param(x)
                return m
        else:
            axes, xs = (lib.StateAxes({lib.Param: 0, ...: None}), lib.Carry), jnp.zeros((3,))

            def body(m, x):
                m.d = lib.BatchStat(x)
                return x

        f = lib.compat.scan(body, in_axes=axes, out_axes=lib.Carry)
        with pytest.raises((TypeError, ValueError)) as info:
            f(M(), xs)
        errors.append(info.type)
    assert errors[0] is errors[1]
