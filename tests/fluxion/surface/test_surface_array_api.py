"""Array API bits (issue 12, item 6) against jax.numpy: __array_namespace_info__,
Array.to_device, device= on creation functions, unsigned 64-bit edge cases; and fluxion.stages."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as jnp
from fluxion import stages


def test_namespace_info_like_jax(x64=False):
    ours, theirs = jnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert ours.capabilities() == theirs.capabilities()
    assert ours.default_device() is theirs.default_device() is None
    assert ours.default_dtypes() == theirs.default_dtypes()
    for kind in (None, "bool", "signed integer", "unsigned integer", "integral",
                 "real floating", "complex floating", "numeric", ("bool", "real floating")):
        assert ours.dtypes(kind=kind) == theirs.dtypes(kind=kind), kind
    assert ours.devices()[0] is None and len(ours.devices()) == len(theirs.devices())
    assert jnp.__array_api_version__ == jjnp.__array_api_version__
    assert jnp.ones(2).__array_namespace__() is jnp
    with pytest.raises(ValueError, match="kind"):
        ours.dtypes(kind="text")


def test_namespace_info_x64(x64):
    ours, theirs = jnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert ours.dtypes() == theirs.dtypes() and ours.default_dtypes() == theirs.default_dtypes()


def test_to_device_and_device_argument():
    dev = fluxion.devices()[-1]
    x = jnp.arange(3.0).to_device(dev)
    assert x.devices() == {dev} and x.committed
    for make in (lambda d: jnp.zeros(3, device=d), lambda d: jnp.arange(3, device=d),
                 lambda d: jnp.asarray([1, 2], device=d), lambda d: jnp.full((2,), 7, device=d),
                 lambda d: jnp.linspace(0, 1, 3, device=d), lambda d: jnp.eye(2, device=d)):
        assert make(dev).devices() == {dev}
    with pytest.raises(NotImplementedError, match="stream"):
        x.to_device(dev, stream=1)


@pytest.mark.parametrize("case", [
    lambda m: m.array(2**64 - 1, dtype=m.uint64),
    lambda m: m.uint64(2**63) + m.uint64(1),
    lambda m: m.array([2**63, 2**64 - 1], dtype=m.uint64) // m.uint64(3),
    lambda m: m.array([2**64 - 1], dtype=m.uint64).astype(m.float64),
    lambda m: m.arange(3, dtype=m.uint64) - m.uint64(1),
    lambda m: m.max(m.array([2**64 - 1, 5], dtype=m.uint64)),
    lambda m: m.array([2**64 - 1, 5], dtype=m.uint64) > m.uint64(2**63),
    lambda m: m.sort(m.array([2**64 - 1, 5, 2**63], dtype=m.uint64)),
    lambda m: m.cumsum(m.array([2**63, 2**63], dtype=m.uint64)),
    lambda m: m.array([2**64 - 1], dtype=m.uint64) >> m.uint64(60),
])
def test_uint64_edges(x64, case):
    assert_same(case(jnp), case(jjnp))


def test_python_int_out_of_range_like_jax():
    for v in (2**31, 2**63, -2**63 - 1, 2**64):
        with pytest.raises(OverflowError, match="too large to convert to int32"):
            jnp.asarray(v)
        with pytest.raises(OverflowError):
            jjnp.asarray(v)


def test_iinfo_finfo_like_jax():
    for dt in ("uint64", "int8", "uint32"):
        ours, theirs = jnp.iinfo(dt), jjnp.iinfo(dt)
        assert (ours.min, ours.max, ours.bits) == (theirs.min, theirs.max, theirs.bits)
        assert type(ours.max) is type(theirs.max) is int
    for dt in ("float32", "bfloat16", "float16"):
        ours, theirs = jnp.finfo(dt), jjnp.finfo(dt)
        assert (ours.eps, ours.max, ours.tiny, ours.bits) == (theirs.eps, theirs.max,
                                                               theirs.tiny, theirs.bits)


def test_stages():
    f = fluxion.jit(lambda x: x * 2)
    assert isinstance(f, stages.Wrapped)
    traced = f.trace(jnp.ones(3))
    lowered = traced.lower()
    compiled = lowered.compile()
    assert isinstance(traced, stages.Traced) and isinstance(lowered, stages.Lowered)
    assert isinstance(compiled, stages.Compiled)
    assert_same(compiled(jnp.ones(3)), jax.jit(lambda x: x * 2)(np.ones(3, np.float32)))
    info = stages.ArgInfo(fluxion.typeof(jnp.ones(3)), False)
    assert info.shape == (3,) and info.dtype == np.float32 and not info.donated
