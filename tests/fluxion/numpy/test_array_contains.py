"""Python's ``in`` on arrays (``Array.__contains__``) against real jax 0.10.2, which departs from
NumPy: the array searched must be 1-D and the value a scalar (ValueError otherwise), None and
strings are TypeErrors, and under jit the bool conversion of the traced result fails."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fjnp

_CASES = {
    "found": (lambda jnp: jnp.arange(3.0), 1.0), "missing": (lambda jnp: jnp.arange(3.0), 5.0),
    "int_in_float": (lambda jnp: jnp.arange(3.0), 2), "bool": (lambda jnp: jnp.arange(3), True),
    "complex": (lambda jnp: jnp.ones(3), 1j), "np_scalar": (lambda jnp: jnp.ones(3), np.float32(1)),
    "0d": (lambda jnp: jnp.float32(1), 1.0), "2d": (lambda jnp: jnp.ones((2, 2)), 1.0),
    "array_value": (lambda jnp: jnp.ones(3), np.ones(1)), "list": (lambda jnp: jnp.ones(3), [1.0]),
    "none": (lambda jnp: jnp.ones(3), None), "str": (lambda jnp: jnp.ones(3), "a"),
    "empty": (lambda jnp: jnp.ones(0), 1.0),
}


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as ex:  # noqa: BLE001 - the raised type is what is compared
        return (type(ex).__name__, str(ex))


@pytest.mark.parametrize("name", sorted(_CASES))
def test_contains_as_jax(name):
    make, value = _CASES[name]
    want = _outcome(lambda: value in make(jjnp))
    got = _outcome(lambda: value in make(fjnp))
    assert got[0] == want[0], (want, got)
    if want[0] == "ok":
        assert type(got[1]) is bool and got[1] == want[1]
    else:
        assert got[1].startswith("Array.__contains__"), got


def test_contains_of_a_traced_array_needs_a_concrete_value():
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda x: 1.0 in x)(jjnp.ones(3))
    with pytest.raises(fluxion.errors.TracerBoolConversionError):
        fluxion.jit(lambda x: 1.0 in x)(fjnp.ones(3))
