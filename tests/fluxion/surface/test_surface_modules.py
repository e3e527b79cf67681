"""The modules and top-level names added for JAX's surface (issue 12), against real JAX:
fluxion.ops, flatten_util, ad_checkpoint, custom_batching, typing, typeof, float0, named_scope,
named_call, ensure_compile_time_eval, clear_caches and live_arrays."""

from __future__ import annotations

import jax
import jax.ad_checkpoint
import jax.custom_batching
import jax.flatten_util
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_close, assert_same

import fluxion
import fluxion.numpy as jnp
from fluxion import ops
from fluxion.ad_checkpoint import print_saved_residuals, saved_residuals
from fluxion.custom_batching import custom_vmap, sequential_vmap
from fluxion.flatten_util import ravel_pytree

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("name", ["segment_sum", "segment_prod", "segment_min", "segment_max"])
def test_segment_ops(name):
    data = RNG.normal(size=(7, 2)).astype(np.float32)
    ids = np.array([0, 2, 2, -1, 5, 1, 2], np.int32)  # -1 and 5 are dropped below
    ints = np.arange(7, dtype=np.int32)
    variants = (dict(num_segments=4), dict(num_segments=3, bucket_size=3))

    def run(lib, d, n):  # every variant in one jit: one compilation per library
        fn = getattr(lib.ops, name)
        return [fn(d, ids, **kw) for kw in variants] + [fn(n, ids, 3)]

    assert_same(fluxion.jit(lambda d, n: run(fluxion, d, n))(data, ints),
                jax.jit(lambda d, n: run(jax, d, n))(data, ints))
    assert_same(getattr(ops, name)(data, ids), getattr(jax.ops, name)(data, ids))  # eager
    ours_g = fluxion.grad(lambda d: getattr(ops, name)(d, ids, 3).sum())
    theirs_g = jax.grad(lambda d: getattr(jax.ops, name)(d, ids, 3).sum())
    if name == "segment_prod":  # scatter_mul has no derivative in its updates (JAX neither)
        for g in (ours_g, theirs_g):
            with pytest.raises(NotImplementedError):
                g(data)
    else:
        assert_close(fluxion.jit(ours_g)(data), theirs_g(data))


def test_segment_errors():
    with pytest.raises(TypeError, match="num_segments"):
        fluxion.jit(lambda d, i: ops.segment_sum(d, i))(np.ones(3), np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="segment_ids"):
        ops.segment_sum(np.ones(3), np.zeros(2, np.int32))


@pytest.mark.parametrize("tree", [
    {"a": np.ones(2, np.float32), "b": (np.int32(3), 2.0)},
    [1.0, 2.0],
    {"x": np.ones((2, 2), np.float16), "y": np.arange(3, dtype=np.int32)},
    (),
])
def test_ravel_pytree(tree):
    ours, unravel = ravel_pytree(tree)
    theirs, junravel = jax.flatten_util.ravel_pytree(tree)
    assert_same(ours, theirs)
    assert_same(unravel(ours), junravel(theirs))
    assert unravel == ravel_pytree(tree)[1] and hash(unravel) == hash(ravel_pytree(tree)[1])
    if len(jax.tree.leaves(tree)):
        with pytest.raises(ValueError, match="shape"):
            unravel(jnp.zeros(ours.size + 1, ours.dtype))


def test_print_saved_residuals(capsys):
    def f(x, y):
        a = jnp.sin(x) * y
        b = fluxion.checkpoint_name(jnp.cos(a), "b")
        return jnp.sum(b * x)

    def jf(x, y):
        a = jjnp.sin(x) * y
        b = jax.ad_checkpoint.checkpoint_name(jjnp.cos(a), "b")
        return jjnp.sum(b * x)

    print_saved_residuals(f, jnp.ones(3), 2.0)
    ours = capsys.readouterr().out.splitlines()
    jax.ad_checkpoint.print_saved_residuals(jf, jjnp.ones(3), 2.0)
    theirs = capsys.readouterr().out.splitlines()

    def what(line: str) -> str:  # type and kind, without the source location
        return line.split(" from /")[0]

    assert [what(x) for x in ours] == [what(x) for x in theirs]
    assert [d for _, d in saved_residuals(lambda x: x * x, jnp.ones(3))] == ["from the argument x"]


def test_checkpoint_policy_decisions():
    from fluxion import ad_checkpoint as ac
    assert ac.Saveable and not ac.Recompute and ac.Offloadable("device", "pinned_host")
    f = fluxion.checkpoint(lambda x: jnp.sin(jnp.sin(x)), policy=lambda *a, **k: ac.Recompute)
    assert_close(fluxion.grad(f)(0.5), jax.grad(lambda x: jjnp.sin(jjnp.sin(x)))(0.5))


def _make(lib, np_, cv):
    @cv
    def f(x, y):
        return np_.sin(x) * y

    calls = []

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        calls.append((axis_size, list(in_batched)))
        return np_.cos(x) * y, in_batched[0] or in_batched[1]

    return f, calls


def test_custom_vmap_like_jax():
    ours, our_calls = _make(fluxion, jnp, custom_vmap)
    theirs, their_calls = _make(jax, jjnp, jax.custom_batching.custom_vmap)
    xs = np.linspace(0, 1, 3).astype(np.float32)
    assert_close(ours(1.0, 2.0), theirs(1.0, 2.0))
    assert_close(fluxion.vmap(ours, (0, None))(xs, 2.0), jax.vmap(theirs, (0, None))(xs, 2.0))
    assert_close(fluxion.jit(fluxion.vmap(ours))(xs, xs), jax.jit(jax.vmap(theirs))(xs, xs))
    assert our_calls == their_calls
    assert_close(fluxion.jvp(ours, (1.0, 2.0), (1.0, 0.0)), jax.jvp(theirs, (1.0, 2.0), (1.0, 0.0)))
    seq = fluxion.vmap(sequential_vmap(lambda a: jnp.sum(a) * 2))(np.ones((3, 2), np.float32))
    assert_same(seq, jax.vmap(jax.custom_batching.sequential_vmap(lambda a: jjnp.sum(a) * 2))(
        np.ones((3, 2), np.float32)))
    bad = custom_vmap(lambda x: x)
    bad.def_vmap(lambda n, b, x: ((x, x), True))
    with pytest.raises(ValueError, match="structure"):
        fluxion.vmap(bad)(xs)


