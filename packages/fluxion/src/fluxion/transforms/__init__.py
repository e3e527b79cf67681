"""Fluxion's transforms package (see DESIGN.md)."""
