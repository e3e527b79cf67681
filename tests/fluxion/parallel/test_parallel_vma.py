"""``shard_map(check_vma=True)``: the varying manual axes of values inside the body
(``typeof(x).mat.varying``), the ``out_specs`` check, ``lax.pcast(..., to='varying')``,
gradients; collectives over tuples of axis names and with ``axis_index_groups``, under
shard_map, pmap and vmap; against real JAX 0.10 on 8 host devices."""

from __future__ import annotations

import re

import numpy as np
import pytest

import fluxion
from fluxion import lax

jax = pytest.importorskip("jax")


@pytest.fixture(scope="module")
def env(eight):
    """(lax, shard_map, mesh, P, make_jaxpr, typeof) for Fluxion and for JAX."""
    # Auto axes on both sides: on Explicit ones (the default) in_specs must match the arguments
    fm = fluxion.make_mesh((2, 4), ("x", "y"), axis_types=(fluxion.sharding.AxisType.Auto,) * 2)
    jm = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    return {"flx": (lax, fluxion.shard_map, fm, fluxion.P, fluxion.make_jaxpr, fluxion.typeof),
            "jax": (jax.lax, jax.shard_map, jm, jax.sharding.PartitionSpec, jax.make_jaxpr,
                    jax.typeof)}


OPS = {
    "psum": lambda L, b: L.psum(b, "x"),
    "pmax": lambda L, b: L.pmax(b, "x"),
    "pmean": lambda L, b: L.pmean(b, ("x", "y")),
    "all_gather": lambda L, b: L.all_gather(b, "y"),
    "all_gather_inv": lambda L, b: L.all_gather(b, "x", to="invarying"),
    "ppermute": lambda L, b: L.ppermute(b, "x", [(0, 1), (1, 0)]),
    "all_to_all": lambda L, b: L.all_to_all(b.reshape(2, 4), "x", 0, 0),
    "psum_scatter": lambda L, b: L.psum_scatter(b, "y", tiled=True),
    "axis_index": lambda L, b: L.axis_index(("x", "y")) + 0 * b[0],
    "mix": lambda L, b: b * L.axis_index("y"),
    "full_like": lambda L, b: L.full_like(b, 2.0),
    "cond_varying_pred": lambda L, b: L.cond(L.axis_index("x") == 0, lambda v: v * 2,
                                             lambda v: v, L.psum(b, "x")),
    "while_varying_pred": lambda L, b: L.while_loop(
        lambda c: c.sum() < L.axis_index("x") + 5.0, lambda c: c + 1, L.psum(b, "x")),
    "scan_psum": lambda L, b: L.scan(lambda c, r: (c + L.psum(r, "y"), c),
                                     L.full_like(b[:4], 0.0) * 0 + 1.0, b.reshape(2, 4))[0],
    "fori_carry": lambda L, b: L.fori_loop(0, 2, lambda i, c: c + L.psum(b, "x"),
                                           L.full_like(b, 0.0)),
    "jit_psum": None,  # filled per library below
}


def _vmas(which, env):
    L, shard_map, mesh, P, make_jaxpr, typeof = env[which]
    jit = jax.jit if which == "jax" else fluxion.jit
    seen = {}

    def body(b):
        vb = L.pcast(b, ("x", "y"), to="varying")
        for name, op in OPS.items():
            if op is None:
                op = lambda L, v: jit(lambda u: L.psum(u, "y"))(v)  # noqa: E731
            for tag, v in (("inv", b), ("var", vb)):
                seen[name, tag] = frozenset(typeof(op(L, v)).mat.varying)
        seen["arg", "inv"] = frozenset(typeof(b).mat.varying)
        seen["arg", "var"] = frozenset(typeof(vb).mat.varying)
        return b
    make_jaxpr(shard_map(body, mesh=mesh, in_specs=P(), out_specs=P()))(np.ones(8, np.float32))
    return seen


def test_typeof_varying_axes_like_jax(env):
    got, ref = _vmas("flx", env), _vmas("jax", env)
    assert got == ref
    assert ref["psum", "var"] == {"y"} and ref["all_gather", "inv"] == {"y"}


def test_zeros_like_keeps_varying_axes_like_jax(env):
    seen = {}
    for which, np_ in (("flx", fluxion.numpy), ("jax", jax.numpy)):
        L, shard_map, mesh, P, make_jaxpr, typeof = env[which]

        def body(b):
            seen[which] = [frozenset(typeof(f(b)).mat.varying) for f in
                           (np_.zeros_like, np_.ones_like, lambda v: np_.full_like(v, 3.0))]
            return b
        make_jaxpr(shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))(
            np.ones(8, np.float32))
    assert seen["flx"] == seen["jax"] == [frozenset({"x"})] * 3


