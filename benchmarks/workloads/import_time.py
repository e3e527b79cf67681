"""Import time in a fresh process: ``import fluxion, fluxion.numpy`` vs ``import jax, jax.numpy``.

Each repetition starts a new Python interpreter (the same one running the benchmark) that imports
the backend's array API and exits; the subprocess's own wall time is measured around the import
statement only, so interpreter start-up is excluded. This guards the import-time budget (a slow
dependency such as ml_dtypes 0.7.0's extension module shows up here at once).

The figure is a fresh install's: pip compiles every module to bytecode (``.pyc``) when it
installs a package, but a development checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as CI and
the bootstrap set it) never writes the bytecode of its editable sources and compiles them from
source in every process. So ``setup`` first imports the statement once in a subprocess with
``PYTHONDONTWRITEBYTECODE`` removed from its environment, which writes the ``.pyc`` files
wherever the sources are writable, and every timed subprocess runs with that same environment.
All backends (numpy, jax, fluxion) are measured this way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Callable

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "DEFAULT_REPS", "QUICK_REPS", "IMPORTS",
           "fresh_install_env", "setup", "size_label"]

NAME = "import_time"
DESCRIPTION = "fresh-process import of the array API (fluxion+fluxion.numpy, jax+jax.numpy, numpy)"
VARIANTS = ("numpy", "jax", "fluxion")
SIZES = (0,)
DEFAULT_REPS = 7
QUICK_REPS = 3
IMPORTS = {
    "numpy": "import numpy",
    "jax": "import jax, jax.numpy",
    "fluxion": "import fluxion, fluxion.numpy",
}

_PROBE = (
    "import time\n"
    "t0 = time.perf_counter()\n"
    "{stmt}\n"
    "print(repr(time.perf_counter() - t0))\n"
)


def size_label(size: int) -> str:
    """The workload has one size: ``"fresh"``."""
    return "fresh"


def fresh_install_env() -> dict[str, str]:
    """The caller's environment without ``PYTHONDONTWRITEBYTECODE``: imports write bytecode."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """Compile the bytecode (one untimed import), then return one repetition: run the import in a
    new interpreter and report its seconds."""
    stmt = IMPORTS[variant.split("-", 1)[0]]
    code = _PROBE.format(stmt=stmt)
    env = fresh_install_env()
    subprocess.run([sys.executable, "-c", stmt], env=env, capture_output=True, text=True, check=True)

    def run() -> dict[str, float]:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        return {"total": float(out.stdout.strip().splitlines()[-1])}

    return run
