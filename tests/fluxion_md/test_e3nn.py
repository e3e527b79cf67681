"""fluxion_md._nn.e3nn against real e3nn_jax 0.21.0: the same inputs through both, the same
numbers (float32 tolerances), shapes, dtypes, irreps and zero flags; gradients where jax_md's
NequIP differentiates; equivariance under e3nn_jax's rotation matrices. Small irreps only."""

from __future__ import annotations

import doctest
import functools
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
    """Same irreps (when IrrepsArrays), shape, dtype, weak type and values."""
    if isinstance(ref, e3nn_jax.IrrepsArray):
        assert isinstance(ours, e3nn.IrrepsArray)
        assert str(ours.irreps) == str(ref.irreps)
        assert ours.zero_flags == ref.zero_flags
        ours, ref = ours.array, ref.array
    if isinstance(ref, jax.Array):
        assert ours.weak_type == ref.weak_type, (ours.weak_type, ref.weak_type)
    a, b = np.asarray(ours), np.asarray(ref)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    return float(np.max(np.abs(a - b), initial=0.0))


def _both(irreps, shape):
    x = RS.randn(*shape, e3nn.Irreps(irreps).dim).astype(np.float32)
    return e3nn.IrrepsArray(irreps, fnp.asarray(x)), e3nn_jax.IrrepsArray(irreps, rjnp.asarray(x))


def _jit_compare(build, *arrays, tol=TOL):
    """``build(e, xp, *arrays)`` -> list of IrrepsArray / arrays, run under each library's jit
    (one compile per side); the irreps and zero flags seen while tracing are compared too (a jit
    output forgets its zero flags, as a pytree does)."""
    def run(e, xp, jit):
        seen = []

        def traced(*a):
            outs = build(e, xp, *a)
            seen.extend((str(o.irreps), o.zero_flags) if hasattr(o, "zero_flags") else None
                        for o in outs)
            return outs

        return jit(traced)(*[xp.asarray(a) for a in arrays]), seen

    ours, seen_ours = run(e3nn, fnp, fluxion.jit)
    refs, seen_refs = run(e3nn_jax, rjnp, jax.jit)
    assert seen_ours == seen_refs
    assert len(ours) == len(refs)
    return max(_close(a, b, tol) for a, b in zip(ours, refs))


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
    irreps = "2x0e+1x1o+1x0e+2x1o"

    def views(e, xp, data, index):
        x = e.from_chunks(irreps, [data[:, :2].reshape(3, 2, 1), None, data[:, 5:6, None],
                                   data[:, 6:].reshape(3, 2, 3)], (3,))
        return [x, x[..., "1x1o+1x0e"], x[..., 2:9], x[..., 6:], x[1:, :], x[index],
                x.rechunk("1x0e+1x0e+1x1o+1x0e+1x1o+1x1o"), x.sort(), x.regroup(),
                x.filter(keep="1o"), x.filter(drop=["0e"]), x.slice_by_mul[1:4],
                x.slice_by_chunk[1:3], x.mul_to_axis(1), x.mul_to_axis(1).axis_to_mul(),
                x.remove_zero_chunks(), x.simplify(), x.broadcast_to((2, 3, -1)),
                x.reshape((1, 3, -1))]

    _jit_compare(views, RS.randn(3, 12).astype(np.float32), np.array([2, 0]))
    ours, ref = _both(irreps, (3,))
    for x in (ours, ref):
        with pytest.raises(IndexError, match="unable to slice"):
            x[..., 2:8]  # would cut a 1o apart
    assert [tuple(c.shape) for c in ours.chunks] == [c.shape for c in ref.chunks]
    with pytest.raises(IndexError, match="irreps dimension"):
        ours[..., 3]
    with pytest.raises(ValueError, match="incompatible"):
        e3nn.IrrepsArray("1x1o", fnp.ones((2, 4)))


