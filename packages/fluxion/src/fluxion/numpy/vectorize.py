"""``vectorize``, ``apply_along_axis`` and ``apply_over_axes``, built on ``vmap``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.vectorize(lambda a, b: a + b)(jnp.arange(3), 1).tolist()
    [1, 2, 3]
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Collection, Sequence

import numpy as np

from fluxion.numpy.creation import asarray
from fluxion.numpy.shape import expand_dims, squeeze
from fluxion.transforms.batching import vmap

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes"]

_DIM = r"\w+"
_CORE = rf"(?:{_DIM}(?:,{_DIM})*)?"
_ARGS = rf"\({_CORE}\)(?:,\({_CORE}\))*"
_SIGNATURE = re.compile(rf"^{_ARGS}->{_ARGS}$")


def _parse_signature(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    sig = re.sub(r"\s+", "", signature)
    if not _SIGNATURE.match(sig):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} "
                         "(expected e.g. '(m,n),(n)->(m)')")
    ins, outs = sig.split("->")

    def parts(text: str) -> list[tuple[str, ...]]:
        return [tuple(d for d in grp.split(",") if d) for grp in re.findall(r"\(([^)]*)\)", text)]

    return parts(ins), parts(outs)


def _update_sizes(sizes: dict[str, int], shape: tuple[int, ...], core: tuple[str, ...],
                  what: str, context: str) -> None:
    if len(shape) < len(core):
        raise ValueError(f"vectorize: {what} with shape {shape} has fewer dimensions than its "
                         f"core dimensions {core} {context}")
    for name, size in zip(core, shape[len(shape) - len(core):]):
        have = sizes.setdefault(name, size)
        if have != size:
            raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                             f"{size} vs {have} {context}")


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable:
    """Turn a function on scalars (or on core arrays given by a gufunc ``signature`` such as
    ``"(n),(n)->()"``) into one that broadcasts over leading dimensions, with ``vmap``.

    ``excluded`` lists positional indices or keyword names passed through unvectorised; other
    keyword arguments are passed through as well.

    Example:
        >>> import fluxion.numpy as jnp
        >>> dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
        >>> dot(jnp.ones((2, 3)), jnp.arange(3.0)).tolist()
        [3.0, 3.0]
    """
    excluded = frozenset(excluded)
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"vectorize: excluded={set(excluded)!r} contains negative numbers")
    parsed = _parse_signature(signature) if signature is not None else None

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        context = f"(in vectorize of {getattr(pyfunc, '__name__', pyfunc)!r} with " \
                  f"excluded={set(excluded) or '{}'} and signature={signature!r})"
        static = {i: a for i, a in enumerate(args) if i in excluded}
        dyn_idx = [i for i, a in enumerate(args) if i not in excluded and a is not None]
        nones = {i for i, a in enumerate(args) if i not in excluded and a is None}
        n_dyn = len(args) - len(static)
        if parsed is not None:
            in_core, out_core = parsed
            if len(in_core) != n_dyn:
                raise TypeError(f"vectorize: wrong number of positional arguments: expected "
                                f"{len(in_core)}, got {n_dyn} {context}")
            core_of = dict(zip([i for i in range(len(args)) if i not in excluded], in_core))
            if any(core_of[i] for i in nones):
                raise ValueError(f"vectorize: cannot pass None at positions {sorted(nones)} "
                                 f"with signature={signature!r}")
        else:
            in_core, out_core = None, None
            core_of = {i: () for i in range(len(args))}
        fixed = {i: args[i] for i in nones}
        fixed.update(static)
        dyn = [asarray(args[i]) for i in dyn_idx]
        cores = [core_of[i] for i in dyn_idx]

        def core_fun(*xs: Any) -> Any:
            it = iter(xs)
            full = [fixed[i] if i in fixed else next(it) for i in range(len(args))]
            return pyfunc(*full, **kwargs)

        sizes: dict[str, int] = {}
        noncore = []
        for x, core in zip(dyn, cores):
            _update_sizes(sizes, tuple(x.shape), core, "an argument", context)
            noncore.append(tuple(x.shape[:x.ndim - len(core)]))
        bshape = np.broadcast_shapes(*noncore) if noncore else ()

        fun = core_fun
        if out_core is not None:
            def checked(*xs: Any) -> Any:
                out = core_fun(*xs)
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_core) > 1 and not isinstance(out, tuple):
                    raise TypeError(f"vectorize: output must be a tuple when multiple outputs "
                                    f"are expected, got {out!r} {context}")
                if len(outs) != len(out_core):
                    raise TypeError(f"vectorize: wrong number of output arguments: expected "
                                    f"{len(out_core)}, got {len(outs)} {context}")
                known = dict(sizes)
                for o, core in zip(outs, out_core):
                    _update_sizes(known, tuple(np.shape(o)), core, "an output", context)
                return out
            fun = checked

        squeezed, filled = [], []
        for x, shp in zip(dyn, noncore):
            filled.append((1,) * (len(bshape) - len(shp)) + shp)
            ones = tuple(i for i, s in enumerate(shp) if s == 1)
            squeezed.append(squeeze(x, axis=ones) if ones else x)
        to_expand = []
        for k in range(len(bshape) - 1, -1, -1):
            axes = tuple(None if f[k] == 1 else 0 for f in filled)
            if all(a is None for a in axes):
                to_expand.append(k)
            else:
                fun = vmap(fun, in_axes=axes)
        result = fun(*squeezed)
        if not to_expand:
            return result
        dims = tuple(sorted(to_expand))
        if isinstance(result, tuple):
            return tuple(expand_dims(r, dims) for r in result)
        return expand_dims(result, dims)

    return wrapped


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """Apply ``func1d`` to the 1-D slices of ``arr`` along ``axis`` (vectorised with vmap).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.apply_along_axis(jnp.sum, 1, jnp.ones((2, 3))).tolist()
        [3.0, 3.0]
    """
    arr = asarray(arr)
    nd = arr.ndim
    if not -nd <= axis < nd:
        raise ValueError(f"apply_along_axis: axis {axis} is out of bounds for an array of "
                         f"dimension {nd}")
    axis = axis % nd

    def fun(x: Any) -> Any:
        return func1d(x, *args, **kwargs)

    for i in range(1, nd - axis):  # the dimensions after `axis`, innermost first
        fun = vmap(fun, in_axes=i, out_axes=-1)
    for _ in range(axis):  # the dimensions before it
        fun = vmap(fun, in_axes=0, out_axes=0)
    return fun(arr)


def apply_over_axes(func: Callable, a: Any, axes: Sequence[int]) -> Any:
    """Apply ``func(a, axis)`` repeatedly over ``axes``, keeping the rank (as ``np.apply_over_axes``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3)), [0, 1]).tolist()
        [[6.0]]
    """
    a = asarray(a)
    nd = a.ndim
    for axis in ([axes] if isinstance(axes, int) else axes):
        b = func(a, axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = expand_dims(b, axis % nd if axis < 0 else axis)
        else:
            raise ValueError("apply_over_axes: function is not returning an array of the "
                             "correct shape")
    return a
