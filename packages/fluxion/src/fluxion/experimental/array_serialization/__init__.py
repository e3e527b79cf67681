"""``fluxion.experimental.array_serialization`` (JAX's ``jax.experimental.array_serialization``):
writing and reading (sharded) arrays with TensorStore; see :mod:`.serialization`.

Example:
    >>> from fluxion.experimental.array_serialization import serialization
    >>> serialization.is_remote_storage("gs://bucket/ckpt")
    True
"""
