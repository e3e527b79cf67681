"""``lax.Precision`` is JAX 0.10.2's enum wherever user code can see it: members, lookups by
value, name and JAX's precision strings, str/repr, equality and hashing, pickling, static jit
arguments, and the canonical ``precision`` parameter recorded in a jaxpr (a pair of members, or
the DotAlgorithmPreset), for dot_general, einsum, conv and jax_default_matmul_precision."""

from __future__ import annotations

import copy
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import fluxion
import fluxion.numpy as fnp
from fluxion import lax as flax

LIBS = ((fluxion, fnp, flax), (jax, jnp, jlax))


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__


def _show(v):
    """A library-neutral form: enum members as (class name, member name, value), recursively."""
    if isinstance(v, (tuple, list)):
        return type(v).__name__, [_show(x) for x in v]
    if hasattr(v, "name") and hasattr(v, "value") and type(v).__name__ in (
            "Precision", "DotAlgorithmPreset"):
        return type(v).__name__, v.name
    return v


ENUM_CASES = {
    "member": lambda P: P.HIGHEST,
    "str": lambda P: str(P.HIGHEST),
    "repr": lambda P: repr(P.DEFAULT),
    "format": lambda P: f"{P.HIGH}",
    "name/value": lambda P: (P.HIGH.name, P.HIGH.value),
    "call highest": lambda P: P("highest"),
    "call float32": lambda P: P("float32"),
    "call tensorfloat32": lambda P: P("tensorfloat32"),
    "call bfloat16_3x": lambda P: P("bfloat16_3x"),
    "call fastest": lambda P: P("fastest"),
    "call HIGHEST": lambda P: P("HIGHEST"),
    "call 2": lambda P: P(2),
    "call 3": lambda P: P(3),
    "call list": lambda P: P(["high"]),
    "getitem": lambda P: P["HIGH"],
    "getitem lower": lambda P: P["high"],
    "members": lambda P: list(P),
    "len": lambda P: len(P),
    "eq str": lambda P: P.DEFAULT == "DEFAULT",
    "eq int": lambda P: P.DEFAULT == 0,
    "is": lambda P: P("high") is P.HIGH,
    "hash": lambda P: hash(P.HIGH) == hash(P("tensorfloat32")),
    "dict key": lambda P: {P.HIGH: 1}[P("high")],
    "pickle": lambda P: pickle.loads(pickle.dumps(P.HIGHEST)) is P.HIGHEST,
    "deepcopy": lambda P: copy.deepcopy(P.HIGHEST) is P.HIGHEST,
    "isinstance": lambda P: isinstance(P.HIGHEST, P),
    "enum": lambda P: type(P.HIGHEST).__mro__[1].__name__,
    "not str": lambda P: isinstance(P.HIGHEST, str),
}


@pytest.mark.parametrize("case", sorted(ENUM_CASES))
def test_precision_enum_like_jax(case):
    ours = _outcome(lambda: _show(ENUM_CASES[case](flax.Precision)))
    ref = _outcome(lambda: _show(ENUM_CASES[case](jlax.Precision)))
    assert ours == ref


def test_preset_repr_like_jax():
    for p in ("F32_F32_F32", "BF16_BF16_F32_X3"):
        assert repr(flax.DotAlgorithmPreset[p]) == repr(jlax.DotAlgorithmPreset[p])
        assert str(flax.DotAlgorithmPreset[p]) == str(jlax.DotAlgorithmPreset[p])


PRECISIONS = {
    "None": lambda L: None,
    "member": lambda L: L.Precision.HIGHEST,
    "highest": lambda L: "highest",
    "tensorfloat32": lambda L: "tensorfloat32",
    "HIGHEST (not a jax string)": lambda L: "HIGHEST",
    "pair": lambda L: (L.Precision.HIGH, L.Precision.DEFAULT),
    "list pair": lambda L: [L.Precision.HIGH, L.Precision.DEFAULT],
    "string pair": lambda L: ("high", "default"),
    "mixed pair": lambda L: (L.Precision.HIGH, "default"),
    "triple": lambda L: (L.Precision.HIGH,) * 3,
    "preset": lambda L: L.DotAlgorithmPreset.F32_F32_F32,
    "preset name": lambda L: "F32_F32_F32",
    "int": lambda L: 2,
    "bogus": lambda L: "bogus",
}


