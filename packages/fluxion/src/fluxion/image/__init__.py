"""``fluxion.image``: image resampling (JAX's ``jax.image``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion import image
    >>> image.resize(jnp.ones((4, 4, 3)), (8, 8, 3), "linear").shape
    (8, 8, 3)
"""

from fluxion.image.scale import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
