"""The docstring examples of every fluxion_optim module run and print what they claim
(slow: several hundred eager examples)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import fluxion_optim

MODULES = ["fluxion_optim"] + sorted(
    m.name for m in pkgutil.walk_packages(fluxion_optim.__path__, "fluxion_optim."))


@pytest.mark.slow
@pytest.mark.parametrize("modname", MODULES)
def test_docstring_examples(modname: str) -> None:
    module = importlib.import_module(modname)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {modname} failed"
