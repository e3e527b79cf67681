"""Fluxion's core package (see DESIGN.md)."""
