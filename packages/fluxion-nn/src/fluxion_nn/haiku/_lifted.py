"""Haiku's stateful transforms inside a transformed function: ``grad``, ``value_and_grad``,
``vmap``, ``cond``, ``switch``, ``fori_loop``, ``while_loop``, ``remat``. Each threads the
current Haiku state (``get_state``/``set_state``) and rng through the underlying Fluxion
transform, so modules can be called inside it."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util

from . import _base

__all__ = ["grad", "value_and_grad", "vmap", "cond", "switch", "fori_loop", "while_loop",
           "remat", "jit", "eval_shape"]


def _frame(what: str) -> Any:
    if not _base._frames():
        raise ValueError(f"hk.{what}() must be used as part of an `hk.transform` (inside a "
                         f"transformed function); use "
                         f"fluxion.{what if what != 'remat' else 'checkpoint'} outside")
    return _base._frame(what)


_KEEP = "keep"  # run with the frame's own rng sequence (keys stay concrete: grad, unsplit vmap)
_COPY = "copy"  # run with a copy of it: a staged body (loops, branches) must not advance the
# outer sequence with traced keys, so every iteration/branch sees the same keys (as in Haiku)


def _run(frame: Any, fun: Callable, state: dict, key: Any, args: tuple, kwargs: dict) -> tuple:
    old_state, old_rng = frame.state, frame.rng
    frame.state = _base._copy(state)
    if isinstance(key, str) and key == _COPY:
        frame.rng = (None if old_rng is None
                     else _base.PRNGSequence((old_rng._key, tuple(old_rng._subkeys))))
    elif not (isinstance(key, str) and key == _KEEP):
        frame.rng = _base.PRNGSequence(key) if key is not None else None
    try:
        with _base._TraceLevelPushed():
            out = fun(*args, **kwargs)
        return out, frame.state
    finally:
        frame.state, frame.rng = old_state, old_rng


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable:
    """``fluxion.value_and_grad`` of ``fun`` inside a transformed function; state set by
    ``fun`` is kept (as ``hk.value_and_grad``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.value_and_grad(lambda x: (x ** 2).sum())(x))
        >>> x = jnp.array([1.0, 3.0])
        >>> params = f.init(key, x)
        >>> loss, g = f.apply(params, None, x)
        >>> float(loss), g.tolist()
        (10.0, [2.0, 6.0])
    """
    def stateful(*args: Any, hk_state: dict, **kwargs: Any) -> tuple:
        frame = _frame("value_and_grad")
        # at init, parameters and state created inside come out as values with the state (they
        # may depend on the differentiated arguments), never as the gradient's tracers
        thread = not frame.params_frozen
        old = frame.params, frame.initial_state
        if thread:
            frame.params, frame.initial_state = _base._copy(old[0]), _base._copy(old[1])
        try:
            out, state = _run(frame, fun, hk_state, _KEEP, args, kwargs)
            created = (frame.params, frame.initial_state) if thread else None
        finally:
            frame.params, frame.initial_state = old
        out, aux = out if has_aux else (out, None)
        return out, (aux, state, created)

    vg = fluxion.value_and_grad(stateful, argnums=argnums, has_aux=True, holomorphic=holomorphic)

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = _frame("value_and_grad")
        (value, (aux, state, created)), grads = vg(*args, hk_state=frame.state, **kwargs)
        frame.state = state
        if created is not None:
            frame.params, frame.initial_state = created
        return ((value, aux) if has_aux else value), grads

    return wrapper


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable:
    """``fluxion.grad`` of ``fun`` inside a transformed function (as ``hk.grad``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.grad(lambda x: (2.0 * x ** 2).sum())(x))
        >>> x = jnp.array([1.0, 3.0])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).tolist()
        [4.0, 12.0]
    """
    vg = value_and_grad(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic)

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _frame("grad")
        (value, grads) = vg(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return wrapper


_NO_SPLIT_RNG: Any = object()


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, *, split_rng: bool = _NO_SPLIT_RNG) -> Callable:
    """``fluxion.vmap`` inside a transformed function: parameters and state are shared by all
    elements (not mapped); with ``split_rng=True`` each element draws different random keys.
    ``split_rng`` is required unless ``hk.vmap.require_split_rng = False`` (then False).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda xs: hk.vmap(hk.Linear(4), split_rng=False)(xs))
        >>> x = jnp.ones((3, 2))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (3, 4)
        >>> params['linear']['w'].shape   # one set of weights for every row
        (2, 4)
    """
    if split_rng is _NO_SPLIT_RNG:
        if vmap.require_split_rng:  # type: ignore[attr-defined]
            raise TypeError("hk.vmap() missing the required keyword argument 'split_rng' (True "
                            "gives each element different random keys); code you cannot edit "
                            "can set `hk.vmap.require_split_rng = False` to default it to False")
        split_rng = False
    if all(ax is None for ax in tree_util.tree_leaves(in_axes, is_leaf=lambda x: x is None)):
        raise ValueError(f"{getattr(fun, '__name__', 'fun')} must have at least one non-None "
                         f"value in in_axes (hk.vmap: in_axes={in_axes!r})")
    @functools.wraps(fun)
    def wrapper(*args: Any) -> Any:
        frame = _frame("vmap")
        axes = in_axes if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
        size = axis_size
        if size is None:
            for a, ax in zip(args, axes):
                leaves = tree_util.tree_leaves(a)
                if ax is not None and leaves:
                    size = leaves[0].shape[ax]
                    break
        split = split_rng and frame.rng is not None
        keys = random.split(_base.next_rng_key(), size) if split else None
        # at init, parameters and state created inside come out unmapped (shared by all
        # elements, as in Haiku): one that differs per element is an error
        thread = not frame.params_frozen

        def body(state: dict, k: Any, created: Any, *xs: Any) -> Any:
            old = frame.params, frame.initial_state
            if thread:
                frame.params, frame.initial_state = (_base._copy(c) for c in created)
            try:
                out, state = _run(frame, fun, state, k if split else _KEEP, xs, {})
                return out, state, (frame.params, frame.initial_state) if thread else None
            finally:
                frame.params, frame.initial_state = old

        mapped = fluxion.vmap(body, in_axes=(None, 0 if split else None, None, *axes),
                              out_axes=(out_axes, None, None), axis_name=axis_name,
                              axis_size=size)
        created = (frame.params, frame.initial_state) if thread else None
        try:
            out, state, created = mapped(frame.state, keys, created, *args)
        except ValueError as err:
            if split and thread and "out_axes" in str(err):
                raise ValueError(
                    "hk.vmap does not support setting split_rng to True during initialization "
                    "because it assumes parameters are always shared along the mapped "
                    "dimension; set split_rng=(not hk.running_init()) to switch it off during "
                    f"initialization ({err})") from err
            raise
        frame.state = state
        if thread:
            frame.params, frame.initial_state = created
        return out

    return wrapper


vmap.require_split_rng = True  # type: ignore[attr-defined]


def switch(index: Any, branches: Sequence[Callable], *operands: Any) -> Any:
    """``lax.switch`` with the Haiku state threaded through the chosen branch. Parameters must
    already exist (at init, call every branch unconditionally, as Haiku recommends).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.switch(1, [lambda x: x, lambda x: x + 10.0], x))
        >>> x = jnp.array([1.0, 2.0])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).tolist()
        [11.0, 12.0]
    """
    frame = _frame("switch")
    return _branching(frame, lambda bs, carry: lax.switch(index, bs, carry, operands), branches)


def _branching(frame: Any, run: Callable, branches: Sequence[Callable]) -> Any:
    # at init, parameters a branch creates come out of the switch with the state (as Haiku's
    # internal state), so every branch must create the same ones
    thread_params = not frame.params_frozen

    def make(fn: Callable) -> Callable:
        def branch(carry: tuple, ops: tuple) -> tuple:
            state, created = carry
            old = frame.params, frame.initial_state
            if thread_params:
                frame.params, frame.initial_state = (_base._copy(c) for c in created)
            try:
                out, state = _run(frame, fn, state, _COPY, ops, {})
                return out, (state, (frame.params, frame.initial_state) if thread_params else None)
            finally:
                frame.params, frame.initial_state = old
        return branch

    # one wrapper per distinct branch function, so that lax.cond/switch trace a function given
    # twice only once (as Haiku, which memoizes its stateful branches by id)
    made: dict[int, Callable] = {}

    def made_once(fn: Callable) -> Callable:
        if id(fn) not in made:
            made[id(fn)] = make(fn)
        return made[id(fn)]

    carry = (frame.state, (frame.params, frame.initial_state) if thread_params else None)
    out, (state, created) = run([made_once(fn) for fn in branches], carry)
    frame.state = state
    if thread_params:
        frame.params, frame.initial_state = created
    return out


_NO_OPERAND: Any = object()


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _NO_OPERAND) -> Any:
    """``lax.cond`` with the Haiku state threaded through (see :func:`switch`); one operand may
    be given as ``operand=`` instead.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x))
        >>> x = jnp.array([1.0, 2.0])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).tolist()
        [2.0, 4.0]
    """
    frame = _frame("cond")
    if (not callable(true_fun) and callable(false_fun) and len(operands) == 2
            and callable(operands[1]) and operand is _NO_OPERAND):
        # the older form cond(pred, true_operand, true_fun, false_operand, false_fun)
        t_op, t_fun, f_op, f_fun = true_fun, false_fun, *operands
        true_fun = lambda ops, f=t_fun: f(ops[0])  # noqa: E731
        false_fun = lambda ops, f=f_fun: f(ops[1])  # noqa: E731
        operands = ((t_op, f_op),)
    elif operand is not _NO_OPERAND:
        if operands:
            raise ValueError("hk.cond: when the operand keyword argument is used you cannot "
                             "also pass operands positionally")
        operands = (operand,)
    return _branching(frame, lambda bs, carry: lax.cond(pred, bs[1], bs[0], carry, operands),
                      [false_fun, true_fun])


def fori_loop(lower: int, upper: int, body_fun: Callable, init_val: Any) -> Any:
    """``lax.fori_loop`` with the Haiku state carried through the loop (parameters must already
    exist; at init the body runs once eagerly to create them, as ``hk.fori_loop`` does).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.fori_loop(0, 3, lambda i, x: x * 2, x))
        >>> x = jnp.array([1.0, 2.0])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).tolist()
        [8.0, 16.0]
    """
    frame = _frame("fori_loop")
    if not frame.params_frozen:
        # at init one step runs unrolled, so that parameters and state exist before the loop
        init_val = body_fun(lower, init_val)
        lower = lower + 1
        if isinstance(lower, int) and isinstance(upper, int) and upper - lower == 0:
            return init_val

    def body(i: Any, carry: tuple) -> tuple:
        val, state = carry
        val, state = _run(frame, body_fun, state, _COPY, (i, val), {})
        return val, state

    val, state = lax.fori_loop(lower, upper, body, (init_val, frame.state))
    frame.state = state
    return val


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``lax.while_loop`` with the Haiku state carried through the body (parameters must already
    exist).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform(lambda x: hk.while_loop(lambda x: x.sum() < 10, lambda x: x + 1, x))
        >>> f.apply({}, None, jnp.array([1.0, 2.0])).tolist()   # no init: the loop may not run
        [5.0, 6.0]
    """
    frame = _frame("while_loop")
    if not frame.params_frozen:
        raise ValueError(
            "hk.while_loop does not support initialization: parameters cannot be created "
            "inside the loop (it may run zero "
            "times); at init call the body unconditionally: `if hk.running_init(): val = "
            "body(val) else: val = hk.while_loop(cond, body, val)`")

    def c(carry: tuple) -> Any:
        # the condition sees the state and the keys but may change neither (its outputs are
        # only the predicate): a set_state or next_rng_key there is an error, as in Haiku
        val, state = carry
        old_state, old_rng = frame.state, frame.rng
        frame.state = _base._copy(state)
        seq = frame.rng = (None if old_rng is None else
                           _base.PRNGSequence((old_rng._key, tuple(old_rng._subkeys))))
        key0, n0 = (None, 0) if seq is None else (seq._key, len(seq._subkeys))
        try:
            with _base._TraceLevelPushed():
                out = cond_fun(val)
            changed = not _same_values(frame.state, state) or (
                seq is not None and (seq._key is not key0 or len(seq._subkeys) != n0))
        finally:
            frame.state, frame.rng = old_state, old_rng
        if changed:
            raise ValueError("hk.while_loop does not support hk.set_state, hk.next_rng_key (or "
                             "any other change of the Haiku state) in `cond_fun`: the condition "
                             "returns only the predicate; change state in `body_fun`")
        return out

    def body(carry: tuple) -> tuple:
        val, state = carry
        return _run(frame, body_fun, state, _COPY, (val,), {})

    val, state = lax.while_loop(c, body, (init_val, frame.state))
    frame.state = state
    return val


