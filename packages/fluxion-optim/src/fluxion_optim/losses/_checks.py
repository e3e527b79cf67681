"""Argument checks shared by the losses."""


from typing import Any

import fluxion.numpy as jnp


def check_subdtype(fn: str, name: str, x: Any, kind: Any) -> None:
    dtype = jnp.result_type(x)
    if not jnp.issubdtype(dtype, kind):
        what = "floating" if kind is jnp.floating else "integer"
        raise TypeError(f"{fn}: `{name}` must have a {what} dtype, got {dtype}")


def check_same_shape(fn: str, name_a: str, a: Any, name_b: str, b: Any) -> None:
    if jnp.shape(a) != jnp.shape(b):
        raise ValueError(f"{fn}: `{name_a}` and `{name_b}` must have the same shape, got "
                         f"{jnp.shape(a)} and {jnp.shape(b)}")


def check_rank(fn: str, name: str, x: Any, rank: int) -> None:
    if jnp.ndim(x) != rank:
        raise ValueError(f"{fn}: `{name}` must have rank {rank}, got shape {jnp.shape(x)}")
