"""``jit(f).trace(*args).lower(lowering_platforms=...)`` against jax 0.10.2, from a CPU machine:
the module for another platform calls the custom-call targets jax's does (the programs of the
export tests), several platforms make one module with the platform index first, and the
arguments Fluxion refuses where jax makes a meaningless module (a string, an unknown name)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp

from .test_platform_lowering import OURS, THEIRS, _targets_jax, _targets_ours


@pytest.mark.parametrize("platforms", [("tpu",), ("cuda",), ("rocm",), ("cpu", "tpu")],
                         ids=["tpu", "cuda", "rocm", "cpu+tpu"])
@pytest.mark.parametrize("name", ["cholesky", "qr", "eigh", "lu", "svd", "solve", "grad_det"])
def test_lowered_for_platforms_calls_jax_targets(name: str, platforms: tuple) -> None:
    f, args = OURS[name]
    g, _ = THEIRS[name]
    ours = fluxion.jit(f).trace(*args).lower(lowering_platforms=platforms).as_text()
    theirs = jax.jit(g).trace(*args).lower(lowering_platforms=platforms).as_text()
    assert _targets_ours(ours) == _targets_jax(theirs), (name, platforms)
    if "cpu" not in platforms:
        assert "lapack" not in ours
    assert ('jax.global_constant = "_platform_index"' in ours) == (len(platforms) > 1)


def test_lowered_for_this_platform_is_the_plain_lowering() -> None:
    t = fluxion.jit(lambda a: jnp.linalg.cholesky(a) * 2).trace(np.eye(3, dtype=np.float32))
    plain = t.lower().as_text()
    # this platform: the CPU here, the chip in a TPU run (whose plain lowering is the TPU's)
    here = fluxion.default_backend()
    assert t.lower(lowering_platforms=(here,)).as_text() == plain
    assert t.lower(lowering_platforms=()).as_text() == plain  # jax: () is the default too


def test_lowered_for_a_tpu_compiles_here_as_jax() -> None:
    # XLA's CPU compiler expands the TPU's Eigh custom call: jax's Lowered compiles and runs it
    a = np.diag(np.arange(1.0, 4.0, dtype=np.float32))
    ours = fluxion.jit(lambda x: jnp.linalg.eigh(x)[0]).trace(a).lower(
        lowering_platforms=("tpu",)).compile()(a)
    theirs = jax.jit(lambda x: jax.numpy.linalg.eigh(x)[0]).trace(a).lower(
        lowering_platforms=("tpu",)).compile()(a)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_several_platforms_and_bad_names_refused_clearly() -> None:
    t = fluxion.jit(jnp.linalg.cholesky).trace(np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="lowered for the platforms \\('cpu', 'tpu'\\)"):
        t.lower(lowering_platforms=("cpu", "tpu")).compile()  # jax: ValueError from safe_zip
    with pytest.raises(TypeError, match="tuple of platform names"):
        t.lower(lowering_platforms="tpu")
    with pytest.raises(TypeError, match="tuple of platform names"):
        t.lower(lowering_platforms=["tpu"])  # jax: TypeError (unhashable list)
    with pytest.raises(ValueError, match="distinct names among"):
        t.lower(lowering_platforms=("xpu",))
    assert 'call_target_name = "cusolver_potrf_ffi"' in t.lower(
        lowering_platforms=("gpu",)).as_text()
