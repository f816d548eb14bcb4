"""The ``avgpool`` kind: average pooling, a fixed linear map (padding 0, dilation 1, identity).

Each output entry is the mean of its window's ``kh·kw`` inputs of one channel. Nothing is tuned:
the frozen layer is the same declared map. The map is monotone in each input, so the exact range
over a box is the map of the box's two corners.

>>> from flint import fmpq, fmpq_mat
>>> from exactnorm.model.kinds.window import ConvGeometry
>>> pool = PoolTargetLayer(ConvGeometry((1, 2, 2), (2, 2), stride=(2, 2)))
>>> pool.evaluate(tuple(fmpq(k) for k in range(4))), pool.describe()
((3/2,), 'avgpool 2×2 s2 p0 d1, 1 channels')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from flint import fmpq, fmpq_mat

from exactnorm.errors import InputError, ShapeError
from exactnorm.model.batch import activate_batch, from_columns, to_columns, window_sums
from exactnorm.model.kinds.base import LayerKind, Skip
from exactnorm.model.kinds.window import ConvGeometry
from exactnorm.model.values import Node, Scaled, Vector, exact_values, node_values

__all__ = ["NAME", "PoolTargetLayer", "FrozenPoolLayer", "FloatPoolLayer", "KIND"]

#: the certificate's word for this kind
NAME = "avgpool"


def _windows(g: ConvGeometry) -> np.ndarray:
    """``(C, kh·kw, positions)`` input indices of each channel's windows."""
    C = g.input_shape[0]
    k = g.kernel_shape[0] * g.kernel_shape[1]
    return g.patch_index.reshape(C, k, g.positions)


def _mean_windows(g: ConvGeometry, a: Vector) -> Vector:
    vals = exact_values(a)
    if len(vals) != g.input_size:
        raise ShapeError(f"pooling input of length {len(vals)}, expected {g.input_size}")
    win = _windows(g)
    k = win.shape[1]
    return tuple(sum((vals[i] for i in win[c, :, p].tolist()), fmpq(0)) / k
                 for c in range(win.shape[0]) for p in range(win.shape[2]))


def _mean_windows_float(g: ConvGeometry, A: np.ndarray) -> np.ndarray:
    X = np.asarray(A, dtype=np.float64)
    return X[:, _windows(g)].mean(axis=2).reshape(len(X), -1)


def _describe(g: ConvGeometry) -> str:
    return f"avgpool {g.describe()}, {g.input_shape[0]} channels"


@dataclass(frozen=True)
class PoolTargetLayer:
    """Average pooling, a fixed linear map (padding 0, dilation 1): the mean of each window."""

    geometry: ConvGeometry
    activation: str = "identity"

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        g = self.geometry
        if g.padding != (0, 0) or g.dilation != (1, 1):
            raise ShapeError("average pooling takes padding [0, 0] and dilation [1, 1] only")
        if self.activation != "identity":
            raise InputError("average pooling has activation identity")

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.geometry.input_shape[0])

    @property
    def input_size(self) -> int:
        return self.geometry.input_size

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    @property
    def shape(self) -> tuple[int, int]:
        return self.width, self.input_size

    parameters: ClassVar[int] = 0

    def affine(self, a: Vector) -> Vector:
        return _mean_windows(self.geometry, a)

    def affine_interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return self.affine(lo), self.affine(hi)  # a mean of a box: monotone in every input

    def affine_float(self, A: np.ndarray) -> np.ndarray:
        return _mean_windows_float(self.geometry, A)

    # the activation is the identity
    evaluate = affine
    interval = affine_interval
    evaluate_float = affine_float

    def affine_columns(self, S: Scaled) -> Scaled:
        """The window means of a batch (one sample per column): the sum of each window's rows
        over ``k`` times the denominator."""
        if S.num.nrows() != self.input_size:
            raise ShapeError(f"pooling input of {S.num.nrows()} rows, expected "
                             f"{self.input_size}")
        win = _windows(self.geometry)
        k = win.shape[1]
        rows = win.transpose(1, 0, 2).reshape(k, -1)  # (k, C·positions)
        return Scaled(window_sums(S.num, rows), S.den * k)

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat:
        return to_columns(activate_batch(self.activation, self.affine_columns(from_columns(A))))

    def describe(self) -> str:
        return _describe(self.geometry)


@dataclass(frozen=True)
class FrozenPoolLayer:
    """A declared fixed average pooling of a frozen node (never tuned)."""

    input: int
    geometry: ConvGeometry
    activation: str = "identity"

    kind: ClassVar[str] = NAME
    skips: ClassVar[tuple[Skip, ...]] = ()
    tuned_parameters: ClassVar[int] = 0
    frozen_parameters: ClassVar[int] = 0

    def __post_init__(self) -> None:
        PoolTargetLayer(self.geometry, self.activation)  # the same declared map

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.geometry.input_shape[0])

    @property
    def input_size(self) -> int:
        return self.geometry.input_size

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    def pre_activation(self, a: Vector) -> Vector:
        return _mean_windows(self.geometry, a)

    def pre_activation_float(self, A: np.ndarray) -> np.ndarray:
        return _mean_windows_float(self.geometry, A)

    def evaluate_node(self, a: Node) -> Node:
        return _mean_windows(self.geometry, node_values(a))

    def float_layer(self) -> FloatPoolLayer:
        return FloatPoolLayer(self.input, self.geometry, self.activation)

    def describe(self) -> str:
        return _describe(self.geometry)


@dataclass(frozen=True)
class FloatPoolLayer:
    """The float copy of an average pooling: the mean of each window, in the evaluation dtype
    (nothing is rounded but the arithmetic)."""

    input: int
    geometry: ConvGeometry
    activation: str = "identity"

    kind: ClassVar[str] = NAME
    skips: ClassVar[tuple[tuple[int, np.ndarray], ...]] = ()
    skip_kinds: ClassVar[tuple[str, ...]] = ()
    gamma: ClassVar[tuple[fmpq, ...]] = ()
    beta: ClassVar[tuple[fmpq, ...]] = ()
    tuned_parameters: ClassVar[int] = 0
    frozen_parameters: ClassVar[int] = 0

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.geometry.output_shape(self.geometry.input_shape[0])

    @property
    def input_size(self) -> int:
        return self.geometry.input_size

    @property
    def width(self) -> int:
        return math.prod(self.output_shape)

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray:
        return A[:, _windows(self.geometry)].mean(axis=2, dtype=dtype).reshape(len(A), -1)

    def describe(self) -> str:
        return _describe(self.geometry)


KIND = LayerKind(NAME, PoolTargetLayer, FrozenPoolLayer, FloatPoolLayer)
