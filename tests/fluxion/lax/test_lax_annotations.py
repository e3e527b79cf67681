"""``lax.DotDimensionNumbers``, ``lax.PrecisionLike`` and ``lax.ConvGeneralDilatedDimensionNumbers``
against jax 0.10.2: the same typing structure (class names compared), and every form each one
admits is accepted by the function it annotates, with jax's values."""

from __future__ import annotations

import typing

import jax.lax as jlax
import numpy as np
import pytest

import fluxion.lax as flax
import fluxion.numpy as fnp


def _spelled(t: typing.Any) -> typing.Any:
    """A typing construct as nested tuples of names (classes by ``__name__``)."""
    args = typing.get_args(t)
    if not args:
        return getattr(t, "__name__", repr(t))
    return (getattr(typing.get_origin(t), "__name__", repr(typing.get_origin(t))),
            tuple(_spelled(a) for a in args))


@pytest.mark.parametrize("name", ["DotDimensionNumbers", "ConvGeneralDilatedDimensionNumbers"])
def test_aliases_spelled_as_jax(name: str) -> None:
    assert _spelled(getattr(flax, name)) == _spelled(getattr(jlax, name))
    assert name in flax.__all__


def test_precision_like_is_jaxs() -> None:
    ours, theirs = _spelled(flax.PrecisionLike), _spelled(jlax.PrecisionLike)
    assert ours[0] == theirs[0] == "Union"
    assert ours[1] == theirs[1]


@pytest.mark.parametrize("precision", [None, "highest", flax.Precision.HIGH, ("default", "high"),
                                       (flax.Precision.HIGHEST, flax.Precision.DEFAULT),
                                       flax.DotAlgorithmPreset.F32_F32_F32])
def test_every_precision_like_form_is_accepted(precision: typing.Any) -> None:
    def theirs_of(p: typing.Any) -> typing.Any:
        return jlax.Precision[p.name] if isinstance(p, flax.Precision) else p

    theirs_precision = theirs_of(precision)
    if isinstance(precision, tuple):
        theirs_precision = tuple(theirs_of(p) for p in precision)
    elif isinstance(precision, flax.DotAlgorithmPreset):
        theirs_precision = jlax.DotAlgorithmPreset[precision.name]
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    dims: flax.DotDimensionNumbers = (((1,), (1,)), ((), ()))
    ours = flax.dot_general(fnp.asarray(x), fnp.asarray(x), dims, precision=precision)
    np.testing.assert_allclose(np.asarray(ours),
                               np.asarray(jlax.dot_general(x, x, dims,
                                                           precision=theirs_precision)))


@pytest.mark.parametrize("dn", [None, ("NCH", "OIH", "NCH"),
                                flax.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))])
def test_every_conv_dimension_numbers_form_is_accepted(dn: typing.Any) -> None:
    lhs = np.arange(10.0, dtype=np.float32).reshape(1, 2, 5)
    rhs = np.ones((3, 2, 2), np.float32)
    theirs_dn = jlax.ConvDimensionNumbers(*dn) if isinstance(dn, flax.ConvDimensionNumbers) else dn
    ours = flax.conv_general_dilated(fnp.asarray(lhs), fnp.asarray(rhs), (1,), "VALID",
                                     dimension_numbers=dn)
    theirs = jlax.conv_general_dilated(lhs, rhs, (1,), "VALID", dimension_numbers=theirs_dn)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))
