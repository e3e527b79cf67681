"""``jax_md.a2c``: the amorphous-to-crystalline workflow's tools (``crystallizer_utils``:
candidate sub-cells of an amorphous structure that may crystallize)."""

from . import crystallizer_utils

__all__ = ["crystallizer_utils"]