def test_typeof_prints_and_arguments(env):
    L, shard_map, mesh, P, make_jaxpr, typeof = env["flx"]
    out = {}

    def body(a, w):
        out["a"], out["w"] = typeof(a), typeof(w)
        return a
    make_jaxpr(shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P()),
                         out_specs=P("x", "y")))(np.ones((4, 8), np.float32),
                                                 np.ones(3, np.float32))
    assert str(out["a"]) == "float32[2,2]{V:(x,y)}"
    assert out["a"].vma == out["a"].mat.varying == {"x", "y"}
    assert str(out["w"]) == "float32[3]" and out["w"].shape == (3,)
    # outside a check_vma body typeof is the plain ShapedArray
    assert not hasattr(fluxion.typeof(np.ones(2)), "mat")


def _msg(e):
    s = str(e.value)
    s = re.sub(r" \(at .*\)$", "", s, flags=re.S)
    return s.replace("fluxion.shard_map", "jax.shard_map")


@pytest.mark.parametrize("case", ["one_axis", "two_axes", "tree"])
def test_out_specs_check_like_jax(env, case):
    msgs = []
    for which in ("flx", "jax"):
        L, shard_map, mesh, P, make_jaxpr, typeof = env[which]

        def body(a):
            return a

        if case == "one_axis":
            f = shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(None, "y"))
        elif case == "two_axes":
            f = shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())
        else:
            f = shard_map(lambda a: (L.psum(a, "x"), {"k": a}), mesh=mesh,
                          in_specs=P("x", "y"), out_specs=(P(None, "y"), {"k": P("y")}))
        with pytest.raises(ValueError) as e:
            make_jaxpr(f)(np.ones((4, 8), np.float32))
        msgs.append(_msg(e))
    assert msgs[0] == msgs[1]
    # check_vma=False accepts the same program
    L, shard_map, mesh, P, *_ = env["flx"]
    g = shard_map(lambda a: a, mesh=mesh, in_specs=P("x", "y"), out_specs=P(), check_vma=False)
    assert g(np.ones((4, 8), np.float32)).shape == (2, 2)


def test_pcast_errors_like_jax(env):
    for which in ("flx", "jax"):
        L, shard_map, mesh, P, make_jaxpr, typeof = env[which]
        twice = shard_map(lambda b: L.pcast(b, "x", to="varying"), mesh=mesh,
                          in_specs=P("x"), out_specs=P("x"))
        with pytest.raises(ValueError, match=r"Unsupported pcast from=varying, to='varying'"):
            make_jaxpr(twice)(np.ones(8, np.float32))
        with pytest.raises(TypeError, match="must be a tuple or a str"):
            make_jaxpr(shard_map(lambda b: L.pcast(b, {"x"}, to="varying"), mesh=mesh,
                                 in_specs=P(), out_specs=P()))(np.ones(8, np.float32))


GRADS = {
    "mix": (lambda L, a, w: L.psum((a * w).sum(), ("x", "y")), "P()"),
    "pvary": (lambda L, a, w: L.psum((L.pcast(w, ("x", "y"), to="varying") * a).sum(),
                                     ("x", "y")), "P()"),
    "psum_of_invariant": (lambda L, a, w: L.psum(w, "x") * a.sum(0), "P(('x','y'))"),
    "gather_invariant": (lambda L, a, w: (L.all_gather(a, ("x", "y"), tiled=True,
                                                       to="invarying") ** 2).sum() * w.sum(),
                         "P()"),
    "out_over_y": (lambda L, a, w: L.psum(a * w, "x"), "P('y')"),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n == "gather_invariant" else n for n in GRADS])
