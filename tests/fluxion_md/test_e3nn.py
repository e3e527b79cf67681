"""fluxion_md._nn.e3nn against real e3nn_jax 0.21.0: the same inputs through both, the same
numbers (float32 tolerances), shapes, dtypes, irreps and zero flags; gradients where jax_md's
NequIP differentiates; equivariance under e3nn_jax's rotation matrices. Small irreps only."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")
e3nn_jax = pytest.importorskip("e3nn_jax")

import jax.numpy as rjnp  # noqa: E402
from e3nn_jax import legacy as rlegacy  # noqa: E402

import fluxion  # noqa: E402
import fluxion.numpy as fnp  # noqa: E402
from fluxion_md._nn import e3nn  # noqa: E402

RS = np.random.RandomState(0)
TOL = 2e-5


def _close(ours, ref, tol=TOL):
    """Same irreps (when IrrepsArrays), shape, dtype and values."""
    if isinstance(ref, e3nn_jax.IrrepsArray):
        assert isinstance(ours, e3nn.IrrepsArray)
        assert str(ours.irreps) == str(ref.irreps)
        assert ours.zero_flags == ref.zero_flags
        ours, ref = ours.array, ref.array
    a, b = np.asarray(ours), np.asarray(ref)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    return float(np.max(np.abs(a - b), initial=0.0))


def _both(irreps, shape):
    x = RS.randn(*shape, e3nn.Irreps(irreps).dim).astype(np.float32)
    return e3nn.IrrepsArray(irreps, fnp.asarray(x)), e3nn_jax.IrrepsArray(irreps, rjnp.asarray(x))


IRREPS = ["", "0e", "2x0e+1x1o", "1o+0e+1o", "3x1e+0x2e+2x1e", "4x0e+2x0o+1x2e+1x3o",
          "1x0e+0x1o+1x0e", "5y"]


@pytest.mark.parametrize("text", IRREPS)
def test_irreps_methods_match(text):
    ours, ref = e3nn.Irreps(text), e3nn_jax.Irreps(text)
    assert str(ours) == str(ref) and len(ours) == len(ref)
    assert (ours.dim, ours.num_irreps, ours.ls) == (ref.dim, ref.num_irreps, ref.ls)
    assert str(ours.simplify()) == str(ref.simplify())
    assert str(ours.regroup()) == str(ref.regroup())
    sorted_ours, sorted_ref = ours.sort(), ref.sort()
    assert (str(sorted_ours.irreps), sorted_ours.p, sorted_ours.inv) == (
        str(sorted_ref.irreps), sorted_ref.p, sorted_ref.inv)
    assert str(ours.filter(keep=["0e", "1o"])) == str(ref.filter(keep=["0e", "1o"]))
    assert str(ours.filter(drop="0e")) == str(ref.filter(drop="0e"))
    assert str(ours.filter(lmax=1)) == str(ref.filter(lmax=1))
    for a, b in [(0, 2), (1, 4), (0, 100)]:
        assert str(ours.slice_by_mul[a:b]) == str(ref.slice_by_mul[a:b])
    assert [s for s in ours.slices()] == [s for s in ref.slices()]
    assert ("1o" in ours) == ("1o" in ref)
    assert str(ours + "2x2e") == str(ref + "2x2e") and str(3 * ours) == str(3 * ref)


def test_irrep_products_order_and_errors():
    for a in ["0e", "1o", "2e", "3o"]:
        for b in ["1o", "2e"]:
            assert [str(i) for i in e3nn.Irrep(a) * e3nn.Irrep(b)] == [
                str(i) for i in e3nn_jax.Irrep(a) * e3nn_jax.Irrep(b)]
    assert [str(i) for i in e3nn.Irrep.iterator(2)] == [str(i) for i in
                                                        e3nn_jax.Irrep.iterator(2)]
    assert e3nn.Irrep("1o") == "1o" and e3nn.Irrep("1o") != e3nn.Irrep("1e")
    assert e3nn.Irreps("1x0e+1x1o") == "1x0e+1x1o"
    with pytest.raises(ValueError, match="Irreps"):
        e3nn.Irreps("2x1q")
    with pytest.raises(ValueError, match="Irrep"):
        e3nn.Irrep("-1e")


def test_clebsch_gordan_matches_every_triple_to_l4():
    worst = 0.0
    for l1 in range(5):
        for l2 in range(5):
            for l3 in range(9):
                ours, ref = e3nn.clebsch_gordan(l1, l2, l3), e3nn_jax.clebsch_gordan(l1, l2, l3)
                assert ours.shape == ref.shape and ours.dtype == ref.dtype == np.float64
                worst = max(worst, float(np.max(np.abs(ours - ref))))
    assert worst < 1e-12
    with pytest.raises(ValueError, match="clebsch_gordan"):
        e3nn.clebsch_gordan(1, -1, 0)


def test_irreps_array_views_match():
    ours, ref = _both("2x0e+1x1o+1x0e+2x1o", (3,))
    _close(ours[..., "1x1o+1x0e"], ref[..., "1x1o+1x0e"])
    _close(ours[..., 2:9], ref[..., 2:9])  # cuts inside the 2x1o entry
    for x in (ours, ref):
        with pytest.raises(IndexError, match="unable to slice"):
            x[..., 2:8]  # would cut a 1o apart
    _close(ours[..., 5:], ref[..., 5:])
    _close(ours[1:, :], ref[1:, :])
    _close(ours[rjnp.array([2, 0]).tolist()], ref[rjnp.array([2, 0])])
    _close(ours.rechunk("1x0e+1x0e+1x1o+1x0e+1x1o+1x1o"),
           ref.rechunk("1x0e+1x0e+1x1o+1x0e+1x1o+1x1o"))
    _close(ours.sort(), ref.sort())
    _close(ours.regroup(), ref.regroup())
    _close(ours.filter(keep="1o"), ref.filter(keep="1o"))
    _close(ours.slice_by_mul[1:4], ref.slice_by_mul[1:4])
    _close(ours.slice_by_chunk[1:3], ref.slice_by_chunk[1:3])
    _close(ours.mul_to_axis(1), ref.mul_to_axis(1))
    _close(ours.mul_to_axis(1).axis_to_mul(), ref.mul_to_axis(1).axis_to_mul())
    assert [np.asarray(c).shape for c in ours.chunks] == [c.shape for c in ref.chunks]
    with pytest.raises(IndexError, match="irreps dimension"):
        ours[..., 3]
    with pytest.raises(ValueError, match="incompatible"):
        e3nn.IrrepsArray("1x1o", fnp.ones((2, 4)))


def test_zero_chunks_arithmetic_and_concatenate_match():
    def build(e, xp):
        a = e.from_chunks("1x0e+1x1o+2x0e", [xp.ones((2, 1, 1)), None, 2 * xp.ones((2, 2, 1))],
                          (2,))
        b = e.IrrepsArray("1x0e+1x1o+2x0e", xp.arange(12.0, dtype=xp.float32).reshape(2, 6))
        s = e.IrrepsArray("3x0e", xp.arange(6.0, dtype=xp.float32).reshape(2, 3))
        return [a, a.remove_zero_chunks(), a.simplify(), a + b, a - b, -a, 2.0 * a, a / 4.0,
                a * xp.array([1.0, 2.0, 3.0, 4.0]), e.concatenate([a, b]),
                e.concatenate([a, b], axis=0), e.stack([a, b], axis=0), s + 1.0, s ** 2,
                e.norm(b), e.zeros("1x1o", (2,)), e.as_irreps_array(xp.ones((2, 3)))]

    for ours, ref in zip(build(e3nn, fnp), build(e3nn_jax, rjnp)):
        _close(ours, ref)
    with pytest.raises(ValueError, match="not equivariant"):
        e3nn.IrrepsArray("1x1o", fnp.ones(3)) + 1.0


def test_irreps_array_is_a_pytree_that_forgets_zero_flags():
    x = e3nn.from_chunks("1x0e+1x1o", [fnp.ones((2, 1, 1)), None], (2,))
    leaves, treedef = fluxion.tree_util.tree_flatten(x)
    assert len(leaves) == 1 and leaves[0].shape == (2, 4)
    back = fluxion.tree_util.tree_unflatten(treedef, leaves)
    assert str(back.irreps) == "1x0e+1x1o" and back.zero_flags == (False, False)
    y = fluxion.jit(lambda v: v * 3.0)(x)
    assert isinstance(y, e3nn.IrrepsArray) and y.shape == (2, 4)


SH_IRREPS = ["1x0e+1x1o+1x2e", "0e+1e+2e", "1x0e+1x1o+1x2e+1x3o+1x4e+1x5o+1x6e", "2x1o+1x3o"]


@pytest.mark.parametrize("normalization", ["component", "norm", "integral"])
def test_spherical_harmonics_match(normalization):
    x = RS.randn(5, 3).astype(np.float32)
    x[0] = 0.0  # the zero vector stays finite

    def every(e, v):
        return [e.spherical_harmonics(irreps, v, normalize=normalize, normalization=normalization)
                for irreps in SH_IRREPS for normalize in (True, False)]

    ours = fluxion.jit(lambda v: every(e3nn, v))(fnp.asarray(x))
    refs = jax.jit(lambda v: every(e3nn_jax, v))(rjnp.asarray(x))
    for i, (a, b) in enumerate(zip(ours, refs)):
        _close(a, b, tol=5e-5 if i % 2 == 0 else 2e-4)
    # eagerly, the output knows its chunks
    eager = e3nn.spherical_harmonics("2x1o+1x3o", fnp.asarray(x), True, normalization)
    _close(eager, e3nn_jax.spherical_harmonics("2x1o+1x3o", rjnp.asarray(x), True,
                                               normalization), tol=5e-5)


def test_spherical_harmonics_gradients_match():
    irreps = "1x0e+1x1e+1x2e+1x3e"
    x = RS.randn(4, 3).astype(np.float32)
    weights = RS.randn(4, e3nn.Irreps(irreps).dim).astype(np.float32)

    def loss(e, xp, v):
        return xp.sum(e.spherical_harmonics(irreps, v, normalize=True).array ** 2 * weights)

    ours = fluxion.jit(fluxion.grad(lambda v: loss(e3nn, fnp, v)))(fnp.asarray(x))
    ref = jax.jit(jax.grad(lambda v: loss(e3nn_jax, rjnp, v)))(rjnp.asarray(x))
    _close(ours, ref, tol=1e-4)


@pytest.mark.slow
def test_spherical_harmonics_second_derivatives_match():
    x = RS.randn(3).astype(np.float32)
    weights = RS.randn(9).astype(np.float32)

    def loss(e, xp, v):
        return xp.sum(e.spherical_harmonics("1x0e+1x1o+1x2e", v, normalize=True).array ** 2
                      * weights)

    hess_ours = fluxion.jit(fluxion.hessian(lambda v: loss(e3nn, fnp, v)))(fnp.asarray(x))
    hess_ref = jax.jit(jax.hessian(lambda v: loss(e3nn_jax, rjnp, v)))(rjnp.asarray(x))
    _close(hess_ours, hess_ref, tol=1e-3)


def test_spherical_harmonics_integer_degrees_and_errors():
    v = np.array([[0.3, -0.2, 0.9]], np.float32)
    _close(e3nn.spherical_harmonics([0, 1, 2], e3nn.IrrepsArray("1o", fnp.asarray(v)), True),
           e3nn_jax.spherical_harmonics([0, 1, 2], e3nn_jax.IrrepsArray("1o", rjnp.asarray(v)),
                                        True))
    _close(e3nn.sh(3, fnp.asarray(v), True), e3nn_jax.sh(3, rjnp.asarray(v), True))
    with pytest.raises(ValueError, match="parity"):
        e3nn.spherical_harmonics("1x1e", e3nn.IrrepsArray("1o", fnp.asarray(v)), True)
    with pytest.raises(ValueError, match="3"):
        e3nn.spherical_harmonics("1x1o", fnp.ones((2, 4)), True)


def _acts(library):
    nn = fluxion.nn if library is e3nn else jax.nn
    return dict(even_act=nn.silu, odd_act=nn.tanh, even_gate_act=nn.silu, odd_gate_act=nn.tanh)


GATE_IRREPS = ["4x0e+2x0e+1x1o+1x2e", "3x0e+2x0o+2x1e", "2x0e+1x0o", "1x0o+1x1e"]


def test_gate_and_scalar_activation_match():
    xs = [RS.randn(3, e3nn.Irreps(i).dim).astype(np.float32) for i in GATE_IRREPS]

    def every(e, xp, arrays):
        out = []
        for irreps, a in zip(GATE_IRREPS, arrays):
            x = e.IrrepsArray(irreps, a)
            out += [e.gate(x, **_acts(e)), e.gate(x), e.scalar_activation(x),
                    e.scalar_activation(x, normalize_act=False)]
        return out

    ours = fluxion.jit(lambda a: every(e3nn, fnp, a))([fnp.asarray(x) for x in xs])
    refs = jax.jit(lambda a: every(e3nn_jax, rjnp, a))([rjnp.asarray(x) for x in xs])
    for a, b in zip(ours, refs):
        _close(a, b)


def test_gate_keeps_zero_chunks_and_refuses_too_few_gates():
    ours = e3nn.from_chunks("2x0e+1x1o", [fnp.ones((2, 1)), None], ())
    ref = e3nn_jax.from_chunks("2x0e+1x1o", [rjnp.ones((2, 1)), None], ())
    _close(e3nn.gate(ours), e3nn_jax.gate(ref))
    with pytest.raises(ValueError, match="as many scalars"):
        e3nn.gate(e3nn.IrrepsArray("1x1o", fnp.ones(3)))


def test_index_add_and_scatter_sum_match():
    ours, ref = _both("2x0e+1x1o", (6,))
    dst = np.array([0, 2, 2, 1, 0, 2])
    _close(e3nn.index_add(fnp.asarray(dst), ours, out_dim=4),
           e3nn_jax.index_add(rjnp.asarray(dst), ref, out_dim=4))
    nel = np.array([2, 0, 4])
    _close(e3nn.scatter_sum(ours, nel=fnp.asarray(nel)),
           e3nn_jax.scatter_sum(ref, nel=rjnp.asarray(nel)))
    _close(e3nn.scatter_sum(ours, dst=fnp.asarray(dst * 5), map_back=True),
           e3nn_jax.scatter_sum(ref, dst=rjnp.asarray(dst * 5), map_back=True))
    with pytest.raises(ValueError, match="dst.shape"):
        e3nn.index_add(fnp.asarray(dst[:3]), ours, out_dim=4)


def _instruction_table(tp):
    return [(i.i_in1, i.i_in2, i.i_out, i.connection_mode, i.has_weight, i.path_shape,
             round(i.path_weight, 12), None if i.weight_std is None else round(i.weight_std, 12))
            for i in tp.instructions]


LINEAR_CASES = [("4x0e+2x1o+1x2e", "3x0e+2x1o+1x2e", None),
                ("2x0e+1x0e+3x1o", "5x0e+1x1o+1x1e", True), ("3x1o", "2x0e", None)]


def test_functional_linear_matches():
    cases = []
    for irreps_in, irreps_out, biases in LINEAR_CASES:
        ours_lin = e3nn.FunctionalLinear(irreps_in, irreps_out, biases=biases)
        ref_lin = e3nn_jax.FunctionalLinear(irreps_in, irreps_out, biases=biases)
        assert [tuple(i) for i in ours_lin.instructions] == [tuple(i) for i in
                                                             ref_lin.instructions]
        assert ours_lin.num_weights == ref_lin.num_weights and repr(ours_lin) == repr(ref_lin)
        np.testing.assert_array_equal(np.asarray(ours_lin.output_mask),
                                      np.asarray(ref_lin.output_mask))
        ws = [RS.randn(*i.path_shape).astype(np.float32) for i in ref_lin.instructions]
        flat = np.concatenate([w.ravel() for w in ws] + [np.zeros(0, np.float32)])
        x = RS.randn(4, e3nn.Irreps(irreps_in).dim).astype(np.float32)
        cases.append((irreps_in, ours_lin, ref_lin, ws, flat, x))

    def every(e, xp, lins):
        out = []
        for (irreps_in, _, _, ws, flat, x), lin in zip(cases, lins):
            v = e.IrrepsArray(irreps_in, xp.asarray(x))
            w = [xp.asarray(a) for a in ws]
            out += [e.utils.vmap(lambda u: lin(w, u))(v), lin(xp.asarray(flat), v[0])]
        return out

    ours = fluxion.jit(lambda: every(e3nn, fnp, [c[1] for c in cases]))()
    refs = jax.jit(lambda: every(e3nn_jax, rjnp, [c[2] for c in cases]))()
    for a, b in zip(ours, refs):
        _close(a, b)


def test_fully_connected_tensor_product_matches_with_gradients():
    irreps1, irreps2, irreps_out = "3x0e+2x1o+1x2e", "2x0e+1x1e", "2x0e+3x1o+1x1e+1x2o"
    ours_tp = e3nn.legacy.FunctionalFullyConnectedTensorProduct(irreps1, irreps2, irreps_out)
    ref_tp = rlegacy.FunctionalFullyConnectedTensorProduct(irreps1, irreps2, irreps_out)
    assert _instruction_table(ours_tp) == _instruction_table(ref_tp)
    assert repr(ours_tp) == repr(ref_tp)
    ws = [RS.randn(*i.path_shape).astype(np.float32) for i in ref_tp.instructions]
    x1o, x1r = _both(irreps1, (3,))
    x2o, x2r = _both(irreps2, (3,))

    def run(e, xp, tp, weights, a, b):
        return e.utils.vmap(lambda u, v: tp.left_right(weights, u, v))(a, b)

    wo, wr = [fnp.asarray(w) for w in ws], [rjnp.asarray(w) for w in ws]
    _close(fluxion.jit(lambda w: run(e3nn, fnp, ours_tp, w, x1o, x2o))(wo),
           jax.jit(lambda w: run(e3nn_jax, rjnp, ref_tp, w, x1r, x2r))(wr))

    def loss(e, xp, tp, weights, a, b):
        return xp.sum(run(e, xp, tp, weights, a, b).array ** 2)

    g_ours = fluxion.jit(fluxion.grad(lambda w, a: loss(e3nn, fnp, ours_tp, w, a, x2o),
                                      argnums=(0, 1)))(wo, x1o)
    g_ref = jax.jit(jax.grad(lambda w, a: loss(e3nn_jax, rjnp, ref_tp, w, a, x2r),
                             argnums=(0, 1)))(wr, x1r)
    for a, b in zip(g_ours[0], g_ref[0]):
        _close(a, b, tol=1e-4)
    _close(g_ours[1].array, g_ref[1].array, tol=1e-4)


MODES = ["uvw", "uvu", "uvv", "uuw", "uuu", "uvuv"]


def test_tensor_product_connection_modes_match():
    cases = []
    for mode in MODES:
        m1, m2 = (2, 2) if mode in ("uuw", "uuu") else (2, 3)
        mo = {"uvw": 2, "uvu": m1, "uvv": m2, "uuw": 2, "uuu": m1, "uvuv": m1 * m2}[mode]
        irreps1, irreps2, irreps_out = f"{m1}x0e+{m1}x1o", f"{m2}x1o", f"{mo}x1o+{mo}x0e"
        instructions = [(0, 0, 0, mode, True), (1, 0, 1, mode, True)]
        if mode not in ("uvw", "uuw"):
            instructions.append((1, 0, 1, mode, False, 0.5))
        ours_tp = e3nn.legacy.FunctionalTensorProduct(irreps1, irreps2, irreps_out, instructions)
        ref_tp = rlegacy.FunctionalTensorProduct(irreps1, irreps2, irreps_out, instructions)
        assert _instruction_table(ours_tp) == _instruction_table(ref_tp)
        n = sum(int(np.prod(i.path_shape)) for i in ref_tp.instructions if i.has_weight)
        arrays = [RS.randn(k).astype(np.float32) for k in (n, e3nn.Irreps(irreps1).dim,
                                                           e3nn.Irreps(irreps2).dim)]
        cases.append((irreps1, irreps2, ours_tp, ref_tp, arrays))

    def every(e, xp, which):
        return [tp.left_right(xp.asarray(w), e.IrrepsArray(i1, xp.asarray(a)),
                              e.IrrepsArray(i2, xp.asarray(b)))
                for i1, i2, tp, (w, a, b) in [(c[0], c[1], c[which], c[4]) for c in cases]]

    for a, b in zip(fluxion.jit(lambda: every(e3nn, fnp, 2))(),
                    jax.jit(lambda: every(e3nn_jax, rjnp, 3))()):
        _close(a, b)


def test_nequip_convolution_pipeline_matches():
    """jax_md's NequIPConvolution, step by step, written once and run on both libraries."""
    hidden, sh_irreps = "4x0e+2x1o+1x2e", "1x0e+1x1o+1x2e"
    n_nodes, src, dst = 3, np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
    dr = RS.randn(4, 3).astype(np.float32)
    h0 = RS.randn(n_nodes, 4).astype(np.float32)
    params = {}

    def run(e, xp, legacy):
        def weight(name, shape):
            if name not in params:
                params[name] = RS.randn(*shape).astype(np.float32)
            return xp.asarray(params[name])

        def linear(x, irreps_out, tag):
            x = x.remove_zero_chunks().simplify()
            lin = e.FunctionalLinear(x.irreps, irreps_out)
            ws = [weight(f"{tag} w[{i.i_in},{i.i_out}] {lin.irreps_in[i.i_in]},"
                         f"{lin.irreps_out[i.i_out]}", i.path_shape) for i in lin.instructions]
            return e.utils.vmap(lambda v: lin(ws, v))(x)

        h = linear(e.IrrepsArray("4x0e", xp.asarray(h0)), e.Irreps(hidden), "embed")
        edge_sh = e.spherical_harmonics(sh_irreps, xp.asarray(dr), normalize=True)
        feats = h[xp.asarray(src)]
        irreps_after, instructions = [], []
        for i, (mul, ir1) in enumerate(h.irreps):
            for j, (_, ir2) in enumerate(edge_sh.irreps):
                for ir_out in ir1 * ir2:
                    if ir_out in e.Irreps(hidden):
                        instructions.append((i, j, len(irreps_after), "uvu", True))
                        irreps_after.append((mul, ir_out))
        irreps_after, p, _ = e.Irreps(irreps_after).sort()
        instructions = [(a, b, p[c], m, t) for a, b, c, m, t in instructions]
        tp = legacy.FunctionalTensorProduct(h.irreps, edge_sh.irreps, irreps_after, instructions)
        n_w = sum(int(np.prod(i.path_shape)) for i in tp.instructions if i.has_weight)
        w = weight("radial", (4, n_w))
        msg = e.utils.vmap(tp.left_right)(w, feats, edge_sh)
        agg = e.index_add(xp.asarray(dst), msg.remove_zero_chunks().simplify(), out_dim=n_nodes)
        out = linear(agg / 2.0, e.Irreps("4x0e+3x0e+2x1o+1x2e"), "second")
        return e.gate(out, even_act=xp.tanh, odd_act=xp.tanh, even_gate_act=xp.tanh,
                      odd_gate_act=xp.tanh)

    ref = jax.jit(lambda: run(e3nn_jax, rjnp, rlegacy))()
    ours = fluxion.jit(lambda: run(e3nn, fnp, e3nn.legacy))()
    _close(ours, ref, tol=1e-4)


