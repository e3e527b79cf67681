"""``fluxion.interpreters`` (JAX's ``jax.interpreters``): the extension API for primitives that
libraries define themselves (``ad``, ``batching`` and ``mlir`` rule tables, mapped onto the rule
slots of Fluxion's :class:`~fluxion.core.primitive.Primitive`), ``partial_eval``'s
``PartialVal``/``trace_to_jaxpr_nounits``, ``xla``'s type registries and ``pxla``'s result
handlers. JAX's interpreter
internals beyond those have no counterpart: those names raise a clear ``AttributeError`` (see
docs/guide/coming-from-jax.md).

Example:
    >>> import fluxion.interpreters as interpreters
    >>> sorted(interpreters.__all__)
    ['ad', 'batching', 'mlir', 'partial_eval', 'pxla', 'xla']
"""

from __future__ import annotations

import importlib
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

__all__ = ["ad", "batching", "mlir", "partial_eval", "pxla", "xla"]


def _not_provided(module: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a ``jax.interpreters`` shell: every name raises an
    AttributeError naming the JAX name and pointing to coming-from-jax.md.

    Example:
        >>> getter = _not_provided("jax.interpreters.ad")
        >>> try:
        ...     getter("JVPTrace")
        ... except AttributeError as e:
        ...     print(str(e).split(":")[0])
        jax.interpreters.ad.JVPTrace is not provided by Fluxion
    """
    def __getattr__(name: str) -> Any:
        raise AttributeError(f"{module}.{name} is not provided by Fluxion: its transformations "
                             f"have no counterpart of JAX's internal interpreters "
                             f"(see docs/guide/coming-from-jax.md)")
    return __getattr__


class _RuleTable(MutableMapping):
    """JAX's per-transformation rule dictionary (``ad.primitive_jvps``,
    ``batching.primitive_batchers``, ...) as a view of one rule slot of Fluxion's primitives.

    ``table[prim] = rule`` stores ``wrap(rule, prim)`` in ``prim.<slot>`` (the rule in JAX's
    calling convention, adapted to Fluxion's), ``table[prim]`` gives back the rule stored, and a
    primitive with an empty slot is not in the table. Fluxion's own primitives are in it too:
    their rules are given in JAX's convention (``unwrap``).

    Example:
        >>> from fluxion.core.primitive import Primitive
        >>> t = _RuleTable("jvp", "jax.interpreters.ad.primitive_jvps")
        >>> p = Primitive("doc_prim")
        >>> p in t
        False
        >>> t[p] = rule = lambda primals, tangents: (primals[0], tangents[0])
        >>> p.jvp is rule, t[p] is rule
        (True, True)
    """

    def __init__(self, slot: str, name: str,
                 wrap: Callable[[Callable[..., Any], Any], Callable[..., Any]] | None = None,
                 unwrap: Callable[[Callable[..., Any], Any], Callable[..., Any]] | None = None,
                 ) -> None:
        self._slot = slot
        self._name = name
        self._wrap = wrap
        self._unwrap = unwrap
        self._given: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __setitem__(self, prim: Any, rule: Callable[..., Any]) -> None:
        stored = rule if self._wrap is None else self._wrap(rule, prim)
        setattr(prim, self._slot, stored)
        self._given[prim] = (rule, stored)

    def __getitem__(self, prim: Any) -> Callable[..., Any]:
        stored = getattr(prim, self._slot, None)
        if stored is None:
            raise KeyError(prim)
        given = self._given.get(prim)
        if given is not None and given[1] is stored:
            return given[0]
        return stored if self._unwrap is None else self._unwrap(stored, prim)

    def __delitem__(self, prim: Any) -> None:
        if getattr(prim, self._slot, None) is None:
            raise KeyError(prim)
        setattr(prim, self._slot, None)
        self._given.pop(prim, None)

    def __contains__(self, prim: object) -> bool:
        return getattr(prim, self._slot, None) is not None

    def __iter__(self) -> Iterator[Any]:
        # the primitives given a rule through this table (Fluxion's own are not enumerable here)
        return iter([p for p in list(self._given) if p in self])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"<{self._name}: a view of Primitive.{self._slot}>"


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"fluxion.interpreters.{name}")
    raise AttributeError(f"jax.interpreters.{name} is not provided by Fluxion "
                         f"(see docs/guide/coming-from-jax.md)")
