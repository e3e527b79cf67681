"""jit's ``keep_unused``: without it (the default) the compiled program takes only the arguments
and closed-over constants it reads, as JAX's; with it, every argument. Compared with real jax:
the lowered module's and the optimized entry's parameters, results, donation of a dropped
argument, AOT ``compile()`` calls. Also the loop counter of ``lax.scan``'s lowering: int64 with
x64 on, int32 without, as JAX's (both show in XLA's optimized program)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.numpy as jnp


def _main_args(text: str) -> int:
    """Arguments of the StableHLO module's public ``main``."""
    sig = re.search(r"func\.func public @main\((.*?)\)\s*->", text).group(1)
    return len(re.findall(r"%arg\d+", sig))


def _entry_params(hlo: str) -> list[str]:
    """Shapes of the optimized HLO module's entry parameters, in order."""
    entry = hlo[hlo.index("\nENTRY"):]
    entry = entry[:entry.index("\n}")]
    found = re.findall(r"= (\S+) parameter\((\d+)\)", entry)
    return [shape.split("{")[0] for shape, _ in sorted(found, key=lambda p: int(p[1]))]


def _f(x, y, z):
    return x * 2.0 + z[0]


_ARGS = (np.float32(1.5), np.ones(3, np.float32), np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("keep_unused", [False, True])
def test_unused_arguments_signature_like_jax(keep_unused):
    ours = fluxion.jit(_f, keep_unused=keep_unused)
    theirs = jax.jit(_f, keep_unused=keep_unused)
    lo, lt = ours.lower(*_ARGS), theirs.lower(*_ARGS)
    assert _main_args(lo.as_text()) == _main_args(lt.as_text()) == (3 if keep_unused else 2)
    po, pt = _entry_params(lo.compile().as_text()), _entry_params(lt.compile().as_text())
    assert po == pt
    assert_same(ours(*_ARGS), theirs(*_ARGS))
    assert_same(lo.compile()(*_ARGS), lt.compile()(*_ARGS))
    # a second call takes the dispatcher's cached entry
    assert_same(ours(*map(jnp.asarray, _ARGS)), theirs(*map(jjnp.asarray, _ARGS)))


def test_all_arguments_unused_and_pytree_arguments():
    def g(a, b):
        return {"k": b["w"] + 1.0}

    args = ((np.ones(2, np.float32), np.int32(3)), {"w": np.float32(2.0), "v": np.zeros(5)})
    ours, theirs = fluxion.jit(g), jax.jit(g)
    assert (_entry_params(ours.lower(*args).compile().as_text())
            == _entry_params(theirs.lower(*args).compile().as_text()) == ["f32[]"])
    for _ in range(2):
        assert_same(ours(*args), theirs(*args))
    none_read = fluxion.jit(lambda a: jnp.float32(7.0))
    assert _entry_params(none_read.lower(jnp.ones(3)).compile().as_text()) == []
    assert_same(none_read(jnp.ones(3)), jax.jit(lambda a: jjnp.float32(7.0))(jjnp.ones(3)))


def test_dropped_donated_argument_is_not_donated_like_jax():
    def h(x, y):
        return x + 1.0

    xo, yo = jnp.ones(3), jnp.ones(3)
    xt, yt = jjnp.ones(3), jjnp.ones(3)
    assert_same(fluxion.jit(h, donate_argnums=(0, 1))(xo, yo),
                jax.jit(h, donate_argnums=(0, 1))(xt, yt))
    assert yo.is_deleted() == yt.is_deleted() == False  # noqa: E712 - the dropped one
    assert xo.is_deleted() == xt.is_deleted()


def test_closed_over_constant_read_only_by_dead_code():
    big = np.arange(40000, dtype=np.float32)  # over the size embedded into the module

    def k(x):
        unused = jnp.sum(jnp.asarray(big))  # dead: the constant is read by nothing kept
        del unused
        return x * 3.0

    def kj(x):
        return x * 3.0

    lo = fluxion.jit(k).lower(jnp.ones(2))
    assert _entry_params(lo.compile().as_text()) == ["f32[2]"]
    assert_same(fluxion.jit(k)(jnp.ones(2)), jax.jit(kj)(jjnp.ones(2)))


@pytest.mark.parametrize("use_x64", [False, True])
def test_scan_loop_counter_width_like_jax(use_x64, request):
    if use_x64:
        request.getfixturevalue("x64")

    def body(c, x):
        return c + x, c * x

    def run(lax, xnp):
        return lambda xs: lax.scan(body, xnp.zeros((), xs.dtype), xs)

    xs = np.arange(6.0, dtype=np.float32)
    ours = fluxion.jit(run(fluxion.lax, jnp)).lower(xs).compile().as_text()
    theirs = jax.jit(run(jax.lax, jjnp)).lower(xs).compile().as_text()
    counter = r"\((s\d\d)\[\], [^)]*\) while\("
    assert re.findall(counter, ours) == re.findall(counter, theirs) == [
        "s64" if use_x64 else "s32"]
    assert_same(fluxion.jit(run(fluxion.lax, jnp))(xs), jax.jit(run(jax.lax, jjnp))(xs))
