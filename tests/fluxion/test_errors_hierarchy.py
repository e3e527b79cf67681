"""``fluxion.errors``'s classes in JAX 0.10.2's hierarchy: ``JAXTypeError``/``JAXIndexError`` as
the bases of the tracer, key-reuse and leaked-tracer errors (catching the base catches what JAX's
would), and ``JaxprTypeError`` for a staged program that does not type-check."""

from __future__ import annotations

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion import errors
from fluxion.core import ir
from fluxion.core.avals import ShapedArray
from fluxion.lax.transcendental import sin_p

_NAMES = ("ConcretizationTypeError", "JAXIndexError", "JAXTypeError", "JaxprTypeError",
          "KeyReuseError", "NonConcreteBooleanIndexError", "TracerArrayConversionError",
          "TracerBoolConversionError", "TracerIntegerConversionError", "UnexpectedTracerError")


def _jax_bases(cls: type) -> list[str]:
    return [b.__name__ for b in cls.__mro__ if b.__name__ in _NAMES or b.__module__ == "builtins"]


@pytest.mark.parametrize("name", _NAMES)
def test_error_classes_have_jaxs_bases(name: str) -> None:
    ours, theirs = _jax_bases(getattr(errors, name)), _jax_bases(getattr(jax.errors, name))
    if name == "JaxprTypeError":  # Fluxion's class is core.ir.ProgramTypeError
        ours = [name] + ours
    assert ours == theirs
    assert name in errors.__all__


def test_catching_the_bases_catches_what_jax_would() -> None:
    def use_as_bool(x):
        return 1.0 if x > 0 else 0.0

    for mod, jit in ((errors, fluxion.jit), (jax.errors, jax.jit)):
        with pytest.raises(mod.JAXTypeError):
            jit(use_as_bool)(1.0)
        with pytest.raises(mod.JAXIndexError):
            jit(lambda x: x[x > 0])(np.arange(3.0))
    leaked = []
    fluxion.jit(lambda x: leaked.append(x) or x)(1.0)
    with pytest.raises(errors.JAXTypeError):
        fnp.sin(leaked[0])


def test_key_reuse_is_a_jax_type_error() -> None:
    fluxion.config.update("jax_debug_key_reuse", True)
    try:
        key = fluxion.random.key(0)
        fluxion.random.normal(key)
        with pytest.raises(errors.JAXTypeError):
            fluxion.random.normal(key)
    finally:
        fluxion.config.update("jax_debug_key_reuse", False)
    with jax.debug_key_reuse(True):
        key = jax.random.key(0)
        jax.random.normal(key)
        with pytest.raises(jax.errors.JAXTypeError):
            jax.random.normal(key)


def test_a_program_that_does_not_type_check_raises_jaxpr_type_error() -> None:
    x = ir.Var(ShapedArray((3,), np.dtype(np.float32)))
    y = ir.Var(ShapedArray((4,), np.dtype(np.float32)))
    program = ir.Program([], [x], [y], [ir.Equation(sin_p, [x], [y], {})])
    with pytest.raises(errors.JaxprTypeError):
        ir.typecheck(program)
    # JAX's checker on a jaxpr whose output type was altered the same way
    closed = jax.make_jaxpr(jnp.sin)(np.ones(3, np.float32))
    eqn = closed.jaxpr.eqns[0]
    bad_out = jax.extend.core.Var(jax.core.ShapedArray((4,), np.float32))
    bad = closed.jaxpr.replace(eqns=[eqn.replace(outvars=[bad_out])], outvars=[bad_out])
    with pytest.raises(jax.errors.JaxprTypeError):
        jax.extend.core.check_jaxpr(bad)
    assert issubclass(errors.JaxprTypeError, TypeError) and issubclass(
        jax.errors.JaxprTypeError, TypeError)
