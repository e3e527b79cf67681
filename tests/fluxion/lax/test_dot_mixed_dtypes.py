"""dot_general with operands of two dtypes, against real JAX: two float8 operands are multiplied
as they are (an fp8 matmul), other mixes are converted to the result dtype (flax's
Fp8DotGeneral multiplies an e5m2 gradient by an e4m3 input)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_bits_equal

import fluxion
import fluxion.numpy as fjnp

DN = (((0,), (0,)), ((), ()))


_SLOW = pytest.mark.slow  # XLA's CPU compile of an fp8 dot takes ~3 s per program (under load)


@pytest.mark.parametrize("lt,rt,pref", [
    pytest.param("float8_e5m2", "float8_e4m3fn", "float32", marks=_SLOW),
    pytest.param("float8_e4m3fn", "float8_e5m2", "float32", marks=_SLOW),
    pytest.param("float8_e5m2fnuz", "float8_e4m3fnuz", "float32", marks=_SLOW),
    ("bfloat16", "float32", None),
    ("int8", "float32", None),
    ("float16", "bfloat16", "float32"),
])
def test_mixed_operand_dtypes_like_jax(lt, rt, pref):
    rs = np.random.RandomState(0)
    l = rs.uniform(0, 1, (16, 8)).astype(np.float32) / 256
    r = rs.uniform(-2, 2, (16, 4)).astype(np.float32)
    if lt == "int8":
        l = rs.randint(-5, 5, (16, 8)).astype(np.float32)
    theirs = jax.lax.dot_general(jjnp.asarray(l).astype(lt), jjnp.asarray(r).astype(rt), DN,
                                 preferred_element_type=pref)
    for f in (fluxion.lax.dot_general, fluxion.jit(fluxion.lax.dot_general, static_argnums=(2,),
                                                   static_argnames=("preferred_element_type",))):
        ours = f(fjnp.asarray(l).astype(lt), fjnp.asarray(r).astype(rt), DN,
                 preferred_element_type=pref)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert ours.weak_type == theirs.weak_type
        assert_bits_equal(ours, theirs)
