"""Line searches as gradient transformations: backtracking (Armijo) and zoom (strong Wolfe).

Their ``update`` needs the extra arguments ``value=`` (loss at params), ``grad=`` and
``value_fn=`` (the loss function); further keyword arguments are passed on to ``value_fn``.
"""


import functools
import inspect as _inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import (
    tree_add_scale,
    tree_cast_like,
    tree_conj,
    tree_get,
    tree_real,
    tree_scale,
    tree_vdot,
    tree_where,
    tree_zeros_like,
)

__all__ = ["BacktrackingLinesearchInfo", "ScaleByBacktrackingLinesearchState",
           "ScaleByZoomLinesearchState", "ZoomLinesearchInfo", "scale_by_backtracking_linesearch",
           "scale_by_zoom_linesearch", "value_and_grad_from_state"]


def _extract_fns_kwargs(fns: tuple, kwargs: dict[str, Any]) -> tuple[list, dict[str, Any]]:
    """Split ``kwargs`` into the ones each of ``fns`` accepts (by parameter name) and the rest,
    as optax's private helper.

    Example:
        >>> _extract_fns_kwargs((lambda a, b: a, lambda c, d: c), {"b": 1, "d": 2, "e": 3})
        ([{'b': 1}, {'d': 2}], {'e': 3})
    """
    taken: list = []
    used: set = set()
    for fn in fns:
        names = _inspect.signature(fn).parameters
        mine = {k: v for k, v in kwargs.items() if k in names}
        used.update(mine)
        taken.append(mine)
    return taken, {k: v for k, v in kwargs.items() if k not in used}


def _split_kwargs(fn: Callable[..., Any], kwargs: dict[str, Any], who: str) -> dict[str, Any]:
    (mine,), extra = _extract_fns_kwargs((fn,), kwargs)
    if extra:
        # optax's words first, ours after
        raise TypeError(f"Unexpected keyword arguments passed to `{who}.update`. These "
                        f"arguments were not consumed by `value_fn`: {sorted(extra)}. Ensure "
                        "that all extra keyword arguments are accepted by `value_fn`. "
                        f"({who}.update: keyword arguments {sorted(extra)} are not parameters "
                        "of `value_fn`)")
    return mine


# optax's messages for a failed zoom line search (names its tests read)
FLAG_INTERVAL_NOT_FOUND = ("No interval satisfying curvature condition. Consider increasing "
                           "maximal possible stepsize of the linesearch.")
FLAG_INTERVAL_TOO_SMALL = "Length of searched interval has been reduced below threshold."
FLAG_CURVATURE_COND_NOT_SATISFIED = ("Returning stepsize with sufficient decrease but "
                                     "curvature condition not satisfied.")
FLAG_NO_STEPSIZE_FOUND = "Linesearch failed, no stepsize satisfying sufficient decrease found."
FLAG_NOT_A_DESCENT_DIRECTION = ("The linesearch failed because the provided direction is not a "
                                "descent direction. ")


def _value_dtype(params: Any) -> Any:
    return jnp.real(jnp.empty((), fluxion.tree.leaves(params)[0].dtype)).dtype


def _cond_print(condition: Any, message: str, **kwargs: Any) -> None:
    lax.cond(condition, lambda _: fluxion.debug.print(message, **kwargs), lambda _: None, None)


class BacktrackingLinesearchInfo(NamedTuple):
    """Diagnostics of the last backtracking line search."""

    num_linesearch_steps: Any
    decrease_error: Any


class ScaleByBacktrackingLinesearchState(NamedTuple):
    """State of :func:`scale_by_backtracking_linesearch`."""

    learning_rate: Any
    value: Any
    grad: Any
    info: BacktrackingLinesearchInfo


class _BacktrackState(NamedTuple):
    learning_rate: Any
    new_value: Any
    new_grad: Any
    decrease_error: Any
    iter_num: Any


