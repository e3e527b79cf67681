"""``stax``: neural network layers as pairs of pure functions (JAX's ``example_libraries.stax``).

A layer is ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) -> (output_shape, params)``
and ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` for layers that need
randomness, such as ``Dropout``). Combinators (``serial``, ``parallel``, ``shape_dependent``)
build layers from layers. Keys are split as JAX's stax splits them, so the same key gives the
same parameters.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.example_libraries import stax
    >>> init_fun, apply_fun = stax.serial(stax.Dense(3), stax.Relu, stax.Dense(2))
    >>> out_shape, params = init_fun(fluxion.random.PRNGKey(0), (-1, 5))
    >>> out_shape, apply_fun(params, jnp.ones((4, 5))).shape
    ((-1, 2), (4, 2))
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from fluxion.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose", "ConvTranspose",
    "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax", "Softmax", "Softplus",
    "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool", "SumPool", "AvgPool", "Flatten",
    "Identity", "FanOut", "FanInSum", "FanInConcat", "Dropout", "serial", "parallel",
    "shape_dependent", "glorot", "randn", "logsoftmax", "glorot_normal", "normal", "ones", "zeros",
    "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu", "selu", "gelu",
    "standardize",
]

Layer = tuple[Callable[..., Any], Callable[..., Any]]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim: int, W_init: Callable = glorot_normal(), b_init: Callable = normal()) -> Layer:
    """A fully connected layer: ``inputs @ W + b`` with ``W`` of shape ``(in, out_dim)``.

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.Dense(7)
        >>> init_fun(fluxion.random.PRNGKey(0), (2, 3))[0]
        (2, 7)
    """
    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        k_w, k_b = random.split(rng)
        params = (W_init(k_w, (input_shape[-1], out_dim)), b_init(k_b, (out_dim,)))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        w, b = params
        return jnp.dot(inputs, w) + b

    return init_fun, apply_fun


def _kernel_shape(rhs_spec: str, lhs_spec: str, out_chan: int, filter_shape: Sequence[int],
                  input_shape: Sequence[int]) -> list[int]:
    spatial = iter(filter_shape)
    in_chan = input_shape[lhs_spec.index("C")]
    return [out_chan if c == "O" else in_chan if c == "I" else next(spatial) for c in rhs_spec]


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                padding: Any = "VALID", W_init: Callable | None = None,
                b_init: Callable = normal(1e-6)) -> Layer:
    """A convolution with the layouts ``dimension_numbers = (lhs, rhs, out)`` (strings).

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.Conv(4, (3, 3), padding="SAME")
        >>> init_fun(fluxion.random.PRNGKey(0), (1, 8, 8, 2))[0]
        (1, 8, 8, 4)
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    unit = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else unit
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        kernel = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
        out_shape = lax.conv_general_shape_tuple(input_shape, kernel, strides, padding,
                                                 dimension_numbers)
        k_w, k_b = random.split(rng)
        bias = [out_chan if c == "C" else 1 for c in out_spec]
        return out_shape, (W_init(k_w, kernel), b_init(k_b, bias))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        w, b = params
        return lax.conv_general_dilated(inputs, w, strides, padding, unit, unit,
                                        dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: Any = "VALID", W_init: Callable | None = None,
                         b_init: Callable = normal(1e-6)) -> Layer:
    """A transposed convolution with the layouts ``dimension_numbers`` (strings).

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME")
        >>> init_fun(fluxion.random.PRNGKey(0), (1, 4, 4, 3))[0]
        (1, 8, 8, 2)
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    unit = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else unit
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        kernel = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
        out_shape = lax.conv_transpose_shape_tuple(input_shape, kernel, strides, padding,
                                                   dimension_numbers)
        k_w, k_b = random.split(rng)
        bias = [out_chan if c == "C" else 1 for c in out_spec]
        return out_shape, (W_init(k_w, kernel), b_init(k_b, bias))

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        w, b = params
        return lax.conv_transpose(inputs, w, strides, padding,
                                  dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis: Any = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True, beta_init: Callable = zeros, gamma_init: Callable = ones
              ) -> Layer:
    """Normalisation over ``axis`` with the batch's own statistics, then ``gamma * z + beta``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.example_libraries import stax
        >>> init_fun, apply_fun = stax.BatchNorm(axis=(0,))
        >>> _, params = init_fun(fluxion.random.PRNGKey(0), (4, 3))
        >>> apply_fun(params, jnp.arange(12.0).reshape(4, 3)).shape
        (4, 3)
    """
    axes = (axis,) if jnp.isscalar(axis) else tuple(axis)

    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axes)
        k_beta, k_gamma = random.split(rng)
        beta = beta_init(k_beta, shape) if center else ()
        gamma = gamma_init(k_gamma, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        expand = tuple(None if i in axes else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axes, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z

    return init_fun, apply_fun


def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.example_libraries import stax
        >>> _, apply_fun = stax.elementwise(jnp.abs)
        >>> apply_fun((), jnp.array([-1.0])).tolist()
        [1.0]
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _window_with_batch_and_features(values: tuple, spec: str | None, fill: int) -> tuple:
    """``values`` for the spatial dimensions, with ``fill`` inserted at N and C."""
    n_spatial = len(values)
    positions = (0, n_spatial + 1) if spec is None else (spec.index("N"), spec.index("C"))
    out = list(values)
    for i in sorted(positions):
        out.insert(i, fill)
    return tuple(out)


def _pool(reducer: Callable[..., Any], init_val: float, average: bool) -> Callable[..., Layer]:
    def layer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
              padding: Any = "VALID", spec: str | None = None) -> Layer:
        window_shape = tuple(window_shape)
        spatial_strides = tuple(strides) if strides else (1,) * len(window_shape)
        dims = _window_with_batch_and_features(window_shape, spec, 1)
        steps = _window_with_batch_and_features(spatial_strides, spec, 1)

        def init_fun(rng: Any, input_shape: tuple) -> tuple:
            pads = lax.padtype_to_pads(input_shape, dims, steps, padding)
            unit = (1,) * len(dims)
            return lax.reduce_window_shape_tuple(input_shape, dims, steps, pads, unit, unit), ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = lax.reduce_window(inputs, init_val, reducer, dims, steps, padding)
            if not average:
                return out
            # divide by how many (unpadded) inputs each window covered
            skip = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
            spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in skip)
            counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0.0, lax.add,
                                       window_shape, spatial_strides, padding)
            for i in sorted(skip):
                counts = jnp.expand_dims(counts, i)
            return out / counts

        return init_fun, apply_fun

    kind = "average" if average else ("maximum" if reducer is lax.max else "sum")
    layer.__doc__ = (f"A pooling layer: the {kind} over windows of ``window_shape`` (spatial "
                     "dimensions; ``spec`` such as ``'NHWC'`` says where N and C are, by default "
                     "first and last) with ``strides`` and ``padding``.")
    return layer


MaxPool = _pool(lax.max, -jnp.inf, average=False)
SumPool = _pool(lax.add, 0.0, average=False)
AvgPool = _pool(lax.add, 0.0, average=True)


def _flatten() -> Layer:
    def init_fun(rng: Any, input_shape: tuple) -> tuple:
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()
Identity = elementwise(lambda x: x)


def FanOut(num: int) -> Layer:
    """A layer sending its input to ``num`` branches (a list of ``num`` copies).

    Example:
        >>> from fluxion.example_libraries import stax
        >>> stax.FanOut(2)[0](None, (3,))[0]
        [(3,), (3,)]
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return [input_shape] * num, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return input_shape[0], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return sum(inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis: int = -1) -> Layer:
    """A layer concatenating its list of inputs along ``axis``.

    Example:
        >>> from fluxion.example_libraries import stax
        >>> stax.FanInConcat()[0](None, [(2, 3), (2, 4)])[0]
        (2, 7)
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        first = tuple(input_shape[0])
        ax = axis % len(first)
        size = sum(s[ax] for s in input_shape)
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """Dropout, where ``rate`` is the probability of *keeping* a unit (JAX's stax convention):
    kept units are scaled by ``1 / rate``. ``apply_fun`` needs ``rng=`` in ``'train'`` mode.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion.example_libraries import stax
        >>> _, apply_fun = stax.Dropout(0.5)
        >>> apply_fun((), jnp.ones(4), rng=fluxion.random.PRNGKey(0)).shape
        (4,)
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng)` where `rng` is a PRNG key "
                             "(e.g. from `fluxion.random.key`).")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


def serial(*layers: Layer) -> Layer:
    """The layers applied one after the other.

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.serial(stax.Dense(5), stax.Tanh)
        >>> init_fun(fluxion.random.PRNGKey(0), (1, 2))[0]
        (1, 5)
    """
    inits = [layer[0] for layer in layers]
    applies = [layer[1] for layer in layers]

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        params = []
        for init in inits:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else [None] * len(layers)
        for fun, p, r in zip(applies, params, rngs):
            inputs = fun(p, inputs, rng=r, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """The layers applied side by side: the i-th to the i-th of a sequence of inputs.

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.parallel(stax.Dense(2), stax.Identity)
        >>> init_fun(fluxion.random.PRNGKey(0), [(1, 3), (1, 4)])[0]
        ((1, 2), (1, 4))
    """
    inits = [layer[0] for layer in layers]
    applies = [layer[1] for layer in layers]

    def init_fun(rng: Any, input_shape: Any) -> tuple:
        rngs = random.split(rng, len(layers))
        results = [init(r, s) for init, r, s in zip(inits, rngs, input_shape)]
        return tuple(r[0] for r in results), tuple(r[1] for r in results)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else [None] * len(layers)
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(applies, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[tuple], Layer]) -> Layer:
    """A layer built by ``make_layer(input_shape)`` once the input shape is known.

    Example:
        >>> import fluxion
        >>> from fluxion.example_libraries import stax
        >>> init_fun, _ = stax.shape_dependent(lambda shape: stax.Dense(shape[-1]))
        >>> init_fun(fluxion.random.PRNGKey(0), (1, 6))[0]
        (1, 6)
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
