"""``python -m fluxion.run_as_jax prog.py [args]``: run a JAX program on Fluxion, unchanged.

Installs :func:`fluxion.compat.install_jax_alias` (``import jax`` gives Fluxion), then runs the
program as ``__main__`` with ``sys.argv`` set to ``[prog.py, args...]``. ``-m module [args]``
runs a module instead (``python -m fluxion.run_as_jax -m pytest tests/``), and
``--alias optax=fluxion_optim`` (repeatable, before the program) adds more aliases.

Example:
    >>> import subprocess, sys
    >>> subprocess.run([sys.executable, "-m", "fluxion.run_as_jax", "-c",
    ...                 "import jax; print(jax.__version__)"], capture_output=True,
    ...                text=True).stdout.strip()
    '0.10.2'
"""

from __future__ import annotations

import runpy
import sys

from fluxion.compat import install_jax_alias, install_module_alias

__all__ = ["main"]

_USAGE = ("usage: python -m fluxion.run_as_jax [--alias NAME=TARGET ...] "
          "(prog.py | -m module | -c code) [args ...]")


def main(argv: list[str] | None = None) -> None:
    """Runs ``argv`` (default ``sys.argv[1:]``) with ``jax`` resolved to Fluxion.

    Example:
        >>> callable(main)
        True
    """
    args = list(sys.argv[1:] if argv is None else argv)
    aliases: dict[str, str] = {}
    while args and args[0] == "--alias":
        if len(args) < 2 or "=" not in args[1]:
            raise SystemExit(_USAGE)
        alias, _, target = args[1].partition("=")
        aliases[alias] = target
        args = args[2:]
    if not args:
        raise SystemExit(_USAGE)
    install_jax_alias()
    install_module_alias(aliases)
    if args[0] == "-m" and len(args) >= 2:
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    elif args[0] == "-c" and len(args) >= 2:
        sys.argv = ["-c", *args[2:]]
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    elif args[0].startswith("-"):
        raise SystemExit(_USAGE)
    else:
        sys.argv = list(args)
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
