"""A pytest plugin that runs a test suite written for JAX on Fluxion.

``pytest -p fluxion.compat.pytest_plugin tests/`` installs :func:`fluxion.compat.install_jax_alias`
when pytest loads the plugin, before any conftest or test module is collected, so every
``import jax`` in the suite gives Fluxion. Extra aliases (e.g. an ecosystem library resolved to
its Fluxion mirror) come from ``--fluxion-alias optax=fluxion_optim`` (repeatable) or the
``FLUXION_MODULE_ALIASES`` environment variable (``optax=fluxion_optim,haiku=fluxion_nn.haiku``).

Example:
    >>> import fluxion.compat.pytest_plugin as plugin
    >>> plugin.parse_aliases("optax=fluxion_optim, haiku=fluxion_nn.haiku")
    {'optax': 'fluxion_optim', 'haiku': 'fluxion_nn.haiku'}
"""

from __future__ import annotations

import os
from typing import Any

from fluxion.compat import install_jax_alias, install_module_alias

__all__ = ["parse_aliases", "pytest_addoption", "pytest_configure", "pytest_report_header"]


def parse_aliases(text: str) -> dict[str, str]:
    """``"a=b, c=d"`` -> ``{"a": "b", "c": "d"}`` (empty items ignored).

    Example:
        >>> parse_aliases("optax=fluxion_optim")
        {'optax': 'fluxion_optim'}
    """
    out: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        alias, eq, target = item.partition("=")
        if not eq or not alias.strip() or not target.strip():
            raise ValueError(f"fluxion.compat.pytest_plugin: expected alias=target, got {item!r}")
        out[alias.strip()] = target.strip()
    return out


# Installed at plugin load: earlier than any hook, so even conftest files see the alias.
install_jax_alias()
install_module_alias(parse_aliases(os.environ.get("FLUXION_MODULE_ALIASES", "")))


def pytest_addoption(parser: Any) -> None:
    """Adds ``--fluxion-alias alias=target`` (repeatable).

    Example:
        >>> callable(pytest_addoption)
        True
    """
    parser.addoption("--fluxion-alias", action="append", default=[], metavar="ALIAS=TARGET",
                     help="also resolve module ALIAS to TARGET (fluxion.compat)")


def pytest_configure(config: Any) -> None:
    """Installs the ``--fluxion-alias`` aliases.

    Example:
        >>> callable(pytest_configure)
        True
    """
    install_module_alias(parse_aliases(",".join(config.getoption("--fluxion-alias") or [])))


def pytest_report_header(config: Any) -> str:
    """One header line saying that ``jax`` is Fluxion in this run.

    Example:
        >>> callable(pytest_report_header)
        True
    """
    from fluxion.compat import installed_aliases  # reason: pytest loads plugins before jax
    pairs = ", ".join(f"{a} -> {t}" for a, t in sorted(installed_aliases().items()))
    return f"fluxion.compat aliases: {pairs}"
