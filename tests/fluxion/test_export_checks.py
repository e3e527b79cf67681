"""fluxion.export's safety checks and pytree serialization registries, compared with jax 0.10.2's
``jax.export``: host callbacks are refused, custom calls outside the guaranteed-stable list are
refused unless a ``DisabledSafetyCheck`` allows them, ``DisabledSafetyCheck.platform()`` lets a
module run on another platform, and namedtuples / custom nodes serialize once registered."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import export as fexport

X = np.arange(3, dtype=np.float32)


def _callback_programs(lib):
    io_callback = (jax.experimental.io_callback if lib is jax
                   else fluxion.experimental.io_callback)
    return {
        "pure_callback": lambda x: lib.pure_callback(
            np.sin, lib.ShapeDtypeStruct((3,), np.float32), x) * 2,
        "io_callback": lambda x: io_callback(lambda v: None, None, x, ordered=True) or x,
        "debug_print": lambda x: (lib.debug.print("x={}", x), x * 2)[1],
    }


@pytest.mark.parametrize("platform", ["cpu", "tpu", "cuda"])
@pytest.mark.parametrize("kind", ["pure_callback", "io_callback", "debug_print"])
def test_host_callbacks_are_not_exported(kind, platform) -> None:
    if platform == "cpu":  # jax lowers callbacks only for its own backend's platform
        with pytest.raises(NotImplementedError, match="serialization of host_callbacks"):
            jax.export.export(jax.jit(_callback_programs(jax)[kind]),
                              platforms=[platform])(X)
    with pytest.raises(NotImplementedError, match="serialization of host callbacks"):
        fexport.export(fluxion.jit(_callback_programs(fluxion)[kind]), platforms=[platform])(X)


def test_platform_check_can_be_disabled() -> None:
    def f(lib):
        return lib.jit(lambda x: lib.numpy.sin(x) * 2)

    for lib, ex in ((jax, jax.export), (fluxion, fexport)):
        plain = ex.export(f(lib), platforms=["tpu"])(X)
        with pytest.raises(ValueError, match="exported for platforms"):
            plain.call(X)
        free = ex.export(f(lib), platforms=["tpu"],
                         disabled_checks=[ex.DisabledSafetyCheck.platform()])(X)
        np.testing.assert_allclose(np.asarray(free.call(X)), np.sin(X) * 2, rtol=1e-6)
        assert free.disabled_safety_checks == (ex.DisabledSafetyCheck.platform(),)
        if lib is fluxion:  # the check stays disabled through serialization
            again = fexport.deserialize(free.serialize())
            assert again.disabled_safety_checks == free.disabled_safety_checks
            np.testing.assert_allclose(np.asarray(again.call(X)), np.sin(X) * 2, rtol=1e-6)


def test_disabled_safety_check_values_as_jax() -> None:
    for ex in (jax.export, fexport):
        c = ex.DisabledSafetyCheck.custom_call("my_kernel")
        assert str(c) == "custom_call:my_kernel" and c.is_custom_call() == "my_kernel"
        assert str(ex.DisabledSafetyCheck.platform()) == "platform"
        assert ex.DisabledSafetyCheck.platform().is_custom_call() is None
        assert c == ex.DisabledSafetyCheck.custom_call("my_kernel") and len({c, c}) == 1
    with pytest.raises(TypeError, match="DisabledSafetyCheck"):
        fexport.export(fluxion.jit(jnp.sin), disabled_checks=["platform"])


def test_unstable_custom_call_is_refused_unless_allowed() -> None:
    # eig on CUDA is jax's hybrid kernel, outside its guaranteed-stable targets
    a = np.eye(3, dtype=np.float32) + np.arange(9, dtype=np.float32).reshape(3, 3) / 10
    with pytest.raises(ValueError, match="no compatibility guarantees"):
        jax.export.export(jax.jit(jjnp.linalg.eigvals), platforms=["cuda"])(a)
    with pytest.raises(ValueError, match="no compatibility guarantees.*cuhybrid_eig_real"):
        fexport.export(fluxion.jit(jnp.linalg.eigvals), platforms=["cuda"])(a)
    allow = "cuhybrid_eig_real"
    want = jax.export.export(jax.jit(jjnp.linalg.eigvals), platforms=["cuda"], disabled_checks=[
        jax.export.DisabledSafetyCheck.custom_call(allow)])(a)
    got = fexport.export(fluxion.jit(jnp.linalg.eigvals), platforms=["cuda"], disabled_checks=[
        fexport.DisabledSafetyCheck.custom_call(allow)])(a)
    assert allow in want.mlir_module() and allow in got.mlir_module()


def test_stable_targets_are_jax_s() -> None:
    from jax._src.export import _export as jax_export_impl
    assert fexport._STABLE_TARGETS == jax_export_impl._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE


def _roundtrip(lib, ex, fn, arg):
    exp = ex.export(lib.jit(fn))(arg)
    return ex.deserialize(exp.serialize())


def test_namedtuple_serialization_registry_as_jax() -> None:
    Point = collections.namedtuple("Point", "x y")
    Other = collections.namedtuple("Other", "u v")
    p = Point(np.float32(1.0), np.float32(2.0))
    for lib, ex in ((jax, jax.export), (fluxion, fexport)):
        with pytest.raises(ValueError, match="unregistered type"):
            ex.export(lib.jit(lambda q: q))(p).serialize()
        with pytest.raises(ValueError, match="register_pytree_node_serialization"):
            ex.register_namedtuple_serialization(dict, serialized_name=f"{lib.__name__}.d")
        assert ex.register_namedtuple_serialization(
            Point, serialized_name=f"test.{lib.__name__}.Point") is Point
        with pytest.raises(ValueError, match="Duplicate serialization registration for type"):
            ex.register_namedtuple_serialization(Point, serialized_name="x.y")
        with pytest.raises(ValueError, match="Duplicate serialization registration for "
                                             "serialized_name"):
            ex.register_namedtuple_serialization(
                Other, serialized_name=f"test.{lib.__name__}.Point")
        again = _roundtrip(lib, ex, lambda q: Point(q.y, q.x * 2), p)
        out = again.call(p)
        assert type(out) is Point and float(out.x) == 2.0 and float(out.y) == 2.0
        # the deserialized calling convention holds the namedtuple node itself
        assert again.in_tree == lib.tree_util.tree_structure(((p,), {}))
        assert again.out_tree == lib.tree_util.tree_structure(Point(1.0, 2.0))


def test_custom_node_serialization_registry_as_jax() -> None:
    results = []
    for lib, ex in ((jax, jax.export), (fluxion, fexport)):
        class Box:
            def __init__(self, value, scale):
                self.value, self.scale = value, scale

        with pytest.raises(ValueError, match="register_pytree_node"):
            ex.register_pytree_node_serialization(
                Box, serialized_name=f"test.{lib.__name__}.Box0",
                serialize_auxdata=lambda aux: b"", deserialize_auxdata=lambda b: None)
        lib.tree_util.register_pytree_node(
            Box, lambda b: ((b.value,), b.scale), lambda scale, ch: Box(ch[0], scale))
        ex.register_pytree_node_serialization(
            Box, serialized_name=f"test.{lib.__name__}.Box",
            serialize_auxdata=lambda scale: str(scale).encode(),
            deserialize_auxdata=lambda data: float(data.decode()))
        again = _roundtrip(lib, ex, lambda b: Box(b.value * b.scale, b.scale + 1), Box(X, 3.0))
        out = again.call(Box(X, 3.0))
        results.append((np.asarray(out.value), out.scale, again.out_tree.num_leaves))
    np.testing.assert_allclose(results[1][0], results[0][0])
    assert results[0][1:] == results[1][1:] == (4.0, 1)


def test_dict_with_non_string_keys_is_refused_as_jax() -> None:
    for lib, ex in ((jax, jax.export), (fluxion, fexport)):
        exp = ex.export(lib.jit(lambda d: d[1] * 2))({1: X})
        with pytest.raises(TypeError, match="string keys"):
            exp.serialize()
