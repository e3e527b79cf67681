"""``hk.config``: Haiku's configuration switches (``context``, ``set``), as the public module
``haiku.config`` has them (implemented in ``_src/config.py``).

Example: ``with hk.config.context(check_jax_usage=True): ...``.
"""

from ._src.config import context, set  # noqa: A004 (Haiku's name)

__all__ = ["context", "set"]
