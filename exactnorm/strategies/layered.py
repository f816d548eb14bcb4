"""Hypothesis strategies of target networks with layers of several kinds (small images).

:func:`kind_targets` draws a target whose first layer is of a given kind (the strategy of that
kind in :data:`~exactnorm.strategies.kinds.LAYERS`), optionally followed by a dense layer, on a
rational box; :func:`conv_targets` one or two convolutions, optionally an average pooling between
them and a dense layer after the implicit flatten. Sizes shrink towards 1 channel and the
smallest image, entries towards 0, denominators towards 1, padding and dilation towards their
defaults.

>>> from hypothesis import find
>>> t = find(conv_targets(), lambda t: True)
>>> t.depth, t.layers[0].operator.geometry.input_shape
(1, (1, 1, 1))
>>> find(kind_targets("avgpool"), lambda t: True).layers[0].kind
'avgpool'
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from exactnorm.model.layers import TargetLayer
from exactnorm.model.network import TargetNetwork
from exactnorm.model.operators.avgpool import AvgPool
from exactnorm.model.operators.window import ConvGeometry
from exactnorm.strategies.kinds import LAYERS
from exactnorm.strategies.kinds.base import small_rationals
from exactnorm.strategies.kinds.conv import conv_geometries
from exactnorm.strategies.kinds.conv import layers as conv_layers
from exactnorm.strategies.kinds.dense import layers as dense_layers

__all__ = ["kind_targets", "conv_targets", "conv_geometries", "small_rationals"]


def _box(draw: Any, n: int, open_box: bool = False) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    lower = tuple(draw(small_rationals(2, 2)) for _ in range(n))
    width = [draw(st.integers(1 if open_box else 0, 2)) for _ in range(n)]
    return lower, tuple(lo + w for lo, w in zip(lower, width))


@st.composite
def kind_targets(draw: Any, kind: str, max_side: int = 4, max_channels: int = 2,
                 dense_head: bool | None = None, open_box: bool = False) -> TargetNetwork:
    """A target whose first layer is of ``kind``, reading a small ``(C, H, W)`` image, then
    (maybe) a dense layer; the box has widths 0 to 2 per coordinate (1 to 2 with
    ``open_box``).

    Shrinks towards one channel and the smallest image, no dense layer, entries 0, degenerate
    box coordinates."""
    shape = (draw(st.integers(1, max_channels)), draw(st.integers(1, max_side)),
             draw(st.integers(1, max_side)))
    first = draw(LAYERS[kind](shape))
    layers = [first]
    if dense_head if dense_head is not None else draw(st.booleans()):
        layers.append(draw(dense_layers((first.width, 1, 1), max_width=2)))
    return TargetNetwork(tuple(layers), *_box(draw, math.prod(shape), open_box))


@st.composite
def conv_targets(draw: Any, max_side: int = 5, max_channels: int = 2,
                 dense_head: bool | None = None) -> TargetNetwork:
    """A small convolutional target (module doc) with an exact box of width ≥ 0.

    Shrinks towards one convolution on a 1×1 image, no pooling and no dense layer."""
    image = (draw(st.integers(1, max_channels)), draw(st.integers(1, max_side)),
             draw(st.integers(1, max_side)))
    first = draw(conv_layers(image, max_channels))
    layers: list[Any] = [first]
    shape = first.output_shape
    if shape[1] >= 2 and shape[2] >= 2 and draw(st.booleans()):
        pool = TargetLayer(AvgPool(ConvGeometry(shape, (2, 2), (draw(st.integers(1, 2)),) * 2)))
        layers.append(pool)
        shape = pool.output_shape
    if draw(st.booleans()):
        second = draw(conv_layers(shape, max_channels))
        layers.append(second)
        shape = second.output_shape
    if dense_head if dense_head is not None else draw(st.booleans()):
        layers.append(draw(dense_layers(shape, max_width=2)))
    return TargetNetwork(tuple(layers), *_box(draw, first.input_size))