def test_zero_chunks_arithmetic_and_concatenate_match():
    def build(e, xp, data, scalars):
        a = e.from_chunks("1x0e+1x1o+2x0e", [data[:, :1, None], None, data[:, 4:, None]], (2,))
        b = e.IrrepsArray("1x0e+1x1o+2x0e", data)
        s = e.IrrepsArray("3x0e", scalars)
        return [a, a + b, a - b, b - a, -a, 2.0 * a, a / 4.0, a * xp.array([1.0, 2.0, 3.0, 4.0]),
                a / xp.array([1.0, 2.0, 3.0, 4.0]), e.concatenate([a, b]),
                e.concatenate([a, b], axis=0), e.stack([a, b], axis=0), s + 1.0, s - 1.0,
                s ** 2, 1.0 / s, e.norm(b), e.norm(a, squared=True), e.zeros("1x1o", (2,)),
                e.ones("1x1o", (2,)), e.as_irreps_array(scalars)]

    _jit_compare(build, RS.randn(2, 6).astype(np.float32), RS.rand(2, 3).astype(np.float32) + 1)
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


SH_IRREPS = ["1x0e+1x1o+1x2e+1x3o", "0e+1e+2e", "2x1o+1x3o"]


def _spherical_harmonics_compare(irreps_list):
    x = RS.randn(5, 3).astype(np.float32)
    x[0] = 0.0  # the zero vector stays finite

    def every(e, xp, v):
        return [e.spherical_harmonics(irreps, v, normalize=normalize, normalization=norm)
                for norm in ("component", "norm", "integral") for irreps in irreps_list
                for normalize in (True, False)]

    return _jit_compare(every, x, tol=2e-4)


def test_spherical_harmonics_match():
    _spherical_harmonics_compare(SH_IRREPS)


@pytest.mark.slow
def test_spherical_harmonics_match_to_l6():
    _spherical_harmonics_compare(["1x0e+1x1o+1x2e+1x3o+1x4e+1x5o+1x6e", "1x5e+1x6e"])


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


@pytest.fixture
def memoized_reference_normalization(monkeypatch):
    """e3nn_jax re-estimates an activation's normalization (a million evaluations) and parity on
    every call; memoize them per function for speed. Same values: both are deterministic."""
    from e3nn_jax._src import activation

    for name in ("normalize_function", "parity_function", "is_zero_in_zero"):
        monkeypatch.setattr(activation, name, functools.cache(getattr(activation, name)))


def _acts(library):
    nn = fluxion.nn if library is e3nn else jax.nn
    return dict(even_act=nn.silu, odd_act=nn.tanh, even_gate_act=nn.silu, odd_gate_act=nn.tanh)


GATE_IRREPS = ["4x0e+2x0e+1x1o+1x2e", "3x0e+2x0o+2x1e", "1x0o+1x1e"]


def _gate_compare(with_defaults):
    xs = [RS.randn(3, e3nn.Irreps(i).dim).astype(np.float32) for i in GATE_IRREPS]

    def every(e, xp, *arrays):
        out = []
        for irreps, a in zip(GATE_IRREPS, arrays):
            x = e.IrrepsArray(irreps, a)
            out.append(e.gate(x) if with_defaults else e.gate(x, **_acts(e)))
        acts = _acts(e)
        scalars = e.IrrepsArray("2x0e+1x0o+1x1e", arrays[1][:, :6])
        if with_defaults:
            return out + [e.scalar_activation(scalars)]
        return out + [e.scalar_activation(scalars, [acts["even_act"], acts["odd_act"], None]),
                      e.scalar_activation(scalars, even_act=acts["even_act"],
                                          odd_act=acts["odd_act"], normalize_act=False)]

    _jit_compare(every, *xs)


def test_gate_and_scalar_activation_match(memoized_reference_normalization):
    _gate_compare(with_defaults=False)


@pytest.mark.slow
def test_gate_default_activations_match(memoized_reference_normalization):
    _gate_compare(with_defaults=True)


