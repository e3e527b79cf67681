"""``fluxion.experimental.compilation_cache.compilation_cache`` against jax 0.10.2's module:
``set_cache_dir`` sends compiled programs to that directory, and after ``reset_cache`` a new
directory is used, in both."""

from __future__ import annotations

import os

import jax
import jax.experimental.compilation_cache.compilation_cache as jax_cc
import jax.numpy as jnp
import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion.experimental.compilation_cache import compilation_cache as cc

_FLAGS = {"jax_persistent_cache_min_compile_time_secs": 0.0,
          "jax_persistent_cache_min_entry_size_bytes": 0}


def _entries(directory) -> list[str]:
    return [n for n in os.listdir(directory) if not n.startswith(".")]


def _run(config, set_dir, reset, jit, np_mod, dirs) -> list[int]:
    # the suite turns Fluxion's cache off (conftest); it is on by default, as JAX's is
    flags = {**_FLAGS, "jax_enable_compilation_cache": True}
    before = {k: getattr(config, k) for k in (*flags, "jax_compilation_cache_dir")}
    counts = []
    try:
        for k, v in flags.items():
            config.update(k, v)
        for i, d in enumerate(dirs):
            set_dir(str(d))
            reset()
            jit(lambda x, i=i: x * (3.0 + i) + np.float32(len(str(d))))(np_mod.arange(5.0))
            reset()  # Fluxion: queued writes land; jax: writes synchronously
            counts.append(len(_entries(d)))
    finally:
        for k, v in before.items():
            config.update(k, v)
        reset()
    return counts


def test_set_cache_dir_and_reset_cache_as_jax(tmp_path) -> None:
    ours = [tmp_path / "fluxion1", tmp_path / "fluxion2"]
    theirs = [tmp_path / "jax1", tmp_path / "jax2"]
    for d in ours + theirs:
        d.mkdir()
    got = _run(fluxion.config, cc.set_cache_dir, cc.reset_cache, fluxion.jit, fnp, ours)
    ref = _run(jax.config, jax_cc.set_cache_dir, jax_cc.reset_cache, jax.jit, jnp, theirs)
    assert all(n > 0 for n in ref) and all(n > 0 for n in got), (got, ref)
    assert fluxion.config.jax_compilation_cache_dir != str(ours[1])
    assert set(dir(jax_cc)) >= {"set_cache_dir", "reset_cache"}
    assert set(cc.__all__) == {"set_cache_dir", "reset_cache"}