def _same_values(a: dict, b: dict) -> bool:
    """Whether two ``{module: {name: value}}`` dicts hold the same objects."""
    return a.keys() == b.keys() and all(
        a[m].keys() == b[m].keys() and all(a[m][k] is b[m][k] for k in a[m]) for m in a)


def remat(fun: Callable, prevent_cse: bool = True, static_argnums: int | tuple = (),
          policy: Callable | None = None) -> Callable:
    """``fluxion.checkpoint`` (rematerialisation) of ``fun`` inside a transformed function.
    At init the function runs plainly (to create parameters).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.remat(hk.nets.MLP([8, 8]))(x))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 8)
    """
    @functools.wraps(fun)
    def wrapper(*args: Any) -> Any:
        frame = _frame("remat")
        if frame.init:
            return fun(*args)
        def body(state: dict, *xs: Any) -> Any:
            return _run(frame, fun, state, _COPY, xs, {})

        nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        ck = fluxion.checkpoint(body, prevent_cse=prevent_cse, policy=policy,
                                static_argnums=tuple(n + 1 for n in nums))
        out, state = ck(frame.state, *args)
        frame.state = state
        return out

    return wrapper


def _snapshot(frame: Any) -> tuple:
    rng = frame.rng.internal_state if frame.rng is not None else None
    return (_base._copy(frame.params), _base._copy(frame.state),
            _base._copy(frame.initial_state), rng)


