"""``hk.multi_transform``: one ``init`` and a tree of ``apply`` functions sharing parameters."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import fluxion.random as random
import fluxion.tree_util as tree_util

from . import _base, _transform

__all__ = ["MultiTransformed", "MultiTransformedWithState", "multi_transform",
           "multi_transform_with_state"]


class MultiTransformed(NamedTuple):
    """``init(rng, *args) -> params`` and a tree of ``apply(params, rng, *args)`` functions.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f():
        ...     encoder, decoder = hk.Linear(2, name="encoder"), hk.Linear(3, name="decoder")
        ...     def init(x):
        ...         return decoder(encoder(x))
        ...     return init, (encoder, decoder)
        >>> model = hk.multi_transform(f)
        >>> isinstance(model, hk.MultiTransformed)
        True
        >>> params = model.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> encode, decode = model.apply
        >>> decode(params, None, encode(params, None, jnp.ones((1, 3)))).shape
        (1, 3)
    """

    init: Callable
    apply: Any


class MultiTransformedWithState(NamedTuple):
    """``init(rng, *args) -> (params, state)`` and a tree of
    ``apply(params, state, rng, *args) -> (out, state)`` functions.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f():
        ...     counter = lambda: hk.set_state("n", hk.get_state("n", [], init=jnp.zeros) + 1)
        ...     def read():
        ...         return hk.get_state("n", [], init=jnp.zeros)
        ...     return counter, (counter, read)
        >>> model = hk.multi_transform_with_state(f)
        >>> isinstance(model, hk.MultiTransformedWithState)
        True
        >>> params, state = model.init(None)
        >>> increment, read = model.apply
        >>> _, state = increment(params, state, None)
        >>> float(read(params, state, None)[0])
        1.0
    """

    init: Callable
    apply: Any


def _apply_treedef(f: Callable) -> Any:
    # the structure of the tree of apply functions, from one run of ``f`` in a throwaway frame
    with _base.new_context(rng=random.PRNGKey(42)):
        return tree_util.tree_structure(f()[1])


def multi_transform_with_state(f: Callable[[], tuple[Callable, Any]]) -> MultiTransformedWithState:
    """Transform ``f() -> (template, apply_fns)``: ``init`` runs ``template`` (which should
    create every parameter), each leaf of ``apply_fns`` becomes a stateful ``apply``.

    Example::

        def f():
            encoder, decoder = hk.Linear(4, name="enc"), hk.Linear(2, name="dec")
            def template(x):
                return decoder(encoder(x))
            return template, (encoder, decoder)

        model = hk.multi_transform_with_state(f)
        params, state = model.init(rng, x)
        enc_apply, dec_apply = model.apply
        z, state = enc_apply(params, state, None, x)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f():
        ...     bn = hk.BatchNorm(True, True, 0.9)
        ...     train = lambda x: bn(x, is_training=True)
        ...     evaluate = lambda x: bn(x, is_training=False)
        ...     return train, (train, evaluate)
        >>> model = hk.multi_transform_with_state(f)
        >>> x = jnp.array([[1.0], [3.0]])
        >>> params, state = model.init(None, x)
        >>> train, evaluate = model.apply
        >>> y, state = train(params, state, None, x)
        >>> y.round(3).tolist(), state["batch_norm/~/mean_ema"]["average"].round(3).tolist()
        ([[-1.0], [1.0]], [[2.0]])
    """
    init = _transform.transform_with_state(lambda *a, **k: f()[0](*a, **k)).init

    def apply_i(i: int) -> Callable:
        return _transform.transform_with_state(
            lambda *a, **k: tree_util.tree_leaves(f()[1])[i](*a, **k)).apply

    treedef = _apply_treedef(f)
    return MultiTransformedWithState(
        init, tree_util.tree_unflatten(treedef, [apply_i(i) for i in range(treedef.num_leaves)]))


_STATE_MSG = ("If your transformed function uses `hk.{get,set}_state` then use "
              "`hk.multi_transform_with_state`.")


def multi_transform(f: Callable[[], tuple[Callable, Any]]) -> MultiTransformed:
    """``multi_transform_with_state`` for functions without state: ``init(rng, *args) ->
    params`` and ``apply(params, rng, *args) -> out`` functions.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def f():
        ...     encoder, decoder = hk.Linear(2, name='encoder'), hk.Linear(3, name='decoder')
        ...     def init(x):
        ...         return decoder(encoder(x))
        ...     return init, (encoder, decoder)
        >>> model = hk.multi_transform(f)
        >>> params = model.init(key, jnp.ones((1, 4)))
        >>> encode, decode = model.apply
        >>> z = encode(params, None, jnp.ones((1, 4)))
        >>> z.shape, decode(params, None, z).shape, sorted(params)
        ((1, 2), (1, 3), ['decoder', 'encoder'])
    """
    g = multi_transform_with_state(f)

    def init(rng: Any, *args: Any, **kwargs: Any) -> Any:
        params, state = g.init(rng, *args, **kwargs)
        if state:
            raise ValueError(_STATE_MSG)
        return params

    def stateless(apply: Callable) -> Callable:
        def apply_fn(params: Any, rng: Any, *args: Any, **kwargs: Any) -> Any:
            out, state = apply(params, None, rng, *args, **kwargs)
            if state:
                raise ValueError(_STATE_MSG)
            return out

        return apply_fn

    return MultiTransformed(init, tree_util.tree_map(stateless, g.apply))
