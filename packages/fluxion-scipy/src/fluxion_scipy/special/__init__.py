"""SciPy's special functions (mirrors ``jax.scipy.special``): values as ``scipy.special``,
derivatives as JAX defines them, all jittable and vmappable.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_scipy import special
    >>> float(special.logsumexp(jnp.zeros(2)))
    0.693...
"""

from __future__ import annotations

from fluxion_scipy.special._bessel import bessel_jn, i0, i0e, i1, i1e, sph_harm_y
from fluxion_scipy.special._error import (
    dawsn,
    erf,
    erfc,
    erfcx,
    erfinv,
    fresnel,
    log_ndtr,
    ndtr,
    ndtri,
    owens_t,
    wofz,
)
from fluxion_scipy.special._expint import exp1, expi, expn, sici, spence
from fluxion_scipy.special._gamma import (
    bernoulli,
    beta,
    betaln,
    comb,
    digamma,
    factorial,
    gamma,
    gammainc,
    gammaincc,
    gammaln,
    gammasgn,
    loggamma,
    multigammaln,
    poch,
    polygamma,
)
from fluxion_scipy.special._hyper import hyp1f1, hyp2f1
from fluxion_scipy.special._log import (
    boxcox,
    boxcox1p,
    entr,
    expit,
    kl_div,
    log_softmax,
    logit,
    logsumexp,
    rel_entr,
    softmax,
    xlog1py,
    xlogy,
)
from fluxion_scipy.special._zeta import betainc, zeta

__all__ = [
    "bernoulli", "bessel_jn", "beta", "betainc", "betaln", "boxcox", "boxcox1p", "comb", "dawsn",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp1", "expi", "expit", "expn",
    "factorial", "fresnel", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "hyp1f1",
    "hyp2f1", "i0", "i0e", "i1", "i1e", "kl_div", "log_ndtr", "log_softmax", "loggamma", "logit",
    "logsumexp", "multigammaln", "ndtr", "ndtri", "owens_t", "poch", "polygamma", "rel_entr",
    "sici", "softmax", "spence", "sph_harm_y", "wofz", "xlog1py", "xlogy", "zeta",
]
