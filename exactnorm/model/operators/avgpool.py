"""The ``avgpool`` kind: average pooling, a fixed linear map (padding 0, dilation 1).

Each output entry is the mean of its window's ``kh·kw`` inputs of one channel
(:class:`~exactnorm.model.operators.window.WindowMeans`).

>>> from flint import fmpq
>>> from exactnorm.model.operators.window import ConvGeometry
>>> pool = AvgPool(ConvGeometry((1, 2, 2), (2, 2), stride=(2, 2)))
>>> pool.apply(tuple(fmpq(k) for k in range(4))), pool.describe()
((3/2,), 'avgpool 2×2 s2 p0 d1, 1 channels')
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from exactnorm.errors import ShapeError
from exactnorm.model.operators.window import ConvGeometry, WindowMeans

__all__ = ["NAME", "AvgPool"]

#: the certificate's word for this kind
NAME = "avgpool"


@dataclass(frozen=True)
class AvgPool(WindowMeans):
    """Average pooling with ``geometry`` (module doc)."""

    geometry: ConvGeometry

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        g = self.geometry
        if g.padding != (0, 0) or g.dilation != (1, 1):
            raise ShapeError("average pooling takes padding [0, 0] and dilation [1, 1] only")

    @property
    def input_shape(self) -> tuple[int, int, int]:  # type: ignore[override]
        return self.geometry.input_shape

    @property
    def output_shape(self) -> tuple[int, int, int]:  # type: ignore[override]
        return self.geometry.output_shape(self.geometry.input_shape[0])

    @functools.cached_property
    def windows(self) -> np.ndarray:  # type: ignore[override]
        g = self.geometry
        return g.patch_index.reshape(g.input_shape[0], -1, g.positions)

    def describe(self) -> str:
        return f"avgpool {self.geometry.describe()}, {self.geometry.input_shape[0]} channels"
