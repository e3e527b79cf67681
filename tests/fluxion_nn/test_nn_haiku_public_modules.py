"""fluxion_nn.haiku's public modules named as Haiku's (``hk.config``, ``hk.pad``): the same
``__all__``, the same results, and ``find_internal_python_modules`` lists the same public modules
(under the mirror's package name), which is how Haiku's doctest_test names its cases."""

from __future__ import annotations

import pytest

import fluxion_nn.haiku as hk
from fluxion_nn.haiku._src import test_utils

rhk = pytest.importorskip("haiku")
rtest_utils = pytest.importorskip("haiku._src.test_utils")


@pytest.mark.parametrize("name", ["config", "pad"])
def test_public_module_names_match_haiku(name):
    ours, ref = getattr(hk, name), getattr(rhk, name)
    assert ours.__name__ == f"fluxion_nn.haiku.{name}"
    assert sorted(ours.__all__) == sorted(ref.__all__)


@pytest.mark.parametrize("fn", ["valid", "same", "full", "causal", "reverse_causal"])
@pytest.mark.parametrize("k", [1, 3, 4])
def test_pad_functions_match_haiku(fn, k):
    assert tuple(getattr(hk.pad, fn)(k)) == tuple(getattr(rhk.pad, fn)(k))
    assert hk.pad.create is hk.pad.create_from_padfn
    assert (tuple(map(tuple, hk.pad.create(hk.pad.same, 3, 1, 2)))
            == tuple(map(tuple, rhk.pad.create(rhk.pad.same, 3, 1, 2))))


def test_find_internal_python_modules_lists_haiku_public_modules():
    ours = {n[len("fluxion_nn."):] for n, _ in test_utils.find_internal_python_modules(hk)}
    ref = {n for n, _ in rtest_utils.find_internal_python_modules(rhk)}
    # every module ours lists is one Haiku lists (Haiku has more: mixed_precision, jaxpr_info)
    assert ours <= ref and {"haiku", "haiku.config", "haiku.pad", "haiku.nets"} <= ours
    assert all(not n.startswith("fluxion_nn.") or n.startswith("fluxion_nn.haiku")
               for n, _ in test_utils.find_internal_python_modules(hk))
