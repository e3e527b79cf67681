"""A key from a Python or NumPy seed, outside any transformation, is made on the host (no
``threefry_seed`` program to compile: 50-300 ms on a TPU, and every program's first key pays it):
the same words as the program inside ``jit`` and as jax.random, in both x64 modes."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import x64_both

import fluxion
from fluxion import random as fr
from fluxion.core import monitoring

SEEDS = [0, 1, 42, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 32 + 9, -(2 ** 40) - 3, np.int8(-3),
         np.uint8(200), np.int16(-300), np.uint16(65535), np.int32(-7), np.uint32(2 ** 32 - 1),
         np.int64(-(2 ** 35)), np.uint64(2 ** 63 + 5)]


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_host_seed_words_equal_the_program_and_jax(x64):
    with x64_both(x64):
        for seed in SEEDS:
            host = fr.PRNGKey(seed)
            staged = fluxion.jit(lambda: fr.PRNGKey(seed))()
            want = np.asarray(jax.random.PRNGKey(seed))
            for got in (host, staged, fr.key_data(fr.key(seed))):
                assert got.dtype == np.uint32 and got.shape == (2,)
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=repr(seed))
            assert not host.weak_type and not host.committed


def test_eager_key_compiles_nothing_and_stays_traced_under_jit():
    fluxion.clear_caches()  # an earlier threefry_seed program would be a cache hit
    seen = []

    def listen(event, duration, **_):
        if event == monitoring.BACKEND_COMPILE_EVENT:
            seen.append(duration)
    monitoring.register_event_duration_secs_listener(listen)
    try:
        fr.PRNGKey(123457)
        fr.key(np.int32(99))
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert seen == []
    # inside a transformation the key is the program's value, a tracer as in jax
    kinds = []
    fluxion.jit(lambda: kinds.append(isinstance(fr.PRNGKey(0), fluxion.core.Tracer)))()
    assert kinds == [True]
