"""rlax's private module layout (``rlax._src.<module>``), for code and tests that import it.

Each module re-exports, under rlax's module name, the names rlax defines there, from where
fluxion_rl defines them; nothing here is new behaviour. Prefer the public names
(``fluxion_rl.td_lambda``, ...).
"""
