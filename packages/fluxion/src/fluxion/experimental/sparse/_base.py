"""``JAXSparse``: the base class of the sparse formats (JAX's
``jax.experimental.sparse.JAXSparse``): the array-like attributes every format shares, and
operators that raise ``NotImplementedError`` unless the format defines them.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.sparse import BCOO
    >>> isinstance(BCOO.fromdense(jnp.eye(2)), JAXSparse)
    True
"""

from __future__ import annotations

import math
from typing import Any

from fluxion.core.trace import is_tracer

__all__ = ["JAXSparse"]


class JAXSparse:
    """Base class of the sparse arrays (``BCOO``, ``BCSR``): ``shape``, ``ndim``, ``size``,
    ``len``, ``T``; formats define ``dtype``, ``nse``, ``todense``, ``transpose`` and their
    pytree flattening.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCSR
        >>> m = BCSR.fromdense(jnp.eye(3))
        >>> isinstance(m, JAXSparse), m.ndim, m.size, len(m)
        (True, 2, 9, 3)
    """

    shape: tuple[int, ...]
    __hash__ = None  # type: ignore[assignment]

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def T(self) -> Any:
        return self.transpose()

    def transpose(self, axes: Any = None) -> Any:
        raise NotImplementedError(f"{self.__class__}.transpose")

    def block_until_ready(self) -> Any:
        """Wait for the stored arrays; returns ``self``."""
        for leaf in self.tree_flatten()[0]:
            leaf.block_until_ready()
        return self

    def __repr__(self) -> str:
        # the format's name, dtype, shape and nse, then the batch/dense dimensions it has;
        # a traced sparse array is shown inside its tracer type's name
        name = type(self).__name__
        try:
            text = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse}"
            if self.n_batch:
                text += f", n_batch={self.n_batch}"
            if self.n_dense:
                text += f", n_dense={self.n_dense}"
            text += ")"
        except Exception:
            text = f"{name}(<invalid>)"
        data = getattr(self, "data", None)
        if is_tracer(data):
            text = f"{type(data).__name__}[{text}]"
        return text

    def tree_flatten(self) -> tuple[tuple, Any]:
        raise NotImplementedError(f"{self.__class__}.tree_flatten")

    def _unsupported(name: str) -> Any:  # noqa: N805  (a factory used in the class body)
        def method(self: JAXSparse, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(f"{self.__class__}.{name}")
        method.__name__ = name
        return method

    sum = _unsupported("sum")
    __neg__ = _unsupported("__neg__")
    __pos__ = _unsupported("__pos__")
    __matmul__ = _unsupported("__matmul__")
    __rmatmul__ = _unsupported("__rmatmul__")
    __mul__ = _unsupported("__mul__")
    __rmul__ = _unsupported("__rmul__")
    __add__ = _unsupported("__add__")
    __radd__ = _unsupported("__radd__")
    __sub__ = _unsupported("__sub__")
    __rsub__ = _unsupported("__rsub__")
    __getitem__ = _unsupported("__getitem__")
    del _unsupported
