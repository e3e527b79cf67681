"""``python -m fluxion.info``: versions, platforms and devices of this installation.

Example:
    >>> from fluxion import info
    >>> "jaxlib" in info.environment_info()
    True
"""

from __future__ import annotations

import platform
import sys
from typing import Any

__all__ = ["environment_info", "print_environment_info", "main"]


def _version(module: str) -> str:
    try:
        from importlib.metadata import version
        return version(module)
    except Exception:
        return "not installed"


def environment_info() -> str:
    """A text report: versions, the platforms whose plugins are installed, the default backend
    and every device (with its process)."""
    from fluxion.backend import client, plugins
    from fluxion.core.config import config

    lines = [f"fluxion:    {_version('fluxion')}",
             f"jaxlib:     {_version('jaxlib')}",
             f"numpy:      {_version('numpy')}",
             f"ml_dtypes:  {_version('ml_dtypes')}",
             f"python:     {sys.version.split()[0]}",
             f"machine:    {platform.platform()}",
             f"plugins:    {', '.join(plugins.available()) or 'none'} "
             f"(cuda12: {'installed' if plugins.cuda_plugin_path() else 'not installed'}, "
             f"tpu: {'installed' if plugins.tpu_library_path() else 'not installed'})",
             f"jax_platforms: {config.jax_platforms!r}"]
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
    return "\n".join(lines)


def print_environment_info() -> None:
    """Print :func:`environment_info` (JAX's ``jax.print_environment_info``)."""
    print(environment_info())


def main(argv: list[str] | None = None) -> int:
    """The ``python -m fluxion.info`` command."""
    print_environment_info()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
