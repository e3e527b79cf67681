"""The optimizers: each is a ``chain`` of building blocks, named and parameterised as in optax."""


import warnings
from collections.abc import Callable
from typing import Any

from fluxion_optim import _adaptive as ad
from fluxion_optim import _base
from fluxion_optim import _scaling as sc
from fluxion_optim._factorized import scale_by_factored_rms
from fluxion_optim._linesearch import scale_by_zoom_linesearch
from fluxion_optim.transforms import (
    add_decayed_weights,
    add_noise,
    chain,
    clip_by_block_rms,
    ema,
    masked,
    trace,
)

__all__ = [
    "MaskOrFn", "adabelief", "adadelta", "adafactor", "adagrad", "adam", "adamax", "adamaxw",
    "adamw", "adan", "amsgrad", "fromage", "lamb", "lars", "lbfgs", "lion", "nadam", "nadamw",
    "noisy_sgd", "novograd", "optimistic_adam", "optimistic_adam_v2",
    "optimistic_gradient_descent", "polyak_sgd", "radam", "rmsprop", "rprop", "sgd",
    "sign_sgd", "signum", "sm3", "yogi",
]

MaskOrFn = Any | Callable[[Any], Any] | None
GT = _base.GradientTransformationExtraArgs
LR = _base.ScalarOrSchedule


def adabelief(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16,
              eps_root: Any = 1e-16, *, nesterov: bool = False) -> GT:
    """The AdaBelief optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adabelief(1e-3)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)))
    """
    return chain(ad.scale_by_belief(b1=b1, b2=b2, eps=eps, eps_root=eps_root, nesterov=nesterov),
                 sc.scale_by_learning_rate(learning_rate))


def adadelta(learning_rate: LR | None = None, rho: Any = 0.9, eps: Any = 1e-6,
             weight_decay: LR = 0.0, weight_decay_mask: MaskOrFn = None) -> GT:
    """The AdaDelta optimizer (``learning_rate=None`` means no extra scaling).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adadelta(1.0)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 ad.scale_by_adadelta(rho=rho, eps=eps), sc.scale_by_learning_rate(learning_rate))


def adafactor(learning_rate: LR | None = None, min_dim_size_to_factor: int = 128,
              decay_rate: Any = 0.8, decay_offset: Any = 0,
              multiply_by_parameter_scale: bool = True, clipping_threshold: Any = 1.0,
              momentum: Any = None, dtype_momentum: Any = "float32",
              weight_decay_rate: LR | None = None, eps: Any = 1e-30, factored: bool = True,
              weight_decay_mask: MaskOrFn = None) -> GT:
    """The Adafactor optimizer (factored second moments, update clipping, relative steps).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adafactor(1e-2)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    tx = [scale_by_factored_rms(factored, decay_rate, decay_offset, min_dim_size_to_factor, eps)]
    if clipping_threshold is not None:
        tx.append(clip_by_block_rms(clipping_threshold))
    if learning_rate is not None:
        tx.append(sc.scale_by_learning_rate(learning_rate, flip_sign=False))
    if multiply_by_parameter_scale:
        tx.append(sc.scale_by_param_block_rms())
    if momentum is not None:
        tx.append(ema(momentum, debias=False, accumulator_dtype=dtype_momentum))
    if weight_decay_rate is not None:
        tx.append(add_decayed_weights(weight_decay_rate, mask=weight_decay_mask))
    tx.append(sc.scale(-1))
    return chain(*tx)


def adagrad(learning_rate: LR, initial_accumulator_value: Any = 0.1, eps: Any = 1e-7) -> GT:
    """The AdaGrad optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adagrad(1e-1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)))
    """
    return chain(ad.scale_by_rss(initial_accumulator_value=initial_accumulator_value, eps=eps),
                 sc.scale_by_learning_rate(learning_rate))


def adam(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
         eps_root: Any = 0.0, mu_dtype: Any = None, *, nesterov: bool = False) -> GT:
    """The Adam optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adam(0.1)
        >>> u, s = opt.update(jnp.array([2.0]), opt.init(jnp.zeros(1)))
        >>> u.tolist()  # doctest: +ELLIPSIS
        [-0.099999...]
    """
    return chain(ad.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                  nesterov=nesterov),
                 sc.scale_by_learning_rate(learning_rate))


