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
