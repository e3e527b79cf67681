"""``fluxion.stages``: the stages of ahead-of-time compilation (JAX's ``jax.stages``).

``jit(f).trace(*args)`` gives a :class:`Traced` (``.jaxpr``, ``.out_info``, ``.lower()``);
``.lower()`` a :class:`Lowered` (``.as_text()``: the StableHLO module; ``.compile()``); and
``.compile()`` a :class:`Compiled`, callable with arguments of the traced signature
(``.as_text()``: the optimized HLO; ``.cost_analysis()``). A jitted function is a
:class:`Wrapped`.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import stages
    >>> lowered = fluxion.jit(lambda x: x * 2).lower(jnp.ones(3))
    >>> isinstance(lowered, stages.Lowered), lowered.compile()(jnp.ones(3)).tolist()
    (True, [2.0, 2.0, 2.0])
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

from fluxion.backend.jit import Compiled, Lowered, Traced

__all__ = ["Traced", "Lowered", "Compiled", "Wrapped", "ArgInfo", "CompilerOptions"]

CompilerOptions = dict[str, Any]


class ArgInfo(NamedTuple):
    """The abstract value of one argument of a staged function and whether it is donated.

    Example:
        >>> from fluxion.stages import ArgInfo
        >>> from fluxion.core.avals import ShapedArray
        >>> ArgInfo(ShapedArray((2,), "float32"), False).shape
        (2,)
    """

    aval: Any
    donated: bool

    @property
    def shape(self) -> tuple[int, ...]:
        """The argument's shape."""
        return self.aval.shape

    @property
    def dtype(self) -> Any:
        """The argument's dtype."""
        return self.aval.dtype


@runtime_checkable
class Wrapped(Protocol):
    """A function wrapped by ``jit``: callable, and able to ``trace`` and ``lower`` itself.

    Example:
        >>> import fluxion
        >>> from fluxion.stages import Wrapped
        >>> isinstance(fluxion.jit(abs), Wrapped)
        True
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def trace(self, *args: Any, **kwargs: Any) -> Traced: ...

    def lower(self, *args: Any, **kwargs: Any) -> Lowered: ...
