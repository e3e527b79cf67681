"""fluxion_optim vs optax for names optax's own tests reach: optimistic_adam's deprecation
warning and ``optax._src.transform._precondition_by_lbfgs``."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion_optim as fo
from fluxion_optim._src import transform as fo_transform

optax = pytest.importorskip("optax")


def test_optimistic_adam_warns_as_optax():
    with pytest.warns(DeprecationWarning, match="use `optimistic_adam_v2` instead"):
        fo.optimistic_adam(0.1)
    with pytest.warns(DeprecationWarning, match="use `optimistic_adam_v2` instead"):
        optax.optimistic_adam(0.1)


@pytest.mark.parametrize("idx", [0, 2])
def test_precondition_by_lbfgs_matches_optax(idx):
    from optax._src import transform as ox_transform

    rs = np.random.RandomState(0)
    m, d = 3, 4
    dws, dus = rs.randn(m, d).astype(np.float32), rs.randn(m, d).astype(np.float32)
    rhos = (1.0 / np.abs(np.sum(dws * dus, axis=1))).astype(np.float32)
    vec = rs.randn(d).astype(np.float32)
    ours = fo_transform._precondition_by_lbfgs(
        jnp.asarray(vec), jnp.asarray(dws), jnp.asarray(dus), jnp.asarray(rhos),
        identity_scale=1.0, memory_idx=idx)
    import jax.numpy as rjnp

    ref = ox_transform._precondition_by_lbfgs(rjnp.asarray(vec), rjnp.asarray(dws),
                                              rjnp.asarray(dus), rjnp.asarray(rhos),
                                              identity_scale=1.0, memory_idx=idx)
    assert tuple(ours.shape) == tuple(ref.shape) and ours.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape,dn", [((6, 4), None), ((3, 8), None),
                                      ((2, 3, 4), ((0, 1), 2))])
def test_galore_matches_optax(shape, dn):
    import jax.numpy as rjnp
    from optax.contrib import _galore as ox_galore

    from fluxion_optim.contrib import _galore as fo_galore

    rs = np.random.RandomState(1)
    g = {"w": rs.randn(*shape).astype(np.float32), "b": rs.randn(shape[-1]).astype(np.float32)}
    kw_o = kw_f = {}
    if dn is not None:
        kw_o = {"weight_dimension_numbers": ox_galore.GaLoreDimensionNumbers(*dn)}
        kw_f = {"weight_dimension_numbers": fo_galore.GaLoreDimensionNumbers(*dn)}
    ours = fo.contrib.galore(0.1, rank=2, update_proj_gap=2, **kw_f)
    ref = optax.contrib.galore(0.1, rank=2, update_proj_gap=2, **kw_o)
    po = {k: jnp.asarray(v) for k, v in g.items()}
    pr = {k: rjnp.asarray(v) for k, v in g.items()}
    so, sr = ours.init(po), ref.init(pr)
    for step in range(3):
        uo, so = ours.update({k: v * (step + 1) for k, v in po.items()}, so, po)
        ur, sr = ref.update({k: v * (step + 1) for k, v in pr.items()}, sr, pr)
        for k in g:
            assert uo[k].shape == ur[k].shape and uo[k].dtype == ur[k].dtype
            np.testing.assert_allclose(np.asarray(uo[k]), np.asarray(ur[k]), rtol=2e-4,
                                       atol=2e-5)
    with pytest.raises(ValueError, match="`rank` must be positive"):
        fo.contrib.scale_by_galore(rank=0)


def test_linesearch_private_helpers_and_error_words_as_optax():
    from optax._src import linear_algebra as ox_la
    from optax._src import linesearch as ox_ls

    from fluxion_optim._src import linear_algebra as fo_la
    from fluxion_optim._src import linesearch as fo_ls

    def fn1(a, b):
        return a + b

    def fn2(c, d):
        return c + d

    kw = {"b": 1.0, "d": 2.0, "e": 3.0}
    assert fo_ls._extract_fns_kwargs((fn1, fn2), kw) == ox_ls._extract_fns_kwargs((fn1, fn2), kw)
    assert fo_ls.FLAG_NOT_A_DESCENT_DIRECTION == ox_ls.FLAG_NOT_A_DESCENT_DIRECTION
    vec = np.array([1.0, 0.0], np.float32)
    loop = (jnp.asarray(vec), jnp.asarray(2.0 * vec), jnp.asarray(2.0), 10)
    assert bool(fo_la._power_iteration_cond_fun(1e-3, 100, loop)) == bool(
        ox_la._power_iteration_cond_fun(1e-3, 100, (vec, 2.0 * vec, 2.0, 10)))
    opt = fo.scale_by_backtracking_linesearch(max_backtracking_steps=5)
    params = jnp.ones(2)
    f = lambda w: jnp.sum(w * w)  # noqa: E731
    with pytest.raises(TypeError, match="Unexpected keyword arguments"):
        opt.update(params, opt.init(params), params, value=f(params), grad=2 * params,
                   value_fn=f, unused_arg=1)
