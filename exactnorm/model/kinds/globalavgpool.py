"""The ``globalavgpool`` kind: global average pooling, a fixed linear map (identity activation).

A value of tensor shape ``(C, H, W)`` (C order) becomes ``C`` entries, entry ``c`` the mean of
the ``H·W`` entries of channel ``c``: ONNX ``GlobalAveragePool``, a ``ReduceMean`` over the two
spatial axes, PyTorch's ``AdaptiveAvgPool2d(1)`` — the last spatial layer of a residual network.
The output is the vector of length ``C`` (a tensor ``(C, 1, 1)``, so a following flatten is the
identity). Nothing is tuned: the frozen layer is the same declared map. The map is monotone in
each input, so the exact range over a box is the map of the box's two corners.

>>> from flint import fmpq, fmpq_mat
>>> pool = GlobalPoolTargetLayer((2, 1, 2))
>>> pool.evaluate(tuple(fmpq(k) for k in range(4))), pool.describe()
((1/2, 5/2), 'globalavgpool 2×1×2 → 2')
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
from exactnorm.model.values import Node, Scaled, Vector, exact_values, node_values

__all__ = ["NAME", "GlobalPoolTargetLayer", "FrozenGlobalPoolLayer", "FloatGlobalPoolLayer",
           "KIND"]

#: the certificate's word for this kind
NAME = "globalavgpool"


def _shape(shape: Any) -> tuple[int, int, int]:
    vals = tuple(shape)
    if len(vals) != 3 or any(type(v) is not int or v < 1 for v in vals):
        raise ShapeError(f"input_shape must be three positive integers [C, H, W], got "
                         f"{list(vals)}")
    return vals[0], vals[1], vals[2]


def _means(shape: tuple[int, int, int], a: Vector) -> Vector:
    vals = exact_values(a)
    C, H, W = shape
    if len(vals) != C * H * W:
        raise ShapeError(f"global pooling input of length {len(vals)}, expected {C * H * W}")
    n = H * W
    return tuple(sum(vals[c * n:(c + 1) * n], fmpq(0)) / n for c in range(C))


def _means_float(shape: tuple[int, int, int], A: np.ndarray, dtype: Any = np.float64
                 ) -> np.ndarray:
    C, H, W = shape
    return np.asarray(A).reshape(len(A), C, H * W).mean(axis=2, dtype=dtype)


def _describe(shape: tuple[int, int, int]) -> str:
    return f"globalavgpool {'×'.join(map(str, shape))} → {shape[0]}"


@dataclass(frozen=True)
class GlobalPoolTargetLayer:
    """Global average pooling of a ``(C, H, W)`` value: the mean of each channel."""

    input_shape: tuple[int, int, int]
    activation: str = "identity"

    kind: ClassVar[str] = NAME
    parameters: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_shape", _shape(self.input_shape))
        if self.activation != "identity":
            raise InputError("global average pooling has activation identity")

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.input_shape[0], 1, 1

    @property
    def input_size(self) -> int:
        return math.prod(self.input_shape)

    @property
    def width(self) -> int:
        return self.input_shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return self.width, self.input_size

    def evaluate(self, a: Vector) -> Vector:
        return _means(self.input_shape, a)

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return self.evaluate(lo), self.evaluate(hi)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        return _means_float(self.input_shape, np.asarray(A, dtype=np.float64))

    # the activation is the identity: the affine map is the layer
    affine = evaluate
    affine_interval = interval
    affine_float = evaluate_float

    def affine_columns(self, S: Scaled) -> Scaled:
        """The channel means of a batch (one sample per column): the sum of each channel's
        rows over ``H·W`` times the denominator."""
        C, H, W = self.input_shape
        if S.num.nrows() != C * H * W:
            raise ShapeError(f"global pooling input of {S.num.nrows()} rows, expected "
                             f"{C * H * W}")
        n = H * W
        rows = np.arange(C)[None, :] * n + np.arange(n)[:, None]  # (H·W, C)
        return Scaled(window_sums(S.num, rows), S.den * n)

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat:
        return to_columns(activate_batch(self.activation, self.affine_columns(from_columns(A))))

    def describe(self) -> str:
        return _describe(self.input_shape)


@dataclass(frozen=True)
class FrozenGlobalPoolLayer:
    """A declared fixed global average pooling of a frozen node (never tuned)."""

    input: int
    input_shape: tuple[int, int, int]
    activation: str = "identity"

    kind: ClassVar[str] = NAME
    skips: ClassVar[tuple[Skip, ...]] = ()
    tuned_parameters: ClassVar[int] = 0
    frozen_parameters: ClassVar[int] = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_shape",
                           GlobalPoolTargetLayer(self.input_shape, self.activation).input_shape)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.input_shape[0], 1, 1

    @property
    def input_size(self) -> int:
        return math.prod(self.input_shape)

    @property
    def width(self) -> int:
        return self.input_shape[0]

    def pre_activation(self, a: Vector) -> Vector:
        return _means(self.input_shape, a)

    def pre_activation_float(self, A: np.ndarray) -> np.ndarray:
        return _means_float(self.input_shape, np.asarray(A, dtype=np.float64))

    def evaluate_node(self, a: Node) -> Node:
        return _means(self.input_shape, node_values(a))

    def float_layer(self) -> FloatGlobalPoolLayer:
        return FloatGlobalPoolLayer(self.input, self.input_shape, self.activation)

    def describe(self) -> str:
        return _describe(self.input_shape)


@dataclass(frozen=True)
class FloatGlobalPoolLayer:
    """The float copy of a global average pooling: the channel means in the evaluation dtype."""

    input: int
    input_shape: tuple[int, int, int]
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
        return self.input_shape[0], 1, 1

    @property
    def input_size(self) -> int:
        return math.prod(self.input_shape)

    @property
    def width(self) -> int:
        return self.input_shape[0]

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray:
        return _means_float(self.input_shape, A, dtype)

    def describe(self) -> str:
        return _describe(self.input_shape)


KIND = LayerKind(NAME, GlobalPoolTargetLayer, FrozenGlobalPoolLayer, FloatGlobalPoolLayer)
