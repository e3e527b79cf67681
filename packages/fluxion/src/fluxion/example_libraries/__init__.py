"""``fluxion.example_libraries``: JAX's two small reference libraries, ``stax`` (neural network
layers as ``(init_fun, apply_fun)`` pairs) and ``optimizers`` (``(init, update, get_params)``
triples), which JAX's own example programs use.

Example:
    >>> from fluxion.example_libraries import optimizers, stax
    >>> init_fun, apply_fun = stax.serial(stax.Dense(4), stax.Relu)
    >>> opt_init, opt_update, get_params = optimizers.sgd(0.1)
"""

from fluxion.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]
