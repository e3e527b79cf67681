"""``hk.mixed_precision``: mixed precision policies per module class, as the public module
``haiku.mixed_precision`` (implemented in ``_mixed_precision.py``).

Example: ``hk.mixed_precision.set_policy(hk.nets.MLP, policy)``.
"""

from ._mixed_precision import clear_policy, current_policy, get_policy, push_policy, set_policy

__all__ = ["clear_policy", "current_policy", "get_policy", "push_policy", "set_policy"]
