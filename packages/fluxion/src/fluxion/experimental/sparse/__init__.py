"""``fluxion.experimental.sparse`` (JAX's ``jax.experimental.sparse``): the ``BCOO`` sparse array
(batched coordinate format: ``data`` and ``indices`` of the stored elements, with batch and
dense dimensions) and the ``BCSR`` matrix (compressed rows), their operations (``bcoo_dot_general`` and ``@``, elementwise products, sums,
reshapes, slices, concatenation, broadcasting), and ``sparsify``, which runs a function written
for dense arrays on sparse ones. Gradients flow through ``data``; ``jit`` and ``vmap`` take BCOO
arrays as arguments. What JAX has that this lacks is listed in docs/guide/coming-from-jax.md.

Example:
    >>> import fluxion.numpy as jnp
    >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> m.nse, (m @ jnp.array([1.0, 1.0])).tolist()
    (2, [2.0, 3.0])
"""

from fluxion.experimental.sparse._base import JAXSparse
from fluxion.experimental.sparse.ad import grad, jacfwd, jacobian, jacrev, value_and_grad
from fluxion.experimental.sparse.api import empty, eye, todense, todense_p
from fluxion.experimental.sparse.bcoo import (
    BCOO,
    bcoo_eliminate_zeros,
    bcoo_extract,
    bcoo_fromdense,
    bcoo_sort_indices,
    bcoo_sum_duplicates,
    bcoo_todense,
    bcoo_transpose,
    bcoo_update_layout,
)
from fluxion.experimental.sparse.bcsr import (
    BCSR,
    bcsr_broadcast_in_dim,
    bcsr_concatenate,
    bcsr_dot_general,
    bcsr_eliminate_zeros,
    bcsr_extract,
    bcsr_fromdense,
    bcsr_sum_duplicates,
    bcsr_todense,
)
from fluxion.experimental.sparse.products import (
    bcoo_dot_general,
    bcoo_dot_general_sampled,
    bcoo_multiply_dense,
    bcoo_multiply_sparse,
    bcoo_reduce_sum,
)
from fluxion.experimental.sparse.random import random_bcoo
from fluxion.experimental.sparse.shape_ops import (
    bcoo_broadcast_in_dim,
    bcoo_concatenate,
    bcoo_dynamic_slice,
    bcoo_gather,
    bcoo_reshape,
    bcoo_rev,
    bcoo_slice,
    bcoo_squeeze,
)
from fluxion.experimental.sparse.transform import sparsify
from fluxion.experimental.sparse.util import (
    CuSparseEfficiencyWarning,
    SparseEfficiencyError,
    SparseEfficiencyWarning,
)

__all__ = ["BCOO", "BCSR", "JAXSparse", "CuSparseEfficiencyWarning", "SparseEfficiencyError",
           "SparseEfficiencyWarning", "bcoo_broadcast_in_dim", "bcoo_concatenate",
           "bcoo_dot_general", "bcoo_dot_general_sampled",
           "bcoo_dynamic_slice", "bcoo_gather", "bcoo_eliminate_zeros", "bcoo_extract",
           "bcoo_fromdense", "bcoo_multiply_dense", "bcoo_multiply_sparse", "bcoo_reduce_sum",
           "bcoo_reshape", "bcoo_rev", "bcoo_slice", "bcoo_sort_indices", "bcoo_squeeze",
           "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose", "bcoo_update_layout", "bcsr_broadcast_in_dim", "bcsr_concatenate",
           "bcsr_dot_general", "bcsr_eliminate_zeros", "bcsr_extract", "bcsr_fromdense",
           "bcsr_sum_duplicates", "bcsr_todense",
           "empty", "eye", "grad", "jacfwd", "jacobian", "jacrev", "random_bcoo", "sparsify", "todense",
           "todense_p", "value_and_grad"]