def test_grad_with_check_vma_like_jax(env, name):
    rng = np.random.default_rng(1)
    a = rng.normal(size=(8, 4)).astype(np.float32)
    w = rng.normal(size=(4,)).astype(np.float32)
    body, out = GRADS[name]
    res = []
    for which in ("flx", "jax"):
        L, shard_map, mesh, P, *_ = env[which]
        grad = fluxion.grad if which == "flx" else jax.grad
        f = shard_map(lambda a, w: body(L, a, w), mesh=mesh, in_specs=(P(("x", "y")), P()),
                      out_specs=eval(out, {"P": P}))

        def both(a, w, f=f, grad=grad):
            return f(a, w), grad(lambda a, w: (f(a, w) ** 2).sum(), argnums=(0, 1))(a, w)
        # the reference under jax.jit: JAX's eager shard_map compiles each operation of the
        # gradient on its own (seconds), its jitted program gives the same numbers at once
        val, g = (both if which == "flx" else jax.jit(both))(a, w)
        res.append((np.asarray(val), *map(np.asarray, g)))
    for x, y in zip(*res):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-5)


def _run_both(env, body, in_spec, out_spec, x, check_vma=True):
    outs = []
    for which in ("flx", "jax"):
        L, shard_map, mesh, P, *_ = env[which]
        f = shard_map(lambda b: body(L, b), mesh=mesh, in_specs=eval(in_spec, {"P": P}),
                      out_specs=eval(out_spec, {"P": P}), check_vma=check_vma)
        outs.append(np.asarray((f if which == "flx" else jax.jit(f))(x)))  # JAX's jitted: faster
    assert outs[0].shape == outs[1].shape and outs[0].dtype == outs[1].dtype
    np.testing.assert_allclose(outs[0], outs[1])


TUPLES = {
    "axis_index_xy": (lambda L, b: L.axis_index(("x", "y")).reshape(1) + 0 * b,
                      "P(('x','y'))"),
    "axis_index_yx": (lambda L, b: L.axis_index(("y", "x")).reshape(1) + 0 * b,
                      "P(('y','x'))"),
    "all_gather_yx": (lambda L, b: L.all_gather(b, ("y", "x"), tiled=True), "P()"),
    "all_gather_xy": (lambda L, b: L.all_gather(b, ("x", "y"), axis=0), "P()"),
    "ppermute_xy": (lambda L, b: L.ppermute(b, ("x", "y"), [(i, (i + 3) % 8) for i in range(8)]),
                    "P(('x','y'))"),
    "ppermute_yx": (lambda L, b: L.ppermute(b, ("y", "x"), [(i, (i + 3) % 8) for i in range(8)]),
                    "P(('x','y'))"),
    "psum_scatter_xy": (lambda L, b: L.psum_scatter(b * b.sum(), ("x", "y"), tiled=True),
                        "P(('x','y'))"),
}


@pytest.mark.parametrize("name", list(TUPLES))
def test_tuple_axis_names_like_jax(env, name):
    body, out = TUPLES[name]
    check = not name.startswith(("all_gather", "psum_scatter"))
    x = np.arange(8, dtype=np.float32) if "scatter" not in name else \
        np.arange(64, dtype=np.float32)
    _run_both(env, body, "P(('x','y'))", out, x, check_vma=check)


G = [[0, 2], [3, 1]]
GROUPED = {
    "psum": lambda L, b: L.psum(b, "y", axis_index_groups=G),
    "pmean": lambda L, b: L.pmean(b, "y", axis_index_groups=G),
    "pmax": lambda L, b: L.pmax(b, "y", axis_index_groups=G),
    "pmin": lambda L, b: L.pmin(b, "y", axis_index_groups=G),
    "all_gather": lambda L, b: L.all_gather(b, "y", axis_index_groups=G, axis=1),
    "all_to_all": lambda L, b: L.all_to_all(b.reshape(2, -1), "y", 0, 1, axis_index_groups=G),
    "psum_scatter": lambda L, b: L.psum_scatter(b.reshape(2, -1), "y", axis_index_groups=G),
}


@pytest.mark.parametrize("name", list(GROUPED))
def test_axis_index_groups_like_jax(env, name):
    x = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    body = GROUPED[name]
    _run_both(env, body, "P(('x','y'))", "P(('x','y'))", x, check_vma=False)
    # under pmap (one axis of 4 devices)
    xs = np.arange(4 * 4, dtype=np.float32).reshape(4, 4) - 5.0
    out = fluxion.pmap(lambda b: body(lax, b), "y", devices=fluxion.devices()[:4])(xs)
    ref = jax.pmap(lambda b: body(jax.lax, b), "y", devices=jax.devices()[:4])(xs)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref))


