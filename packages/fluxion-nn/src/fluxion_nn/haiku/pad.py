"""``hk.pad``: padding functions for convolutions and pooling, as the public module ``haiku.pad``
has them (implemented in ``_src/pad.py``).

Example: ``hk.pad.same(3) == (1, 1)``.
"""

from ._src.pad import (
    PadFn,
    causal,
    create_from_padfn,
    create_from_tuple,
    full,
    is_padfn,
    reverse_causal,
    same,
    valid,
)

create = create_from_padfn  # Haiku's legacy alias

__all__ = ["PadFn", "causal", "create", "create_from_padfn", "create_from_tuple", "full",
           "is_padfn", "reverse_causal", "same", "valid"]
