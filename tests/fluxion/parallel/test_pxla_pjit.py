"""``fluxion.interpreters.pxla`` result handlers and ``fluxion.experimental.pjit`` against JAX's
(orbax imports both at module level)."""

import warnings

import numpy as np
import pytest

import fluxion
from fluxion.experimental import pjit as fpjit
from fluxion.interpreters import pxla as fpxla
from fluxion.sharding import NamedSharding
from fluxion.sharding import PartitionSpec as P

jax = pytest.importorskip("jax")
jpxla = pytest.importorskip("jax.interpreters.pxla")
jpjit = pytest.importorskip("jax.experimental.pjit")


def test_results_handler_rebuilds_a_sharded_array_from_device_buffers_like_jax(eight):
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    mesh, jmesh = fluxion.make_mesh((4, 2), ("x", "y")), jax.make_mesh((4, 2), ("x", "y"))
    s, js = NamedSharding(mesh, P("x", "y")), jax.NamedSharding(jmesh, jax.P("x", "y"))
    x, jx = fluxion.device_put(value, s), jax.device_put(value, js)
    ours = fpxla.global_avals_to_results_handler([fluxion.typeof(x)], [s], True)
    theirs = jpxla.global_avals_to_results_handler([jax.typeof(jx)], [js], True)
    out = ours.handlers[0](list(x._a._arrays))
    ref = theirs.handlers[0](list(jx._arrays))
    assert out.shape == ref.shape and out.dtype == ref.dtype and out.sharding == s
    np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    with pytest.raises(ValueError, match="8 devices"):
        ours.handlers[0](list(x._a._arrays)[:3])
    with pytest.raises(ValueError, match="2 avals but 1 shardings"):
        fpxla.global_avals_to_results_handler([fluxion.typeof(x)] * 2, [s], True)


def test_pjit_is_jit_with_a_deprecation_warning_like_jax():
    with pytest.warns(DeprecationWarning, match="pjit has been deprecated"):
        ours = fpjit.pjit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        theirs = jpjit.pjit
    assert ours is fluxion.jit
    np.testing.assert_array_equal(np.asarray(ours(lambda v: v * 2)(np.ones(3, np.float32))),
                                  np.asarray(theirs(lambda v: v * 2)(np.ones(3, np.float32))))
    with pytest.raises(AttributeError):
        getattr(fpjit, "something_else")  # noqa: B009
