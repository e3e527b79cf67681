"""``optimizers``: first-order optimizers as ``(init_fun, update_fun, get_params)`` triples
(JAX's ``example_libraries.optimizers``).

``opt_state = init_fun(params)``; ``opt_state = update_fun(step, grads, opt_state)``;
``params = get_params(opt_state)``. Each optimizer is written for one array by a function
decorated with :func:`optimizer`, which lifts it to pytrees of parameters. Step sizes are
numbers or schedules (functions of the step index).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.example_libraries import optimizers
    >>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
    >>> state = opt_update(0, {"w": jnp.ones(2)}, opt_init({"w": jnp.zeros(2)}))
    >>> get_params(state)["w"].tolist()
    [-0.10000000149011612, -0.10000000149011612]
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import fluxion.numpy as jnp
from fluxion import tree_util

__all__ = [
    "OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov", "adagrad",
    "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3", "constant", "exponential_decay",
    "inverse_time_decay", "polynomial_decay", "piecewise_constant", "make_schedule", "l2_norm",
    "clip_grads", "JoinPoint", "unpack_optimizer_state", "pack_optimizer_state",
]

Params = Any
Schedule = Callable[[int], Any]


class OptimizerState(NamedTuple):
    """The state of a lifted optimizer: the flattened per-array states, the parameters'
    tree structure and each per-array state's tree structure (a pytree of the states)."""

    packed_state: list
    tree_def: Any
    subtree_defs: tuple


tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))


class Optimizer(NamedTuple):
    """``(init_fn, update_fn, params_fn)``."""

    init_fn: Callable[[Params], OptimizerState]
    update_fn: Callable[[int, Params, OptimizerState], OptimizerState]
    params_fn: Callable[[OptimizerState], Params]


def optimizer(opt_maker: Callable[..., Any]) -> Callable[..., Optimizer]:
    """Lift an optimizer written for single arrays (``opt_maker(*args)`` returns
    ``(init, update, get_params)`` on one array and its state) to pytrees of parameters.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> @optimizers.optimizer
        ... def halve():
        ...     return (lambda x: x), (lambda i, g, x: x / 2), (lambda x: x)
        >>> opt_init, opt_update, get_params = halve()
        >>> get_params(opt_update(0, [1.0], opt_init([4.0])))
        [2.0]
    """
    @functools.wraps(opt_maker)
    def make(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Params) -> OptimizerState:
            leaves, tree = tree_util.tree_flatten(x0_tree)
            states = [tree_util.tree_flatten(init(x0)) for x0 in leaves]
            return OptimizerState([s[0] for s in states], tree, tuple(s[1] for s in states))

        @functools.wraps(update)
        def tree_update(i: Any, grad_tree: Params, opt_state: OptimizerState) -> OptimizerState:
            flat_states, tree, subtrees = opt_state
            grads, grad_tree_def = tree_util.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError("optimizer update function was passed a gradient tree that did "
                                "not match the parameter tree structure with which it was "
                                f"initialized: parameter tree {tree} and grad tree "
                                f"{grad_tree_def}.")
            new_flat, new_subtrees = [], []
            for g, flat, sub in zip(grads, flat_states, subtrees):
                new_leaves, new_sub = tree_util.tree_flatten(
                    update(i, g, tree_util.tree_unflatten(sub, flat)))
                if new_sub != sub:
                    raise TypeError("optimizer update function produced an output structure "
                                    f"that did not match its input structure: input {sub} and "
                                    f"output {new_sub}.")
                new_flat.append(new_leaves)
                new_subtrees.append(new_sub)
            return OptimizerState(new_flat, tree, tuple(new_subtrees))

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            flat_states, tree, subtrees = opt_state
            params = [get_params(tree_util.tree_unflatten(sub, flat))
                      for flat, sub in zip(flat_states, subtrees)]
            return tree_util.tree_unflatten(tree, params)

        return Optimizer(tree_init, tree_update, tree_get_params)

    return make


@optimizer
def sgd(step_size: Any) -> tuple:
    """Stochastic gradient descent: ``x - step_size(i) * g``.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.sgd(0.5)
        >>> get(update(0, 2.0, init(1.0)))
        0.0
    """
    lr = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - lr(i) * g), (lambda x: x)


@optimizer
def momentum(step_size: Any, mass: float) -> tuple:
    """SGD with momentum: ``v = mass * v + g``; ``x - step_size(i) * v``.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.momentum(0.1, 0.9)
    """
    lr = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, v = state
        v = mass * v + g
        return x - lr(i) * v, v

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def nesterov(step_size: Any, mass: float) -> tuple:
    """SGD with Nesterov momentum: ``v = mass * v + g``; ``x - step_size(i) * (mass * v + g)``.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.nesterov(0.1, 0.9)
    """
    lr = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, v = state
        v = mass * v + g
        return x - lr(i) * (mass * v + g), v

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def adagrad(step_size: Any, momentum: float = 0.9) -> tuple:
    """Adagrad (with momentum on the scaled gradient).

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.adagrad(0.1)
    """
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv_root = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv_root) + momentum * m
        return x - lr(i) * m, g_sq, m

    return init, update, (lambda s: s[0])


