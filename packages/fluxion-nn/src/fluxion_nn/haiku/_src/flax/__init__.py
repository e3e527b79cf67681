"""``haiku._src.flax``: Haiku's bridge to Flax's Linen (``flax_module.Module`` runs a Haiku
transform as a Linen module, ``transform_flax.lift`` runs a Linen module inside a Haiku
transform, ``utils.flatten_flax_to_haiku``). Linen itself is flax's, running on Fluxion."""