def test_typing_typeof_float0():
    from fluxion.typing import ArrayLike, DTypeLike
    assert isinstance(jnp.ones(2), ArrayLike) and isinstance(np.float32(1), ArrayLike)
    assert DTypeLike is not None
    assert fluxion.typeof(jnp.ones((2, 3))).shape == jax.typeof(jjnp.ones((2, 3))).shape
    assert fluxion.typeof(1.0).weak_type == jax.typeof(1.0).weak_type
    assert fluxion.typeof(1.0).dtype == jax.typeof(1.0).dtype
    assert fluxion.float0 == jax.float0
    seen = []
    fluxion.jit(lambda x: seen.append(fluxion.typeof(x)) or x)(jnp.ones(3, jnp.int32))
    assert seen[0].shape == (3,) and seen[0].dtype == np.int32


def test_named_scope_and_named_call():
    from fluxion.naming import current_name_stack
    with fluxion.named_scope("outer"):
        with fluxion.named_scope("inner"):
            assert current_name_stack() == "outer/inner"
    assert current_name_stack() == ""
    with pytest.raises(TypeError):
        with fluxion.named_scope(3):
            pass
    seen = []
    g = fluxion.named_call(lambda x: seen.append(current_name_stack()) or x * 2, name="double")
    assert_same(fluxion.jit(g)(jnp.float32(2)), jax.jit(jax.named_call(lambda x: x * 2))(
        np.float32(2)))
    assert seen == ["double"]


def test_ensure_compile_time_eval():
    @fluxion.jit
    def f(x):
        with fluxion.ensure_compile_time_eval():
            positive = jnp.sin(3.0) > 0       # concrete: Python can branch on it
            y = x * 2                         # traced: staged as usual
        return y + 1 if positive else y - 1

    @jax.jit
    def jf(x):
        with jax.ensure_compile_time_eval():
            positive = jjnp.sin(3.0) > 0
            y = x * 2
        return y + 1 if positive else y - 1

    assert_same(f(1.0), jf(1.0))


@pytest.mark.clears_caches
def test_clear_caches_and_live_arrays():
    x = jnp.arange(5.0) + 1
    live = fluxion.live_arrays()
    assert any(a.shape == (5,) and np.array_equal(np.asarray(a), np.asarray(x)) for a in live)
    f = fluxion.jit(lambda v: v * 3)
    assert_same(f(x), x * 3)
    fluxion.clear_caches()
    assert_same(f(x), x * 3)


def test_fwd_and_bwd_like_jax():
    x, w, ct = (np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
                np.ones((3, 2), np.float32), np.ones((2, 2), np.float32))

    def f(a, b):
        return jnp.tanh(a @ b)

    def jf(a, b):
        return jjnp.tanh(a @ b)

    fwd, bwd = fluxion.fwd_and_bwd(f, argnums=(0, 1))
    jfwd, jbwd = jax.fwd_and_bwd(jf, argnums=(0, 1))
    y, res = fwd(x, w)
    jy, jres = jfwd(x, w)
    assert_close(y, jy)
    assert_close(bwd(res, ct), jbwd(jres, ct))
    fwd1, bwd1 = fluxion.fwd_and_bwd(f, argnums=1, jitted=False)
    assert_close(bwd1(fwd1(x, w)[1], ct), jbwd(jres, ct)[1])


def test_print_environment_info():
    text = fluxion.print_environment_info(return_string=True)
    assert text.startswith("fluxion:") and "jaxlib:" in text and "device info:" in text


def test_monitoring_like_jax():
    from fluxion import monitoring
    events, durations, spans, scalars = [], [], [], []
    listeners = [(monitoring.register_event_listener, monitoring.unregister_event_listener,
                  lambda e, **kw: events.append((e, kw))),
                 (monitoring.register_event_duration_secs_listener,
                  monitoring.unregister_event_duration_listener,
                  lambda e, d, **kw: durations.append(e)),
                 (monitoring.register_event_time_span_listener,
                  monitoring.unregister_event_time_span_listener,
                  lambda e, a, b, **kw: spans.append(b - a)),
                 (monitoring.register_scalar_listener, monitoring.unregister_scalar_listener,
                  lambda e, v, **kw: scalars.append(v))]
    for register, _, fn in listeners:
        register(fn)
    try:
        monitoring.record_event("/test/event", step=3)
        monitoring.record_event_time_span("/test/span", 1.0, 3.5)
        monitoring.record_scalar("/test/scalar", 7)
        fluxion.jit(lambda v: v * 7 - 1)(jnp.ones(17))  # a new program: one compilation
    finally:
        for _, unregister, fn in listeners:
            unregister(fn)
    assert events == [("/test/event", {"step": 3})] and spans == [2.5] and scalars == [7]
    assert "/jax/core/compile/backend_compile_duration" in durations
    with pytest.raises(AssertionError):
        monitoring.unregister_scalar_listener(listeners[3][2])
    assert sorted(n for n in dir(monitoring) if not n.startswith("_") and n != "annotations") \
        == sorted(n for n in dir(jax.monitoring) if not n.startswith("_"))
