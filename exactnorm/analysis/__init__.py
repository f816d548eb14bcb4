"""Analyses: structural rank and matchings, sparse sweeps, symbolic certificates."""
