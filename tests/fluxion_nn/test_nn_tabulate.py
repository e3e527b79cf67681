"""``nnx.tabulate`` checked against flax.nnx's: the same table, character for character (rows
per method call, Variables by type with shapes and metadata, totals, FLOPs columns), and the
model left unchanged."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion.numpy as jnp
import fluxion_nn as nnx

pytest.importorskip("rich")
pytest.importorskip("yaml")

PLAIN = dict(force_terminal=False, no_color=True, width=10_000)


def _block_model(lib, np_):
    class Block(lib.Module):
        def __init__(self, din, dout, rngs):
            self.linear = lib.Linear(din, dout, rngs=rngs)
            self.bn = lib.BatchNorm(dout, rngs=rngs)
            self.dropout = lib.Dropout(0.2, rngs=rngs)

        def forward(self, x):
            return lib.relu(self.dropout(self.bn(self.linear(x))))

    class Foo(lib.Module):
        def __init__(self, rngs):
            self.block1 = Block(3, 4, rngs=rngs)
            self.block2 = Block(4, 2, rngs=rngs)

        def __call__(self, x):
            return self.block2.forward(self.block1.forward(x))

    return Foo(lib.Rngs(0)), np_.ones((1, 3), np_.float32)


@pytest.mark.slow
def test_tabulate_same_table_as_flax():
    ours, x = _block_model(nnx, jnp)
    theirs, fx = _block_model(fnnx, jax.numpy)
    table = nnx.tabulate(ours, x, console_kwargs=PLAIN)
    assert table == fnnx.tabulate(theirs, fx, console_kwargs=PLAIN)
    lines = table.splitlines()
    assert "Foo Summary" in lines[0] and "block1/forward" in lines[6]
    assert "Total Parameters: 54 (224 B)" in lines[-1]
    # the model itself is not run (its batch statistics and rng counts are unchanged)
    np.testing.assert_array_equal(np.asarray(ours.block1.bn.mean.value), np.zeros(4, np.float32))
    assert int(ours.block1.dropout.rngs.count.value) == 0


def test_tabulate_inputs_metadata_and_flops_as_flax():
    class Custom:
        def __repr__(self):
            return "<Meta>"

    def model(lib, np_):
        class M(lib.Module):
            def __init__(self):
                self.w = lib.Param(np_.ones((2, 3)))
                self.w.set_metadata("description", "a weight")
                self.c = lib.Param(np_.ones((2,)))
                self.c.set_metadata("obj", Custom())

            def sub(self, x, *, foo=None):
                return x, {"y": 2 * x}

            def __call__(self, x):
                self.sub(x, foo={})
                return (x @ self.w) * self.c.sum()

        return M()

    x, fx = jnp.ones((1, 2)), jax.numpy.ones((1, 2))
    for kw in (dict(), dict(depth=0)):
        ours = nnx.tabulate(model(nnx, jnp), x, console_kwargs=PLAIN, **kw)
        assert ours == fnnx.tabulate(model(fnnx, jax.numpy), fx, console_kwargs=PLAIN, **kw), kw


@pytest.mark.slow
def test_tabulate_flops_as_flax():
    def model(lib, np_):
        class M(lib.Module):
            def __init__(self):
                self.w = lib.Param(np_.ones((4,)))

            def __call__(self, x):
                return np_.sum((x * self.w) ** 2)

        return M()

    kw = dict(compute_flops=True, compute_vjp_flops=True, console_kwargs=PLAIN)
    ours = nnx.tabulate(model(nnx, jnp), jnp.ones(4), **kw)
    assert ours == fnnx.tabulate(model(fnnx, jax.numpy), jax.numpy.ones(4), **kw)
    assert "vjp_flops" in ours.splitlines()[2]


def test_tabulate_default_console_and_missing_method_restored():
    class M(nnx.Module):
        def __init__(self):
            self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

        def __call__(self, x):
            return self.lin(x)

    table = nnx.tabulate(M(), jnp.ones((1, 2)))
    assert sum(line.startswith("├─") for line in table.splitlines()) == 2
    assert "sow" not in vars(nnx.Linear) and "__call__" in vars(nnx.Linear)
    assert nnx.summary.SizeBytes.from_any(jnp.ones((2, 3))) == nnx.summary.SizeBytes(6, 24)


def test_variable_forwards_value_attributes_as_flax():
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        v = lib.Param(np_.arange(6.0).reshape(2, 3))
        assert float(v.sum()) == 15.0 and v.T.shape == (3, 2) and v.ndim == 2
        with pytest.raises(AttributeError):
            assert v.no_such_name is None  # never reached


def test_variable_value_is_not_taken_for_an_array_inside_transforms():
    # the forwarding leaves ``aval`` alone (fluxion's transformations read it on arrays)
    v = nnx.Variable(jnp.array(0))
    assert not hasattr(v, "aval")

    def bump(c):
        c[...] += 1
        return c[...]

    out = nnx.jit(bump)(v)
    assert int(out) == 1 and int(v[...]) == 1