def scale_by_backtracking_linesearch(max_backtracking_steps: int, slope_rtol: Any = 1e-4,
                                     decrease_factor: Any = 0.8, increase_factor: Any = 1.5,
                                     max_learning_rate: Any = 1.0, atol: Any = 0.0,
                                     rtol: Any = 0.0, store_grad: bool = False,
                                     verbose: bool = False
                                     ) -> _base.GradientTransformationExtraArgs:
    """Backtracking line search: shrinks the step by ``decrease_factor`` until the Armijo
    sufficient-decrease condition holds (at most ``max_backtracking_steps`` times).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = lambda x: jnp.sum(x ** 2)
        >>> ls = optax.scale_by_backtracking_linesearch(max_backtracking_steps=15)
        >>> x = jnp.array([1.0])
        >>> u, s = ls.update(-2 * x, ls.init(x), x, value=f(x), grad=2 * x, value_fn=f)
        >>> float(f(x + u)) < float(f(x))
        True
    """

    def init_fn(params):
        dtype = _value_dtype(params)
        return ScaleByBacktrackingLinesearchState(
            jnp.array(1.0, dtype=dtype), jnp.array(jnp.inf, dtype=dtype),
            tree_zeros_like(params) if store_grad else None,
            BacktrackingLinesearchInfo(jnp.asarray(0), jnp.array(jnp.inf, dtype=dtype)))

    def decrease_error_of(stepsize, slope, value, new_value):
        err = new_value - (1.0 + rtol) * value - stepsize * slope_rtol * slope
        err = jnp.where(jnp.isnan(err), jnp.inf, err)
        return jnp.maximum(err, 0.0)

    def update_fn(updates, state, params=None, *, value, grad, value_fn, **extra_args):
        fn_kwargs = _split_kwargs(value_fn, extra_args, "scale_by_backtracking_linesearch")
        value_fn_ = functools.partial(value_fn, **fn_kwargs)
        slope = tree_real(tree_vdot(updates, tree_conj(grad)))

        def cond_fn(s):
            return ~(s.decrease_error <= atol) & (s.iter_num <= max_backtracking_steps)

        def body_fn(s):
            lr = jnp.where(s.iter_num > 0, decrease_factor * s.learning_rate, s.learning_rate)
            new_params = tree_add_scale(params, lr, updates)
            new_grad = s.new_grad
            if store_grad:
                new_value, new_grad_now = fluxion.value_and_grad(value_fn_)(new_params)
                err = decrease_error_of(lr, slope, value, new_value)
                new_grad = tree_where(
                    (err <= atol) | (s.iter_num == max_backtracking_steps), new_grad_now,
                    new_grad)
            else:
                new_value = value_fn_(new_params)
                err = decrease_error_of(lr, slope, value, new_value)
            return tree_cast_like(_BacktrackState(lr, new_value, new_grad, err, s.iter_num + 1),
                                  s)

        lr0 = jnp.minimum(increase_factor * state.learning_rate, max_learning_rate)
        search = _BacktrackState(lr0, value, tree_zeros_like(params), jnp.array(jnp.inf),
                                 jnp.asarray(0))
        search = lax.while_loop(cond_fn, body_fn, search)
        if verbose:
            _cond_print(search.decrease_error > atol,
                        "scale_by_backtracking_linesearch: no step size with sufficient "
                        "decrease found (decrease error {e})", e=search.decrease_error)
        new_lr = jnp.where(jnp.isinf(search.decrease_error), 0.0, search.learning_rate)
        new_state = ScaleByBacktrackingLinesearchState(
            new_lr, search.new_value, search.new_grad if store_grad else None,
            BacktrackingLinesearchInfo(search.iter_num, search.decrease_error))
        return tree_scale(new_lr, updates), tree_cast_like(new_state, state)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class _ZoomState(NamedTuple):
    count: Any
    params: Any
    updates: Any
    stepsize_guess: Any
    stepsize: Any
    value: Any
    grad: Any
    slope: Any
    value_init: Any
    slope_init: Any
    decrease_error: Any
    curvature_error: Any
    error: Any
    interval_found: Any
    done: Any
    failed: Any
    low: Any
    value_low: Any
    slope_low: Any
    high: Any
    value_high: Any
    slope_high: Any
    cubic_ref: Any
    value_cubic_ref: Any
    safe_stepsize: Any
    safe_value: Any
    safe_grad: Any


