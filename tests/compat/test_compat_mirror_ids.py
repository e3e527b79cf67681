"""The compat runner's mirror-mode bookkeeping: ids parametrized by module names read as the
reference's, and haiku's flax bridge resolves to placeholders that mark its tests as apart."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compat_alias  # noqa: E402
import run_suites  # noqa: E402


@pytest.mark.parametrize(("lib", "raw", "want"), [
    ("haiku", "t.py::T::test_doctest_fluxion_nn.haiku.nets", "t.py::T::test_doctest_haiku.nets"),
    ("haiku", "t.py::T::test_doctest_fluxion_nn.haiku", "t.py::T::test_doctest_haiku"),
    ("haiku", "t.py::T::test_x", "t.py::T::test_x"),
    ("optax", "a.py::b[xfluxion_optim]", "a.py::b[xfluxion_optim]"),  # part of a longer word
    ("flax", "tests/nnx/a.py::t[fluxion_nn]", "tests/nnx/a.py::t[fluxion_nn]"),
])
def test_mirror_nodeid(lib, raw, want):
    assert run_suites.mirror_nodeid(lib, raw) == want


def test_haiku_flax_bridge_is_unmirrored():
    assert compat_alias._is_bridge("haiku._src.flax")
    assert compat_alias._is_bridge("haiku._src.flax.flax_module")
    assert not compat_alias._is_bridge("haiku._src.flax_like")
    assert not compat_alias._is_bridge("haiku._src.base")
    placeholder = compat_alias._raise_unmirrored("haiku._src.flax")()
    with pytest.raises(compat_alias.UnmirroredModuleError, match=r"\[compat:unmirrored\]"):
        placeholder.flax_module  # noqa: B018


def test_jax_md_linen_models_are_unmirrored():
    for name in ("jax_md._nn.uma", "jax_md._nn.uma.model", "jax_md.nn.nequip", "jax_md.nn.gnome",
                 "jax_md._nn.nequip"):
        assert compat_alias._is_bridge(name)
    for name in ("jax_md.nn", "jax_md._nn.behler_parrinello", "jax_md._nn.util",
                 "jax_md.nn.util", "jax_md.energy"):
        assert not compat_alias._is_bridge(name)


def test_private_view_writes_through_to_the_mirror_module():
    import types

    same, public = types.ModuleType("mirror_same"), types.ModuleType("mirror_public")
    same.flag = 1
    view = compat_alias._PublicView("ref._src.thing", public, same)
    view.flag = 2                       # a test patching the private module
    assert same.flag == 2 and view.flag == 2
    sub = types.ModuleType("ref._src.thing.sub")
    view.sub = sub                      # the import system binding a submodule
    assert view.sub is sub and not hasattr(same, "sub")
    view.fresh = 3                      # a name the mirror lacks stays on the view
    assert view.fresh == 3 and not hasattr(same, "fresh")
