"""The trace context: every flag that changes what a trace produces keys every cache.

After a function has been traced (by ``jit``, eagerly, or as a control-flow body), switching
``jax_numpy_dtype_promotion``, ``jax_numpy_rank_promotion``, ``jax_enable_x64``,
``jax_threefry_partitionable`` or ``jax_default_matmul_precision`` must trace again and behave
as real JAX 0.10.2 does under the new value, never reuse the old program. Also the JAX-style
context managers (``numpy_dtype_promotion("strict")`` ...) and ``config.trace_context`` itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import flags_both

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax
from fluxion.core import config as fconfig
from fluxion.core.config import TraceContext, config

I8 = np.array([1, -2, 3], np.int8)
U8 = np.array([4, 5, 6], np.uint8)


def _outcome(fn, *args):
    """``("ok", dtype, value)`` or ``("raises", exception class name)``."""
    try:
        out = fn(*args)
    except Exception as e:
        return ("raises", type(e).__name__)
    return ("ok", np.dtype(out.dtype).name, np.asarray(out).tolist())


def _on_device(m, fn):
    """``fn`` called with its NumPy arguments first made arrays of ``m`` (fluxion.numpy or
    jax.numpy): device arrays take jit's fastest path, the one most likely to go stale."""
    return lambda *args: fn(*(m.asarray(a) for a in args))


def _jit_add(lib, m):
    return lib.jit(lambda a, b: a + b)


def _eager_add(lib, m):
    return lambda a, b: m.asarray(a) + m.asarray(b)


@pytest.mark.parametrize("device", [True, False], ids=["arrays", "numpy-args"])
@pytest.mark.parametrize("make", [_jit_add, _eager_add], ids=["jit", "eager"])
def test_dtype_promotion_switch_to_strict_raises(make, device):
    f, g = make(fluxion, fnp), make(jax, jnp)
    if device:
        f, g = _on_device(fnp, f), _on_device(jnp, g)
    assert _outcome(f, I8, U8) == _outcome(g, I8, U8) == ("ok", "int16", [5, 3, 9])
    with flags_both("jax_numpy_dtype_promotion", "strict"):
        ours, theirs = _outcome(f, I8, U8), _outcome(g, I8, U8)
        assert ours == theirs == ("raises", "TypePromotionError")
    assert _outcome(f, I8, U8) == ("ok", "int16", [5, 3, 9])  # and back


@pytest.mark.parametrize("device", [True, False], ids=["arrays", "numpy-args"])
@pytest.mark.parametrize("make", [_jit_add, _eager_add], ids=["jit", "eager"])
def test_rank_promotion_switch_to_raise_raises(make, device):
    f, g = make(fluxion, fnp), make(jax, jnp)
    if device:
        f, g = _on_device(fnp, f), _on_device(jnp, g)
    a, b = np.ones(3, np.float32), np.ones((2, 3), np.float32)
    assert _outcome(f, a, b) == _outcome(g, a, b)
    assert _outcome(f, a, b)[0] == "ok"
    with flags_both("jax_numpy_rank_promotion", "raise"):
        assert _outcome(f, a, b) == _outcome(g, a, b) == ("raises", "ValueError")
    assert _outcome(f, a, b)[0] == "ok"


@pytest.mark.parametrize("make", [
    lambda lib, m: lib.jit(lambda x: x * 2.5 + 1),
    lambda lib, m: (lambda x: m.asarray(x) * 2.5 + 1),
    lambda lib, m: lib.jit(lambda x: m.arange(3) + x),
], ids=["jit", "eager", "jit-arange"])
def test_x64_switch(make):
    f, g = make(fluxion, fnp), make(jax, jnp)
    assert _outcome(f, 2) == _outcome(g, 2)
    with flags_both("jax_enable_x64", True):
        ours = _outcome(f, 2)
        assert ours == _outcome(g, 2)
        assert ours[1].endswith("64"), ours
    assert _outcome(f, 2) == _outcome(g, 2)
    assert _outcome(f, 2)[1].endswith("32")


def test_x64_switch_with_device_arguments():
    """A weak-typed device scalar argument: its aval is the same under both modes, so only the
    trace context tells the two traces apart (x * 2.5 is f32 without x64, f64 with it)."""
    f = fluxion.jit(lambda x, y: x * 2.5 + y)
    g = jax.jit(lambda x, y: x * 2.5 + y)
    xf, yf = fnp.asarray(np.float32(1)), fnp.asarray(2)
    xj, yj = jnp.asarray(np.float32(1)), jnp.asarray(2)
    for on in (False, True, False):
        with flags_both("jax_enable_x64", on):
            assert _outcome(f, xf, yf) == _outcome(g, xj, yj)


def test_eager_primitive_keeps_input_dtype_under_x64():
    x = fnp.ones(3, fnp.float32)
    with flags_both("jax_enable_x64", True):
        assert flax.add(x, x).dtype == jax.lax.add(jnp.ones(3, jnp.float32),
                                                   jnp.ones(3, jnp.float32)).dtype == np.float32


