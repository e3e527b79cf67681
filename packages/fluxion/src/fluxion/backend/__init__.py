"""Fluxion's backend package (see DESIGN.md)."""
