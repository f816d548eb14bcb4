"""Outputs: proof tables, BatchNorm-style export and certificate reports."""
