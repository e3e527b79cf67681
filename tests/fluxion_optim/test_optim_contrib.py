"""optax.contrib (muon, schedule-free, prodigy, SAM, reduce-on-plateau), projections,
second-order helpers and tree utilities: same numbers as optax, through jit."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_optim

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
from _optim_reference import ref_jit  # (imports jax: after the skip above)

jnp = pytest.importorskip("jax.numpy")

# One xdist worker runs this file (--dist loadgroup), so its module fixture, which runs every
# case through both libraries, is computed once instead of once per worker.
pytestmark = pytest.mark.xdist_group("optim_contrib")

PARAMS = {"w": np.array([[0.5, -1.0, 0.2], [1.5, 2.0, -0.7]], np.float32),
          "k": np.linspace(-1, 1, 24).reshape(2, 3, 4).astype(np.float32),
          "b": np.array([0.1, -0.2, 0.3], np.float32)}


def _loss(np_mod, p):
    return sum(np_mod.sum((v - 0.3) ** 2 + 0.05 * v ** 4) for v in p.values())


def _grads(p):
    return {k: 2.0 * (v - 0.3) + 0.2 * v ** 3 for k, v in p.items()}


MuonDN = "muon-dims"
CONTRIB = [
    ("muon", lambda c: c.muon(0.02, weight_decay=0.01)),
    ("muon-dims", lambda c: c.muon(0.02, muon_weight_dimension_numbers={
        "w": c.MuonDimensionNumbers(), "k": c.MuonDimensionNumbers(1, 2), "b": None},
        preconditioning="aol")),
    ("muon-dion-schatten", lambda c: c.muon(0.02, ns_coeffs="dion", preconditioning="schatten",
                                            consistent_rms=0.2, nesterov=False)),
    ("schedule_free_adamw", lambda c: c.schedule_free_adamw(0.05, warmup_steps=2,
                                                            weight_decay=0.01)),
    ("schedule_free_sgd", lambda c: c.schedule_free_sgd(0.1, weight_decay=0.01)),
    ("prodigy", lambda c: c.prodigy(weight_decay=0.01)),
    ("prodigy-safeguard", lambda c: c.prodigy(0.5, safeguard_warmup=True)),
    ("sam", lambda c: c.sam(optax_like(c).sgd(0.1),
                            optax_like(c).chain(c.normalize(), optax_like(c).sgd(0.05)))),
]


# The optax.contrib optimizers beyond the five the issue asks for: the same comparison, in the
# nightly (slow) run to keep the default suite fast.
CONTRIB_EXTRA = [
    ("adopt", lambda c: c.adopt(0.05, nesterov=True)),
    ("acprop", lambda c: c.acprop(0.05, weight_decay=0.01)),
    ("madgrad", lambda c: c.madgrad(0.05, weight_decay=0.01)),
    ("cocob", lambda c: c.cocob(weight_decay=0.01)),
    ("dadapt_adamw", lambda c: c.dadapt_adamw(weight_decay=0.01)),
    ("dog", lambda c: c.dog(weight_decay=0.01)),
    ("dog-lr", lambda c: c.dog(0.5, init_step=("learning_rate", 0.01))),
    ("dowg", lambda c: c.dowg()),
    ("ademamix", lambda c: c.ademamix(0.05, b3=optax_like(c).linear_schedule(0.9, 0.999, 3),
                                      weight_decay=0.01)),
    ("simplified_ademamix", lambda c: c.simplified_ademamix(0.05, alpha=2.0)),
]


def optax_like(contrib_module):
    return fluxion_optim if contrib_module is fluxion_optim.contrib else optax


STEPS = 4


def _run_all(lib, np_mod, scan, jit, table=CONTRIB):
    opts = [make(lib.contrib) for _, make in table]
    plateau = lib.contrib.reduce_on_plateau(patience=1, cooldown=1, accumulation_size=2)
    params0 = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    states0 = [opt.init(params0) for opt in opts] + [plateau.init(params0)]

    @jit
    def run(params0, states0):
        def body(carry, step):
            new = []
            for opt, (params, state) in zip(opts, carry):
                updates, state = opt.update(_grads(params), state, params)
                new.append((lib.apply_updates(params, updates), state))
            params, state = carry[-1]
            value = np_mod.where(step < 2, 1.0, 2.0)
            updates, state = plateau.update(_grads(params), state, params, value=value)
            new.append((lib.apply_updates(params, updates), state))
            return new, [p for p, _ in new]

        return scan(body, [(params0, s) for s in states0], np_mod.arange(STEPS))

    return run(params0, states0)


@pytest.fixture(scope="module")
def contrib_runs():
    return (_run_all(fluxion_optim, fnp, fluxion.lax.scan, fluxion.jit),
            _run_all(optax, jnp, jax.lax.scan, ref_jit))


@pytest.mark.parametrize("index", range(len(CONTRIB) + 1),
                         ids=[n for n, _ in CONTRIB] + ["reduce_on_plateau"])
def test_contrib_matches_optax(contrib_runs, index: int) -> None:
    _compare(contrib_runs, index)


@pytest.mark.slow
def test_contrib_extra_matches_optax() -> None:
    runs = (_run_all(fluxion_optim, fnp, fluxion.lax.scan, fluxion.jit, CONTRIB_EXTRA),
            _run_all(optax, jnp, jax.lax.scan, ref_jit, CONTRIB_EXTRA))
    for index in range(len(CONTRIB_EXTRA)):
        _compare(runs, index)


def _compare(runs, index: int) -> None:
    (our_final, our_hist), (ref_final, ref_hist) = runs
    for k in PARAMS:
        np.testing.assert_allclose(np.asarray(our_hist[index][k]), np.asarray(ref_hist[index][k]),
                                   rtol=5e-5, atol=5e-6, err_msg=f"{index} {k}")
    a_leaves = fluxion.tree_util.tree_leaves(our_final[index][1])
    b_leaves = jax.tree_util.tree_leaves(ref_final[index][1])
    assert len(a_leaves) == len(b_leaves)
    for a, b in zip(a_leaves, b_leaves):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        # in their own dtype (same, checked above), so that the platform's widening for float32
        # applies (a cast to float64 made a TPU's float32 state meet float64 tolerances)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=5e-5, atol=5e-6)


def test_schedule_free_eval_params_and_sam_opaque() -> None:
    def run(lib, np_mod, jit):
        @jit
        def both(p):
            sf = lib.contrib.schedule_free_adamw(0.05)
            u, s = sf.update(_grads(p), sf.init(p), p)
            ev = lib.contrib.schedule_free_eval_params(s, lib.apply_updates(p, u))
            sam = lib.contrib.sam(lib.sgd(0.1), lib.sgd(0.05), sync_period=3, opaque_mode=True)
            grad_fn = lambda params, i: _grads(params)  # noqa: E731
            u2, _ = sam.update(_grads(p), sam.init(p), p, grad_fn=grad_fn)
            return ev, u2

        out = both({k: np_mod.asarray(v) for k, v in PARAMS.items()})
        return [np.asarray(v) for v in jax.tree_util.tree_leaves(out[0])] + [
            np.asarray(v) for v in fluxion.tree_util.tree_leaves(out[1])]

    for a, b in zip(run(fluxion_optim, fnp, fluxion.jit), run(optax, jnp, ref_jit)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)


def test_contrib_names_present() -> None:
    want = {"muon", "scale_by_muon", "MuonDimensionNumbers", "schedule_free",
            "schedule_free_adamw", "schedule_free_sgd", "schedule_free_eval_params", "prodigy",
            "sam", "normalize", "reduce_on_plateau", "ReduceLROnPlateauState", "ProdigyState",
            "SAMState", "ScheduleFreeState", "MuonState"}
    assert want <= set(fluxion_optim.contrib.__all__)
    assert want <= set(dir(optax.contrib))


X = np.array([0.8, -1.5, 0.3, 2.0], np.float32)
A = np.array([1.0, 0.5, -0.5, 0.2], np.float32)
PROJECTIONS = [
    ("projection_non_negative", lambda P: P.projection_non_negative(X)),
    ("projection_box", lambda P: P.projection_box(X, -1.0, 1.0)),
    ("projection_hypercube", lambda P: P.projection_hypercube(X, 0.5)),
    ("projection_simplex", lambda P: P.projection_simplex(X, 2.0)),
    ("projection_l1_sphere", lambda P: P.projection_l1_sphere(X, 1.5)),
    ("projection_l1_ball", lambda P: P.projection_l1_ball(X, 1.5)),
    ("projection_l2_sphere", lambda P: P.projection_l2_sphere(X, 1.5)),
    ("projection_l2_ball", lambda P: P.projection_l2_ball(X, 1.5)),
    ("projection_linf_ball", lambda P: P.projection_linf_ball(X, 0.5)),
    ("projection_vector", lambda P: P.projection_vector(X, A)),
    ("projection_hyperplane", lambda P: P.projection_hyperplane(X, A, 0.3)),
    ("projection_halfspace", lambda P: P.projection_halfspace(X, A, -0.3)),
]


def test_projections_match_optax() -> None:
    ours = fluxion.jit(lambda: [f(fluxion_optim.projections) for _, f in PROJECTIONS])()
    ref = ref_jit(lambda: [f(optax.projections) for _, f in PROJECTIONS])()
    for (name, _), a, b in zip(PROJECTIONS, ours, ref):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    g = fluxion.grad(lambda x: fnp.sum(fluxion_optim.projections.projection_simplex(x) * A))(X)
    r = jax.grad(lambda x: jnp.sum(optax.projections.projection_simplex(x) * A))(X)
    np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-6)
    assert set(dir(optax.projections)) >= set(fluxion_optim.projections.__all__)
    assert {n for n in dir(optax.projections) if not n.startswith("_")} <= set(
        fluxion_optim.projections.__all__)


def test_second_order_matches_optax() -> None:
    import warnings
    inputs = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.3]], np.float32)
    targets = np.array([1.0, 0.0, -1.0], np.float32)
    params = {"w": np.array([0.3, -0.2], np.float32), "b": np.array(0.1, np.float32)}

    def loss(np_mod):
        return lambda p, x, y: np_mod.sum((np_mod.tanh(x @ p["w"] + p["b"]) - y) ** 2)

    v = np.array([1.0, -0.5, 2.0], np.float32)

    def all_three(so, np_mod, jit):
        f = loss(np_mod)
        return jit(lambda p: (so.hvp(f, v, p, inputs, targets),
                              so.hessian_diag(f, p, inputs, targets),
                              so.fisher_diag(f, p, inputs, targets)))(params)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        a = all_three(fluxion_optim.second_order, fnp, fluxion.jit)
        b = all_three(optax.second_order, jnp, ref_jit)
    for x, y in zip(fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


def test_tree_utilities_match_optax() -> None:
    x = {"a": np.array([1.0, -2.0, 3.0], np.float32), "b": np.array([[0.5, 4.0]], np.float32)}
    y = {"a": np.array([0.5, 1.0, -1.0], np.float32), "b": np.array([[2.0, -1.0]], np.float32)}
    cases = [
        ("add", (x, y)), ("sub", (x, y)), ("mul", (x, y)), ("div", (x, y)),
        ("scale", (2.5, x)), ("add_scale", (x, 0.5, y)), ("vdot", (x, y)), ("sum", (x,)),
        ("max", (x,)), ("min", (x,)), ("norm", (x,)), ("norm", (x, 1)), ("norm", (x, "inf")),
        ("zeros_like", (x,)), ("ones_like", (x,)), ("full_like", (x, 3.0)),
        ("clip", (x, -1.0, 1.0)), ("where", (True, x, y)), ("real", (x,)), ("conj", (x,)),
        ("update_moment", (x, y, 0.9, 2)), ("update_infinity_moment", (x, y, 0.9, 1e-3)),
        ("update_moment_per_elem_norm", (x, y, 0.9, 2)),
        ("bias_correction", (x, 0.9, np.int32(3))), ("batch_shape", (x, (2,))),
        ("cast", (x, np.float16)), ("cast_like", (x, y)),
    ]
    ours = fluxion.jit(lambda: [getattr(fluxion_optim.tree, n)(*a) for n, a in cases])()
    refs = ref_jit(lambda: [getattr(optax.tree, n)(*a) for n, a in cases])()
    for (name, _), a, b in zip(cases, ours, refs):
        for u, v in zip(fluxion.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
            assert np.asarray(u).dtype == np.asarray(v).dtype, name
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6, err_msg=name)
    assert fluxion_optim.tree.size(x) == optax.tree.size(x) == 5
    assert fluxion_optim.tree.dtype(x) == optax.tree.dtype(x)
    assert bool(fluxion_optim.tree.allclose(x, x)) and not bool(fluxion_optim.tree.allclose(x, y))
    state = fluxion_optim.adam(0.1).init(x)
    assert int(fluxion_optim.tree.get(state, "count")) == 0
    new = fluxion_optim.tree.set(state, count=fnp.asarray(5, fnp.int32))
    assert int(fluxion_optim.tree.get(new, "count")) == 5
    paths = fluxion_optim.tree.get_all_with_path(state, "mu")
    ref_paths = optax.tree.get_all_with_path(optax.adam(0.1).init(x), "mu")
    assert [str(p[-1]) for p, _ in paths] == [str(p[-1]) for p, _ in ref_paths]
    mapped = fluxion_optim.tree_map_params(fluxion_optim.adam(0.1), lambda v: v + 1.0, state)
    np.testing.assert_allclose(np.asarray(mapped[0].nu["a"]), np.ones(3))
    assert int(mapped[0].count) == 0
    names = {n for n in dir(optax.tree) if not n.startswith("_")}
    assert names - set(fluxion_optim.tree.__all__) == set()


def test_linear_algebra_matches_optax() -> None:
    a = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.0, 0.4, 1.0], [1.0, -1.0, 0.5]],
                 np.float32)
    b = np.array([1.0, -0.5, 2.0, 0.3], np.float32)
    spd = (a.T @ a + np.eye(3, dtype=np.float32)).astype(np.float32)

    def run(lib, jit):
        return jit(lambda: (lib.nnls(a, b, iters=30), lib.power_iteration(spd)[0],
                            lib.matrix_inverse_pth_root(spd, 2)[0]))()

    for x, y in zip(run(fluxion_optim, fluxion.jit), run(optax, ref_jit)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)
