"""Hypothesis strategy of the ``globalavgpool`` kind: the channel means of the value read."""

from __future__ import annotations

from hypothesis import strategies as st

from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators import globalavgpool
from exactnorm.model.operators.globalavgpool import GlobalAvgPool

__all__ = ["KIND", "layers"]

KIND = globalavgpool.NAME


def layers(shape: tuple[int, int, int]) -> st.SearchStrategy[TargetLayer]:
    """A global average pooling of ``shape`` (nothing to draw: the shape defines the map)."""
    return st.just(TargetLayer(GlobalAvgPool(shape)))
