"""Layers of fluxion_nn (re-exported at the top level)."""
