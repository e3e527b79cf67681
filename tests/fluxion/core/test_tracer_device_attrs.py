"""The device-only parts of the Array API on a tracer (``devices()``, ``committed``,
``sharding``, ``addressable_shards``, ...) fail as JAX 0.10.2's ``Tracer`` fails them, under
jit, grad and vmap: the same exception type, and the same ``hasattr`` answer (True, False, or
the error itself), since libraries such as flax, optax and chex probe arrays with ``hasattr``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import fluxion
import fluxion.numpy as fnp

# name -> call arguments (None: an attribute, not called)
NAMES = {
    "devices": (), "committed": None, "device": None, "sharding": None,
    "addressable_shards": None, "is_fully_addressable": None, "is_fully_replicated": None,
    "global_shards": None, "copy_to_host_async": (), "unsafe_buffer_pointer": (),
    "block_until_ready": (), "delete": (), "is_deleted": (), "on_device_size_in_bytes": (),
    "traceback": None, "addressable_data": (0,), "nbytes": None, "itemsize": None,
    "is_ready": (), "platform": None,
}

TRANSFORMS = {
    "jit": lambda lib, f, x: lib.jit(f)(x),
    "grad": lambda lib, f, x: lib.grad(lambda y: f(y).sum())(x),
    "vmap": lambda lib, f, x: lib.vmap(f)(x),
    "jvp": lambda lib, f, x: lib.jvp(f, (x,), (x,)),
}


def _outcome(fn):
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__
    return ("value", v) if isinstance(v, (bool, int)) else "ok"


def _probe(lib, m, transform):
    seen = {}

    def f(x):
        for name, args in NAMES.items():
            has = _outcome(lambda: hasattr(x, name))
            got = _outcome(lambda: getattr(x, name) if args is None else getattr(x, name)(*args))
            seen[name] = (has, got)
        return x
    TRANSFORMS[transform](lib, f, m.arange(6.0).reshape(2, 3))
    return seen


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_tracer_device_attributes_like_jax(transform):
    ours = _probe(fluxion, fnp, transform)
    ref = _probe(jax, jnp, transform)
    assert ours == ref


def test_hasattr_answers():
    seen = _probe(fluxion, fnp, "jit")
    assert seen["devices"][0] == ("value", True)
    assert seen["sharding"] == (("value", False), "AttributeError")
    assert seen["committed"] == ("ConcretizationTypeError", "ConcretizationTypeError")
    assert seen["nbytes"] == (("value", True), ("value", 24))


def test_message_names_the_method_and_typeof():
    def f(x):
        with pytest.raises(fluxion.errors.ConcretizationTypeError, match=r"devices\(\)"):
            x.devices()
        with pytest.raises(AttributeError, match="typeof"):
            x.sharding  # noqa: B018
        return x
    fluxion.jit(f)(fnp.ones(2))


def test_concrete_arrays_unchanged():
    x = fnp.ones(3)
    assert x.devices() == {fluxion.devices()[0]} and x.nbytes == 12
    assert x.is_fully_addressable and x.block_until_ready() is x
