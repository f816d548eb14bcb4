"""Hypothesis strategy of the ``globalavgpool`` kind: the channel means of the value read."""

from __future__ import annotations

from hypothesis import strategies as st

from exactnorm.model.kinds import globalavgpool
from exactnorm.model.kinds.globalavgpool import GlobalPoolTargetLayer

__all__ = ["KIND", "layers"]

KIND = globalavgpool.NAME


def layers(shape: tuple[int, int, int]) -> st.SearchStrategy[GlobalPoolTargetLayer]:
    """A global average pooling of ``shape`` (nothing to draw: the shape defines the map)."""
    return st.just(GlobalPoolTargetLayer(shape))
