"""The command line every example shares: ``--help``, ``--quick`` and ``--out DIR``.

``--out`` is created before any work starts (so a run never fails at the end for want of a
folder) and defaults to ``build/examples/<example>/`` in the repository, whatever the current
directory: an example never writes into the folder it is started from unless asked to.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def default_out(name: str) -> Path:
    """Where example ``name`` writes when ``--out`` is not given."""
    return REPO / "build" / "examples" / name


def parser(doc: str, name: str, *, quick_help: str, writes: bool = True) -> argparse.ArgumentParser:
    """An argument parser showing the example's docstring, with ``--quick`` and (for examples that
    write files) ``--out``."""
    p = argparse.ArgumentParser(prog=f"examples/{name}.py", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=quick_help)
    if writes:
        p.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help=f"output folder, created if missing (default: {default_out(name)})")
    return p


def out_dir(args: argparse.Namespace, name: str) -> Path:
    """The output folder of this run, created now."""
    out = Path(args.out) if args.out is not None else default_out(name)
    os.makedirs(out, exist_ok=True)
    return out


def save_figure(fig, path: str | os.PathLike) -> None:
    """Write a matplotlib figure as PNG atomically (temporary file in the same folder, then a
    rename), with the mode a new file gets under the process umask."""
    import tempfile

    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".png.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=100)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