def _params(lib, m, L, op, precision):
    x = m.ones((1, 1, 4, 4)) if op == "conv" else m.ones((2, 2))
    if op == "dot":
        f = lambda a: L.dot(a, a, precision=precision)  # noqa: E731
    elif op == "einsum":
        f = lambda a: m.einsum("ij,jk->ik", a, a, precision=precision)  # noqa: E731
    else:
        f = lambda a: L.conv(a, m.ones((1, 1, 2, 2)), (1, 1), "VALID",  # noqa: E731
                             precision=precision)
    eqns = lib.make_jaxpr(f)(x).eqns
    return [e.params["precision"] for e in eqns if "precision" in e.params]


@pytest.mark.parametrize("op", ["dot", "einsum", "conv"])
@pytest.mark.parametrize("name", sorted(PRECISIONS))
def test_precision_parameter_like_jax(op, name):
    if op == "einsum" and name in ("list pair", "mixed pair", "triple"):
        pytest.skip("jax's einsum hashes the precision (a list is TypeError there) or "
                    "canonicalizes it late; the dot case covers the parameter")
    ours = _outcome(lambda: _show(_params(fluxion, fnp, flax, op, PRECISIONS[name](flax))))
    ref = _outcome(lambda: _show(_params(jax, jnp, jlax, op, PRECISIONS[name](jlax))))
    if name == "list pair":
        # jax records the list itself, which its primitive-level caches cannot hash (a
        # TypeError); Fluxion records the pair as a tuple (docs/guide/coming-from-jax.md)
        assert ref == "TypeError"
        ref = ("ok", ("list", [("tuple", [("Precision", "HIGH"), ("Precision", "DEFAULT")])]))
    assert ours == ref


@pytest.mark.parametrize("flag", ["highest", "float32", "high", "tensorfloat32", "bfloat16",
                                  "default", "F32_F32_F32", "fastest", "HIGHEST", "bogus"])
def test_default_matmul_precision_like_jax(flag):
    def run(lib, m, L):
        with lib.default_matmul_precision(flag):
            return _show(lib.make_jaxpr(lambda a: L.dot(a, a))(m.ones((2, 2))).eqns[0]
                         .params["precision"])
    assert _outcome(lambda: run(fluxion, fnp, flax)) == _outcome(lambda: run(jax, jnp, jlax))


def test_precision_as_static_argument_and_printed():
    f = fluxion.jit(lambda a, p: flax.dot(a, a, precision=p), static_argnums=1)
    x = fnp.ones((2, 2))
    assert np.asarray(f(x, flax.Precision.HIGHEST)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert f(x, flax.Precision("highest")) is not None
    assert f._cache_size() == 1
    text = str(fluxion.make_jaxpr(lambda a: flax.dot(a, a, precision=flax.Precision.HIGH))(x))
    assert "precision=(Precision.HIGH, Precision.HIGH)" in text
    lowered = fluxion.jit(lambda a: flax.dot(a, a, precision=("high", "highest"))).lower(x)
    assert ("precision_config = [#stablehlo<precision HIGH>, #stablehlo<precision HIGHEST>]"
            in lowered.as_text())


def test_patches_and_local_take_members():
    x = np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4)
    for prec in (flax.Precision.HIGHEST, "highest", None):
        p = flax.conv_general_dilated_patches(fnp.asarray(x), (2, 2), (1, 1), "VALID",
                                              precision=prec if prec != "highest" else None)
        ref = jlax.conv_general_dilated_patches(jnp.asarray(x), (2, 2), (1, 1), "VALID")
        np.testing.assert_allclose(np.asarray(p), np.asarray(ref))
    w = np.ones((2, 4, 3, 3), np.float32)
    ours = flax.conv_general_dilated_local(fnp.asarray(x), fnp.asarray(w), (1, 1), "VALID",
                                           (2, 2), precision="highest")
    ref = jlax.conv_general_dilated_local(jnp.asarray(x), jnp.asarray(w), (1, 1), "VALID",
                                          (2, 2), precision="highest")
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)
