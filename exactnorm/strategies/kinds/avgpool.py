"""Hypothesis strategy of the ``avgpool`` kind: a window that fits, stride 1 or its side."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators import avgpool
from exactnorm.model.operators.avgpool import AvgPool
from exactnorm.model.operators.window import ConvGeometry

__all__ = ["KIND", "layers"]

KIND = avgpool.NAME


@st.composite
def layers(draw: Any, shape: tuple[int, int, int]) -> TargetLayer:
    """An average pooling of ``shape``: kernel ≤ 2 per side that fits (larger than 1×1 unless
    the image is one pixel), stride 1 up to the kernel."""
    _, H, W = shape
    kh, kw = draw(st.integers(1, min(2, H))), draw(st.integers(1, min(2, W)))
    if kh * kw == 1 and H * W > 1:
        kh, kw = min(2, H), min(2, W)  # a 1×1 pooling is the identity: pool something
    stride = (draw(st.integers(1, max(1, kh))), draw(st.integers(1, max(1, kw))))
    return TargetLayer(AvgPool(ConvGeometry(shape, (kh, kw), stride)))
