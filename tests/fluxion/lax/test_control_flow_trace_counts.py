"""How often control flow traces its body, compared with JAX: once per function (or callable
object) and argument types, also when the body counts its own traces in a variable it assigns
(flax's nnx.scan tests); still again when a value the body reads is rebound (Fluxion's guard)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from _compare import assert_same

import fluxion
import fluxion.numpy as fnp


def _self_counting_scan(lib, m):
    n = 0

    def body(c, x):
        nonlocal n
        n += 1
        return c + x, x * 2.0

    xs = m.arange(4.0)
    outs = [lib.lax.scan(body, 0.0, xs) for _ in range(3)]
    return n, outs[-1]


def test_body_assigning_its_own_counter_is_traced_once_like_jax():
    n, out = _self_counting_scan(fluxion, fnp)
    j_n, j_out = _self_counting_scan(jax, jnp)
    assert n == j_n == 1
    assert_same(out, j_out)


class _Body:
    def __init__(self, scale):
        self.scale = scale
        self.traces = 0

    def __call__(self, c, x):
        self.traces += 1
        return c * self.scale + x, c


def _object_scan(lib, m):
    body = _Body(2.0)
    xs = m.ones(3)
    outs = [lib.lax.scan(body, 1.0, xs) for _ in range(3)]
    return body.traces, outs[-1]


def test_callable_object_body_is_traced_once_like_jax():
    traces, out = _object_scan(fluxion, fnp)
    j_traces, j_out = _object_scan(jax, jnp)
    assert traces == j_traces == 1
    assert_same(out, j_out)


def test_callable_object_with_a_rebound_attribute_is_traced_again():
    # JAX would reuse its trace (and the old scale); Fluxion's guard sees the new value.
    body = _Body(2.0)
    xs = np.ones(3, np.float32)
    assert float(fluxion.lax.scan(body, 1.0, xs)[0]) == 15.0
    body.scale = 3.0
    assert float(fluxion.lax.scan(body, 1.0, xs)[0]) == 40.0
    assert body.traces == 2
    fluxion.lax.scan(body, 1.0, xs)
    assert body.traces == 2


def test_closure_read_but_not_assigned_still_guards():
    k = 2.0

    def body(i, c):
        return c * k

    assert float(fluxion.lax.fori_loop(0, 3, body, 1.0)) == 8.0
    k = 3.0
    assert float(fluxion.lax.fori_loop(0, 3, body, 1.0)) == 27.0


def test_cached_callable_object_is_not_kept_alive():
    import gc
    import weakref

    body = _Body(2.0)
    fluxion.lax.scan(body, 1.0, fnp.ones(3))
    ref = weakref.ref(body)
    del body
    gc.collect()
    assert ref() is None