def test_tensor_products_are_equivariant_under_e3nn_rotations():
    irreps1, irreps2, irreps_out = "2x0e+1x1o+1x2e", "1x0e+1x1o+1x2e", "7x0e+2x1o+1x2e+1x3o"
    tp = e3nn.legacy.FunctionalFullyConnectedTensorProduct(irreps1, irreps2, irreps_out)
    ws = [fnp.asarray(RS.randn(*i.path_shape).astype(np.float32)) for i in tp.instructions]
    x1 = RS.randn(e3nn.Irreps(irreps1).dim).astype(np.float32)
    vec = RS.randn(3).astype(np.float32)
    for seed in range(2):
        rot = e3nn_jax.rand_matrix(jax.random.PRNGKey(seed), ())
        rot = rot * (-1.0 if seed else 1.0)  # one proper rotation, one with the inversion
        d1, d_out = (np.asarray(e3nn_jax.Irreps(i).D_from_matrix(rot)) for i in (irreps1,
                                                                                irreps_out))

        @fluxion.jit
        def model(a, v):
            edge = e3nn.spherical_harmonics(irreps2, fnp.asarray(v), normalize=True)
            return tp.left_right(ws, e3nn.IrrepsArray(irreps1, fnp.asarray(a)), edge).array

        rotated = model(d1 @ x1, np.asarray(rot) @ vec)
        np.testing.assert_allclose(np.asarray(rotated), d_out @ np.asarray(model(x1, vec)),
                                   rtol=1e-4, atol=1e-4)
        gate = fluxion.jit(lambda a: e3nn.gate(e3nn.IrrepsArray(irreps_out, a)))
        gated, plain = gate(rotated), gate(model(x1, vec))
        d_gate = np.asarray(e3nn_jax.Irreps(str(gated.irreps)).D_from_matrix(rot))
        np.testing.assert_allclose(np.asarray(gated.array), d_gate @ np.asarray(plain.array),
                                   rtol=1e-4, atol=1e-4)


def test_vmap_keeps_zero_flags_like_e3nn():
    ours = e3nn.from_chunks("0e+1o", [fnp.ones((5, 1, 1)), None], (5,))
    ref = e3nn_jax.from_chunks("0e+1o", [rjnp.ones((5, 1, 1)), None], (5,))
    _close(e3nn.utils.vmap(e3nn.scalar_activation)(ours),
           e3nn_jax.utils.vmap(e3nn_jax.scalar_activation)(ref))
    with pytest.raises(ValueError, match="in_axes=-1"):
        e3nn.utils.vmap(lambda v: v, in_axes=-1)


@pytest.mark.parametrize("module", ["_irreps", "_so3", "_irreps_array", "_basic",
                                    "_tensor_products", "_config", "_spherical_harmonics",
                                    "_activation", "_scatter", "_linear", "legacy", "utils"])
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"fluxion_md._nn.e3nn.{module}")
    names = {n: getattr(e3nn, n) for n in e3nn.__all__}
    result = doctest.testmod(mod, extraglobs={**names, "fluxion": fluxion},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
