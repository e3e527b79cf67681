"""make_jaxpr text against real JAX: the same programs print the same characters (layout,
variable names shared by nested programs, unused outputs as ``_``, sorted parameters, dot_general
parameters, sub-programs hoisted into ``let`` definitions)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp

jax.config.update("jax_platforms", "cpu")

LIBS = {"fluxion": (fluxion, jnp, fluxion.lax), "jax": (jax, jjnp, jax.lax)}

F32 = np.float32


def _many_sins(lib, np_, lax):
    def f(x):
        for _ in range(30):  # more than 26 variables: names go on with ba, bb, ...
            x = np_.sin(x)
        return x
    return f, (1.0,)


def _big_branch(lib, np_, lax):
    def f(p, x):
        def branch(x):
            for _ in range(12):  # over 10 equations: printed first, as a ``let``
                x = np_.cos(x)
            return x
        return lax.cond(p, branch, lambda x: x, x)
    return f, (True, 1.0)


def _custom_jvp(lib, np_, lax):
    @lib.custom_jvp
    def f(x):
        return np_.sin(x)

    f.defjvps(lambda t, ans, x: np_.cos(x) * t)
    return f, (1.0,)


def _custom_vjp(lib, np_, lax):
    @lib.custom_vjp
    def g(x):
        return np_.sin(x)

    def g_fwd(x):
        return np_.sin(x), x

    def g_bwd(r, c):
        return (c,)

    g.defvjp(g_fwd, g_bwd)
    return g, (1.0,)


def _dn(lhs, rhs, batch=((), ())):
    return ((lhs, rhs), batch)


PROGRAMS = {
    # unused equation outputs print as ``_``
    "unused_output": lambda lib, np_, lax: (lambda x: (x * 2, x)[1], (1.0,)),
    "unused_middle": lambda lib, np_, lax: (lambda x: (np_.sin(x), x + 1)[1], (1.0,)),
    "unused_argument": lambda lib, np_, lax: (lambda x, y: x * 2, (1.0, 2.0)),
    "unused_scan_carry": lambda lib, np_, lax: (
        lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2, x), (1.0,)),
    "unused_in_grad": lambda lib, np_, lax: (lib.grad(lambda x: np_.sin(x) * x), (1.0,)),
    # dot_general parameters
    "dot_general": lambda lib, np_, lax: (
        lambda a, b: lax.dot_general(a, b, _dn((1,), (0,))),
        (np.ones((2, 3), F32), np.ones((3, 4), F32))),
    "dot_general_batch": lambda lib, np_, lax: (
        lambda a, b: lax.dot_general(a, b, _dn((2,), (1,), ((0,), (0,)))),
        (np.ones((4, 2, 3), F32), np.ones((4, 3, 5), F32))),
    "dot_general_preferred": lambda lib, np_, lax: (
        lambda a, b: lax.dot_general(a, b, _dn((1,), (0,)), preferred_element_type=np_.float32),
        (np.ones((2, 3), np.float16), np.ones(3, np.float16))),
    "dot_precision": lambda lib, np_, lax: (
        lambda a, b: lax.dot(a, b, precision=lax.Precision.HIGHEST),
        (np.ones((2, 3), F32), np.ones(3, F32))),
    "dot_general_precisions": lambda lib, np_, lax: (
        lambda a, b: lax.dot_general(a, b, _dn((1,), (0,)),
                                     precision=(lax.Precision.HIGH, lax.Precision.HIGHEST)),
        (np.ones((2, 3), F32), np.ones(3, F32))),
    "dot_int8_to_int32": lambda lib, np_, lax: (
        lambda a, b: lax.dot_general(a, b, _dn((1,), (0,)), preferred_element_type=np_.int32),
        (np.ones((2, 3), np.int8), np.ones((3, 4), np.int8))),
    # nested programs share one naming context
    "cond": lambda lib, np_, lax: (
        lambda p, x: lax.cond(p, lambda x: x * 2, lambda x: x + 1.0, x), (True, 1.0)),
    "cond_unused_operand": lambda lib, np_, lax: (
        lambda p, x, y: lax.cond(p, lambda x, y: x * 2, lambda x, y: y + 1.0, x, y),
        (True, 1.0, 2.0)),
    "scan": lambda lib, np_, lax: (
        lambda xs: lax.scan(lambda c, x: (c + x, c * 2), 0.0, xs), (np.ones(3, F32),)),
    "while": lambda lib, np_, lax: (
        lambda x: lax.while_loop(lambda c: c < 10, lambda c: c + 1, x), (0,)),
    "many_names": _many_sins,
    "big_branch_hoisted": _big_branch,
    # layout of long binder lists and literals
    "many_arguments": lambda lib, np_, lax: (lambda *xs: sum(xs), tuple(F32(i) for i in range(20))),
    "many_outputs": lambda lib, np_, lax: (
        lambda x: tuple(x * i for i in range(1, 15)), (np.ones((2, 3), F32),)),
    "literals": lambda lib, np_, lax: (
        lambda x, i, b: (x * -2.5, i + 3, b & True, x + np.inf), (1.0, 2, True)),
    "nullary": lambda lib, np_, lax: (lambda x: x + lax.iota(np.int32, 3), (np.ones(3, np.int32),)),
    # custom derivatives print as JAX's custom_jvp_call / custom_vjp_call
    "custom_jvp": _custom_jvp,
    "custom_vjp": _custom_vjp,
}

# Parameters JAX has and Fluxion does not: removed from JAX's text before comparing.
_JAX_ONLY_PARAMS = (" sharding=None",)


def _text(lib_name, case):
    lib, np_, lax = LIBS[lib_name]
    f, args = PROGRAMS[case](lib, np_, lax)
    text = str(lib.make_jaxpr(f)(*args))
    for p in _JAX_ONLY_PARAMS:
        text = text.replace(p, "")
    return text


@pytest.mark.parametrize("case", sorted(PROGRAMS))
def test_make_jaxpr_text_matches_jax(case):
    ours, theirs = _text("fluxion", case), _text("jax", case)
    assert ours == theirs, f"\nours:\n{ours}\njax:\n{theirs}"


def test_unused_binders_print_as_underscore():
    text = str(fluxion.make_jaxpr(lambda x: (x * 2, x)[1])(1.0))
    assert text == "{ lambda ; a:f32[]. let _:f32[] = mul a 2.0:f32[] in (a,) }"
    # inside nested programs every binder keeps its name, as in JAX
    text = str(fluxion.make_jaxpr(
        lambda p, x: fluxion.lax.cond(p, lambda x: (x * 2, x)[1], lambda x: x, x))(True, 1.0))
    assert "_:" not in text


def test_dot_general_parameters_print_like_jax():
    text = str(fluxion.make_jaxpr(
        lambda a, b: fluxion.lax.dot(a, b, precision="highest"))(np.ones((2, 3), F32),
                                                                  np.ones(3, F32)))
    assert "dimension_numbers=(([1], [0]), ([], []))" in text
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text
    assert "preferred_element_type" not in text  # None parameters are not printed
