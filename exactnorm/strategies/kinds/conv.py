"""Hypothesis strategies of the ``conv`` kind: geometries that fit, convolutions on them, grouped
or not."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators import conv
from exactnorm.model.operators.conv import Conv
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.strategies.kinds.base import ACTIVATION, rational_matrix, rational_vector

__all__ = ["KIND", "layers", "conv_geometries"]

KIND = conv.NAME


@st.composite
def conv_geometries(draw: Any, input_shape: tuple[int, int, int] | None = None,
                    max_side: int = 5, max_channels: int = 2) -> ConvGeometry:
    """A geometry (kernel ≤ 3, stride ≤ 2, padding ≤ 1, dilation ≤ 2) that fits its input.

    Shrinks towards the 1×1 kernel, stride 1, padding 0, dilation 1."""
    if input_shape is None:
        input_shape = (draw(st.integers(1, max_channels)), draw(st.integers(1, max_side)),
                       draw(st.integers(1, max_side)))
    _, H, W = input_shape
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    sh, sw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    if H + 2 * ph >= dh * (kh - 1) + 1 and W + 2 * pw >= dw * (kw - 1) + 1:
        return ConvGeometry(input_shape, (kh, kw), (sh, sw), (ph, pw), (dh, dw))
    # a window that does not fit becomes the 1×1 kernel, which always does
    return ConvGeometry(input_shape, (1, 1), (sh, sw), (0, 0), (1, 1))


@st.composite
def layers(draw: Any, shape: tuple[int, int, int], max_channels: int = 2) -> TargetLayer:
    """A convolution reading ``shape`` with a geometry of :func:`conv_geometries` and a number
    of groups dividing its input channels (shrinks towards one group; with several, the output
    channels are a multiple of the groups, a depthwise convolution when equal)."""
    g = draw(conv_geometries(shape))
    C = shape[0]
    groups = draw(st.sampled_from([G for G in range(1, C + 1) if C % G == 0]))
    c = groups * draw(st.integers(1, max(1, max_channels // groups)))
    return TargetLayer(Conv(g, rational_matrix(draw, c, g.patch_size // groups), groups),
                       rational_vector(draw, c), draw(ACTIVATION))
