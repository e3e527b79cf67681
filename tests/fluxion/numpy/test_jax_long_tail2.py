"""More behaviours of fluxion.numpy/lax/random that once differed from jax 0.10.2 (session 9's
long tail), each checked against real jax: values, shapes, dtypes, weak types and error classes.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import check_like_jax, x64_both

import fluxion
import fluxion.numpy as fnp

# --- Python ints given a dtype: NumPy's conversion (wraps), not the default int type's check -------

_BIG = [2 ** 31, -2 ** 31 - 1, 2 ** 40, 2 ** 63, 2 ** 64, -2 ** 63 - 1]
_CASTS = {
    "convert_element_type": lambda lib, v, dt: lib.lax.convert_element_type(v, dt),
    "lax.full": lambda lib, v, dt: lib.lax.full((2,), v, dt),
    "lax.full_like": lambda lib, v, dt: lib.lax.full_like(lib.numpy.zeros(2, dt), v),
    "jnp.full": lambda lib, v, dt: lib.numpy.full(2, v, dt),
    "jnp.full_no_dtype": lambda lib, v, dt: lib.numpy.full(2, v),
    "jit_jnp.full": lambda lib, v, dt: lib.jit(lambda: lib.numpy.full(2, v, dt))(),
}


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
@pytest.mark.parametrize("name", sorted(_CASTS))
def test_python_int_given_a_dtype_converts_as_numpy_casts(name, x64):
    # jax: 2**40 -> int32 wraps to 0, -> float32 is exact; an int beyond int64/uint64 raises
    # OverflowError for integer targets and TypeError for bfloat16 (ml_dtypes' cast)
    cast = _CASTS[name]
    with x64_both(x64), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflow to inf, both sides
        for v in _BIG:
            for dt in ("int32", "uint8", "uint32", "float32", "float16", "bool", "bfloat16"):
                check_like_jax(lambda w, d=dt: cast(fluxion, w, d),
                               lambda w, d=dt: cast(jax, w, d), v)


@pytest.mark.parametrize("x64", [False, True], ids=["x32", "x64"])
def test_python_int_operands_still_must_fit_the_default_int(x64):
    # the jnp functions are jitted in jax, so their Python int operands must fit int32/int64
    x = np.zeros(2, np.int32)
    ops = {"add": lambda m, v: m.add(x, v), "where": lambda m, v: m.where(x > 0, x, v),
           "clip": lambda m, v: m.clip(x, 0, v), "jit_mul": lambda m, v: (
               jax if m is jnp else fluxion).jit(lambda u: u * v)(x)}
    with x64_both(x64):
        for op in ops.values():
            for v in (2 ** 40, 2 ** 63, -2 ** 63 - 1):
                check_like_jax(lambda w: op(fnp, w), lambda w: op(jnp, w), v,
                               err_contains=("too large",))


def test_python_int_conversion_in_a_staged_program_is_a_literal():
    # as jax: the converted int is a literal of the program, not a constant argument
    with x64_both(True):
        ours = fluxion.make_jaxpr(lambda: fnp.full(2, 2 ** 40))()
        theirs = jax.make_jaxpr(lambda: jnp.full(2, 2 ** 40))()
    assert len(ours.consts) == len(theirs.consts) == 0
    (o,), (t,) = ours.jaxpr.eqns[0].invars, theirs.jaxpr.eqns[0].invars
    assert type(o).__name__ == type(t).__name__ == "Literal"
    assert (int(o.val), o.aval.dtype) == (int(t.val), t.aval.dtype)
