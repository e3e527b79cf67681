"""Sharded ``jit``: shardings propagated from committed inputs, ``in_shardings`` /
``out_shardings`` (validated before XLA), ``with_sharding_constraint``, donation; values and
output shardings against real JAX on 8 host devices."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion.sharding import NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP


@pytest.fixture(scope="module")
def meshes(eight):
    # Auto axes: the compiler (Shardy) propagates shardings, in both libraries. (Fluxion treats
    # Explicit axes the same way; JAX's sharding-in-types rules for them are not implemented.)
    auto = (fluxion.sharding.AxisType.Auto,) * 2
    jauto = (jax.sharding.AxisType.Auto,) * 2
    return (fluxion.make_mesh((4, 2), ("x", "y"), axis_types=auto),
            jax.make_mesh((4, 2), ("x", "y"), axis_types=jauto))


def _spec(s):
    parts = list(s.spec)
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


PROGRAMS = {
    "elementwise": (lambda np_: (lambda a, b: np_.sin(a) * 2 + b)),
    "sum0": (lambda np_: (lambda a, b: (a * b).sum(0))),
    "sum1": (lambda np_: (lambda a, b: (a + b).sum(1))),
    "matmul": (lambda np_: (lambda a, b: a @ b.T)),
    "transpose": (lambda np_: (lambda a, b: (a - b).T)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("specs", [(("x", "y"), ("x", "y")), (("x",), ("x",)),
                                   ((None, "y"), (None, "y"))], ids=str)
def test_output_sharding_follows_inputs_like_jax(meshes, name, specs):
    m, jm = meshes
    a = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    x = fluxion.device_put(a, NamedSharding(m, P(*specs[0])))
    y = fluxion.device_put(b, NamedSharding(m, P(*specs[1])))
    jx = jax.device_put(a, JNS(jm, JP(*specs[0])))
    jy = jax.device_put(b, JNS(jm, JP(*specs[1])))
    out = fluxion.jit(PROGRAMS[name](jnp))(x, y)
    ref = jax.jit(PROGRAMS[name](jax.numpy))(jx, jy)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-5)
    assert _spec(out.sharding) == _spec(ref.sharding)
    assert out.committed and out.sharding.mesh == m


def test_in_and_out_shardings(meshes):
    m, jm = meshes
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    f = fluxion.jit(lambda v: v * 2, in_shardings=NamedSharding(m, P("x")),
                    out_shardings=NamedSharding(m, P(None, "y")))
    jf = jax.jit(lambda v: v * 2, in_shardings=JNS(jm, JP("x")),
                 out_shardings=JNS(jm, JP(None, "y")))
    out, ref = f(jnp.asarray(a)), jf(jax.numpy.asarray(a))
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    assert _spec(out.sharding) == _spec(ref.sharding) == (None, "y")
    # pytree prefixes and None entries
    g = fluxion.jit(lambda d: d["p"] + d["q"],
                    in_shardings=({"p": NamedSharding(m, P("x")), "q": None},))
    r = g({"p": jnp.ones((8, 2)), "q": jnp.ones((8, 2))})
    assert _spec(r.sharding) == ("x",)
    with fluxion.set_mesh(m):
        h = fluxion.jit(lambda v: v + 1, out_shardings=P("x", "y"))
        assert _spec(h(jnp.ones((8, 4))).sharding) == ("x", "y")


def test_sharding_arguments_are_validated_before_xla(meshes):
    m, _ = meshes
    with pytest.raises(TypeError, match="in_shardings leaves must be Sharding"):
        fluxion.jit(lambda v: v, in_shardings="x")
    with pytest.raises(TypeError, match="out_shardings"):
        fluxion.jit(lambda v: v, out_shardings=[1])
    f = fluxion.jit(lambda v: v, in_shardings=NamedSharding(m, P("x", "y", None)))
    with pytest.raises(ValueError, match="rank 2") as e:
        f(jnp.ones((8, 4)))
    assert "test_parallel_jit.py" in str(e.value) or "in_shardings" in str(e.value)
    g = fluxion.jit(lambda v: v, in_shardings=NamedSharding(m, P("x")))
    with pytest.raises(ValueError, match="does not divide 6"):
        g(jnp.ones((6, 4)))
    resharded = fluxion.device_put(np.ones((8, 4), np.float32), NamedSharding(m, P(None, "y")))
    with pytest.raises(ValueError, match="does not match the sharding on the respective arg"):
        g(resharded)
    other = fluxion.make_mesh((2,), ("z",), devices=fluxion.devices()[:2])
    committed = fluxion.device_put(np.ones((8, 4), np.float32), NamedSharding(other, P("z")))
    with pytest.raises(ValueError, match="does not match the sharding on the respective arg"):
        g(committed)  # as JAX says for an argument on another mesh
    with pytest.raises(ValueError, match="prefix|entries"):
        fluxion.jit(lambda a, b: a, in_shardings=(NamedSharding(m, P()),) * 3)(
            jnp.ones(8), jnp.ones(8))


def test_bare_partition_spec_needs_a_mesh_only_when_called_like_jax(meshes):
    m, jm = meshes
    # jit(...) with a bare P is fine outside any mesh, in both; the call needs one.
    f = fluxion.jit(lambda v: v * 2, in_shardings=P(), out_shardings=P("x"))
    jf = jax.jit(lambda v: v * 2, in_shardings=JP(), out_shardings=JP("x"))
    with pytest.raises(ValueError, match="bare PartitionSpec P"):
        f(jnp.ones(8))
    with pytest.raises(RuntimeError, match="non-empty mesh"):
        jf(np.ones(8, np.float32))
    with fluxion.sharding.set_mesh(m):
        out = f(jnp.ones(8))
    with jax.sharding.set_mesh(jm):
        ref = jf(np.ones(8, np.float32))
    assert _spec(out.sharding) == _spec(ref.sharding) == ("x",)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


def test_with_sharding_constraint_like_jax(meshes):
    m, jm = meshes
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = fluxion.device_put(a, NamedSharding(m, P("x", "y")))
    jx = jax.device_put(a, JNS(jm, JP("x", "y")))
    out = fluxion.jit(lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(m, P(None, "x"))))(x)
    ref = jax.jit(lambda v: jax.lax.with_sharding_constraint(v * 2, JNS(jm, JP(None, "x"))))(jx)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    assert _spec(out.sharding) == _spec(ref.sharding) == (None, "x")
    # under vmap the constraint gets the batch dimension inserted
    vm = fluxion.jit(fluxion.vmap(
        lambda r: lax.with_sharding_constraint(r * 2, NamedSharding(m, P("y")))))(x)
    np.testing.assert_array_equal(np.asarray(vm), a * 2)
    # grad through a constraint
    g = fluxion.jit(fluxion.grad(
        lambda v: jnp.sum(lax.with_sharding_constraint(v, NamedSharding(m, P("x"))) ** 2)))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * a)


def test_mixed_committed_and_uncommitted(meshes):
    m, _ = meshes
    x = fluxion.device_put(np.ones((8, 4), np.float32), NamedSharding(m, P("x")))
    out = fluxion.jit(lambda a, b: a + b)(x, jnp.arange(4.0))
    np.testing.assert_array_equal(np.asarray(out), 1 + np.arange(4.0)[None].repeat(8, 0))
    assert out.sharding.mesh == m
    eager = x * jnp.arange(4.0)
    assert eager.sharding.mesh == m and _spec(eager.sharding) == ("x",)
    single = fluxion.device_put(np.ones(4, np.float32), fluxion.devices()[0])
    with pytest.raises(ValueError, match="incompatible devices"):
        fluxion.jit(lambda a, b: a + b)(x, single)


def test_donation_with_shardings(meshes):
    m, _ = meshes
    x = fluxion.device_put(np.ones((8, 4), np.float32), NamedSharding(m, P("x", "y")))
    f = fluxion.jit(lambda v: v * 3, donate_argnums=0)
    out = f(x)
    assert x.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 3.0))


def test_sharded_grad_and_train_step_equals_single_device(meshes):
    m, _ = meshes
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 3)).astype(np.float32)
    xb = rng.normal(size=(8, 4)).astype(np.float32)
    yb = rng.normal(size=(8, 3)).astype(np.float32)

    def loss(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    step = fluxion.jit(lambda w, x, y: w - 0.1 * fluxion.grad(loss)(w, x, y))
    ref = step(jnp.asarray(w), jnp.asarray(xb), jnp.asarray(yb))
    ws = fluxion.device_put(w, NamedSharding(m, P()))
    xs = fluxion.device_put(xb, NamedSharding(m, P("x")))
    ys = fluxion.device_put(yb, NamedSharding(m, P("x")))
    out = step(ws, xs, ys)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-5, atol=1e-6)
    assert out.sharding.mesh == m


def test_aot_lower_and_compile_with_shardings(meshes):
    m, jm = meshes
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    x = fluxion.device_put(a, NamedSharding(m, P("x", "y")))
    lowered = fluxion.jit(lambda v: (v * 2).sum(0)).lower(x)
    text = lowered.as_text()
    assert "sdy.sharding" in text and "num_partitions = 8" in text
    compiled = lowered.compile()
    out = compiled(x)
    ref = jax.jit(lambda v: (v * 2).sum(0))(jax.device_put(a, JNS(jm, JP("x", "y"))))
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref))
    assert _spec(out.sharding) == _spec(ref.sharding)
    np.testing.assert_allclose(np.asarray(compiled(jnp.asarray(a))), np.asarray(ref))
    elsewhere = fluxion.device_put(a, fluxion.devices()[3])
    with pytest.raises(ValueError, match="committed argument"):
        compiled(elsewhere)
