"""jit of a functools.wraps wrapper whose own parameters differ from the wrapped function's
(haiku's ``hk.jit`` passes ``hk_state=`` to a ``*args, **kwargs`` wrapper): the call is passed as
given, as in JAX, not bound to the wrapped function's signature."""

from __future__ import annotations

import functools

import jax
import numpy as np

import fluxion


def _make():
    def fun(x, y):
        return x * 2 + y

    @functools.wraps(fun)
    def stateful(*args, **kwargs):
        extra = kwargs.pop("hk_state")
        return fun(*args, **kwargs) + extra
    return stateful


def test_wrapper_taking_more_keywords_than_it_wraps():
    x = np.arange(3.0, dtype=np.float32)
    for _ in range(2):  # the second call goes through the cached path
        ref = jax.jit(_make())(x, 1.0, hk_state=np.float32(5))
        got = fluxion.jit(_make())(x, 1.0, hk_state=np.float32(5))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
        assert np.asarray(got).dtype == np.asarray(ref).dtype


def test_plain_wrapper_keeps_working():
    @functools.wraps(lambda a: a)
    def same(a):
        return a + 1
    f = fluxion.jit(same)
    assert float(f(1.0)) == float(f(1.0)) == float(jax.jit(same)(1.0)) == 2.0


def test_lowered_compile_takes_compiler_options_none():
    f = lambda x: x * 2  # noqa: E731
    ref = jax.jit(f).lower(1.0).compile(None)(3.0)
    got = fluxion.jit(f).lower(1.0).compile(None)(3.0)
    assert float(got) == float(ref) == 6.0
    # options themselves: tests/fluxion/test_jit_compiler_options.py
    got = fluxion.jit(f).lower(1.0).compile({"xla_cpu_enable_fast_math": True})(3.0)
    assert float(got) == 6.0
    # device_assignment: tests/fluxion/parallel/test_jit_device_assignment.py
    got = fluxion.jit(f).lower(1.0).compile(device_assignment=tuple(fluxion.devices()[:1]))(3.0)
    assert float(got) == 6.0


def test_array_defaults_compile_nothing_at_jit_time():
    # jit compares the function's own signature with the one through __wrapped__; comparing
    # them with == ran an eager ``eq`` on an Array default (an XLA compile) and raised for one
    # of several elements ("truth value ... ambiguous"), where jax accepts both.
    from fluxion.core import monitoring
    seen = []

    def listen(event, duration, **_):
        if event == monitoring.BACKEND_COMPILE_EVENT:
            seen.append(duration)
    defaults = (fluxion.numpy.float32(1.5), fluxion.numpy.arange(3.0), np.arange(3.0))
    monitoring.register_event_duration_secs_listener(listen)
    try:
        jitted = []
        for d in defaults:
            def fun(x, m=d):
                return x * m
            jitted.append(fluxion.jit(fun))

            @functools.wraps(fun)
            def wrapper(x, m=d):  # the same parameters and default object as it wraps
                return fun(x, m)
            jitted.append(fluxion.jit(wrapper))
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert seen == []
    x = np.ones(3, np.float32)
    for f, d in zip(jitted, [d for d in defaults for _ in range(2)]):
        want = jax.jit(lambda x, m=np.asarray(d): x * m)(x)
        np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(want))
        np.testing.assert_array_equal(np.asarray(f(x, 2.0)), x * 2.0)
