"""UMA (Universal Models for Atoms, FairChem's equivariant graph network), as
``jax_md._nn.uma``: SO(3) bookkeeping and Wigner rotations (:mod:`.common`), SO(2)/SO(3) layers,
radial functions, normalisations and activations (:mod:`.nn`) and the edge kernels
(:mod:`.kernels`), all :class:`fluxion_nn.bridge.Module` with jax_md's parameter trees."""