def test_axis_index_groups_errors_like_jax(env):
    x = np.ones((8, 4), np.float32)
    for which in ("flx", "jax"):
        L, shard_map, mesh, P, make_jaxpr, _ = env[which]
        vmap = jax.vmap if which == "jax" else fluxion.vmap
        # JAX 0.10: psum/pmean with groups under check_vma=True are not implemented
        for op in ("psum", "pmean"):
            f = shard_map(lambda b: GROUPED[op](L, b), mesh=mesh, in_specs=P(("x", "y")),
                          out_specs=P(("x", "y")))
            with pytest.raises(NotImplementedError):
                make_jaxpr(f)(x)
        # pmax with groups is accepted there
        make_jaxpr(shard_map(lambda b: GROUPED["pmax"](L, b), mesh=mesh,
                             in_specs=P(("x", "y")), out_specs=P(("x", "y"))))(x)
        with pytest.raises(NotImplementedError, match="axis_index_groups not supported in vmap"):
            vmap(lambda v: L.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]),
                 axis_name="i")(np.ones(4, np.float32))
        with pytest.raises(ValueError, match="cover all indices exactly once"):
            make_jaxpr(shard_map(lambda b: L.psum(b, "y", axis_index_groups=[[0, 1], [1, 2]]),
                                 mesh=mesh, in_specs=P(("x", "y")), out_specs=P(("x", "y")),
                                 check_vma=False))(x)


@pytest.mark.parametrize("op", ["psum", "all_gather"])
def test_grad_of_grouped_collectives_like_jax(env, op):
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    w = np.linspace(0.5, 2, 8, dtype=np.float32).reshape(2, 4)
    outs = []
    for m, L in ((fluxion, lax), (jax, jax.lax)):
        if op == "psum":
            body = lambda b: L.psum(b ** 2, "y", axis_index_groups=G) * b  # noqa: E731
        else:
            body = lambda b: L.all_gather(b ** 2, "y", axis_index_groups=G) * w  # noqa: E731
        f = m.pmap(body, "y", devices=m.devices()[:4])
        g = m.grad(lambda v, f=f: (f(v) ** 2).sum())
        outs.append(np.asarray((g if m is fluxion else jax.jit(g))(x)))  # JAX's jitted: faster
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5)


@pytest.mark.parametrize("names", [("j", "i"), ("i", "j")])
def test_axis_index_of_several_vmap_axes_like_jax(names):
    x = np.zeros((2, 3), np.float32)
    outs = []
    for m, L in ((fluxion, lax), (jax, jax.lax)):
        f = m.vmap(m.vmap(lambda v: L.axis_index(names) + 0 * v.astype(np.int32),
                          axis_name="i"), axis_name="j")
        outs.append(np.asarray(f(x)))
    assert outs[0].dtype == outs[1].dtype
    np.testing.assert_array_equal(outs[0], outs[1])
    with pytest.raises(NotImplementedError, match="several axis names"):
        fluxion.vmap(fluxion.vmap(lambda v: lax.all_gather(v, names), axis_name="i"),
                     axis_name="j")(x)


@pytest.mark.parametrize("case", ["varying_to_invariant", "invariant_to_varying",
                                  "while_invariant_to_varying", "consistent"])
def test_loop_carry_manual_axes_checked_like_jax(env, case):
    # check_vma=True: a scan / while_loop carry must keep its varying manual axes (JAX's
    # TypeError, with its pcast hint when the carry becomes varying)
    msgs = []
    for name in ("jax", "flx"):
        L, shard_map, mesh, P, _, _ = env[name]
        bodies = {
            "varying_to_invariant": lambda w, x: L.scan(
                lambda c, _: (L.psum(c, "x"), None), x[0], None, length=2)[0],
            "invariant_to_varying": lambda w, x: L.scan(
                lambda c, _: (c * x[0], None), w, None, length=2)[0],
            "while_invariant_to_varying": lambda w, x: L.while_loop(
                lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x[0]), (0, w))[1],
            "consistent": lambda w, x: L.scan(
                lambda c, _: (c * x[0], None), x[0], None, length=2)[0][None],
        }
        f = shard_map(bodies[case], mesh=mesh, in_specs=(P(), P(("x", "y"))),
                      out_specs=P(("x", "y")))
        try:
            out = f(np.arange(4, dtype=np.float32), np.ones((8, 4), np.float32))
            msgs.append(("ok", np.asarray(out).tolist()))
        except TypeError as e:
            msgs.append(("TypeError", str(e).split("\n")[2].replace("jax.lax", "lax"),
                         "pcast(..., ('x',), to='varying')" in str(e)))
    assert msgs[0] == msgs[1], msgs