def _cubicmin(a, fa, fpa, b, fb, c, fc):
    db, dc = b - a, c - a
    denom = (db * dc) ** 2 * (db - dc)
    d1 = jnp.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]])
    rhs = jnp.array([fb - fa - fpa * db, fc - fa - fpa * dc])
    coef_a, coef_b = jnp.dot(d1, rhs, precision=lax.Precision.HIGHEST) / denom
    radical = coef_b * coef_b - 3.0 * coef_a * fpa
    return a + (-coef_b + jnp.sqrt(radical)) / (3.0 * coef_a)


def _quadmin(a, fa, fpa, b, fb):
    db = b - a
    coef_b = (fb - fa - fpa * db) / db ** 2
    return a - fpa / (2.0 * coef_b)


def _zoom_linesearch(max_linesearch_steps, max_stepsize, tol, increase_factor, slope_rtol,
                     curv_rtol, approx_dec_rtol, interval_threshold, verbose=False):
    def on_line(value_and_grad_fn, params, stepsize, updates, fn_kwargs):
        step = tree_add_scale(params, stepsize, updates)
        value_step, grad_step = value_and_grad_fn(step, **fn_kwargs)
        slope_step = tree_real(tree_vdot(tree_conj(grad_step), updates))
        return value_step, grad_step, slope_step

    def decrease_error_of(stepsize, value_step, slope_step, value_init, slope_init):
        err = value_step - value_init - slope_rtol * stepsize * slope_init
        if approx_dec_rtol is not None:
            approx = slope_step - (2 * slope_rtol - 1.0) * slope_init
            delta = value_step - value_init - approx_dec_rtol * jnp.abs(value_init)
            err = jnp.minimum(jnp.maximum(approx, delta), err)
        err = jnp.maximum(err, 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def curvature_error_of(slope_step, slope_init):
        err = jnp.maximum(jnp.abs(slope_step) - curv_rtol * jnp.abs(slope_init), 0.0)
        return jnp.where(jnp.isnan(err), jnp.inf, err)

    def failure_diagnostic(s):
        # why no step with sufficient decrease was found (optax's FLAG texts first)
        fluxion.debug.print(FLAG_NO_STEPSIZE_FOUND)
        descent = s.slope_init < 0.0
        _cond_print(~descent, FLAG_NOT_A_DESCENT_DIRECTION + "The slope (={slope_init}) at "
                    "stepsize=0 should be negative", slope_init=s.slope_init)
        _cond_print(descent, "Consider augmenting the maximal number of linesearch iterations.")
        eps = jnp.finfo(jnp.float32).eps
        _cond_print((s.stepsize < eps) & descent, "Computed stepsize (={stepsize}) is below "
                    "machine precision (={eps}); consider float64 "
                    "(fluxion.config.update('jax_enable_x64', True)).", stepsize=s.stepsize,
                    eps=eps)
        _cond_print((jnp.abs(s.slope_init) > 1e16) & descent, "Very large absolute slope at "
                    "stepsize=0 (|slope|={abs_slope}): the objective is badly conditioned; "
                    "consider rescaling the parameters or a better initial guess.",
                    abs_slope=jnp.abs(s.slope_init))
        outside = jnp.isinf(s.decrease_error)
        _cond_print(outside, "Cannot make a step without getting Inf or NaN: the line search "
                    "makes no step and the optimizer is stuck.")
        _cond_print(~outside, "Making an unsafe step that does not decrease the objective "
                    "enough: the solver's convergence is compromised.")

    def report(s, stepsize, decrease_error, curvature_error, extra=""):
        return dict(message=("INFO: scale_by_zoom_linesearch:\nValue at current params: "
                             "{value_init}\nSlope along update direction: {slope_init}\n"
                             "Stepsize reached: {stepsize}\nDecrease Error: {decrease_error}\n"
                             "Curvature Error: {curvature_error}" + extra),
                    value_init=s.value_init, slope_init=s.slope_init, stepsize=stepsize,
                    decrease_error=decrease_error, curvature_error=curvature_error)

    def try_safe_step(s):
        outside = jnp.isinf(s.decrease_error)
        step, value, grad = tree_where((s.safe_stepsize > 0.0) | outside,
                                       [s.safe_stepsize, s.safe_value, s.safe_grad],
                                       [s.stepsize, s.value, s.grad])
        if verbose:
            info = report(s, s.stepsize, s.decrease_error, s.curvature_error)
            fluxion.debug.print(info.pop("message"), **info)
            length = jnp.abs(s.low - s.high)
            _cond_print(length <= interval_threshold,
                        FLAG_INTERVAL_TOO_SMALL + " Interval length: {length}.", length=length)
            lax.cond(s.safe_stepsize > 0.0,
                     lambda t: fluxion.debug.print(
                         FLAG_CURVATURE_COND_NOT_SATISFIED + " Stepsize ensuring sufficient "
                         "decrease: {safe}.", safe=t.safe_stepsize),
                     failure_diagnostic, s)
        return tree_cast_like(s._replace(stepsize=step, grad=grad, value=value), s)

    def search_interval(s, value_and_grad_fn, fn_kwargs):
        it = s.count
        new_step = jnp.where(it == 0, s.stepsize_guess, increase_factor * s.stepsize)
        if max_stepsize is not None:
            max_reached = new_step >= max_stepsize
            new_step = jnp.minimum(new_step, max_stepsize)
        else:
            max_reached = jnp.asarray(False)
        v, g, sl = on_line(value_and_grad_fn, s.params, new_step, s.updates, fn_kwargs)
        dec = decrease_error_of(new_step, v, sl, s.value_init, s.slope_init)
        curv = curvature_error_of(sl, s.slope_init)
        err = jnp.maximum(dec, curv)
        safe_step, safe_value, safe_grad = tree_where(
            dec <= tol, [new_step, v, g], [s.safe_stepsize, s.safe_value, s.safe_grad])
        set_high = (dec > 0.0) | (v >= s.value) & (it > 0)
        set_low = (sl >= 0.0) & ~set_high
        low, value_low, slope_low, high, value_high, slope_high = tree_where(
            set_low, [new_step, v, sl, s.stepsize, s.value, s.slope],
            [s.stepsize, s.value, s.slope, new_step, v, sl])
        interval_found = set_high | set_low | (err <= tol)
        done = (err <= tol) | max_reached & ~interval_found
        if verbose:
            info = report(s, new_step, dec, curv,
                          "\n" + FLAG_INTERVAL_NOT_FOUND + "\n" + FLAG_CURVATURE_COND_NOT_SATISFIED)
            _cond_print(max_reached & ~interval_found, info.pop("message"), **info)
        failed = (it + 1 >= max_linesearch_steps) & ~done
        new = _ZoomState(safe_increment(it), s.params, s.updates, s.stepsize_guess, new_step, v,
                         g, sl, s.value_init, s.slope_init, dec, curv, err,
                         jnp.asarray(interval_found), jnp.asarray(done), jnp.asarray(failed),
                         low, value_low, slope_low, high, value_high, slope_high, low,
                         value_low, safe_step, safe_value, safe_grad)
        return tree_cast_like(new, s)

    def zoom_into_interval(s, value_and_grad_fn, fn_kwargs):
        low, high = s.low, s.high
        delta = jnp.abs(high - low)
        left, right = jnp.minimum(high, low), jnp.maximum(high, low)
        too_small = delta <= interval_threshold
        cubic = _cubicmin(low, s.value_low, s.slope_low, high, s.value_high, s.cubic_ref,
                          s.value_cubic_ref)
        use_cubic = (cubic > left + 0.2 * delta) & (cubic < right - 0.2 * delta)
        quad = _quadmin(low, s.value_low, s.slope_low, high, s.value_high)
        use_quad = ~use_cubic & (quad > left + 0.1 * delta) & (quad < right - 0.1 * delta)
        use_bisection = ~use_cubic & ~use_quad
        middle = jnp.where(use_cubic, cubic, s.cubic_ref)
        middle = jnp.where(use_quad, quad, middle)
        middle = jnp.where(use_bisection, (low + high) / 2.0, middle)
        v, g, sl = on_line(value_and_grad_fn, s.params, middle, s.updates, fn_kwargs)
        dec = decrease_error_of(middle, v, sl, s.value_init, s.slope_init)
        curv = curvature_error_of(sl, s.slope_init)
        err = jnp.maximum(dec, curv)
        update_safe = (dec <= tol) & (v < s.safe_value)
        safe_step, safe_value, safe_grad = tree_where(
            update_safe, [middle, v, g], [s.safe_stepsize, s.safe_value, s.safe_grad])
        done = err <= tol
        set_high_to_middle = (dec > 0.0) | (v >= s.value_low)
        set_high_to_low = (sl * (high - low) >= 0.0) & ~set_high_to_middle
        set_low_to_middle = ~set_high_to_middle
        hi = tree_where(set_high_to_middle, [middle, v, sl], [high, s.value_high, s.slope_high])
        hi = tree_where(set_high_to_low, [low, s.value_low, s.slope_low], hi)
        lo = tree_where(set_low_to_middle, [middle, v, sl], [low, s.value_low, s.slope_low])
        cubic_ref, value_cubic_ref = tree_where(set_high_to_middle | set_high_to_low,
                                                [high, s.value_high], [low, s.value_low])
        max_iter = s.count + 1 >= max_linesearch_steps
        failed = (jnp.asarray(max_iter) | too_small & (safe_step > 0.0)) & ~done
        new = _ZoomState(safe_increment(s.count), s.params, s.updates, s.stepsize_guess, middle,
                         v, g, sl, s.value_init, s.slope_init, dec, curv, err, s.interval_found,
                         done, failed, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], cubic_ref,
                         value_cubic_ref, safe_step, safe_value, safe_grad)
        return tree_cast_like(new, s)

    def init(updates, params, *, value, grad, prev_stepsize=1.0, initial_guess_strategy="one"):
        if initial_guess_strategy == "one":
            guess = jnp.asarray(1.0)
        elif initial_guess_strategy == "keep":
            guess = prev_stepsize
        else:
            raise ValueError(f"scale_by_zoom_linesearch: unknown initial_guess_strategy "
                             f"{initial_guess_strategy!r}; expected 'one' or 'keep'")
        dtype = _value_dtype(params)
        slope = tree_real(tree_vdot(updates, grad))
        inf, zero, false = jnp.asarray(jnp.inf), jnp.asarray(0.0), jnp.asarray(False)
        return _ZoomState(jnp.asarray(0), params, updates, guess, jnp.asarray(0.0, dtype=dtype),
                          jnp.array(value, dtype=dtype), grad, slope, value, slope, inf, inf,
                          inf, false, false, false, zero, value, slope, zero, value, slope,
                          zero, value, zero, value, grad)

    def step(s, *, value_and_grad_fn, fn_kwargs):
        new = lax.cond(s.interval_found,
                       functools.partial(zoom_into_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs),
                       functools.partial(search_interval, value_and_grad_fn=value_and_grad_fn,
                                         fn_kwargs=fn_kwargs), s)
        new = lax.cond(new.failed, try_safe_step, lambda x: x, new)
        return tree_cast_like(new, s)

    def cond(s):
        return ~(s.done | s.failed)

    return init, step, cond