def test_gate_keeps_zero_chunks_and_refuses_too_few_gates(memoized_reference_normalization):
    def build(e, xp, data):
        x = e.from_chunks("2x0e+1x1o+1x0o", [data, None, None], ())
        return [e.gate(x), e.gate(x.filter(keep="0e+0o"))]

    _jit_compare(build, RS.randn(2, 1).astype(np.float32))
    with pytest.raises(ValueError, match="as many scalars"):
        e3nn.gate(e3nn.IrrepsArray("1x1o", fnp.ones(3)))


def test_index_add_and_scatter_sum_match():
    dst = np.array([0, 2, 2, 1, 0, 2])

    def build(e, xp, data, dst, nel):
        x = e.IrrepsArray("2x0e+1x1o", data)
        return [e.index_add(dst, x, out_dim=4), e.scatter_sum(x, nel=nel),
                e.scatter_sum(x, dst=dst * 5, map_back=True), e.scatter_sum(data, dst=dst,
                                                                            output_size=3)]

    _jit_compare(build, RS.randn(6, 5).astype(np.float32), dst, np.array([2, 0, 4]))
    with pytest.raises(ValueError, match="dst.shape"):
        e3nn.index_add(fnp.asarray(dst[:3]), e3nn.zeros("1x0e", (6,)), out_dim=4)


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


def _fully_connected_setup():
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
    return run, (ours_tp, wo, x1o, x2o), (ref_tp, wr, x1r, x2r)


def test_fully_connected_tensor_product_matches():
    run, (ours_tp, wo, x1o, x2o), (ref_tp, wr, x1r, x2r) = _fully_connected_setup()
    _close(fluxion.jit(lambda w: run(e3nn, fnp, ours_tp, w, x1o, x2o))(wo),
           jax.jit(lambda w: run(e3nn_jax, rjnp, ref_tp, w, x1r, x2r))(wr))


@pytest.mark.slow
def test_fully_connected_tensor_product_gradients_match():
    run, (ours_tp, wo, x1o, x2o), (ref_tp, wr, x1r, x2r) = _fully_connected_setup()

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


def _split(tp, flat):
    out, start = [], 0
    for ins in tp.instructions:
        if ins.has_weight:
            n = int(np.prod(ins.path_shape))
            out.append(flat[start:start + n].reshape(ins.path_shape))
            start += n
    return out


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
        out = []
        for i1, i2, tp, (w, a, b) in [(c[0], c[1], c[which], c[4]) for c in cases]:
            split = [xp.asarray(x) for x in _split(tp, w)]
            x1, x2 = e.IrrepsArray(i1, xp.asarray(a)), e.IrrepsArray(i2, xp.asarray(b))
            out += [tp.left_right(xp.asarray(w), x1, x2), tp.right(split, x2),
                    x1.array @ tp.right(split, x2)]
        return out

    ours = fluxion.jit(lambda: every(e3nn, fnp, 2))()
    for a, b in zip(ours, jax.jit(lambda: every(e3nn_jax, rjnp, 3))()):
        _close(a, b)
    for product, through_right in zip(ours[0::3], ours[2::3]):  # x1 @ right(x2) = left_right
        np.testing.assert_allclose(np.asarray(product.array), np.asarray(through_right),
                                   rtol=1e-5, atol=1e-5)
    # e3nn_jax's fused (one einsum) and sparse (BCOO tables) strategies: the same values, in
    # one compiled program per library (eagerly, the sparse tables' operations compiled
    # hundreds of small programs)
    strategies = ({"fused": True}, {"sparse": True}, {"fused": True, "sparse": True})

    def each_strategy(e, xp, which):
        out = []
        for i1, i2, tp, (w, a, b) in [(c[0], c[1], c[which], c[4]) for c in cases]:
            args = (xp.asarray(w), e.IrrepsArray(i1, xp.asarray(a)),
                    e.IrrepsArray(i2, xp.asarray(b)))
            for kw in strategies:
                try:
                    out.append(tp.left_right(*args, **kw))
                except AssertionError:  # e3nn_jax's fused form: weighted uvw/uvu/uvv, uuu, uvuv
                    assert which == 3 and kw.get("fused") and (
                        "uuw" in repr(tp.instructions) or "has_weight=False" in repr(tp.instructions))
                    out.append(tp.left_right(*args))
        return out

    want = jax.jit(lambda: each_strategy(e3nn_jax, rjnp, 3))()
    for got, ref in zip(fluxion.jit(lambda: each_strategy(e3nn, fnp, 2))(), want, strict=True):
        _close(got, ref)
    irreps1, irreps2, ours_tp, ref_tp, (w, a, b) = cases[0]
    _close(ours_tp.left_right(fnp.asarray(w), e3nn.IrrepsArray(irreps1, fnp.asarray(a)),
                              e3nn.IrrepsArray(irreps2, fnp.asarray(b)), sparse=True),
           want[1])  # eagerly
    irreps1, irreps2, ours_tp, ref_tp, (w, a, b) = cases[0]
    with pytest.raises(AssertionError, match="custom_einsum_jvp does not support sparse"):
        ours_tp.left_right(fnp.asarray(w), e3nn.IrrepsArray(irreps1, fnp.asarray(a)),
                           e3nn.IrrepsArray(irreps2, fnp.asarray(b)), sparse=True,
                           custom_einsum_jvp=True)
    with pytest.raises(AssertionError, match="custom_einsum_jvp does not support sparse"):
        ref_tp.left_right(rjnp.asarray(w), e3nn_jax.IrrepsArray(irreps1, rjnp.asarray(a)),
                          e3nn_jax.IrrepsArray(irreps2, rjnp.asarray(b)), sparse=True,
                          custom_einsum_jvp=True)


