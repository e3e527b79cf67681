"""The compat runner's mirror-mode bookkeeping: ids parametrized by module names read as the
reference's, and unmirrored bridges (none at present: jax-md's UMA is mirrored) would resolve to
placeholders that mark their tests as apart."""

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


def test_haiku_flax_bridge_is_mirrored_and_unmirrored_parts_are_placeholders():
    # haiku's flax bridge resolves to fluxion_nn.haiku._src.flax (real linen on its other side)
    for name in ("haiku._src.flax", "haiku._src.flax.flax_module", "haiku.experimental.flax",
                 "haiku._src.base"):
        assert not compat_alias._is_bridge(name)
    assert "haiku" in compat_alias.REAL_LINEN
    placeholder = compat_alias._raise_unmirrored("jax_md._nn.uma")()
    with pytest.raises(compat_alias.UnmirroredModuleError, match=r"\[compat:unmirrored\]"):
        placeholder.model  # noqa: B018


def test_jax_md_linen_models_are_mirrored():
    # UMA, NequIP and GNoME resolve to fluxion_md._nn.{uma,nequip,gnome}: no bridges are left
    assert compat_alias.BRIDGES == {}
    for name in ("jax_md._nn.uma", "jax_md._nn.uma.model", "jax_md._nn.uma.nn.mole",
                 "jax_md.nn", "jax_md._nn.behler_parrinello", "jax_md._nn.util",
                 "jax_md.nn.util", "jax_md.energy", "jax_md.nn.nequip", "jax_md.nn.gnome",
                 "jax_md._nn.nequip", "jax_md._nn.gnome", "jax_md._nn.e3nn_layer"):
        assert not compat_alias._is_bridge(name)
    # jax-md's mirror runs real linen (its tests' e3nn_jax needs it)
    assert "jax_md" in compat_alias.REAL_LINEN


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


def test_real_flax_outside_nnx_never_imports_nnx():
    # the flax mirror runs real linen as the reference: it must never reach flax.nnx (the mirror)
    assert compat_alias.real_flax_imports_nnx() == []
    for line in ("from flax import linen, nnx", "from flax.nnx import bridge", "import flax.nnx",
                 "  from .. import nnx", "from .nnx import Module"):
        assert compat_alias.IMPORTS_NNX.search("x = 1\n" + line + "\n"), line
    for line in ("from flax import linen", "import flax", "# from flax import nnx",
                 "from flax.nnx_compat import x"):
        assert not compat_alias.IMPORTS_NNX.search(line + "\n"), line


def test_real_flax_part_forwards_and_records_reads():
    import types

    real = types.ModuleType("flax.fake_part")
    real.Dense = object()
    real.__path__ = ["/nowhere"]
    view = compat_alias._RealFlaxPart(real)
    compat_alias.REAL_FLAX_USED.clear()
    assert view.__name__ == "flax.fake_part" and view.__path__ == ["/nowhere"]
    assert compat_alias.REAL_FLAX_USED == set()
    assert view.Dense is real.Dense
    assert compat_alias.REAL_FLAX_USED == {"flax.fake_part"}
    with pytest.raises(AttributeError):
        view.Missing  # noqa: B018
    compat_alias.REAL_FLAX_USED.clear()


def test_flax_config_view_sets_nnx_flags_on_the_mirror_and_both_sides():
    import types

    class RealConfig:
        def __init__(self):
            self.flags = {"nnx_graph_mode": True, "flax_return_frozendict": False}

        def update(self, name, value):
            self.flags[name] = value

        def _read(self, name):
            return self.flags[name]

    mirror_flags = {"nnx_graph_mode": True}
    mirror = types.ModuleType("mirror_config")

    def read(name):
        try:
            return mirror_flags[name]
        except KeyError:
            raise LookupError(name) from None

    mirror.read = read
    mirror.update = lambda name, value: (read(name), mirror_flags.__setitem__(name, value))
    real = RealConfig()
    view = compat_alias._FlaxConfigView(real, mirror)
    view.update("nnx_graph_mode", False)
    assert mirror_flags["nnx_graph_mode"] is False and real.flags["nnx_graph_mode"] is False
    assert view._read("nnx_graph_mode") is False and view.nnx_graph_mode is False
    view.update("flax_return_frozendict", True)
    assert "flax_return_frozendict" not in mirror_flags and view._read("flax_return_frozendict")
