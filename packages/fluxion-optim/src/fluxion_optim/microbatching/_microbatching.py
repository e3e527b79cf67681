"""Sequential microbatching of functions, vmaps and gradients, with pluggable accumulators."""

import collections
import dataclasses
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

__all__ = ["AccumulationType", "Accumulator", "micro_grad", "micro_vmap", "microbatch",
           "reshape_batch_axis"]

# what micro_grad's function returns besides the gradient (optax's name for the tuple: 'Aux')
IndividualOutputs = collections.namedtuple("Aux", ["values", "metrics", "aux"])


@dataclasses.dataclass(frozen=True)
class Accumulator:
    """How microbatch results combine: ``carry = init(shape of one result)``, then
    ``carry = update(carry, result_i, i)`` for each microbatch, ``finalize(carry)``;
    ``aggregate(stacked)`` reduces the results of one vmapped microbatch.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.microbatching import Accumulator
        >>> maximum = Accumulator(init=lambda s: jnp.full(s.shape, -jnp.inf, s.dtype),
        ...                       update=lambda c, v, i: jnp.maximum(c, v),
        ...                       finalize=lambda c: c,
        ...                       aggregate=lambda v: jnp.max(v, axis=0))
    """

    init: Callable[[Any], Any]
    update: Callable[[Any, Any, Any], Any]
    finalize: Callable[[Any], Any]
    aggregate: Callable[[Any], Any]


class AccumulationType(enum.Enum):
    """The built-in accumulators: ``MEAN`` and ``SUM`` over all microbatches, ``RUNNING_MEAN``
    (the mean over the microbatches actually run) and ``CONCAT`` (stack along the batch axis)."""

    MEAN = enum.auto()
    SUM = enum.auto()
    RUNNING_MEAN = enum.auto()
    CONCAT = enum.auto()


def _zeros_of(value: Any) -> Any:
    return jnp.zeros(value.shape, value.dtype)


