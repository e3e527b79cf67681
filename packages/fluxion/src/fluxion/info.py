"""``python -m fluxion.info``: versions, platforms and devices of this installation.

The report lists the core and every installed ecosystem package (by distribution name), the
runtime libraries, ``XLA_FLAGS``, the persistent compilation cache's folder and the in-memory
caches (entries, estimated bytes and limit of each, see :func:`cache_lines`): what a bug report
needs.

Example:
    >>> from fluxion import info
    >>> "jaxlib" in info.environment_info()
    True
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
from importlib.metadata import version
from typing import Any

from fluxion.backend import client, compile_cache, plugins
from fluxion.backend.runtime import cache_info
from fluxion.core.config import config

__all__ = ["environment_info", "print_environment_info", "main", "cache_lines"]


# (distribution, import name) of the core and the ecosystem packages. The core's distribution is
# "fluxion-xla" ("fluxion" on the package index is an unrelated project).
PACKAGES = (("fluxion-xla", "fluxion"), ("fluxion-scipy", "fluxion_scipy"),
            ("fluxion-optim", "fluxion_optim"), ("fluxion-nn", "fluxion_nn"),
            ("fluxion-rl", "fluxion_rl"), ("fluxion-md", "fluxion_md"))


def _version(dist: str) -> str:
    try:
        return version(dist)
    except Exception:
        return "not installed"


def _package_line(dist: str, module: str) -> str:

    version = _version(dist)
    spec = importlib.util.find_spec(module)
    if spec is None:
        return f"{dist + ':':<15}not installed"
    where = os.path.dirname(spec.origin or "") if spec.origin else ""
    return f"{dist + ':':<15}{version} (import {module}, {where})"


def environment_info() -> str:
    """A text report: versions, the platforms whose plugins are installed, the default backend
    and every device (with its process)."""

    lines = [_package_line(dist, module) for dist, module in PACKAGES]
    lines += [f"jaxlib:     {_version('jaxlib')}",
             f"numpy:      {_version('numpy')}",
             f"ml_dtypes:  {_version('ml_dtypes')}",
             f"python:     {sys.version.split()[0]}",
             f"machine:    {platform.platform()}",
             f"plugins:    {', '.join(plugins.available()) or 'none'} "
             f"(cuda: {plugins.cuda_plugin_path() or 'not installed'}, "
             f"tpu: {'installed' if plugins.tpu_library_path() else 'not installed'})",
             f"jax_platforms: {config.jax_platforms!r}",
             f"XLA_FLAGS:  {os.environ.get('XLA_FLAGS', '(not set)')}",
             f"compilation cache: {compile_cache.cache_dir() or 'off'}"]
    try:
        backend = client.default_backend()
        devs: list[Any] = client.devices()
    except Exception as e:
        lines.append(f"backend:    unavailable ({e})")
        return "\n".join(lines)
    lines += [f"backend:    {backend} (platform version: "
              f"{client.get_client().platform_version})",
              f"processes:  {client.process_count()} (this one: {client.process_index()})",
              f"devices:    {len(devs)} ({client.local_device_count()} local)"]
    for d in devs:
        lines.append(f"  {d!r}  kind={d.device_kind}  process={d.process_index}")
    lines += cache_lines()
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def cache_lines() -> list[str]:
    """The in-memory caches of this process, one line each: entries, estimated bytes and the
    limit (with the ``fluxion.config`` flag that sets it, or "no byte limit" where only the
    number of entries is bounded).

    Example:
        >>> from fluxion import info
        >>> info.cache_lines()[0]
        'in-memory caches (fluxion.clear_caches() empties them):'
    """

    lines = ["in-memory caches (fluxion.clear_caches() empties them):"]
    for row in cache_info():
        limit = ("no byte limit (bounded in entries)" if row["limit"] is None
                 else f"limit {_mib(row['limit'])} ({row['flag']})")
        lines.append(f"  {row['name'] + ':':<34}{row['entries']:>6} entries, "
                     f"{_mib(row['bytes']):>10}; {limit}")
    return lines


def print_environment_info() -> None:
    """Print :func:`environment_info` (JAX's ``jax.print_environment_info``)."""
    print(environment_info())


def main(argv: list[str] | None = None) -> int:
    """The ``python -m fluxion.info`` command."""
    print_environment_info()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