@optimizer
def rmsprop(step_size: Any, gamma: float = 0.9, eps: float = 1e-8) -> tuple:
    """RMSProp: a running average of squared gradients scales each step.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.rmsprop(0.01)
    """
    lr = make_schedule(step_size)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, avg = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        return x - lr(i) * g / jnp.sqrt(avg + eps), avg

    return (lambda x0: (x0, jnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def rmsprop_momentum(step_size: Any, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> tuple:
    """RMSProp with momentum on the scaled step.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.rmsprop_momentum(0.01)
    """
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, avg, mom = state
        avg = avg * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + lr(i) * g / jnp.sqrt(avg + eps)
        return x - mom, avg, mom

    return init, update, (lambda s: s[0])


@optimizer
def adam(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> tuple:
    """Adam: bias-corrected first and second moment estimates.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.adam(1e-3)
    """
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - lr(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    return init, update, (lambda s: s[0])


@optimizer
def adamax(step_size: Any, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> tuple:
    """AdaMax: Adam with an infinity-norm second moment.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.adamax(1e-3)
    """
    lr = make_schedule(step_size)

    def init(x0: Any) -> tuple:
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (lr(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, (lambda s: s[0])


@optimizer
def sm3(step_size: Any, momentum: float = 0.9) -> tuple:
    """SM3: memory-efficient adaptive steps from per-dimension accumulators.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> init, update, get = optimizers.sm3(0.1)
    """
    lr = make_schedule(step_size)

    def along(ndim: int, v: Any, axis: int) -> Any:
        index: list = [None] * ndim
        index[axis:axis + 1] = [slice(None)]  # a scalar's one accumulator stays 1-D
        return v[tuple(index)]

    def init(x0: Any) -> tuple:
        shape = jnp.shape(x0)
        x0 = jnp.atleast_1d(x0)
        return x0, jnp.zeros_like(x0), [jnp.zeros(n, x0.dtype) for n in x0.shape], shape

    def update(i: Any, g: Any, state: tuple) -> tuple:
        x, m, vs, shape = state
        accum = functools.reduce(jnp.minimum, [along(g.ndim, v, k) for k, v in enumerate(vs)])
        accum = accum + jnp.square(g)
        inv_root = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * (g * inv_root) + momentum * m
        x = x - lr(i) * m
        vs = [accum.max(tuple(a for a in range(x.ndim) if a != k)) for k in range(x.ndim)]
        return x, m, vs, shape

    return init, update, (lambda s: s[0].reshape(s[3]))


def constant(step_size: Any) -> Schedule:
    """The schedule always returning ``step_size``.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> optimizers.constant(0.1)(100)
        0.1
    """
    return lambda i: step_size


def exponential_decay(step_size: Any, decay_steps: Any, decay_rate: Any) -> Schedule:
    """``step_size * decay_rate ** (i / decay_steps)``.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> optimizers.exponential_decay(1.0, 10, 0.5)(10)
        0.5
    """
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False) -> Schedule:
    """``step_size / (1 + decay_rate * i / decay_steps)`` (the ratio floored with
    ``staircase``).

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> optimizers.inverse_time_decay(1.0, 10, 1.0)(10)
        0.5
    """
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size: Any, decay_steps: Any, final_step_size: Any,
                     power: float = 1.0) -> Schedule:
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` steps along
    ``(1 - i / decay_steps) ** power``, then constant.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> float(optimizers.polynomial_decay(1.0, 10, 0.0)(5))
        0.5
    """
    def schedule(step_num: Any) -> Any:
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """``values[k]`` where ``k`` is how many ``boundaries`` the step index exceeds.

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> float(optimizers.piecewise_constant([10], [1.0, 0.1])(11))
        0.10000000149011612
    """
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: Any) -> Schedule:
    """A schedule from a number (constant) or a schedule (returned as it is).

    Example:
        >>> from fluxion.example_libraries import optimizers
        >>> optimizers.make_schedule(0.3)(7)
        0.3
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


def l2_norm(tree: Any) -> Any:
    """The l2 norm of all the leaves of ``tree`` together.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.example_libraries import optimizers
        >>> float(optimizers.l2_norm([jnp.array([3.0]), jnp.array([4.0])]))
        5.0
    """
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_util.tree_leaves(tree)))


def clip_grads(grad_tree: Any, max_norm: Any) -> Any:
    """``grad_tree`` rescaled to l2 norm ``max_norm`` when its norm exceeds it.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.example_libraries import optimizers
        >>> optimizers.clip_grads([jnp.array([3.0, 4.0])], 1.0)[0].tolist()
        [0.6000000238418579, 0.800000011920929]
    """
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)),
                              grad_tree)


class JoinPoint:
    """Marks where an optimizer's per-array state sits inside the parameters' pytree."""

    def __init__(self, subtree: Any) -> None:
        self.subtree = subtree

    def __iter__(self) -> Any:
        yield self.subtree


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """``opt_state`` as a pytree shaped like the parameters whose leaves are
    :class:`JoinPoint` s holding each array's state (for serialisation).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.example_libraries import optimizers
        >>> init, _, _ = optimizers.momentum(0.1, 0.9)
        >>> marked = optimizers.unpack_optimizer_state(init({"w": jnp.ones(2)}))
        >>> type(marked["w"]).__name__
        'JoinPoint'
    """
    flat_states, tree, subtrees = opt_state
    marks = [JoinPoint(tree_util.tree_unflatten(sub, flat))
             for flat, sub in zip(flat_states, subtrees)]
    return tree_util.tree_unflatten(tree, marks)


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of :func:`unpack_optimizer_state`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.example_libraries import optimizers
        >>> init, _, _ = optimizers.adam(0.1)
        >>> s = init([jnp.ones(2)])
        >>> packed = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(s))
        >>> packed.tree_def == s.tree_def
        True
    """
    marks, tree = tree_util.tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(m, JoinPoint) for m in marks):
        raise TypeError("pack_optimizer_state: expected a pytree whose leaves are JoinPoints")
    flat = [tree_util.tree_flatten(m.subtree) for m in marks]
    return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))