def _floating_only(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def checked(value: Any) -> Any:
        if not jnp.issubdtype(value.dtype, jnp.floating):
            raise ValueError("MEAN and RUNNING_MEAN Accumulators require floating-point values. "
                             f"(got {value.dtype})")
        return fn(value)
    return checked


def _leafwise(acc: Accumulator) -> Accumulator:
    # an accumulator of arrays applied to every leaf of a tree
    return Accumulator(
        lambda value: fluxion.tree.map(acc.init, value),
        lambda carry, value, i: fluxion.tree.map(lambda c, v: acc.update(c, v, i), carry, value),
        lambda carry: fluxion.tree.map(acc.finalize, carry),
        lambda values: fluxion.tree.map(acc.aggregate, values))


def _sum() -> Accumulator:
    return _leafwise(Accumulator(_zeros_of, lambda c, v, _: c + v, lambda c: c,
                                 functools.partial(jnp.sum, axis=0)))


def _mean(num_microbatches: int) -> Accumulator:
    if num_microbatches <= 0:
        raise ValueError(f"{num_microbatches=} must be positive.")
    return _leafwise(Accumulator(_floating_only(_zeros_of), lambda c, v, _: c + v,
                                 lambda c: c / num_microbatches,
                                 functools.partial(jnp.mean, axis=0)))


def _running_mean() -> Accumulator:
    def update(carry: Any, value: Any, index: Any) -> Any:
        p = index / (index + 1)
        return carry * p + value * (1 - p)
    return _leafwise(Accumulator(_floating_only(_zeros_of), update, lambda c: c,
                                 functools.partial(jnp.mean, axis=0)))


def _concat(num_microbatches: int) -> Accumulator:
    if num_microbatches <= 0:
        raise ValueError(f"{num_microbatches=} must be positive.")

    def init(value: Any) -> Any:
        return jnp.zeros((num_microbatches,) + tuple(value.shape), value.dtype)

    def finalize(carry: Any) -> Any:
        # microbatch i holds rows i, i + n, i + 2n ... of the batch (column-major split)
        return carry.reshape(-1, *carry.shape[2:], order="F")

    return _leafwise(Accumulator(init, lambda c, v, i: c.at[i].set(v), finalize, lambda v: v))


def _canonicalize(tree: Any, num_microbatches: int) -> Accumulator:
    def one(acc: Any) -> Accumulator:
        if isinstance(acc, Accumulator):
            return acc
        if acc is AccumulationType.MEAN:
            return _mean(num_microbatches)
        if acc is AccumulationType.SUM:
            return _sum()
        if acc is AccumulationType.RUNNING_MEAN:
            return _running_mean()
        if acc is AccumulationType.CONCAT:
            return _concat(num_microbatches)
        raise ValueError(f"Unknown accumulator: {acc}")

    accs = fluxion.tree.map(one, tree)
    return Accumulator(
        lambda values: fluxion.tree.map(lambda a, v: a.init(v), accs, values),
        lambda carry, value, i: fluxion.tree.map(lambda a, c, v: a.update(c, v, i), accs,
                                                 carry, value),
        lambda carry: fluxion.tree.map(lambda a, c: a.finalize(c), accs, carry),
        lambda values: fluxion.tree.map(lambda a, v: a.aggregate(v), accs, values))


def reshape_batch_axis(tree: Any, microbatch_size: int, axis: int = 0) -> Any:
    """Splits the batch axis ``axis`` of every leaf into ``(num_microbatches, microbatch_size)``
    in column-major order (microbatch ``i`` takes rows ``i, i + n, ...``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.microbatching import reshape_batch_axis
        >>> reshape_batch_axis(jnp.arange(6), 2).tolist()
        [[0, 3], [1, 4], [2, 5]]
    """
    def split(x: Any) -> Any:
        shape = tuple(x.shape)
        return x.reshape(shape[:axis] + (-1, microbatch_size) + shape[axis + 1:], order="F")
    return fluxion.tree.map(split, tree)


def _split_batch_args(microbatch_size: int, argnums: Sequence[int], argnames: Sequence[str],
                      in_axes: Sequence[int], args: tuple, kwargs: dict
                      ) -> tuple[tuple, dict, int]:
    batch_args = [args[i] for i in argnums] + [kwargs[n] for n in argnames]
    sizes = fluxion.tree.leaves(fluxion.tree.map(
        lambda ax, sub: fluxion.tree.map(lambda x: x.shape[ax], sub),
        tuple(in_axes), tuple(batch_args)))
    if len(set(sizes)) > 1:
        raise ValueError(f"Batch Arguments must have equal-size batch axes, found {sizes}.")
    batch_size = sizes[0]
    if batch_size % microbatch_size != 0:
        raise ValueError(f"{batch_size=} must be divisible by {microbatch_size=}.")
    new_args, new_kwargs = list(args), dict(kwargs)
    for i, ax in zip(argnums, in_axes):
        new_args[i] = reshape_batch_axis(args[i], microbatch_size, ax)
    for name, ax in zip(argnames, in_axes[len(argnums):]):
        new_kwargs[name] = reshape_batch_axis(kwargs[name], microbatch_size, ax)
    return tuple(new_args), new_kwargs, batch_size


def microbatch(fun: Callable[..., Any], argnums: int | Sequence[int],
               microbatch_size: int | None, accumulator: Any = AccumulationType.SUM, *,
               argnames: str | Sequence[str] = (), in_axes: int | Sequence[int] = 0,
               num_real_microbatches: Any = None) -> Callable[..., Any]:
    """``fun`` evaluated on ``microbatch_size``-row slices of its batch arguments (``argnums``,
    ``argnames``; batch axis ``in_axes``) in a sequential ``fori_loop``, the results combined
    by ``accumulator`` (an :class:`AccumulationType`, an :class:`Accumulator`, or a tree of them
    matching a prefix of ``fun``'s output). ``num_real_microbatches`` stops early.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> fun = lambda x: (x + 1, jnp.sum(3 * x))
        >>> acc = (optax.microbatching.AccumulationType.CONCAT,
        ...        optax.microbatching.AccumulationType.SUM)
        >>> f = optax.microbatch(fun, argnums=0, microbatch_size=2, accumulator=acc)
        >>> [v.tolist() for v in f(jnp.array([1, 2, 3, 4]))]
        [[2, 3, 4, 5], 30]
    """
    if microbatch_size is None:
        return fun
    argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    argnames = (argnames,) if isinstance(argnames, str) else tuple(argnames)
    if isinstance(in_axes, int):
        in_axes = (in_axes,) * (len(argnums) + len(argnames))
    in_axes = tuple(in_axes)

    def microbatched(*args: Any, **kwargs: Any) -> Any:
        split_args, split_kwargs, batch_size = _split_batch_args(
            microbatch_size, argnums, argnames, in_axes, args, kwargs)
        acc = _canonicalize(accumulator, batch_size // microbatch_size)

        def on_slice(index: Any) -> Any:
            a, kw = list(split_args), dict(split_kwargs)
            for i, ax in zip(argnums, in_axes):
                a[i] = fluxion.tree.map(functools.partial(jnp.take, indices=index, axis=ax), a[i])
            for n, ax in zip(argnames, in_axes[len(argnums):]):
                kw[n] = fluxion.tree.map(functools.partial(jnp.take, indices=index, axis=ax),
                                         kw[n])
            return fun(*a, **kw)

        steps = batch_size // microbatch_size if num_real_microbatches is None \
            else num_real_microbatches
        carry = acc.init(fluxion.eval_shape(on_slice, 0))
        carry = lax.fori_loop(0, steps, lambda i, c: acc.update(c, on_slice(i), i), carry)
        return acc.finalize(carry)

    return microbatched


def micro_vmap(fun: Callable[..., Any], in_axes: int | Sequence[Any] = 0, out_axes: Any = 0,
               *, microbatch_size: int | None = None,
               vmap_fn: Callable[..., Any] = fluxion.vmap,
               accumulator: Any = AccumulationType.CONCAT,
               num_real_microbatches: Any = None) -> Callable[..., Any]:
    """``vmap(fun, in_axes)`` run ``microbatch_size`` examples at a time; ``accumulator``
    (default ``CONCAT``: the same result as ``vmap``) may reduce instead (``SUM``, ``MEAN``).
    Keyword arguments are batched along axis 0; ``out_axes`` must be 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.microbatching.micro_vmap(lambda x: x ** 2)(jnp.arange(4)).tolist()
        [0, 1, 4, 9]
    """
    if out_axes != 0:
        raise NotImplementedError("out_axis != 0 is not currently supported "
                                  f"(micro_vmap: got out_axes={out_axes!r})")
    if isinstance(in_axes, int):
        in_axes = (in_axes,)

    def vmap_then_reduce(*args: Any, kwargs: Any) -> Any:
        out = vmap_fn(fun, in_axes, out_axes)(*args, **kwargs)
        size = fluxion.tree.leaves(out)[0].shape[0]
        return _canonicalize(accumulator, size).aggregate(out)

    inner = microbatch(
        vmap_then_reduce,
        argnums=tuple(i for i, ax in enumerate(in_axes) if ax is not None),
        argnames="kwargs", microbatch_size=microbatch_size, accumulator=accumulator,
        in_axes=tuple(ax for ax in in_axes if ax is not None) + (0,),
        num_real_microbatches=num_real_microbatches)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return inner(*args, kwargs=kwargs)

    return wrapped


def micro_grad(fun: Callable[..., Any], has_aux: bool = False,
               argnums: int | Sequence[int] = 0, *, batch_argnums: int | Sequence[int] = 1,
               keep_batch_dim: bool = True, microbatch_size: int | None = None,
               accumulator: Any = AccumulationType.SUM,
               transform_fn: Callable[[Any], Any] = lambda x: x,
               metrics_fn: Callable[[Any], Any] = lambda x: None,
               num_real_microbatches: Any = None) -> Callable[..., Any]:
    """Per-example gradients of ``fun`` over the batch arguments ``batch_argnums``, each passed
    through ``transform_fn`` (e.g. clipping) and combined by ``accumulator`` (default: summed),
    ``microbatch_size`` examples at a time. Returns ``(combined, Aux(values, metrics, aux))``
    with per-example values, ``metrics_fn`` of each gradient and ``fun``'s aux (``has_aux``).
    With ``keep_batch_dim`` each example keeps a batch axis of size 1.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> loss = lambda w, x: jnp.sum((x @ w) ** 2)
        >>> g, aux = optax.microbatching.micro_grad(loss, microbatch_size=2)(
        ...     jnp.ones(2), jnp.ones((4, 2)))
        >>> g.tolist(), aux.values.shape
        ([16.0, 16.0], (4,))
    """
    batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else tuple(batch_argnums)
    with_aux = fun if has_aux else (lambda *a, **k: (fun(*a, **k), None))
    value_and_grad = fluxion.value_and_grad(with_aux, argnums, has_aux=True)

    def one_example(*args: Any, **kwargs: Any) -> Any:
        (value, aux), grad = value_and_grad(*args, **kwargs)
        return transform_fn(grad), IndividualOutputs(values=value, metrics=metrics_fn(grad),
                                                      aux=aux)

    in_axes = [None] * (max(batch_argnums) + 1)
    for i in batch_argnums:
        in_axes[i] = 0
    micro = micro_vmap(one_example, in_axes=in_axes,
                       accumulator=(accumulator, AccumulationType.CONCAT),
                       microbatch_size=microbatch_size,
                       num_real_microbatches=num_real_microbatches)
    if not keep_batch_dim:
        return micro

    def with_example_axis(*args: Any, **kwargs: Any) -> Any:
        args = list(args)
        for i in batch_argnums:
            args[i] = fluxion.tree.map(lambda x: jnp.expand_dims(x, axis=1), args[i])
        return micro(*args, **kwargs)

    return with_example_axis
