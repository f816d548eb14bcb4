"""The ``dense`` kind: ``σ(W a + b)`` with one γ and one β per neuron (docs/model.md).

Target ``σ(W a + b)`` with ``W`` an ``fmpq_mat`` (d_i × d_{i-1}); frozen
``σ(γ ⊙ (V h_input) + β)`` with ``V`` the frozen matrix and skips added by the network.
The interval rule is :func:`~exactnorm.model.values.affine_interval` (exact on a box).

>>> from flint import fmpq_mat, fmpq
>>> t = TargetLayer(fmpq_mat([[1, -1]]), (fmpq(0),), "relu")
>>> t.evaluate((fmpq(2), fmpq(1))), t.interval((fmpq(0),) * 2, (fmpq(1),) * 2)
((1,), ((0,), (1,)))
>>> t.describe()
'dense 2→1, relu'
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm.checker.vocabulary import ACTIVATIONS
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators, to_numpy
from exactnorm.model.batch import activate_batch, add_row_bias, from_columns, to_columns
from exactnorm.model.kinds.base import LayerKind, Skip, rounded
from exactnorm.model.routes import matrix_of
from exactnorm.model.values import (
    Node,
    Scaled,
    Vector,
    activate,
    affine_interval,
    column,
    node_values,
)

__all__ = ["NAME", "TargetLayer", "FrozenLayer", "FloatLayer", "KIND", "dense_layers",
           "dense_frozen"]

#: the certificate's word for this kind
NAME = "dense"


def _floats(v: Any) -> np.ndarray:
    return np.array([float(x) for x in v])


@dataclass(frozen=True)
class TargetLayer:
    """One target layer ``σ(W a + b)``; ``weight`` is ``fmpq_mat`` (d_i × d_{i-1})."""

    weight: fmpq_mat
    bias: Vector
    activation: str

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        if self.weight.nrows() == 0:
            raise ShapeError("a dense target layer has width 0")
        if len(self.bias) != self.weight.nrows():
            raise ShapeError(f"a dense target layer's bias has length {len(self.bias)}, "
                             f"expected {self.weight.nrows()}")
        if self.activation not in ACTIVATIONS:
            raise InputError(f"unknown activation {self.activation!r}; expected one of "
                             f"{ACTIVATIONS}")

    @property
    def shape(self) -> tuple[int, int]:
        return self.weight.nrows(), self.weight.ncols()

    @property
    def input_size(self) -> int:
        return self.weight.ncols()

    @property
    def width(self) -> int:
        return self.weight.nrows()

    @property
    def parameters(self) -> int:
        rows, cols = self.shape
        return rows * cols + rows

    def affine(self, a: Vector) -> Vector:
        z = self.weight * column(a)
        return tuple(z[r, 0] + self.bias[r] for r in range(z.nrows()))

    def affine_interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        return affine_interval(self.weight, self.bias, lo, hi)

    def affine_float(self, A: np.ndarray) -> np.ndarray:
        return A @ to_numpy(self.weight).T + _floats(self.bias)

    def evaluate(self, a: Vector) -> Vector:
        return activate(self.activation, self.affine(a))

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
        mn, mx = self.affine_interval(lo, hi)
        return activate(self.activation, mn), activate(self.activation, mx)

    def evaluate_float(self, A: np.ndarray) -> np.ndarray:
        out = self.affine_float(A)
        return np.maximum(out, 0.0) if self.activation == "relu" else out

    @functools.cached_property
    def integer_weight(self) -> tuple[fmpz_mat, fmpz]:
        """The weight as integers over its least common denominator."""
        return clear_denominators(self.weight)

    def affine_columns(self, S: Scaled) -> Scaled:
        """``W A + b 1ᵀ`` for a batch (integers over one denominator, one sample per column):
        one integer matrix product."""
        if S.num.nrows() != self.input_size:
            raise ShapeError(f"dense input of {S.num.nrows()} rows, expected {self.input_size}")
        W, wd = self.integer_weight
        return add_row_bias(W * S.num, wd * S.den, self.bias, 1)

    def evaluate_columns(self, A: fmpq_mat) -> fmpq_mat:
        """``σ(W A + b 1ᵀ)``: one matrix product for a batch of samples (the columns of A)."""
        return to_columns(activate_batch(self.activation, self.affine_columns(from_columns(A))))

    def describe(self) -> str:
        return f"dense {self.input_size}→{self.width}, {self.activation}"


@dataclass(frozen=True)
class FrozenLayer:
    """``h = σ(γ ⊙ (V h_input) + β) + Σ skips``; only ``gamma`` and ``beta`` are tuned.

    ``record`` says where ``weight`` comes from: the draw record of a seeded random matrix
    (``{"generator": "exactnorm.shake256.v1", …}``), ``{"kind": "fixed", "why": …}`` for a
    declared non-random matrix, or ``None`` when unknown (such a network cannot be written as a
    version-2 certificate).

    ``drawn_columns`` names the columns of ``V`` that were drawn at random when the others are
    structural zeros of a block mask (``--routing mask``); ``None`` means every entry was drawn.
    Structural zeros are part of the layout, not frozen parameters.
    """

    input: int
    weight: FlintMatrix
    gamma: Vector
    beta: Vector
    activation: str
    skips: tuple[Skip, ...] = ()
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)
    drawn_columns: tuple[int, ...] | None = None

    kind: ClassVar[str] = NAME

    def __post_init__(self) -> None:
        n = self.weight.nrows()
        if len(self.gamma) != n or len(self.beta) != n:
            raise ShapeError(f"a dense frozen layer's γ/β lengths differ from its width {n}")
        cols = self.drawn_columns
        if cols is not None and (len(set(cols)) != len(cols)
                                 or not all(0 <= c < self.weight.ncols() for c in cols)):
            raise ShapeError(f"drawn columns {cols} are not distinct columns of a weight with "
                             f"{self.weight.ncols()} columns")
        if cols is not None:
            keep = set(cols)
            if any(x != 0 for row in self.weight.tolist() for c, x in enumerate(row)
                   if c not in keep):
                raise ShapeError("a weight entry outside the drawn columns is not zero")

    @property
    def input_size(self) -> int:
        return self.weight.ncols()

    @property
    def width(self) -> int:
        return self.weight.nrows()

    @property
    def tuned_parameters(self) -> int:
        return 2 * self.width

    @property
    def frozen_parameters(self) -> int:
        """Drawn entries of ``V`` (structural zeros excluded) plus entries of random skips."""
        cols = self.weight.ncols() if self.drawn_columns is None else len(self.drawn_columns)
        return (self.weight.nrows() * cols
                + sum(s.weight.nrows() * s.weight.ncols() for s in self.skips
                      if s.kind == "random"))

    def pre_activation(self, a: Vector) -> Vector:
        v = self.weight * column(a)
        return tuple(self.gamma[r] * v[r, 0] + self.beta[r] for r in range(self.width))

    def pre_activation_float(self, A: np.ndarray) -> np.ndarray:
        return (A @ to_numpy(self.weight).T) * _floats(self.gamma) + _floats(self.beta)

    def evaluate_node(self, a: Node) -> Node:
        return activate(self.activation, self.pre_activation(node_values(a)))

    def float_layer(self) -> FloatLayer:
        return FloatLayer(self.input, to_numpy(self.weight), tuple(self.gamma), tuple(self.beta),
                          self.activation, tuple((s.source, to_numpy(matrix_of(s.weight)))
                                                 for s in self.skips),
                          tuple(s.kind for s in self.skips))

    def describe(self) -> str:
        return f"dense {self.input_size}→{self.width}, {self.activation}" + (
            f", {len(self.skips)} skip(s)" if self.skips else "")


@dataclass(frozen=True, eq=False)
class FloatLayer:
    """The float copy of a dense frozen layer: float64 ``weight`` (V) and skips, exact
    ``gamma``/``beta``; ``u = (V h) · γ + β`` in the evaluation dtype."""

    input: int
    weight: np.ndarray
    gamma: tuple[fmpq, ...]
    beta: tuple[fmpq, ...]
    activation: str
    skips: tuple[tuple[int, np.ndarray], ...] = ()
    skip_kinds: tuple[str, ...] = ()

    kind: ClassVar[str] = NAME

    @property
    def width(self) -> int:
        return int(self.weight.shape[0])

    @property
    def input_size(self) -> int:
        return int(self.weight.shape[1])

    @property
    def tuned_parameters(self) -> int:
        return 2 * self.width

    @property
    def frozen_parameters(self) -> int:
        return self.weight.size + sum(P.size for (_, P), k in zip(self.skips, self.skip_kinds)
                                      if k == "random")

    @functools.cached_property
    def float_gamma_beta(self) -> tuple[np.ndarray, np.ndarray]:
        """γ and β rounded to float64 (each correctly)."""
        return rounded(self.gamma), rounded(self.beta)

    def pre_activation(self, A: np.ndarray, dtype: Any) -> np.ndarray:
        g, b = self.float_gamma_beta
        return (A @ self.weight.astype(dtype).T) * g.astype(dtype) + b.astype(dtype)

    def describe(self) -> str:
        return f"dense {self.input_size}→{self.width}, {self.activation}" + (
            f", {len(self.skips)} skip(s)" if self.skips else "")


KIND = LayerKind(NAME, TargetLayer, FrozenLayer, FloatLayer)


def dense_layers(layers: Sequence[Any], what: str = "this construction") -> tuple[TargetLayer, ...]:
    """``layers`` as dense target layers, or an :class:`InputError` naming the first other kind:
    the precondition of the algorithms that realize dense layers only (Theorem 1, low rank, the
    trade-off) and of the dense-only target file format."""
    for i, layer in enumerate(layers, 1):
        if not isinstance(layer, TargetLayer):
            raise InputError(f"{what} takes {NAME} layers only; target layer {i} is "
                             f"{getattr(layer, 'kind', type(layer).__name__)}")
    return tuple(layers)


def dense_frozen(layers: Sequence[Any], what: str = "this reader") -> tuple[FrozenLayer, ...]:
    """``layers`` as dense frozen layers, or an :class:`InputError` naming the first other kind."""
    for j, layer in enumerate(layers, 1):
        if not isinstance(layer, FrozenLayer):
            raise InputError(f"{what} takes {NAME} layers only; frozen layer {j} is "
                             f"{getattr(layer, 'kind', type(layer).__name__)}")
    return tuple(layers)
