"""Activation functions and other neural-network helpers, with JAX's names and signatures.

Every function here is built from ``fluxion.numpy`` / ``fluxion.lax`` operations, written so that
both values and gradients stay finite at extreme inputs (shifted exponentials, ``where``-guarded
branches, ``custom_jvp`` rules where JAX uses one: ``relu``, ``relu6``, ``softmax``,
``log1mexp``). Element-wise functions are compiled once per input signature (``fluxion.jit``,
inlined when called under another transformation).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion import nn
    >>> nn.relu(jnp.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy import _util
from fluxion.transforms.custom_derivatives import custom_jvp

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
    "hard_swish", "hard_tanh", "identity", "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax",
    "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu",
    "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish",
]

Axis = Any


def _jit(static_argnames: Sequence[str] = (), inline: bool = True
         ) -> Callable[[Callable], Callable]:
    """``fluxion.jit(fun, inline=inline)``, built on first call (jaxlib loads lazily). Not
    inlined, a call stays a nested jit in the caller's program, as JAX's ``jax.nn`` functions
    (XLA then sees JAX's program: its fusions and the order of cotangent sums)."""

    def deco(fun: Callable) -> Callable:
        cell: list[Callable] = []

        def call(*args: Any, **kwargs: Any) -> Any:
            if not cell:
                # reason: the backend loads jaxlib, which importing fluxion.nn must not.
                from fluxion.backend.jit import jit
                cell.append(jit(fun, inline=inline, static_argnames=tuple(static_argnames)))
            return cell[0](*args, **kwargs)

        call.__name__ = fun.__name__
        call.__qualname__ = fun.__qualname__
        call.__doc__ = fun.__doc__
        call.__module__ = fun.__module__
        call.__wrapped__ = fun  # type: ignore[attr-defined]
        return call

    return deco


def _arr(name: str, x: Any) -> Any:
    _util.check_arraylike(name, x)
    return _util.ensure_array(x)


# ============================================================================ element-wise

@_jit()
def identity(x: Any) -> Any:
    """The identity activation: returns ``x`` unchanged (as an array).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.identity(jnp.array([-1.0, 2.0])).tolist()
        [-1.0, 2.0]
    """
    return _arr("identity", x)


@_jit()
def _relu(x: Any) -> Any:
    return jnp.maximum(x, 0)


def _relu_rule(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return relu(x), lax.select(x > 0, t, lax.full_like(t, 0))


relu = custom_jvp(_relu)
relu.defjvp(_relu_rule)
relu.__name__ = relu.__qualname__ = "relu"
relu.__doc__ = """Rectified linear unit, ``max(x, 0)``, element-wise.

    Its derivative at ``0`` is taken to be ``0`` (a ``custom_jvp`` rule), like JAX.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.relu(jnp.array([-2.0, 0.0, 3.0])).tolist()
        [0.0, 0.0, 3.0]
        >>> float(fluxion.grad(nn.relu)(0.0))
        0.0
    """


@_jit()
def _relu6(x: Any) -> Any:
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


def _relu6_rule(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return relu6(x), lax.select((x > 0) & (x < 6), t, lax.full_like(t, 0))


relu6 = custom_jvp(_relu6)
relu6.defjvp(_relu6_rule)
relu6.__name__ = relu6.__qualname__ = "relu6"
relu6.__doc__ = """``min(max(x, 0), 6)`` element-wise; the derivative is ``0`` at both ``0`` and
    ``6``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.relu6(jnp.array([-1.0, 3.0, 9.0])).tolist()
        [0.0, 3.0, 6.0]
    """


@_jit()
def squareplus(x: Any, b: Any = 4) -> Any:
    """Squareplus, ``(x + sqrt(x**2 + b)) / 2``, a smooth ReLU-like activation.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.squareplus(jnp.array([0.0])).tolist()
        [1.0]
    """
    _util.check_arraylike("squareplus", x, b)
    x = _util.ensure_array(x)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@_jit()
def softplus(x: Any) -> Any:
    """Softplus, ``log(1 + exp(x))``, computed stably as ``logaddexp(x, 0)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> round(float(nn.softplus(jnp.array(0.0))), 6)
        0.693147
    """
    return jnp.logaddexp(x, 0)


@_jit()
def sparse_plus(x: Any) -> Any:
    """Sparse plus: ``0`` for ``x <= -1``, ``(x + 1)**2 / 4`` on ``(-1, 1)``, ``x`` for
    ``x >= 1``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.sparse_plus(jnp.array([-2.0, 0.0, 2.0])).tolist()
        [0.0, 0.25, 2.0]
    """
    x = _arr("sparse_plus", x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@_jit()
def soft_sign(x: Any) -> Any:
    """Soft sign, ``x / (|x| + 1)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.soft_sign(jnp.array([1.0, -3.0])).tolist()
        [0.5, -0.75]
    """
    x = _arr("soft_sign", x)
    return x / (jnp.abs(x) + 1)


@_jit()
def sigmoid(x: Any) -> Any:
    """Logistic sigmoid, ``1 / (1 + exp(-x))`` (``lax.logistic``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.sigmoid(jnp.array([0.0])).tolist()
        [0.5]
    """
    return lax.logistic(x)


@_jit()
def sparse_sigmoid(x: Any) -> Any:
    """Sparse sigmoid, ``clip((x + 1) / 2, 0, 1)``: the derivative of :func:`sparse_plus`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 2.0])).tolist()
        [0.0, 0.5, 1.0]
    """
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


@_jit()
def silu(x: Any) -> Any:
    """SiLU (swish), ``x * sigmoid(x)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.silu(jnp.array([0.0])).tolist()
        [0.0]
    """
    x = _arr("silu", x)
    return x * sigmoid(x)


swish = silu


@_jit()
def mish(x: Any) -> Any:
    """Mish, ``x * tanh(softplus(x))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.mish(jnp.array([0.0])).tolist()
        [0.0]
    """
    x = _arr("mish", x)
    return x * jnp.tanh(softplus(x))


@_jit()
def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.log_sigmoid(jnp.array([-1000.0])).tolist()
        [-1000.0]
    """
    x = _arr("log_sigmoid", x)
    return -softplus(-x)


@_jit()
def elu(x: Any, alpha: Any = 1.0) -> Any:
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    The exponential only ever sees non-positive inputs, so large ``x`` gives no ``inf`` (nor a
    NaN gradient).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.elu(jnp.array([1.0, 0.0])).tolist()
        [1.0, 0.0]
    """
    x = _arr("elu", x)
    safe = jnp.where(x > 0, 0.0, x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


@_jit()
def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """Leaky ReLU: ``x`` for ``x >= 0``, ``negative_slope * x`` otherwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.leaky_relu(jnp.array([-2.0, 2.0]), 0.5).tolist()
        [-1.0, 2.0]
    """
    x = _arr("leaky_relu", x)
    return jnp.where(x >= 0, x, negative_slope * x)


@_jit()
def hard_tanh(x: Any) -> Any:
    """Hard tanh: ``x`` clipped to ``[-1, 1]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.hard_tanh(jnp.array([-3.0, 0.5, 3.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    x = _arr("hard_tanh", x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@_jit()
def celu(x: Any, alpha: Any = 1.0) -> Any:
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.celu(jnp.array([2.0, 0.0])).tolist()
        [2.0, 0.0]
    """
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@_jit()
def selu(x: Any) -> Any:
    """Scaled ELU with the self-normalising constants (``scale * elu(x, alpha)``,
    ``alpha ~ 1.6733``, ``scale ~ 1.0507``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.selu(jnp.array([0.0])).tolist()
        [0.0]
    """
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit.

    ``approximate=True`` (default) uses the tanh form
    ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))``; ``approximate=False`` the exact
    ``x/2 * erfc(-x / sqrt(2))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.gelu(jnp.array([0.0]), approximate=False).tolist()
        [0.0]
    """
    (xa,) = _util.promote_args_inexact("gelu", x)
    if approximate:
        c = np.asarray(np.sqrt(2 / np.pi)).astype(xa.dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(c * (xa + 0.044715 * (xa ** 3))))
        return xa * cdf
    half = np.asarray(np.sqrt(0.5)).astype(xa.dtype)
    return jnp.asarray(0.5 * xa * lax.erfc(-xa * half), dtype=xa.dtype)


@_jit(static_argnames=("axis",))
def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: split ``x`` in two halves along ``axis``, return
    ``first * sigmoid(second)``. The size of ``axis`` must be even.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.glu(jnp.array([2.0, 0.0])).tolist()
        [1.0]
    """
    x = _arr("glu", x)
    ax = _util.canonical_axis(axis, x.ndim, "glu")
    if x.shape[ax] % 2:
        raise ValueError(f"glu: the size of axis {axis} must be divisible by 2, got shape "
                         f"{tuple(x.shape)}")
    a, b = jnp.split(x, 2, ax)
    return a * sigmoid(b)


@_jit()
def hard_sigmoid(x: Any) -> Any:
    """Hard sigmoid, ``relu6(x + 3) / 6``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.hard_sigmoid(jnp.array([0.0, 5.0])).tolist()
        [0.5, 1.0]
    """
    return relu6(x + 3.0) / 6.0


@_jit()
def hard_silu(x: Any) -> Any:
    """Hard SiLU (hard swish), ``x * hard_sigmoid(x)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.hard_silu(jnp.array([0.0, 4.0])).tolist()
        [0.0, 4.0]
    """
    x = _arr("hard_silu", x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


@_jit()
def _log1mexp(x: Any) -> Any:
    x = _arr("log1mexp", x)
    return jnp.where(x < math.log(2.0), jnp.log(-jnp.expm1(-x)), jnp.log1p(-jnp.exp(-x)))


def _log1mexp_rule(primals: tuple, tangents: tuple) -> tuple:
    (x,), (t,) = primals, tangents
    return log1mexp(x), t / jnp.expm1(x)


log1mexp = custom_jvp(_log1mexp)
log1mexp.defjvp(_log1mexp_rule)
log1mexp.__name__ = log1mexp.__qualname__ = "log1mexp"
log1mexp.__doc__ = """``log(1 - exp(-x))`` for ``x >= 0``, accurate for small and large ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> round(float(nn.log1mexp(jnp.array(1.0))), 5)
        -0.45868
    """


# ============================================================================ reductions

def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably (the maximum is shifted out).

    ``b`` scales the exponentials (broadcastable to ``a``); ``where`` masks elements out of the
    sum. With ``return_sign=True`` returns ``(log|sum|, sign(sum))``; otherwise a negative sum
    gives NaN. Gradients stay finite for large inputs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> float(nn.logsumexp(jnp.array([1000.0, 1000.0])))
        1000.6931762695312
    """
    return _logsumexp(a, _static_axis(axis), b, bool(keepdims), bool(return_sign), where)


def _static_axis(axis: Axis) -> Axis:
    return tuple(axis) if isinstance(axis, list) else axis


@_jit(static_argnames=("axis", "keepdims", "return_sign"))
def _logsumexp(a: Any, axis: Axis, b: Any, keepdims: bool, return_sign: bool, where: Any) -> Any:
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a_arr, b_arr = _util.promote_args_inexact("logsumexp", a, b)
        a_arr = jnp.where(b_arr != 0, a_arr, -np.inf)
    else:
        (a_arr,) = _util.promote_args_inexact("logsumexp", a)
        b_arr = None
    dims = _util.canonical_axes(axis, a_arr.ndim, "logsumexp")
    real = jnp.real(a_arr) if jnp.iscomplexobj(a_arr) else a_arr
    amax = jnp.max(real, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
    amax = lax.stop_gradient(lax.select(jnp.isfinite(amax), amax, lax.full_like(amax, 0)))
    amax_k = amax if keepdims else lax.expand_dims(amax, dims)
    exp_a = lax.exp(lax.sub(a_arr, amax_k.astype(a_arr.dtype)))
    if b_arr is not None:
        exp_a = lax.mul(exp_a, b_arr)
    sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    if return_sign or not jnp.iscomplexobj(a_arr):
        sumexp = jnp.abs(sumexp)
    out = lax.add(lax.log(sumexp), amax.astype(sumexp.dtype))
    if return_sign:
        return out, sign
    if b_arr is not None and not jnp.iscomplexobj(out):
        out = jnp.where(sign < 0, jnp.asarray(np.nan, dtype=out.dtype), out)
    return out


def _count(x: Any, axis: Axis, where: Any, keepdims: bool, dtype: Any) -> Any:
    shape = tuple(np.shape(x))
    if where is None:
        dims = _util.canonical_axes(axis, len(shape), "logmeanexp")
        n = math.prod(shape[d] for d in dims)
        return lax.convert_element_type(n, dtype)
    mask = jnp.broadcast_to(where, shape)
    return jnp.sum(mask, axis, dtype=dtype, keepdims=keepdims)


@_jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """``log(mean(exp(x)))`` over ``axis`` = ``logsumexp(x) - log(n)``, stable.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> float(nn.logmeanexp(jnp.array([2.0, 2.0])))
        2.0
    """
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    n = _count(x, axis, where, keepdims, lse.dtype)
    return lse - jnp.log(n)


def _max_init(initial: Any) -> Any:
    return -np.inf if initial is None else initial


@_jit(static_argnames=("axis",), inline=False)
def log_softmax(x: Any, axis: Axis = -1, where: Any = None, initial: Any = None) -> Any:
    """``x - logsumexp(x, axis, keepdims=True)``: log-probabilities along ``axis`` (an int, a
    tuple, or ``None`` for all axes), computed stably.

    ``where`` masks elements out (their output is ``-inf``). ``initial`` (a Fluxion extra, from
    older JAX) is the starting value of the max used for the shift.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.log_softmax(jnp.array([0.0, 0.0])).tolist()
        [-0.6931471824645996, -0.6931471824645996]
    """
    x = _arr("log_softmax", x)
    x_max = jnp.max(x, axis, where=where, initial=_max_init(initial), keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
    out = shifted - shifted_lse
    if where is not None:
        return jnp.where(where, out, -np.inf)
    return out


@_jit(static_argnames=("axis",))
def _softmax_impl(x: Any, axis: Axis, where: Any, initial: Any) -> Any:
    x_max = jnp.max(x, axis, where=where, initial=initial, keepdims=True)
    x_safe = x if where is None else jnp.where(where, x, initial)
    e = jnp.exp(x_safe - x_max)
    out = e / jnp.sum(e, axis, where=where, keepdims=True)
    if where is not None:
        out = jnp.where(where, out, 0)
    return out


def _softmax_rule(axis: Axis, primals: tuple, tangents: tuple) -> tuple:
    (x, where, initial), (t, _, _) = primals, tangents
    y = _softmax(x, axis, where, initial)
    return y, y * (t - jnp.sum(y * t, axis, where=where, keepdims=True))


_softmax = custom_jvp(_softmax_impl, nondiff_argnums=(1,))
_softmax.defjvp(_softmax_rule)


def softmax(x: Any, axis: Axis = -1, where: Any = None, initial: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple, or ``None`` for all axes),
    computed stably (the max is shifted out), with JAX's ``custom_jvp`` rule
    ``y * (t - sum(y * t))``.

    ``where`` masks elements out (their output is ``0``). ``initial`` (a Fluxion extra, from
    older JAX) is the starting value of the max.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.softmax(jnp.array([1000.0, 1000.0])).tolist()
        [0.5, 0.5]
    """
    return _softmax(x, _static_axis(axis), where, _max_init(initial))


@_jit(static_argnames=("axis", "algorithm"))
def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None, *, algorithm: str = "fast") -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``.

    ``mean``/``variance`` default to the (``where``-masked) statistics of ``x``. The variance is
    ``mean(x**2) - mean(x)**2`` clipped at 0 (``algorithm="fast"``, JAX's default) or the
    two-pass ``mean((x - mean)**2)`` (``algorithm="stable"``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.standardize(jnp.array([1.0, 3.0]), epsilon=0.0).tolist()
        [-1.0, 1.0]
    """
    _util.check_arraylike("standardize", x)
    for name, v in (("mean", mean), ("variance", variance), ("where", where)):
        if v is not None:
            _util.check_arraylike(f"standardize ({name})", v)
    if mean is None:
        mean = jnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True,
                                where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis, keepdims=True, where=where) - jnp.square(mean)
            variance = jnp.clip(variance, 0)
        else:
            raise ValueError(f"standardize: unknown algorithm {algorithm!r}; expected 'fast' or "
                             "'stable'")
    return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# ============================================================================ one_hot

@_jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x: Any, num_classes: int, dtype: Any, axis: int) -> Any:
    out_axis = _util.canonical_axis(axis, x.ndim + 1, "one_hot")
    lhs = lax.expand_dims(x, (out_axis,))
    rhs_shape = [1] * x.ndim
    rhs_shape.insert(out_axis, num_classes)
    rhs = lax.broadcasted_iota(x.dtype, tuple(rhs_shape), out_axis)
    return (lhs == rhs).astype(dtype)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """One-hot encode integer indices: a new axis ``axis`` of size ``num_classes`` with a 1 at
    each index (indices outside ``[0, num_classes)`` give all zeros). ``dtype`` defaults to the
    default float dtype.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> nn.one_hot(jnp.array([0, 2]), 3).tolist()
        [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError(f"one_hot: num_classes must be a concrete integer, got "
                        f"{num_classes!r}") from None
    if not isinstance(axis, int):
        raise NotImplementedError("one_hot: named axes (axis names of vmap/pmap) are not "
                                  "supported yet; pass an integer axis")
    xa = jnp.asarray(x)
    dt = dtypes.default_float_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    return _one_hot(xa, num_classes, np.dtype(dt), axis)


# ============================================================================ attention

def _large_negative(dtype: np.dtype) -> Any:
    top = min(float(jnp.finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * top, dtype=dtype)


def _ensure_4d(t: Any) -> Any:
    t = jnp.asarray(t)
    if t.ndim < 4:
        return jnp.expand_dims(t, tuple(range(4 - t.ndim)))
    return t


def _check(t: Any, shape: Sequence[int], dtype: Any, name: str) -> None:
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"dot_product_attention: {name} ndim should be {len(shape)}, but got "
                         f"{t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"dot_product_attention: {name} dtype should be {dtype}, but got "
                         f"{t.dtype}")
    for want, got in zip(shape, t.shape):
        if want != -1 and want != got:
            raise ValueError(f"dot_product_attention: {name} shape should be {tuple(shape)}, "
                             f"but got {tuple(t.shape)}")


def _grouped(t: Any, k: int, g: int) -> Any:
    """(B, N|1, T, S) -> (B, K|1, G|1, T, S) matching the grouped logits."""
    if t is None:
        return None
    tb, tn, tt, ts = t.shape
    if tn == 1:
        return jnp.reshape(t, (tb, 1, 1, tt, ts))
    return jnp.reshape(t, (tb, k, g, tt, ts))


def _attention_xla(q: Any, k: Any, v: Any, bias: Any, mask: Any, is_causal: bool, scale: float,
                   q_len: Any, kv_len: Any, window: tuple[int, int] | None,
                   return_residual: bool) -> Any:
    B, T, N, H = q.shape
    _, S, K, _ = k.shape
    G = N // K
    qg = jnp.reshape(q, (B, T, K, G, H))
    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", qg, k, preferred_element_type=logits_dtype)
    logits = logits * jnp.asarray(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)

    masked = (mask is not None or is_causal or q_len is not None or kv_len is not None
              or window is not None)
    if masked:
        keep = jnp.ones(logits.shape, dtype=bool)
        if mask is not None:
            keep = jnp.logical_and(keep, _grouped(mask, K, G))
        qpos = jnp.arange(T)[:, None]
        kpos = jnp.arange(S)[None, :]
        if is_causal:
            keep = jnp.logical_and(keep, kpos <= qpos)
        if window is not None:
            left, right = window
            keep = jnp.logical_and(keep, (qpos <= kpos + left) & (qpos >= kpos - right))
        if q_len is not None:
            keep = jnp.logical_and(
                keep, (jnp.arange(T)[None, :, None] < q_len[:, None, None])[:, None, None])
        if kv_len is not None:
            keep = jnp.logical_and(
                keep, (jnp.arange(S)[None, None, :] < kv_len[:, None, None])[:, None, None])
        logits = jnp.where(keep, logits, _large_negative(logits.dtype))

    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    out = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
    if q_len is not None:
        qmask = jnp.arange(T)[None, :] < q_len[:, None]
        out = out * qmask[:, :, None, None, None].astype(out.dtype)
    out = jnp.reshape(out, (B, T, N, H))
    if return_residual:
        lse = logsumexp(logits, axis=-1).astype(k.dtype)        # (B, K, G, T)
        lse = jnp.reshape(jnp.moveaxis(lse, -1, 1), (B, T, N))  # -> (B, T, K, G) -> (B, T, N)
        return out, lax.stop_gradient(lse)
    return out


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, ``softmax(Q K^T * scale + bias) V`` per head (the
    reference XLA implementation of ``jax.nn.dot_product_attention``).

    Shapes: ``query`` (B, T, N, H), ``key``/``value`` (B, S, K, H) with ``N`` a multiple of
    ``K`` (grouped-query attention); the leading batch dimension may be omitted. ``bias`` and
    ``mask`` (bool, True = keep) broadcast to (B, N, T, S). ``scale`` defaults to
    ``1/sqrt(H)``. ``is_causal`` keeps ``s <= t``; ``query_seq_lengths`` /
    ``key_value_seq_lengths`` (int32 (B,)) mask padding; ``local_window_size`` ``(left, right)``
    keeps ``t - left <= s <= t + right``. The softmax is computed in float32. With
    ``return_residual`` also returns the logsumexp of the logits, shape (B, T, N).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> q = jnp.ones((1, 2, 1, 4))
        >>> nn.dot_product_attention(q, q, q).shape
        (1, 2, 1, 4)
    """
    out_shape = tuple(jnp.asarray(query).shape)
    res_shape = out_shape[:-1]
    q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = _ensure_4d(bias) if bias is not None else None
    mask = _ensure_4d(mask) if mask is not None else None
    if query_seq_lengths is not None:
        query_seq_lengths = jnp.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, [B, S, K, H], k.dtype, "value")
    _check(q, [B, -1, -1, H], k.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(query_seq_lengths, [B], np.dtype("int32"), "query_seq_lengths")
    _check(key_value_seq_lengths, [B], np.dtype("int32"), "key_value_seq_lengths")
    if q.shape[-2] % K != 0:
        raise ValueError(f"dot_product_attention: the number of query heads must be a multiple "
                         f"of key/value heads, but got {q.shape[-2]} vs {K}")
    for name, t in (("bias", bias), ("mask", mask)):
        if t is not None and t.shape[1] not in (1, q.shape[-2]):
            raise ValueError(f"dot_product_attention: {name} must have 1 or N={q.shape[-2]} "
                             f"heads, got shape {tuple(t.shape)}")
    scale_val = (1.0 / np.sqrt(H)) if scale is None else scale
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("dot_product_attention: implementation='cudnn' is not "
                                      "available in Fluxion; use 'xla' or None")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out = _attention_xla(q, k, v, bias, mask, is_causal, scale_val, query_seq_lengths,
                         key_value_seq_lengths, local_window_size, return_residual)
    if return_residual:
        o, r = out
        return jnp.reshape(o, out_shape), jnp.reshape(r, res_shape)
    return jnp.reshape(out, out_shape)
