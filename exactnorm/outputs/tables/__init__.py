"""Proof tables T1–T7: one module per table family, a plain registry, deterministic renderings."""