class ZoomLinesearchInfo(NamedTuple):
    """Diagnostics of the last zoom line search."""

    num_linesearch_steps: Any
    decrease_error: Any
    curvature_error: Any


class ScaleByZoomLinesearchState(NamedTuple):
    """State of :func:`scale_by_zoom_linesearch`: the accepted step, value and gradient."""

    learning_rate: Any
    value: Any
    grad: Any
    info: ZoomLinesearchInfo


def scale_by_zoom_linesearch(max_linesearch_steps: int, max_learning_rate: Any = None,
                             tol: Any = 0.0, increase_factor: Any = 2.0,
                             slope_rtol: Any = 1e-4, curv_rtol: Any = 0.9,
                             approx_dec_rtol: Any = 1e-6, stepsize_precision: Any = 1e-5,
                             initial_guess_strategy: str = "keep", verbose: bool = False
                             ) -> _base.GradientTransformationExtraArgs:
    """Zoom line search for a step satisfying the strong Wolfe conditions (the default line
    search of :func:`lbfgs`). Stores the value and gradient at the accepted point, which
    :func:`value_and_grad_from_state` reuses.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = lambda x: jnp.sum(x ** 2)
        >>> ls = optax.scale_by_zoom_linesearch(max_linesearch_steps=15)
        >>> x = jnp.array([1.0])
        >>> u, s = ls.update(-2 * x, ls.init(x), x, value=f(x), grad=2 * x, value_fn=f)
        >>> float(f(x + u)) < float(f(x))
        True
    """
    init_ls, step_ls, cond_ls = _zoom_linesearch(
        max_linesearch_steps, max_learning_rate, tol, increase_factor, slope_rtol, curv_rtol,
        approx_dec_rtol, stepsize_precision, verbose)

    def init_fn(params):
        dtype = _value_dtype(params)
        inf = jnp.asarray(jnp.inf)
        return ScaleByZoomLinesearchState(jnp.asarray(1.0, dtype=dtype),
                                          jnp.asarray(jnp.inf, dtype=dtype),
                                          tree_zeros_like(params),
                                          ZoomLinesearchInfo(jnp.asarray(0), inf, inf))

    def update_fn(updates, state, params=None, *, value, grad, value_fn, **extra_args):
        fn_kwargs = _split_kwargs(value_fn, extra_args, "scale_by_zoom_linesearch")
        init = init_ls(updates, params, value=value, grad=grad, prev_stepsize=state.learning_rate,
                       initial_guess_strategy=initial_guess_strategy)
        final = lax.while_loop(cond_ls, functools.partial(
            step_ls, value_and_grad_fn=fluxion.value_and_grad(value_fn), fn_kwargs=fn_kwargs),
            init)
        new_state = ScaleByZoomLinesearchState(
            final.stepsize, final.value, final.grad,
            ZoomLinesearchInfo(final.count, final.decrease_error, final.curvature_error))
        return tree_scale(final.stepsize, updates), tree_cast_like(new_state, state)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def value_and_grad_from_state(value_fn: Callable[..., Any]) -> Callable[..., tuple[Any, Any]]:
    """``value_and_grad(value_fn)`` that reuses the value and gradient a line search stored in
    the optimizer ``state`` (passed as ``state=``) when they are finite.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = lambda x: jnp.sum(x ** 2)
        >>> opt = optax.lbfgs()
        >>> x = jnp.array([1.0, 2.0])
        >>> v, g = optax.value_and_grad_from_state(f)(x, state=opt.init(x))
        >>> float(v)
        5.0
    """

    def value_and_grad(params, *fn_args, state, **fn_kwargs):
        value = tree_get(state, "value")
        grad = tree_get(state, "grad")
        if value is None or grad is None:
            raise ValueError("value_and_grad_from_state: the state stores no `value`/`grad`; "
                             "use an optimizer with a line search that stores them")
        return lax.cond(~jnp.isinf(value) & ~jnp.isnan(value), lambda *_: (value, grad),
                        lambda p, a, kw: fluxion.value_and_grad(value_fn)(p, *a, **kw),
                        params, fn_args, fn_kwargs)

    return value_and_grad


