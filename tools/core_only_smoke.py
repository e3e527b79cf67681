"""Smoke test for an environment holding only the core package (``pip install packages/fluxion``).

Run by ``nox -s core_only`` inside a fresh virtualenv: the core must import and work with nothing
but its own dependencies (numpy, jaxlib, ml_dtypes, opt_einsum), and reaching for an ecosystem
package must fail with an ImportError that names the distribution to install.
"""

from __future__ import annotations

import importlib.util
import sys


def main() -> int:
    import numpy as np

    import fluxion as jax
    import fluxion.numpy as jnp

    for name in ("jax", "fluxion_scipy", "fluxion_nn", "fluxion_optim", "fluxion_rl", "fluxion_md",
                 "pytest"):  # (scipy comes with jaxlib itself)
        if importlib.util.find_spec(name) is not None:
            print(f"core_only: {name} is installed, so this is not a core-only environment")
            return 1

    def f(x):
        return jnp.sum(jnp.sin(x) ** 2)

    x = jnp.arange(3.0)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.sum(np.sin(np.arange(3.0)) ** 2), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), np.sin(2 * np.arange(3.0)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.vmap(jnp.dot)(x[:, None], x[:, None])), np.arange(3.0) ** 2)
    key = jax.random.PRNGKey(0)
    assert jax.random.normal(key, (4,)).shape == (4,)

    try:
        jax.scipy.special.logsumexp  # noqa: B018 - the attribute access is the test
    except ImportError as e:
        if "fluxion-scipy" not in str(e):
            print(f"core_only: fluxion.scipy raised an ImportError that does not name fluxion-scipy: {e}")
            return 1
    else:
        print("core_only: fluxion.scipy resolved without fluxion-scipy installed")
        return 1
    print("core_only: ok (fluxion", getattr(jax, "__version__", "?"), "on python", sys.version.split()[0] + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
