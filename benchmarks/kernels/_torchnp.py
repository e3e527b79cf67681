"""The few NumPy names the kernels use, over torch tensors, so one kernel source runs on torch.

The kernels call ``xnp.maximum(0.0, x)``, ``xnp.zeros(shape, dtype)``, ``xnp.stack(xs, axis=-1)``
and the like; torch spells some of these differently (``dim=``, tensors on both sides of
``maximum``). :func:`namespace` returns an object with exactly those names, each a thin call into
torch, traceable by ``torch.compile``.

Example:
    >>> import torch
    >>> tnp = namespace(torch)
    >>> tnp.maximum(0.0, torch.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["namespace"]


def namespace(torch: Any) -> types.SimpleNamespace:
    """A NumPy-like namespace over ``torch`` with the names the kernels use (``abs asarray
    concatenate maximum minimum moveaxis ones_like sqrt stack tanh where zeros``)."""

    def _pair(a: Any, b: Any) -> tuple[Any, Any]:
        # torch.maximum/minimum need tensors on both sides: a Python scalar becomes a 0-d
        # tensor of the other operand's dtype (NumPy's rule for a float next to a float64 array)
        if not isinstance(a, torch.Tensor):
            a = torch.as_tensor(a, dtype=b.dtype)
        if not isinstance(b, torch.Tensor):
            b = torch.as_tensor(b, dtype=a.dtype)
        return a, b

    def maximum(a: Any, b: Any) -> Any:
        return torch.maximum(*_pair(a, b))

    def minimum(a: Any, b: Any) -> Any:
        return torch.minimum(*_pair(a, b))

    def zeros(shape: Any, dtype: Any = None) -> Any:
        return torch.zeros(tuple(shape), dtype=dtype or torch.float64)

    def asarray(x: Any, dtype: Any = None) -> Any:
        if dtype is not None and not isinstance(dtype, torch.dtype):
            dtype = getattr(torch, getattr(dtype, "name", str(dtype)))
        return torch.as_tensor(x, dtype=dtype)

    def concatenate(xs: Any, axis: int = 0) -> Any:
        return torch.cat(list(xs), dim=axis)

    def stack(xs: Any, axis: int = 0) -> Any:
        return torch.stack(list(xs), dim=axis)

    return types.SimpleNamespace(
        abs=torch.abs, sqrt=torch.sqrt, tanh=torch.tanh, where=torch.where,
        ones_like=torch.ones_like, moveaxis=torch.moveaxis, maximum=maximum, minimum=minimum,
        zeros=zeros, asarray=asarray, concatenate=concatenate, stack=stack)