def nadam(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
          eps_root: Any = 0.0, mu_dtype: Any = None, *, nesterov: bool = True) -> GT:
    """NAdam: Adam with Nesterov momentum (``adam(..., nesterov=True)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.nadam(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return adam(learning_rate, b1, b2, eps, eps_root, mu_dtype, nesterov=nesterov)


def adamw(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
          eps_root: Any = 0.0, mu_dtype: Any = None, weight_decay: LR = 1e-4,
          mask: MaskOrFn = None, *, nesterov: bool = False) -> GT:
    """AdamW: Adam with decoupled weight decay.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adamw(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
    """
    return chain(ad.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                  nesterov=nesterov),
                 add_decayed_weights(weight_decay, mask), sc.scale_by_learning_rate(learning_rate))


def nadamw(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
           eps_root: Any = 0.0, mu_dtype: Any = None, weight_decay: LR = 1e-4,
           mask: MaskOrFn = None, *, nesterov: bool = True) -> GT:
    """NAdamW: AdamW with Nesterov momentum.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.nadamw(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
    """
    return adamw(learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay, mask,
                 nesterov=nesterov)


def adan(learning_rate: LR, b1: Any = 0.98, b2: Any = 0.92, b3: Any = 0.99, eps: Any = 1e-8,
         eps_root: Any = 1e-8, weight_decay: LR = 0.0, mask: MaskOrFn = None) -> GT:
    """The Adan optimizer (adaptive Nesterov momentum).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adan(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
    """
    return chain(ad.scale_by_adan(b1=b1, b2=b2, b3=b3, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay, mask), sc.scale_by_learning_rate(learning_rate))


def lion(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.99, mu_dtype: Any = None,
         weight_decay: LR = 1e-3, mask: MaskOrFn = None) -> GT:
    """The Lion optimizer (sign of interpolated momentum, decoupled weight decay).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.lion(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
        >>> u.tolist()
        [-0.10000000149011612]
    """
    return chain(ad.scale_by_lion(b1=b1, b2=b2, mu_dtype=mu_dtype),
                 add_decayed_weights(weight_decay, mask), sc.scale_by_learning_rate(learning_rate))


def amsgrad(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
            eps_root: Any = 0.0, mu_dtype: Any = None, bias_correction_mu: bool = True,
            bias_correction_nu: bool = True) -> GT:
    """The AMSGrad optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.amsgrad(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ad.scale_by_amsgrad(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                     bias_correction_mu=bias_correction_mu,
                                     bias_correction_nu=bias_correction_nu),
                 sc.scale_by_learning_rate(learning_rate))


def fromage(learning_rate: LR, min_norm: Any = 1e-6) -> GT:
    """The Frobenius matched gradient descent (Fromage) optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.fromage(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.ones(1))
    """
    if not callable(learning_rate):
        mult = 1 / (1 + learning_rate ** 2) ** 0.5
        return chain(sc.scale_by_trust_ratio(min_norm),
                     sc.scale_by_learning_rate(learning_rate * mult),
                     add_decayed_weights(mult - 1))

    def mult_lr(count):
        return 1 / (1 + learning_rate(count) ** 2) ** 0.5

    return chain(sc.scale_by_trust_ratio(min_norm),
                 sc.scale_by_learning_rate(lambda c: mult_lr(c) * learning_rate(c)),
                 add_decayed_weights(lambda c: mult_lr(c) - 1))


def lars(learning_rate: LR, weight_decay: LR = 0.0, weight_decay_mask: MaskOrFn = True,
         trust_coefficient: Any = 0.001, eps: Any = 0.0, trust_ratio_mask: MaskOrFn = True,
         momentum: Any = 0.9, nesterov: bool = False) -> GT:
    """The LARS optimizer (layer-wise trust ratios with momentum).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.lars(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.ones(1))
    """
    return chain(add_decayed_weights(weight_decay, mask=weight_decay_mask),
                 masked(sc.scale_by_trust_ratio(trust_coefficient=trust_coefficient, eps=eps),
                        mask=trust_ratio_mask),
                 sc.scale_by_learning_rate(learning_rate), trace(decay=momentum, nesterov=nesterov))


def lamb(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-6,
         eps_root: Any = 0.0, weight_decay: LR = 0.0, mask: MaskOrFn = None) -> GT:
    """The LAMB optimizer (Adam with layer-wise trust ratios).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.lamb(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.ones(1))
    """
    return chain(ad.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                 add_decayed_weights(weight_decay=weight_decay, mask=mask),
                 sc.scale_by_trust_ratio(), sc.scale_by_learning_rate(learning_rate))


def noisy_sgd(learning_rate: LR, eta: Any = 0.01, gamma: Any = 0.55, key: Any = None, *,
              seed: int | None = None) -> GT:
    """SGD with annealed Gaussian gradient noise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.noisy_sgd(0.1, key=0)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(add_noise(eta, gamma, key, seed=seed), sc.scale_by_learning_rate(learning_rate))


def sign_sgd(learning_rate: LR) -> GT:
    """SignSGD: steps of size ``learning_rate`` along the sign of the gradient.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.sign_sgd(0.1)
        >>> opt.update(jnp.array([-3.0]), opt.init(jnp.zeros(1)))[0].tolist()
        [0.10000000149011612]
    """
    return chain(sc.scale_by_sign(), sc.scale_by_learning_rate(learning_rate))


def signum(learning_rate: LR, beta: Any = 0.9, accumulator_dtype: Any = None) -> GT:
    """Signum: the sign of the momentum.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.signum(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ema(beta, debias=False, accumulator_dtype=accumulator_dtype), sc.scale_by_sign(),
                 sc.scale_by_learning_rate(learning_rate))


def novograd(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.25, eps: Any = 1e-6,
             eps_root: Any = 0.0, weight_decay: LR = 0.0) -> GT:
    """The NovoGrad optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.novograd(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
    """
    return chain(ad.scale_by_novograd(b1=b1, b2=b2, eps=eps, eps_root=eps_root,
                                      weight_decay=weight_decay),
                 sc.scale_by_learning_rate(learning_rate))


def optimistic_gradient_descent(learning_rate: LR, alpha: LR = 1.0, beta: LR = 1.0) -> GT:
    """Optimistic gradient descent (for min-max games).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.optimistic_gradient_descent(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(sc.scale_by_optimistic_gradient(alpha=alpha, beta=beta),
                 sc.scale_by_learning_rate(learning_rate))


def optimistic_adam(learning_rate: Any, optimism: Any = None, b1: Any = 0.9, b2: Any = 0.999,
                    eps: Any = 1e-8, eps_root: Any = 0.0, mu_dtype: Any = None, *,
                    nesterov: bool = True) -> GT:
    """Optimistic Adam (optax's first version: ``learning_rate`` is the optimistic step
    ``alpha`` and must be a number; prefer ``optimistic_adam_v2``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.optimistic_adam(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    warnings.warn("`optimistic_adam` is deprecated, please use `optimistic_adam_v2` instead.",
                  category=DeprecationWarning, stacklevel=2)
    if callable(learning_rate):
        raise ValueError("optimistic_adam: `learning_rate` must be a number (schedules are "
                         "supported by optimistic_adam_v2)")
    if optimism is None:
        optimism = learning_rate
    return chain(ad.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                  nesterov=nesterov),
                 sc.scale_by_optimistic_gradient(alpha=learning_rate, beta=optimism),
                 sc.scale_by_learning_rate(1.0))


def optimistic_adam_v2(learning_rate: LR, *, alpha: Any = 1.0, beta: Any = 1.0, b1: Any = 0.9,
                       b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                       mu_dtype: Any = None, nesterov: bool = True) -> GT:
    """Optimistic Adam with a separate learning rate (number or schedule).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.optimistic_adam_v2(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ad.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, mu_dtype=mu_dtype,
                                  nesterov=nesterov),
                 sc.scale_by_optimistic_gradient(alpha=alpha, beta=beta),
                 sc.scale_by_learning_rate(learning_rate))


def radam(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
          eps_root: Any = 0.0, threshold: Any = 5.0, *, nesterov: bool = False) -> GT:
    """Rectified Adam.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.radam(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ad.scale_by_radam(b1=b1, b2=b2, eps=eps, eps_root=eps_root, threshold=threshold,
                                   nesterov=nesterov),
                 sc.scale_by_learning_rate(learning_rate))


def rmsprop(learning_rate: LR, decay: Any = 0.9, eps: Any = 1e-8, initial_scale: Any = 0.0,
            eps_in_sqrt: bool = True, centered: bool = False, momentum: Any = None,
            nesterov: bool = False, bias_correction: bool = False) -> GT:
    """RMSProp (``centered=True`` divides by a standard deviation estimate).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.rmsprop(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    scaler = ad.scale_by_stddev if centered else ad.scale_by_rms
    return chain(scaler(decay=decay, eps=eps, initial_scale=initial_scale,
                        eps_in_sqrt=eps_in_sqrt, bias_correction=bias_correction),
                 sc.scale_by_learning_rate(learning_rate),
                 trace(decay=momentum, nesterov=nesterov) if momentum is not None
                 else _base.identity())


def sgd(learning_rate: LR, momentum: Any = None, nesterov: bool = False,
        accumulator_dtype: Any = None) -> GT:
    """Stochastic gradient descent, with optional (Nesterov) momentum.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.sgd(0.5)
        >>> opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))[0].tolist()
        [-0.5]
    """
    first = (trace(decay=momentum, nesterov=nesterov, accumulator_dtype=accumulator_dtype)
             if momentum is not None else _base.identity())
    return chain(first, sc.scale_by_learning_rate(learning_rate))


def sm3(learning_rate: Any, momentum: Any = 0.9) -> GT:
    """The SM3 optimizer (memory-efficient adaptive steps).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.sm3(0.1)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)))
    """
    return chain(ad.scale_by_sm3(momentum), sc.scale(-learning_rate))


def yogi(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-3) -> GT:
    """The Yogi optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.yogi(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ad.scale_by_yogi(b1=b1, b2=b2, eps=eps), sc.scale_by_learning_rate(learning_rate))