def _fori(lib, m):
    a, b = m.asarray(I8), m.asarray(U8)

    def body(i, c):
        return c + (a + b)

    return lambda c: lib.lax.fori_loop(0, 2, body, m.asarray(c))


def _scan(lib, m):
    def body(c, x):
        return c + x, c

    return lambda c: lib.lax.scan(body, m.asarray(c), m.asarray(U8)[None].repeat(2, 0))[0]


def _cond(lib, m):
    return lambda c: lib.lax.cond(True, lambda v: v + m.asarray(U8), lambda v: v * 1, m.asarray(c))


@pytest.mark.parametrize("make", [_fori, _scan, _cond], ids=["fori_loop", "scan", "cond"])
def test_control_flow_bodies_follow_the_promotion_mode(make):
    """Eager control flow stages its body once and caches it: not across promotion modes."""
    c16, c8 = np.zeros(3, np.int16), np.zeros(3, np.int8)
    f, g = make(fluxion, fnp), make(jax, jnp)
    for c in (c16, c8):
        assert _outcome(f, c) == _outcome(g, c)
    with flags_both("jax_numpy_dtype_promotion", "strict"):
        for c in (c16, c8):
            assert _outcome(f, c) == _outcome(g, c)
    assert _outcome(f, c16) == _outcome(g, c16)


def test_threefry_partitionable_switch():
    def draw(lib):
        return lib.jit(lambda k: lib.random.bits(k, (5,)))

    f, g = draw(fluxion), draw(jax)
    kf, kj = fluxion.random.key(7), jax.random.key(7)
    for flag in (True, False, True):
        with flags_both("jax_threefry_partitionable", flag):
            np.testing.assert_array_equal(np.asarray(f(kf)), np.asarray(g(kj)))


def _count(lib, m, flag, values):
    traces = []

    def f(x):
        traces.append(1)
        return x @ x

    jitted = lib.jit(f)
    x = m.ones((2, 2))
    for v in values:
        with flags_both(flag, v):
            jitted(x)
    return len(traces)


@pytest.mark.parametrize("flag, values", [
    ("jax_default_matmul_precision", (None, "highest", None, "highest")),
    ("jax_numpy_rank_promotion", ("allow", "raise", "allow")),
    ("jax_enable_x64", (False, True, False, True)),
    ("jax_explain_cache_misses", (False, True, False)),  # not part of the trace context
])
def test_retraces_once_per_context_like_jax(flag, values):
    assert _count(fluxion, fnp, flag, values) == _count(jax, jnp, flag, values)


def test_trace_context_value():
    ctx = config.trace_context
    assert isinstance(ctx, TraceContext) and hash(ctx) == hash(config.trace_context)
    assert TraceContext(ctx.names, ctx.values) is ctx  # interned
    assert {"jax_enable_x64", "jax_numpy_dtype_promotion", "jax_numpy_rank_promotion",
            "jax_default_matmul_precision", "jax_threefry_partitionable",
            "jax_disable_jit"} <= set(ctx.names)
    with fconfig.numpy_dtype_promotion("strict"):
        strict = config.trace_context
        assert strict is not ctx
        assert strict.differences(ctx) == [("jax_numpy_dtype_promotion", "strict", "standard")]
    assert config.trace_context is ctx
    with fconfig.explain_cache_misses(True):  # a flag that changes no trace
        assert config.trace_context is ctx


@pytest.mark.parametrize("name, value", [
    ("numpy_dtype_promotion", "strict"),
    ("numpy_rank_promotion", "raise"),
    ("default_matmul_precision", "highest"),
    ("enable_x64", True),
    ("debug_nans", True),
    ("threefry_partitionable", False),
])
def test_context_managers_like_jax(name, value):
    ours, theirs = getattr(fconfig, name), getattr(jax, name)
    before = ours.value
    assert before == theirs.value
    with ours(value), theirs(value):
        assert ours.value == theirs.value == value
        assert config.read(f"jax_{name}") == value
    assert ours.value == theirs.value == before


def test_context_manager_without_value_like_jax():
    with fconfig.enable_x64(), jax.enable_x64(True):
        assert fnp.zeros(2).dtype == jnp.zeros(2).dtype == np.float64
    with pytest.raises(TypeError):
        jax.numpy_dtype_promotion()
    with pytest.raises(TypeError):
        fconfig.numpy_dtype_promotion()


def test_context_manager_as_decorator_and_disable_jit():
    @fconfig.numpy_rank_promotion("raise")
    def add(a, b):
        return fnp.add(a, b)

    with pytest.raises(ValueError):
        add(fnp.ones(3), fnp.ones((2, 3)))
    assert config.jax_numpy_rank_promotion == "allow"

    calls = []

    def f(x):
        calls.append(type(x))
        return x + 1

    with fconfig.disable_jit():
        fluxion.jit(f)(fnp.ones(2))
    fluxion.jit(f)(fnp.ones(2))
    assert calls[0] is fluxion.Array and calls[1] is not fluxion.Array
