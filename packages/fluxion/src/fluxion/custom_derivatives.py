"""Custom differentiation rules, as ``jax.custom_derivatives``.

Example:
    >>> import fluxion
    >>> from fluxion.custom_derivatives import SymbolicZero, custom_jvp
    >>> custom_jvp is fluxion.custom_jvp
    True
"""

from fluxion.transforms.custom_derivatives import (
    CustomVJPPrimal,
    SymbolicZero,
    closure_convert,
    custom_gradient,
    custom_jvp,
    custom_jvp_call_p,
    custom_vjp,
    custom_vjp_call_p,
    custom_vjp_primal_tree_values,
    linear_call,
    zero_from_primal,
)

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p", "custom_vjp_primal_tree_values",
           "linear_call", "zero_from_primal"]
