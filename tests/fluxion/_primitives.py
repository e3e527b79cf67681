"""Every primitive the fluxion package defines, for tests that check a property of all of them
(tests/fluxion/test_primitive_rules.py, test_primitive_buffer_facts.py)."""

from __future__ import annotations

import importlib
import pkgutil

import fluxion
from fluxion.core.primitive import Primitive


def find_primitives() -> dict[str, Primitive]:
    """Every module-level Primitive in the fluxion package, by name (two primitives of one name
    fail the calling test)."""
    found: dict[str, Primitive] = {}
    # the compat pytest plugin aliases 'jax' when imported, which a process that imports the real
    # jax as the reference must not do; it defines no primitives
    modules = [fluxion] + [importlib.import_module(m.name)
                           for m in pkgutil.walk_packages(fluxion.__path__, "fluxion.")
                           if m.name != "fluxion.compat.pytest_plugin"]
    for mod in modules:
        for value in vars(mod).values():
            if isinstance(value, Primitive):
                assert found.setdefault(value.name, value) is value, \
                    f"two primitives named {value.name!r}"
    return found
