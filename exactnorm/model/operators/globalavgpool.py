"""The ``globalavgpool`` kind: global average pooling, a fixed linear map.

A ``(C, H, W)`` value becomes its ``C`` channel means, the tensor ``(C, 1, 1)`` (ONNX
``GlobalAveragePool``, PyTorch's ``AdaptiveAvgPool2d(1)``): one window per channel
(:class:`~exactnorm.model.operators.window.WindowMeans`).

>>> from flint import fmpq
>>> pool = GlobalAvgPool((2, 1, 2))
>>> pool.apply(tuple(fmpq(k) for k in range(4))), pool.describe()
((1/2, 5/2), 'globalavgpool 2×1×2 → 2')
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from exactnorm.model.operators.window import ConvGeometry, WindowMeans

__all__ = ["NAME", "GlobalAvgPool"]

#: the certificate's word for this kind
NAME = "globalavgpool"


@dataclass(frozen=True)
class GlobalAvgPool(WindowMeans):
    """The channel means of a ``(C, H, W)`` value (module doc)."""

    input_shape: tuple[int, int, int]

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        # three positive integers [C, H, W], checked as a window's input
        object.__setattr__(self, "input_shape", ConvGeometry(self.input_shape, (1, 1)).input_shape)

    @property
    def output_shape(self) -> tuple[int, int, int]:  # type: ignore[override]
        return self.input_shape[0], 1, 1

    @functools.cached_property
    def windows(self) -> np.ndarray:  # type: ignore[override]
        C = self.input_shape[0]
        return np.arange(math.prod(self.input_shape)).reshape(C, -1, 1)

    def describe(self) -> str:
        return f"globalavgpool {'×'.join(map(str, self.input_shape))} → {self.input_shape[0]}"
