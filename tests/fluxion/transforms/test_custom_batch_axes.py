"""vmap of custom_jvp / custom_vjp functions places batch axes as JAX's batching of
``custom_jvp_call`` / ``custom_vjp_call`` does: the inputs keep their batch dimensions, each
output keeps the one the function's body gives it (a body that transposes leaves its output
batched at 1), and the rules' results are moved to the same; ``bwd``'s cotangents go back to their
inputs' batch dimensions, summed where an input is unbatched. jax_md's ``space.transform`` under
vmap depends on it: a later sum over the spatial axis adds in JAX's order (float32 rounding).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion


def _transform(lib, jnp):
    @lib.custom_jvp
    def tr(box, r):
        return jnp.einsum("ij,j->i", box, r)

    @tr.defjvp
    def tr_jvp(primals, tangents):
        box, r = primals
        dbox, dr = tangents
        return tr(box, r), dr + tr(dbox, r)

    return tr


def _scaled(lib, jnp):
    @lib.custom_vjp
    def f(x, w):
        return jnp.sin(x) * w

    def fwd(x, w):
        return jnp.sin(x) * w, (jnp.cos(x), jnp.sin(x), w)

    def bwd(res, g):
        c, s, w = res
        return 3.0 * g * c * w, (g * s).sum() if w.ndim == 0 else g * s

    f.defvjp(fwd, bwd)
    return f


def _call_eqn_shapes(jaxpr, name):
    eqn = next(e for e in jaxpr.jaxpr.eqns if e.primitive.name == name)
    return ([tuple(v.aval.shape) for v in eqn.invars], [tuple(v.aval.shape) for v in eqn.outvars])


def _same(ours, theirs, rtol=1e-6):
    o_leaves, t_leaves = fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(o_leaves) == len(t_leaves)
    for o, t in zip(o_leaves, t_leaves):
        assert o.shape == t.shape and o.dtype == t.dtype and o.weak_type == t.weak_type
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=rtol)


_BOX = np.array([[2.0, 0.5, 0.0], [0.0, 1.5, 0.25], [0.0, 0.0, 1.0]], np.float32)
_R = np.linspace(-1.0, 1.0, 15, dtype=np.float32).reshape(5, 3)


def test_custom_jvp_vmap_keeps_the_body_output_axis_like_jax():
    for in_axes, r in (((None, 0), _R), ((None, 1), _R.T), ((0, 0), _R)):
        box = np.stack([_BOX] * 5) if in_axes[0] == 0 else _BOX
        got = {}
        for lib, jnp in ((fluxion, fluxion.numpy), (jax, jax.numpy)):
            f = lib.vmap(_transform(lib, jnp), in_axes)
            got[lib.__name__] = (_call_eqn_shapes(lib.make_jaxpr(f)(box, r), "custom_jvp_call"),
                                 f(box, r))
        assert got["fluxion"][0] == got["jax"][0], in_axes
        _same(got["fluxion"][1], got["jax"][1])


def test_custom_jvp_rule_under_vmap_like_jax():
    def run(lib, jnp):
        tr = _transform(lib, jnp)

        def energy(box, r):
            y = lib.vmap(tr, (None, 1))(box, r)
            return jnp.sum(y * y * jnp.arange(1.0, 6.0)[:, None])

        return (lib.grad(energy, argnums=(0, 1))(_BOX, _R.T),
                lib.vmap(lib.grad(lambda b, x: jnp.sum(tr(b, x) ** 2), 1), (None, 1))(_BOX, _R.T),
                lib.jvp(lambda x: lib.vmap(tr, (None, 1))(_BOX, x), (_R.T,), (_R.T * 2,)))

    _same(run(fluxion, fluxion.numpy), run(jax, jax.numpy))


def test_custom_jvp_rule_batching_an_output_the_body_leaves_unbatched():
    def run(lib, jnp):
        @lib.custom_jvp
        def f(x, c):
            return c * 2.0

        f.defjvp(lambda p, t: (f(*p), t[1] * 2.0 + jnp.sum(t[0])))
        g = lib.vmap(f, (0, None))
        return (g(_R, _BOX[0]), lib.grad(lambda x: jnp.sum(g(x, _BOX[0])))(_R),
                lib.jacfwd(lambda c: g(_R, c))(_BOX[0]))

    _same(run(fluxion, fluxion.numpy), run(jax, jax.numpy))


_X = np.linspace(0.1, 1.0, 12, dtype=np.float32).reshape(3, 4)


@pytest.mark.parametrize("in_axes,w", [((1, None), np.float32(1.5)), ((0, 0), _X * 2 + 1),
                                       ((1, 0), _X.T + 1)])
def test_custom_vjp_vmap_axes_and_cotangents_like_jax(in_axes, w):
    def run(lib, jnp):
        f = lib.vmap(_scaled(lib, jnp), in_axes)

        def loss(a, b):
            y = f(a, b)
            return jnp.sum(y * jnp.arange(1.0, 1.0 + y.size).reshape(y.shape))

        return (_call_eqn_shapes(lib.make_jaxpr(f)(_X, w), "custom_vjp_call"), f(_X, w),
                lib.grad(loss, argnums=(0, 1))(_X, w), lib.jit(lib.grad(loss, argnums=(0, 1)))(_X, w))

    ours, theirs = run(fluxion, fluxion.numpy), run(jax, jax.numpy)
    assert ours[0] == theirs[0]
    _same(ours[1:], theirs[1:])


def test_nested_vmap_of_custom_vjp_like_jax():
    x = np.linspace(0.1, 1.0, 24, dtype=np.float32).reshape(2, 3, 4)
    w = np.linspace(1.0, 2.0, 4, dtype=np.float32)

    def run(lib, jnp):
        f = lib.vmap(lib.vmap(_scaled(lib, jnp), (1, None)), (2, 0))
        return f(x, w), lib.grad(lambda a, b: jnp.sum(f(a, b) ** 2), argnums=(0, 1))(x, w)

    _same(run(fluxion, fluxion.numpy), run(jax, jax.numpy))


def _pair(lib, kind):
    """(x, c) -> (2x, c + 1) as a custom_jvp or custom_vjp function: the second output does not
    depend on the mapped x."""
    if kind == "jvp":
        @lib.custom_jvp
        def f(x, c):
            return x * 2.0, c + 1.0

        f.defjvp(lambda p, t: (f(*p), (t[0] * 2.0, t[1])))
        return f

    @lib.custom_vjp
    def g(x, c):
        return x * 2.0, c + 1.0

    g.defvjp(lambda x, c: (g(x, c), None), lambda _, ct: (ct[0] * 2.0, ct[1]))
    return g


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_custom_call_output_the_body_leaves_unbatched_stays_unbatched_like_jax(kind):
    xs = np.arange(3.0, dtype=np.float32)

    def run(lib):
        c = lib.numpy.asarray(np.float32(1.5))  # a NumPy scalar would come back as one from jax
        f = _pair(lib, kind)
        g = lib.vmap(f, (0, None), out_axes=(0, None))  # JAX: the second output is unbatched
        jaxpr = lib.make_jaxpr(lib.vmap(f, (0, None)))(xs, c)
        return ([tuple(v.aval.shape) for v in jaxpr.jaxpr.outvars],
                (g(xs, c), lib.jit(g)(xs, c), lib.grad(lambda x: g(x, c)[0].sum())(xs)))

    ours, theirs = run(fluxion), run(jax)
    assert ours[0] == theirs[0]
    _same(ours[1], theirs[1])


def test_straight_through_rule_batches_the_output_under_grad_like_jax():
    # the value ignores x, the rule's tangent passes dx: JAX batches the output where the rule
    # runs with the call (grad, jvp of vmap), and refuses it once staged under jit
    xs = np.arange(3.0, dtype=np.float32)

    def run(lib):
        c = lib.numpy.asarray(np.float32(2.0))
        v = lib.vmap(_st_like(lib), (0, None))
        return (lib.grad(lambda x: v(x, c).sum())(xs), lib.jvp(lambda x: v(x, c), (xs,), (xs,)),
                lib.vmap(_st_like(lib), (0, None), out_axes=None)(xs, c))

    _same(run(fluxion), run(jax))
    with pytest.raises(TypeError):
        jax.grad(lambda x: jax.jit(jax.vmap(_st_like(jax), (0, None)))(x, 2.0).sum())(xs)
    with pytest.raises(TypeError, match="leaves unbatched"):
        fluxion.grad(lambda x: fluxion.jit(fluxion.vmap(_st_like(fluxion), (0, None)))(
            x, 2.0).sum())(xs)


def _st_like(lib):
    @lib.custom_jvp
    def st(x, c):
        return c * 1.0

    st.defjvp(lambda p, t: (st(*p), t[0] + t[1]))
    return st
