"""Structured control flow: ``cond``/``switch`` (:mod:`.conditionals`), loops (:mod:`.loops`),
``associative_scan`` (:mod:`.prefix_scan`) and implicitly differentiated solves
(:mod:`.solves`), on the staging helpers of :mod:`.common`.

Each of the four modules loads on the first use of one of its names (module ``__getattr__``,
:mod:`fluxion.core.lazy`): a program with a ``scan`` and no ``cond`` does not unmarshal the
conditionals and the solves (~0.5 ms of its first traced call, measured 2026-12-07), one with
a ``cond`` only not the loops. :mod:`.loops` imports :mod:`.loop_dce`, the loops' DCE rules.

Example:
    >>> from fluxion import lax
    >>> int(lax.fori_loop(0, 4, lambda i, s: s + i, 0))
    6
"""

from fluxion.core.lazy import lazy_namespace as _lazy_namespace

__all__ = ["cond", "switch", "cond_p", "while_loop", "fori_loop", "scan", "map",
           "associative_scan", "while_p", "scan_p", "custom_root", "custom_linear_solve",
           "custom_root_p", "linear_solve_p"]

_FAMILIES = {
    "conditionals": ("cond", "cond_p", "switch"),
    "loops": ("fori_loop", "map", "scan", "scan_p", "while_loop", "while_p"),
    "prefix_scan": ("associative_scan",),
    "solves": ("custom_linear_solve", "custom_root", "custom_root_p", "linear_solve_p"),
}
__getattr__, __dir__ = _lazy_namespace("fluxion.lax.control_flow", globals(), _FAMILIES,
                                       submodules=("common", "loop_dce", "refs"))