def adamax(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8) -> GT:
    """The Adamax optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adamax(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(ad.scale_by_adamax(b1=b1, b2=b2, eps=eps), sc.scale_by_learning_rate(learning_rate))


def adamaxw(learning_rate: LR, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8,
            weight_decay: LR = 1e-4, mask: MaskOrFn = None) -> GT:
    """Adamax with decoupled weight decay.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.adamaxw(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)), jnp.zeros(1))
    """
    return chain(ad.scale_by_adamax(b1=b1, b2=b2, eps=eps), add_decayed_weights(weight_decay, mask),
                 sc.scale_by_learning_rate(learning_rate))


def rprop(learning_rate: Any, eta_minus: Any = 0.5, eta_plus: Any = 1.2,
          min_step_size: Any = 1e-6, max_step_size: Any = 50.0) -> GT:
    """The Rprop optimizer.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.rprop(0.1)
        >>> u, s = opt.update(jnp.ones(1), opt.init(jnp.zeros(1)))
    """
    return chain(sc.scale_by_rprop(learning_rate=learning_rate, eta_minus=eta_minus,
                                   eta_plus=eta_plus, min_step_size=min_step_size,
                                   max_step_size=max_step_size),
                 sc.scale(-1.0))


def polyak_sgd(max_learning_rate: Any = 1.0, scaling: LR = 1.0, f_min: Any = 0.0,
               eps: Any = 0.0, variant: str = "sps") -> GT:
    """SGD with the Polyak step size; ``update`` needs ``value=`` (the loss).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.polyak_sgd()
        >>> opt.update(jnp.array([2.0]), opt.init(jnp.zeros(1)), value=2.0)[0].tolist()
        [-1.0]
    """
    return chain(sgd(learning_rate=scaling),
                 sc.scale_by_polyak(max_learning_rate=max_learning_rate, f_min=f_min, eps=eps,
                                    variant=variant))


_DEFAULT_LINESEARCH = object()


def lbfgs(learning_rate: LR | None = None, memory_size: int = 10,
          scale_init_precond: bool = True,
          linesearch: Any = _DEFAULT_LINESEARCH) -> GT:
    """L-BFGS with (by default) a zoom line search satisfying the strong Wolfe conditions;
    ``update`` then needs ``value=``, ``grad=`` and ``value_fn=``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.lbfgs(learning_rate=0.1, linesearch=None)
        >>> u, s = opt.update(jnp.ones(2), opt.init(jnp.zeros(2)), jnp.zeros(2))
    """
    if linesearch is _DEFAULT_LINESEARCH:
        linesearch = scale_by_zoom_linesearch(max_linesearch_steps=20,
                                              initial_guess_strategy="one")
    base_scaling = sc.scale(-1.0) if learning_rate is None else sc.scale_by_learning_rate(
        learning_rate)
    return chain(sc.scale_by_lbfgs(memory_size=memory_size,
                                   scale_init_precond=scale_init_precond),
                 base_scaling, linesearch if linesearch is not None else _base.identity())
