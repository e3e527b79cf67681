"""jit's static (and donated) arguments: positions and names infer each other only when one of the
pair is left out, as in JAX; given both, each is taken as it is.

flax's linen ``nn.jit`` passes ``static_argnums=(0,)`` and the user's ``static_argnames`` for a
function whose signature (through ``functools.wraps``) is the user's method, not the one called:
inferring a position from the name made an unhashable argument static."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp

CASES = [dict(static_argnums=0, static_argnames="b"), dict(static_argnums=(), static_argnames="b"),
         dict(static_argnames="b"), dict(static_argnums=1), dict(static_argnums=(1,), static_argnames=())]


def _f(a, b):
    return a + b


def _outcome(api, np_, kw, by_keyword):
    g = api.jit(_f, **kw)
    b = np_.ones(2)
    try:
        out = g(1.0, b=b) if by_keyword else g(1.0, b)
    except ValueError:  # an array given for a static argument (unhashable)
        return "static"
    return np.asarray(out).tolist()


@pytest.mark.parametrize("kw", CASES, ids=str)
@pytest.mark.parametrize("by_keyword", [False, True])
def test_static_argnums_and_argnames_like_jax(kw, by_keyword):
    assert _outcome(fluxion, fnp, kw, by_keyword) == _outcome(jax, jnp, kw, by_keyword)


def test_both_given_with_a_wrapped_signature_like_flax():
    def user_method(scope, x, mode):
        return x * 2 if mode == "double" else x

    def make(api):
        @functools.partial(api.jit, static_argnums=(0,), static_argnames=["mode"])
        @functools.wraps(user_method)
        def jitted(fingerprint, groups, *args, **kwargs):
            return user_method(groups, *args, **kwargs)
        return jitted

    groups = ({},)  # unhashable, at the position 'mode' has in the wrapped signature
    ours = make(fluxion)("fp", groups, fnp.arange(3.0), mode="double")
    theirs = make(jax)("fp", groups, jnp.arange(3.0), mode="double")
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert ours.dtype == theirs.dtype and ours.weak_type == theirs.weak_type


def test_donate_argnums_and_argnames_both_given_are_taken_as_given():
    def g(x, y):
        return x + y

    def deleted(api, np_, kw):
        f = api.jit(g, **kw)
        y = np_.ones(3)
        out = f(np_.ones(3), y)  # y given positionally
        np.testing.assert_array_equal(np.asarray(out), np.full(3, 2.0))
        return y.is_deleted()

    for kw in (dict(donate_argnums=(), donate_argnames="y"), dict(donate_argnames="y")):
        assert deleted(fluxion, fnp, kw) == deleted(jax, jnp, kw), kw
