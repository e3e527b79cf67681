"""Structured control flow: ``cond``/``switch`` (:mod:`.conditionals`), loops (:mod:`.loops`)
and implicitly differentiated solves (:mod:`.solves`), on the staging helpers of
:mod:`.common`.

Example:
    >>> from fluxion import lax
    >>> int(lax.fori_loop(0, 4, lambda i, s: s + i, 0))
    6
"""

from fluxion.lax.control_flow import loop_dce  # noqa: F401  (registers the loops' DCE rules)
from fluxion.lax.control_flow.conditionals import cond, cond_p, switch
from fluxion.lax.control_flow.loops import (
    associative_scan,
    fori_loop,
    map,
    scan,
    scan_p,
    while_loop,
    while_p,
)
from fluxion.lax.control_flow.solves import (
    custom_linear_solve,
    custom_root,
    custom_root_p,
    linear_solve_p,
)

__all__ = ["cond", "switch", "cond_p", "while_loop", "fori_loop", "scan", "map",
           "associative_scan", "while_p", "scan_p", "custom_root", "custom_linear_solve",
           "custom_root_p", "linear_solve_p"]
