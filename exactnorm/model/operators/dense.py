"""The ``dense`` kind: ``x ↦ W x`` with ``W`` a ``rows × cols`` matrix, one γ group per row.

The interval rule is the exact range on a box, on integers
(:func:`~exactnorm.model.operators.base.box_image`; the same numbers as
:func:`~exactnorm.model.values.affine_interval`, entry by entry). A bare
matrix given to a role is this operator: ``TargetLayer(W, b, "relu")`` is ``σ(W a + b)``.

>>> from flint import fmpq_mat, fmpq
>>> op = Dense(fmpq_mat([[1, -1]]))
>>> op.apply((fmpq(2), fmpq(1))), op.interval((fmpq(0),) * 2, (fmpq(1),) * 2), op.describe()
((1,), ((-1,), (1,)), 'dense 2→1')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import clear_denominators, to_numpy
from exactnorm.model.batch import as_columns
from exactnorm.model.operators.base import box_image, matrix_shape
from exactnorm.model.values import Scaled, Vector, column

__all__ = ["NAME", "Dense", "dense_layers", "dense_frozen"]

#: the certificate's word for this kind
NAME = "dense"


@dataclass(frozen=True)
class Dense:
    """``x ↦ W x``; ``weight`` an exact FLINT matrix (a float64 array in a float copy)."""

    weight: Any

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        if matrix_shape(self.weight)[0] == 0:
            raise ShapeError("a dense layer has width 0")

    @property
    def shape(self) -> tuple[int, int]:
        return matrix_shape(self.weight)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (self.shape[0],)

    @property
    def channels(self) -> int:
        return self.shape[0]

    def apply(self, a: Vector) -> Vector:
        z = self.weight * column(a)
        return tuple(z[r, 0] for r in range(z.nrows()))

    def apply_columns(self, S: Scaled) -> Scaled:
        """One integer matrix product for the whole batch."""
        S = as_columns(S, self.shape[1])
        W, wd = clear_denominators(self.weight)
        return Scaled(W * S.num, wd * S.den)

    def apply_float(self, A: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
        W = self.weight if isinstance(self.weight, np.ndarray) else to_numpy(self.weight)
        return np.asarray(A) @ W.astype(dtype).T

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return box_image(self, lo, hi)

    def describe(self) -> str:
        rows, cols = self.shape
        return f"dense {cols}→{rows}"


def dense_layers(layers: Sequence[Any], what: str = "this construction",
                 role: str = "target") -> tuple[Any, ...]:
    """``layers`` if every one is dense, or an :class:`InputError` naming the first other kind:
    the precondition of the algorithms that realize dense layers only (Theorem 1, low rank, the
    trade-off) and of the dense-only target file format."""
    for i, layer in enumerate(layers, 1):
        if not isinstance(layer.operator, Dense):
            raise InputError(f"{what} takes {NAME} layers only; {role} layer {i} is "
                             f"{layer.kind}")
    return tuple(layers)


def dense_frozen(layers: Sequence[Any], what: str = "this reader") -> tuple[Any, ...]:
    return dense_layers(layers, what, "frozen")  # of frozen layers