def _run_with(frame: Any, snapshot: tuple, fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Run ``fun`` with the frame's params/state/rng taken from ``snapshot`` (traced values);
    returns ``(out, new_snapshot)`` and restores the frame."""
    old = (frame.params, frame.state, frame.initial_state, frame.rng)
    params, state, initial, rng = snapshot
    frame.params, frame.state = _base._copy(params), _base._copy(state)
    frame.initial_state = _base._copy(initial)
    frame.rng = _base.PRNGSequence(rng) if rng is not None else None
    try:
        with _base._TraceLevelPushed():
            out = fun(*args, **kwargs)
        return out, _snapshot(frame)
    finally:
        frame.params, frame.state, frame.initial_state, frame.rng = old


def jit(fun: Callable, static_argnums: Any = (), static_argnames: Any = (),
        donate_argnums: Any = (), device: Any = None, backend: Any = None,
        inline: bool = False) -> Callable:
    """``fluxion.jit`` inside a transformed function: parameters, state and the rng sequence
    go in and out of the compiled function, so modules can be called inside it.

    Example: ``y = hk.jit(hk.Linear(4))(x)`` (inside ``hk.transform``).
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = _frame("jit")

        def pure(snapshot: tuple, *a: Any, **k: Any) -> tuple:
            return _run_with(frame, snapshot, fun, a, k)

        jitted = fluxion.jit(pure, static_argnums=tuple(i + 1 for i in static),
                             static_argnames=static_argnames, inline=inline)
        out, (params, state, initial, rng) = jitted(_snapshot(frame), *args, **kwargs)
        if not frame.params_frozen:
            frame.params = params
        frame.state, frame.initial_state = state, initial
        if rng is not None and frame.rng is not None:
            frame.rng.replace_internal_state(rng)
        return out

    return wrapper


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fluxion.eval_shape`` inside a transformed function, any changed Haiku state discarded.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     out = hk.eval_shape(lambda x: jnp.outer(x, x), x)  # shapes only: nothing is computed
        ...     return out.shape, out.dtype
        >>> hk.transform(f).apply({}, None, jnp.ones(3))
        ((3, 3), dtype('float32'))
    """
    if not _base._frames():
        raise ValueError("hk.eval_shape() should not be used outside of hk.transform(). "
                         "Use jax.eval_shape() instead.")
    frame = _frame("eval_shape")

    def stateless(snapshot: tuple, *a: Any, **k: Any) -> Any:
        return _run_with(frame, snapshot, fun, a, k)[0]

    return fluxion.eval_shape(stateless, _snapshot(frame), *args, **kwargs)


def _zeros_creator(next_creator: Callable, shape: Any, dtype: Any, init: Any,
                   context: Any) -> Any:

    return next_creator(shape, dtype, jnp.zeros)


def fast_eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """``eval_shape`` (``hk.eval_shape`` inside a transform, ``fluxion.eval_shape`` outside)
    with every parameter and state initialiser replaced by zeros, so the trace skips their
    random draws (as ``hk.experimental.fast_eval_shape``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     out = hk.experimental.fast_eval_shape(lambda x: jnp.outer(x, x), x)
        ...     return out.shape, out.dtype
        >>> hk.transform(f).apply({}, None, jnp.ones(3))
        ((3, 3), dtype('float32'))
    """
    with _base._Pushed(["param_creator", "state_creator"], _zeros_creator):
        if _base._frames():
            return eval_shape(fun, *args, **kwargs)
        return fluxion.eval_shape(fun, *args, **kwargs)


class _CountingSequence(_base.PRNGSequence):
    """A PRNGSequence that counts the keys drawn from it."""

    __slots__ = ("drawn",)

    def __init__(self, state: Any):
        super().__init__(state)
        self.drawn = 0

    def __next__(self) -> Any:
        self.drawn += 1
        return super().__next__()

    next = __next__


def optimize_rng_use(fun: Callable) -> Callable:
    """Wrap ``fun`` (used inside a transform) so that the keys it draws with
    ``hk.next_rng_key`` are split from the input key in one go: an abstract first run
    (``fluxion.eval_shape``) counts them, then they are reserved and ``fun`` runs.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     return hk.nets.MLP([4, 2])(x)
        >>> f = hk.transform(hk.experimental.optimize_rng_use(f))
        >>> params = f.init(fluxion.random.PRNGKey(0), jnp.ones((1, 3)))
        >>> sorted(params), f.apply(params, None, jnp.ones((1, 3))).shape
        (['mlp/~/linear_0', 'mlp/~/linear_1'], (1, 2))
    """

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        frame = _frame("optimize_rng_use")
        params = {k: dict(v) for k, v in frame.params.items()} or None
        state = {k: dict(v) for k, v in frame.state.items()} or None
        rng = frame.rng.internal_state if frame.rng is not None else None
        counted = []

        def pure(params: Any, state: Any, rng: Any, *a: Any, **k: Any) -> Any:
            ctx = _base.new_context(params=params, state=state)
            seq = _CountingSequence(rng) if rng is not None else None
            ctx._frame.rng = seq
            with ctx:
                out = fun(*a, **k)
            counted.append(seq.drawn if seq is not None else 0)
            return out

        fluxion.eval_shape(pure, params, state, rng, *args, **kwargs)
        if counted and counted[0] and frame.rng is not None:
            frame.rng.reserve(counted[0])
        return fun(*args, **kwargs)

    return wrapper