@pytest.mark.slow
def test_float64_matches(memoized_reference_normalization):
    """With x64 on (jax_md's f64 tests), tables and the activation normalization are float64."""
    vectors, features = RS.randn(4, 3), RS.randn(4, 6)

    def build(e, xp, v, f):
        x = e.IrrepsArray("2x0e+1x0e+1x1o", f)
        return [e.spherical_harmonics("1x0e+1x1o+1x2e", v, normalize=True),
                e.gate(x, **_acts(e))]

    with fluxion.enable_x64(True), jax.enable_x64(True):
        assert _jit_compare(build, vectors, features, tol=1e-12) <= 1e-12


def test_config_defaults_match():
    for name in ("irrep_normalization", "path_normalization", "gradient_normalization",
                 "spherical_harmonics_normalization", "spherical_harmonics_algorithm",
                 "custom_einsum_jvp", "fused", "sparse_tp"):
        assert e3nn.config(name) == e3nn_jax.config(name), name
    with pytest.raises(ValueError, match="unknown configuration option"):
        e3nn.config("no_such_option")


def test_nequip_convolution_pipeline_matches(memoized_reference_normalization):
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


def _wigner_d(irreps, blocks):
    """e3nn_jax's D matrix of ``irreps``, assembled in NumPy from its per-irrep ``blocks``."""
    out = np.zeros((e3nn.Irreps(irreps).dim,) * 2, np.float32)
    start = 0
    for mul, ir in e3nn.Irreps(irreps):
        for _ in range(mul):
            out[start:start + ir.dim, start:start + ir.dim] = blocks[str(ir)]
            start += ir.dim
    return out


