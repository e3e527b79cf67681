"""optax's private module layout (``optax._src.<module>``), for code and tests that import it.

Each module re-exports the names optax keeps there, from where fluxion_optim defines them;
nothing here is new behaviour. Prefer the public names (``fluxion_optim.adam``, ...).
"""
