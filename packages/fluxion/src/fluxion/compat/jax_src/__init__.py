"""``jax._src`` under :func:`fluxion.compat.install_jax_alias`: the few pieces of JAX's private
modules that the ecosystem's libraries use, each backed by Fluxion's own implementation.

JAX's ``jax._src`` is private; Fluxion provides a piece of it only where a widely used library
(chex, flax, haiku) needs it to import or run and the piece maps cleanly onto Fluxion. Every
module provided is listed in docs/guide/coming-from-jax.md ("Private JAX modules"); importing any
other ``jax._src`` module raises ``ModuleNotFoundError`` naming it.

Example:
    >>> import fluxion.compat.jax_src as jax_src
    >>> sorted(jax_src.PROVIDED)[:3]
    ['api_util', 'checkify', 'compiler']
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PROVIDED"]

# jax._src.<name> -> the module that provides it (a compat module here, or Fluxion's own).
PROVIDED = {
    "api_util": "fluxion.api_util",
    "checkify": "fluxion.compat.jax_src.checkify",
    "compiler": "fluxion.backend.compile_hook",
    "core": "fluxion.core",
    "dispatch": "fluxion.compat.jax_src.dispatch",
    "distributed": "fluxion.compat.jax_src.distributed",
    "dtypes": "fluxion.compat.jax_src.dtypes",
    "earray": "fluxion.compat.jax_src.earray",
    "interpreters": "fluxion.interpreters",
    "interpreters.pxla": "fluxion.interpreters.pxla",
    "state": "fluxion.compat.jax_src.state",
    "state.types": "fluxion.compat.jax_src.state.types",
    "traceback_util": "fluxion.compat.jax_src.traceback_util",
    "tree_util": "fluxion.compat.jax_src.tree_util",
    "xla_bridge": "fluxion.compat.jax_src.xla_bridge",
}


def __getattr__(name: str) -> Any:
    # ``jax._src.xla_bridge`` read as an attribute after ``import jax``, as chex does
    if name in PROVIDED:
        return importlib.import_module(f"jax._src.{name}")
    raise AttributeError(f"module 'jax._src' has no attribute {name!r}: the private module "
                         f"jax._src.{name} is not provided by Fluxion (see "
                         f"docs/guide/coming-from-jax.md)")