def test_layers_are_equivariant_under_e3nn_rotations():
    irreps1, irreps2, irreps_out = "2x0e+1x1o+1x2e", "1x0e+1x1o+1x2e", "7x0e+2x1o+1x2e+1x3o"
    tp = e3nn.legacy.FunctionalFullyConnectedTensorProduct(irreps1, irreps2, irreps_out)
    ws = [fnp.asarray(RS.randn(*i.path_shape).astype(np.float32)) for i in tp.instructions]
    x1 = RS.randn(e3nn.Irreps(irreps1).dim).astype(np.float32)
    vec = RS.randn(3).astype(np.float32)
    # a rotation composed with the inversion: checks the parities as well
    rot = -np.asarray(jax.jit(lambda k: e3nn_jax.rand_matrix(k, ()))(jax.random.PRNGKey(3)))
    names = ["0e", "1o", "2e", "3o"]
    blocks = dict(zip(names, map(np.asarray, jax.jit(
        lambda r: [e3nn_jax.Irrep(n).D_from_matrix(r) for n in names])(rot))))

    @fluxion.jit
    def model(a, v):
        edge = e3nn.spherical_harmonics(irreps2, v, normalize=True)
        out = tp.left_right(ws, e3nn.IrrepsArray(irreps1, a), edge)
        return out.array, e3nn.gate(out).array

    plain, plain_gated = model(x1, vec)
    turned, turned_gated = model(_wigner_d(irreps1, blocks) @ x1, rot @ vec)
    np.testing.assert_allclose(np.asarray(turned), _wigner_d(irreps_out, blocks) @ np.asarray(plain),
                               rtol=1e-4, atol=1e-4)
    gated_irreps = "3x0e+2x1o+1x2e+1x3o"  # e3nn_jax.gate's output irreps for irreps_out
    np.testing.assert_allclose(np.asarray(turned_gated),
                               _wigner_d(gated_irreps, blocks) @ np.asarray(plain_gated),
                               rtol=1e-4, atol=1e-4)


def _rotation_compare(names, irreps, batched):
    key = RS.randint(1000)
    ours_rot = fluxion.jit(lambda k: e3nn.rand_matrix(k, (2,)))(fluxion.random.PRNGKey(key))
    ref_rot = jax.jit(lambda k: e3nn_jax.rand_matrix(k, (2,)))(jax.random.PRNGKey(key))
    _close(ours_rot, ref_rot, tol=1e-6)
    rots = np.asarray(ref_rot) * np.array([1.0, -1.0], np.float32)[:, None, None]  # inversion
    rots = rots if batched else rots[1]
    x = RS.randn(3, e3nn.Irreps(irreps).dim).astype(np.float32)

    def build(e, xp, r, data):
        single = r[-1] if batched else r
        return ([e.Irrep(ir).D_from_matrix(r) for ir in names]
                + [e.Irreps(irreps).D_from_matrix(single),
                   e.IrrepsArray(irreps, data).transform_by_matrix(single)])

    _jit_compare(build, rots, x, tol=1e-5)


def test_rotations_and_d_matrices_match():
    _rotation_compare(["2e"], "2x0e+1x1o", batched=False)
    with pytest.raises(ValueError, match="3, 3"):
        e3nn.Irrep("1o").D_from_matrix(fnp.ones((3, 4)))


@pytest.mark.slow
def test_batched_d_matrices_match_to_l4():
    _rotation_compare(["0o", "1o", "1e", "2e", "3o", "4e"], "1x0e+1x0o+1x1o+1x1e+1x2e+1x3o",
                      batched=True)


def test_vmap_keeps_zero_flags_like_e3nn(memoized_reference_normalization):
    def build(e, xp, data):
        x = e.from_chunks("0e+1o", [data, None], (5,))
        return [e.utils.vmap(e.scalar_activation)(x), e.utils.vmap(lambda v: v * 2.0)(x)]

    _jit_compare(build, RS.randn(5, 1, 1).astype(np.float32))
    with pytest.raises(ValueError, match="in_axes=-1"):
        e3nn.utils.vmap(lambda v: v, in_axes=-1)


@pytest.mark.parametrize("module", ["_irreps", "_so3", "_irreps_array", "_basic",
                                    "_tensor_products", "_config", "_spherical_harmonics",
                                    "_activation", "_scatter", "_linear", "_rotation", "_upper", "legacy",
                                    "utils"])
def test_docstring_examples_run(module):
    mod = importlib.import_module(f"fluxion_md._nn.e3nn.{module}")
    names = {n: getattr(e3nn, n) for n in e3nn.__all__}
    result = doctest.testmod(mod, extraglobs={**names, "fluxion": fluxion},
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
