"""``print_environment_info``: the versions and devices Fluxion runs with, for bug reports.

Example:
    >>> import fluxion
    >>> "fluxion:" in fluxion.print_environment_info(return_string=True)
    True
"""

from __future__ import annotations

import platform
import sys

import numpy as np

from fluxion.backend import client
from fluxion.backend.runtime import jaxlib_version

__all__ = ["print_environment_info"]


def print_environment_info(return_string: bool = False) -> str | None:
    """Print (or return) Fluxion's, jaxlib's, NumPy's and Python's versions and the devices.

    Example:
        >>> import fluxion
        >>> fluxion.print_environment_info(return_string=True).splitlines()[0].startswith("fluxion")
        True
    """

    devices = client.devices()
    version = getattr(sys.modules.get("fluxion"), "__version__", "unknown")  # the package root
    lines = [f"fluxion:    {version}",
             f"jaxlib:     {jaxlib_version()}",
             f"numpy:      {np.__version__}",
             f"python:     {sys.version.replace(chr(10), ' ')}",
             f"device info: {client.default_backend()}-{len(devices)}, "
             f"{client.local_device_count()} local devices",
             f"process_count: {client.process_count()}",
             f"platform: {platform.uname()}"]
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text, end="")
    return None
