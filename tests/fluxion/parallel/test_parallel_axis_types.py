"""The output shardings of ``jit(in_shardings=, out_shardings=)`` and of
``with_sharding_constraint`` against real JAX on 8 host CPU devices, table-driven over programs x
mesh axis types (Auto: shardings are hints for the partitioner; Explicit: they are types; a mixed
mesh) x input and output shardings: the same result shardings, values, and errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion.sharding import AxisType, NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType as JAxisType  # noqa: E402
from jax.sharding import NamedSharding as JNS  # noqa: E402
from jax.sharding import PartitionSpec as JP  # noqa: E402

A = np.arange(64, dtype=np.float32).reshape(8, 8) / 10

TYPES = {"auto": ("Auto", "Auto"), "explicit": ("Explicit", "Explicit"),
         "mixed": ("Auto", "Explicit")}


def _programs(api, np_, wsc):
    return {
        "matmul": lambda a, b: a @ b.T,
        "add": lambda a, b: np_.tanh(a) + b,
        "sum": lambda a, b: (a * b).sum(1),
        "reshape": lambda a, b: (a + b).reshape(4, 16),
        "constraint_then_matmul": lambda a, b: wsc(a, ("x", "y")) @ b,
        "matmul_then_constraint": lambda a, b: wsc(a @ b, (None, "x")) * 2,
    }


NAMES = list(_programs(fluxion, fnp, None))
IN_SPECS = [("x",), ("x", "y"), (None, "y")]
OUT_SPECS = [None, (), ("y",)]


def _run(api, np_, types, name, ins, outs, use_set_mesh, numpy_args=False):
    mod = api.sharding
    axis_types = tuple(getattr(mod.AxisType, t) for t in types)
    mesh = api.make_mesh((2, 4), ("x", "y"), axis_types=axis_types)
    NS, PP = mod.NamedSharding, mod.PartitionSpec
    prog = _programs(api, np_, lambda v, s: api.lax.with_sharding_constraint(
        v, NS(mesh, PP(*s))))[name]
    kw = {"in_shardings": (NS(mesh, PP(*ins)), NS(mesh, PP(*ins)))}
    if outs is not None:
        kw["out_shardings"] = NS(mesh, PP(*outs))
    f = api.jit(prog, **kw)
    a, b = A, A + 1
    if "Explicit" in types and not numpy_args:
        # arrays typed by their sharding (NumPy arguments have no sharding in their type:
        # in_shardings only place them)
        a, b = (api.device_put(v, NS(mesh, PP(*ins))) for v in (a, b))
    if use_set_mesh:
        with api.set_mesh(mesh):
            r = f(a, b)
    else:
        r = f(a, b)
    return r.sharding.spec, np.asarray(r), r.shape, r.dtype


def _spec(s):
    # trailing None entries dropped: P('x') and P('x', None) shard alike (JAX itself prints
    # P() for a replicated result of numpy arguments and P(None, None) for one of typed arrays)
    parts = [tuple(p) if isinstance(p, (tuple, list)) else p for p in s]
    while parts and parts[-1] is None:
        parts.pop()
    return tuple(parts)


@pytest.mark.parametrize("types", list(TYPES))
@pytest.mark.parametrize("name", NAMES)
def test_jit_output_shardings_like_jax(eight, types, name):
    _compare_table(types, name, False)


# NumPy arguments are untyped (in_shardings only place them), so on Explicit axes the
# partitioner decides where the typed-array programs would raise; under set_mesh the
# elementwise results of untyped operands are typed (replicated) on its mesh, as in JAX.
_NUMPY_PER_COMMIT = {("explicit", "matmul"), ("explicit", "add"), ("mixed", "add"),
                     ("mixed", "reshape")}


@pytest.mark.parametrize("types,name", [
    pytest.param(t, n, marks=() if (t, n) in _NUMPY_PER_COMMIT else pytest.mark.slow)
    for t in ("explicit", "mixed") for n in NAMES])
def test_jit_numpy_arguments_output_shardings_like_jax(eight, types, name):
    _compare_table(types, name, True)


def _compare_table(types, name, numpy_args):
    checked = 0
    cases = list(itertools.product(IN_SPECS, OUT_SPECS))
    run = lambda api, np_, ins, outs, sm: _run(  # noqa: E731
        api, np_, TYPES[types], name, ins, outs, sm, numpy_args)
    for k, (ins, outs) in enumerate(cases):
        # half of the cases inside set_mesh, half without (NumPy arguments: both, each case)
        for use_set_mesh in ((False, True) if numpy_args else (k % 2 == 1,)):
            checked += _compare_case(run, types, name, ins, outs, use_set_mesh)
    assert checked >= len(cases) - 3


def _compare_case(run, types, name, ins, outs, use_set_mesh) -> int:
    """1 when the case was compared with JAX (equal shardings, values, or both raising), 0 when
    JAX gives no reference (an internal assertion of its own on mixed meshes)."""
    try:
        want = run(jax, jnp, ins, outs, use_set_mesh)
    except AssertionError as e:
        if "acts as an assert" not in str(e):
            return 0
        with pytest.raises(AssertionError, match="acts as an assert"):
            run(fluxion, fnp, ins, outs, use_set_mesh)
        return 1
    except Exception as e:  # noqa: BLE001  (the reference's error: ours must raise too)
        with pytest.raises(Exception) as info:
            run(fluxion, fnp, ins, outs, use_set_mesh)
        assert type(info.value).__name__ == type(e).__name__ or isinstance(
            info.value, (TypeError, ValueError)), (ins, outs, info.value, e)
        return 1
    got = run(fluxion, fnp, ins, outs, use_set_mesh)
    assert _spec(got[0]) == _spec(want[0]), (types, name, ins, outs, use_set_mesh, got[0],
                                             want[0])
    assert got[2] == want[2] and got[3] == want[3]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-5)
    return 1


def test_constraint_under_auto_survives_a_matmul_like_jax(eight):
    m = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    jm = jax.make_mesh((2, 4), ("x", "y"), axis_types=(JAxisType.Auto,) * 2)

    def prog(api, mesh, NS, PP):
        def f(a, b):
            a = api.lax.with_sharding_constraint(a, NS(mesh, PP("x", "y")))
            return api.numpy.tanh(a @ b)
        return api.jit(f)(A, A.T)

    got, want = prog(fluxion, m, NamedSharding, P), prog(jax, jm, JNS, JP)
    assert _spec(got.sharding.spec) == _spec(want.sharding.spec) == ("x",)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


@pytest.mark.parametrize("shape", [(5, 3), pytest.param((8, 6), marks=pytest.mark.slow)])
def test_uneven_constraint_like_jax(eight, shape):
    """A with_sharding_constraint that does not divide the shape: under jit on Auto axes the
    compiler pads the shards (JAX's result sharding and values); eagerly, or naming Explicit
    axes, both raise."""
    A2 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

    def run(api, types, spec, use_jit):
        mod = api.sharding
        mesh = api.make_mesh((2, 4), ("x", "y"),
                             axis_types=tuple(getattr(mod.AxisType, t) for t in types))
        s = mod.NamedSharding(mesh, mod.PartitionSpec(*spec))
        f = lambda a: api.lax.with_sharding_constraint(a * 2, s) + 1  # noqa: E731
        r = (api.jit(f) if use_jit else f)(A2)
        return _spec(r.sharding.spec), np.asarray(r)

    for spec in [("x", "y"), ("y", None), (None, "y"), (("x", "y"),)]:
        want = run(jax, ("Auto", "Auto"), spec, True)
        got = run(fluxion, ("Auto", "Auto"), spec, True)
        assert got[0] == want[0], (spec, got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        try:  # eagerly: JAX refuses a constraint that does not divide; so do we
            eager = run(jax, ("Auto", "Auto"), spec, False)
        except Exception:  # noqa: BLE001  (JAX's IndivisibleError)
            with pytest.raises(ValueError, match="with_sharding_constraint"):
                run(fluxion, ("Auto", "Auto"), spec, False)
        else:
            mine = run(fluxion, ("Auto", "Auto"), spec, False)
            assert mine[0] == eager[0]
            np.testing.assert_array_equal(mine[1], eager[1])
    for types in (("Explicit", "Explicit"), ("Auto", "Explicit")):
        with pytest.raises(ValueError, match="can only refer to Auto"):
            run(jax, types, ("x", "y"), True)
        with pytest.raises(ValueError, match="can only refer to Auto"):
            run(fluxion, types, ("x", "y"), True)
