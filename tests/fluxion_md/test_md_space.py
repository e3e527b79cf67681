"""fluxion_md.space against jax_md.space: free, periodic and periodic_general spaces."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion_md import space

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True), fluxion.enable_x64(True):
        yield


def _both(build, *arrays):
    """Run ``build(module, xnp)(*arrays)`` with fluxion_md (eagerly) and jax_md (as one jax.jit
    program: eager jax_md compiles every operation on its own); return both as numpy."""
    ours = build(space, fnp)(*[fnp.asarray(a) for a in arrays])
    ref = jax.jit(build(jax_md.space, jax.numpy))(*[jax.numpy.asarray(a) for a in arrays])
    return np.asarray(ours), np.asarray(ref)


RS = np.random.RandomState(0)
RA = RS.uniform(0, 1, (5, 3))
RB = RS.uniform(0, 1, (7, 3))
DR = RS.normal(0, 0.3, (5, 3))
TRICLINIC = np.array([[3.0, 0.4, 0.2], [0.0, 2.5, 0.3], [0.0, 0.0, 2.8]])


@pytest.mark.parametrize("box", [2.5, np.array([2.0, 3.0, 4.0]), TRICLINIC])
def test_transforms_match(box):
    for name in ("raw_transform", "transform"):
        a, b = _both(lambda m, xnp: (lambda R: getattr(m, name)(xnp.asarray(box), R)), RA)
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-14)
    a, b = _both(lambda m, xnp: (lambda _: m.inverse(xnp.asarray(box))), RA)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_transform_gradient_stays_in_real_space():
    box = fnp.asarray(TRICLINIC)
    g = fluxion.grad(lambda R: fnp.sum(space.transform(box, R) ** 2))(fnp.asarray(RA))
    gj = jax.grad(lambda R: jax.numpy.sum(jax_md.space.transform(jax.numpy.asarray(TRICLINIC),
                                                                  R) ** 2))(RA)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj), rtol=1e-13)


def test_basic_functions():
    a, b = _both(lambda m, xnp: (lambda x: m.periodic_displacement(1.0, x)), RS.normal(0, 2, (6, 3)))
    np.testing.assert_allclose(a, b, atol=1e-14)
    a, b = _both(lambda m, xnp: m.distance, DR)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    a, b = _both(lambda m, xnp: m.square_distance, DR)
    np.testing.assert_allclose(a, b, rtol=1e-14)
    a, b = _both(lambda m, xnp: (lambda R, d: m.periodic_shift(1.0, R, d)), RA, DR)
    np.testing.assert_allclose(a, b, atol=1e-14)
    a, b = _both(lambda m, xnp: (lambda x, y: m.pairwise_displacement(x, y)), RA[0], RB[0])
    np.testing.assert_allclose(a, b)
    # distance has a zero (not NaN) gradient at zero separation
    g = fluxion.grad(lambda x: space.distance(x))(fnp.zeros(3))
    assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("kind", ["free", "periodic", "periodic_vec", "general_frac",
                                  "general_real", "general_unwrapped"])
def test_spaces_and_maps(kind):
    def build(m, xnp):
        if kind == "free":
            return m.free()
        if kind == "periodic":
            return m.periodic(2.0)
        if kind == "periodic_vec":
            return m.periodic(xnp.asarray([2.0, 3.0, 4.0]))
        if kind == "general_frac":
            return m.periodic_general(xnp.asarray(TRICLINIC))
        if kind == "general_real":
            return m.periodic_general(xnp.asarray(TRICLINIC), fractional_coordinates=False)
        return m.periodic_general(xnp.asarray(TRICLINIC), wrapped=False)
    scale = 1.0 if kind in ("general_frac", "general_unwrapped") else 2.0
    Ra, Rb = RA * scale, RB * scale
    for mapper, args in (("map_product", (Ra, Rb)), ("map_bond", (Ra, Rb[:5])),
                         ("map_neighbor", (Ra, np.stack([Rb[:4]] * 5)))):
        for use_metric in (False, True):
            def fn(m, xnp, mapper=mapper, use_metric=use_metric):
                disp, _ = build(m, xnp)
                f = m.metric(disp) if use_metric else disp
                return getattr(m, mapper)(f)
            a, b = _both(fn, *args)
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    a, b = _both(lambda m, xnp: build(m, xnp)[1], Ra, DR)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_periodic_general_fractional_equals_real():
    disp_f, shift_f = space.periodic_general(fnp.asarray(TRICLINIC))
    disp_r, shift_r = space.periodic_general(fnp.asarray(TRICLINIC), fractional_coordinates=False)
    box = fnp.asarray(TRICLINIC)
    Rf = fnp.asarray(RA)
    Rr = space.transform(box, Rf)
    np.testing.assert_allclose(np.asarray(disp_f(Rf[0], Rf[1])), np.asarray(disp_r(Rr[0], Rr[1])),
                               atol=1e-12)
    moved = space.transform(box, shift_f(Rf, fnp.asarray(DR)))
    np.testing.assert_allclose(np.asarray(moved), np.asarray(shift_r(Rr, fnp.asarray(DR))),
                               atol=1e-12)
    # box= deforms the cell per call, as in jax_md
    new = fnp.asarray(TRICLINIC * 1.1)
    a = disp_f(Rf[0], Rf[1], box=new)
    b = jax_md.space.periodic_general(jax.numpy.asarray(TRICLINIC))[0](
        jax.numpy.asarray(RA[0]), jax.numpy.asarray(RA[1]), box=jax.numpy.asarray(TRICLINIC * 1.1))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-13)


def test_canonicalize_and_errors():
    disp, _ = space.free()
    metric = space.canonicalize_displacement_or_metric(disp)
    assert float(metric(fnp.asarray([3.0, 4.0]), fnp.zeros(2))) == 5.0
    assert space.canonicalize_displacement_or_metric(metric) is metric
    with pytest.raises(ValueError, match="pairwise_displacement"):
        space.pairwise_displacement(fnp.zeros((2, 3)), fnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="box"):
        space.periodic(-1.0)
    with pytest.raises(ValueError, match="box"):
        space.periodic_general(0.0)
    d, s = space.periodic(2.0)
    with pytest.raises(space.UnexpectedBoxException):
        d(fnp.zeros(3), fnp.ones(3), box=2.0)


def test_transform_under_vmap_keeps_jax_md_layout():
    # vmap of the custom_jvp transform leaves its output batched at 1 ([3, N]) as in JAX, so
    # float32 sums over the spatial axis add in jax_md's order (energy_test mic_mi float32).
    R = RS.uniform(0, 1, (16, 3)).astype(np.float32)
    box = TRICLINIC.astype(np.float32)

    def shapes(jaxpr):
        return [(e.primitive.name, [tuple(v.aval.shape) for v in e.outvars])
                for e in jaxpr.jaxpr.eqns]

    ours = fluxion.make_jaxpr(fluxion.vmap(lambda r: space.transform(fnp.asarray(box), r)))(R)
    ref = jax.make_jaxpr(jax.vmap(lambda r: jax_md.space.transform(jax.numpy.asarray(box),
                                                                   r)))(R)
    assert shapes(ours) == shapes(ref) == [("custom_jvp_call", [(3, 16)]),
                                           ("transpose", [(16, 3)])]

    def build(m, xnp):
        d, _ = m.periodic_general(xnp.asarray(box), fractional_coordinates=True)
        return lambda a, b: xnp.sum(m.map_bond(d)(a, b) ** 2, axis=-1)

    a = np.asarray(fluxion.jit(build(space, fnp))(R, R[::-1]))
    b = np.asarray(jax.jit(build(jax_md.space, jax.numpy))(R, R[::-1]))
    assert a.dtype == b.dtype == np.float32 and a.shape == b.shape == (16,)
    np.testing.assert_array_equal(a, b)
