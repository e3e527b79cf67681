"""Shardings that follow an example or a type, against real JAX: ``jnp.zeros_like``/``full_like``
of a committed array keep its sharding (an ``Auto`` mesh's too; optax's moments of sharded
parameters), a traced or uncommitted example does not; ``dot_general`` with ``out_sharding`` on
an Explicit mesh takes operands whose contracting dimensions are split differently."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp
from fluxion.sharding import AxisType, NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
import jax.numpy as jjnp  # noqa: E402
from jax.sharding import AxisType as JAxisType  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402


def _meshes(explicit: bool = False) -> tuple:
    t, jt = (AxisType.Explicit, JAxisType.Explicit) if explicit else (AxisType.Auto, JAxisType.Auto)
    return (fluxion.make_mesh((2, 2), ("row", "col"), axis_types=(t, t)),
            jax.make_mesh((2, 2), ("row", "col"), axis_types=(jt, jt)))


def _same(a, ja) -> None:
    assert a.shape == ja.shape and a.dtype == ja.dtype
    assert a.sharding.spec == P(*ja.sharding.spec), (a.sharding, ja.sharding)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(ja))


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "full_like"])
def test_like_of_a_committed_auto_sharded_array_keeps_its_sharding(eight, fn):
    m, jm = _meshes()
    host = np.arange(16, dtype=np.float32).reshape(8, 2)
    x = fluxion.device_put(fjnp.asarray(host), NamedSharding(m, P("row", "col")))
    jx = jax.device_put(jjnp.asarray(host), JNS(jm, JP("row", "col")))
    args = (7.0,) if fn == "full_like" else ()
    out, jout = getattr(fjnp, fn)(x, *args), getattr(jjnp, fn)(jx, *args)
    _same(out, jout)
    assert out.committed
    # a tree of parameters (optax's init) and a dtype change keep it too
    _same(fluxion.tree.map(fjnp.zeros_like, {"w": x})["w"],
          jax.tree.map(jjnp.zeros_like, {"w": jx})["w"])
    _same(fjnp.zeros_like(x, dtype=fjnp.int32), jjnp.zeros_like(jx, dtype=jjnp.int32))


def test_like_does_not_follow_uncommitted_traced_or_reshaped_examples(eight):
    m, jm = _meshes()
    x = fluxion.device_put(fjnp.ones((8, 2)), NamedSharding(m, P("row", "col")))
    jx = jax.device_put(jjnp.ones((8, 2)), JNS(jm, JP("row", "col")))
    # another shape: the default placement
    assert not isinstance(fjnp.zeros_like(x, shape=(4,)).sharding, NamedSharding)
    assert not isinstance(jjnp.zeros_like(jx, shape=(4,)).sharding, JNS)
    # an uncommitted example
    assert not fjnp.zeros_like(fjnp.ones(3)).committed
    # inside jit the example is traced: its Auto sharding is not in its type
    with fluxion.set_mesh(m), jax.set_mesh(jm):
        out = fluxion.jit(fjnp.zeros_like)(x)
        jout = jax.jit(jjnp.zeros_like)(jx)
    _same(out, jout)


@pytest.mark.parametrize("jit", [False, True])
def test_dot_general_with_out_sharding_takes_mismatched_operand_shardings(eight, jit):
    # flax's MultiHeadAttention(out_sharding=...): the input's contracting dimension is split
    # over one mesh axis and the kernel's over another; with out_sharding JAX accepts it
    m, jm = _meshes(explicit=True)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5, 16)).astype(np.float32)
    b = rng.standard_normal((16, 4, 2)).astype(np.float32)
    outs = []
    for lib, jnp_, mesh, Pm, NS in ((fluxion, fjnp, m, P, NamedSharding),
                                    (jax, jjnp, jm, JP, JNS)):
        with lib.set_mesh(mesh):
            x = lib.device_put(jnp_.asarray(a), NS(mesh, Pm("row", None, "col")))
            k = lib.device_put(jnp_.asarray(b), NS(mesh, Pm("row", "col", None)))

            def f(x, k, jnp_=jnp_, Pm=Pm):
                return jnp_.einsum("btd,dnh->btnh", x, k, out_sharding=Pm("row", None, "col"))

            outs.append((lib.jit(f) if jit else f)(x, k))
            outs.append(str(lib.typeof(outs[-1])))
    out, ty, jout, jty = outs
    assert ty == jty == "float32[4@row,5,4@col,2]"
    np.testing.assert_allclose(np.asarray(out), np.asarray(jout), rtol=1e-5, atol=1e-5)
    # without out_sharding the mismatch is JAX's error
    for lib, jnp_, mesh, Pm, NS in ((fluxion, fjnp, m, P, NamedSharding),
                                    (jax, jjnp, jm, JP, JNS)):
        with lib.set_mesh(mesh):
            x = lib.device_put(jnp_.asarray(a), NS(mesh, Pm("row", None, "col")))
            k = lib.device_put(jnp_.asarray(b), NS(mesh, Pm("row", "col", None)))
            with pytest.raises(Exception, match="contracting dimensions to have consistent"):
                jnp_.einsum("btd,dnh->btnh", x, k)


@pytest.mark.parametrize("kind", ["auto", "explicit", "mixed"])
def test_eval_shape_reports_the_type_sharding_on_explicit_meshes(eight, kind):
    # JAX's Traced.out_info: an all-Explicit mesh's type sharding (over the abstract mesh);
    # None when an axis is Auto
    types = {"auto": ("Auto", "Auto"), "explicit": ("Explicit", "Explicit"),
             "mixed": ("Explicit", "Auto")}[kind]
    m = fluxion.make_mesh((2, 2), ("a", "b"), axis_types=tuple(getattr(AxisType, t) for t in types))
    jm = jax.make_mesh((2, 2), ("a", "b"), axis_types=tuple(getattr(JAxisType, t) for t in types))
    outs = []
    for lib, jnp_, mesh, Pm in ((fluxion, fjnp, m, P), (jax, jjnp, jm, JP)):
        with lib.set_mesh(mesh):
            x = lib.device_put(jnp_.ones((4, 4)), Pm("a", "b"))
            outs.append(lib.eval_shape(lambda x: ((x * 2).sum(0), x.T), x))
    for o, jo in zip(outs[0], outs[1]):
        assert o.shape == jo.shape and o.dtype == jo.dtype
        if jo.sharding is None:
            assert o.sharding is None
        else:
            assert o.sharding.spec == P(*jo.sharding.spec)
            assert type(o.sharding.mesh).__name__ == type(jo.sharding.mesh).__name__ == "AbstractMesh"
            assert o.sharding.mesh.axis_names == jo.sharding.mesh.axis_names
