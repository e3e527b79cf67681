"""Names added so that the JAX ecosystem's libraries run on Fluxion (issue 23), against real JAX:
``lax.pswapaxes``, ``fluxion.core`` (= ``jax.core``) and ``fluxion.extend`` (= ``jax.extend``)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
from _compare import assert_same

import fluxion
import fluxion.core
import fluxion.numpy as jnp


def test_pswapaxes_like_jax():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    ours = fluxion.vmap(lambda v: fluxion.lax.pswapaxes(v, "i", 1), axis_name="i")(x)
    theirs = jax.vmap(lambda v: jax.lax.pswapaxes(v, "i", 1), axis_name="i")(x)
    assert_same(ours, theirs)


def test_core_names_like_jax():
    seen = []
    fluxion.jit(lambda x: seen.append((isinstance(x, fluxion.core.Tracer),
                                       isinstance(x, fluxion.core.Trace))) or x)(1.0)
    assert seen == [(True, False)]
    aval = fluxion.core.ShapedArray((2, 3), np.dtype(np.float32))
    assert isinstance(aval, fluxion.core.AbstractValue)
    assert (aval.shape, aval.dtype, aval.weak_type) == (
        jax.core.ShapedArray((2, 3), np.dtype(np.float32)).shape, np.float32, False)
    closed = fluxion.make_jaxpr(lambda a, b: jnp.sin(a) * b)(1.0, 2.0)
    jclosed = jax.make_jaxpr(lambda a, b: jjnp.sin(a) * b)(1.0, 2.0)
    assert_same(fluxion.core.eval_jaxpr(closed.jaxpr, closed.consts, 0.5, 3.0),
                jax.core.eval_jaxpr(jclosed.jaxpr, jclosed.consts, 0.5, 3.0))
    # under a trace, eval_jaxpr stages into the enclosing program like JAX's
    assert_same(fluxion.jit(lambda a: fluxion.core.eval_jaxpr(closed.jaxpr, closed.consts,
                                                              a, 3.0)[0])(0.5),
                jax.jit(lambda a: jax.core.eval_jaxpr(jclosed.jaxpr, jclosed.consts,
                                                      a, 3.0)[0])(0.5))
    assert fluxion.core.max_dim(3, 4) == jax.core.max_dim(3, 4) == 4
    assert fluxion.core.min_dim(3, 4) == jax.core.min_dim(3, 4) == 3

    @fluxion.jit
    def f(x):
        with fluxion.core.eval_context():
            c = jnp.float32(2) * 3  # concrete inside the trace
        assert not isinstance(c, fluxion.core.Tracer)
        return x * c

    assert_same(f(np.float32(1)), jax.jit(lambda x: x * jjnp.float32(6))(np.float32(1)))
    assert fluxion.core.ensure_compile_time_eval is fluxion.ensure_compile_time_eval
