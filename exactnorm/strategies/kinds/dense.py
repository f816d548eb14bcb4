"""Hypothesis strategy of the ``dense`` kind: ``σ(W a + b)`` on the flattened input."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from exactnorm.model.layers import TargetLayer
from exactnorm.model.operators import dense
from exactnorm.model.operators.dense import Dense
from exactnorm.strategies.kinds.base import ACTIVATION, rational_matrix, rational_vector

__all__ = ["KIND", "layers"]

KIND = dense.NAME


@st.composite
def layers(draw: Any, shape: tuple[int, int, int], max_width: int = 3) -> TargetLayer:
    """A dense layer reading the ``C·H·W`` entries of ``shape``."""
    d_in = math.prod(shape)
    d_out = draw(st.integers(1, max_width))
    return TargetLayer(Dense(rational_matrix(draw, d_out, d_in)), rational_vector(draw, d_out),
                       draw(ACTIVATION))
