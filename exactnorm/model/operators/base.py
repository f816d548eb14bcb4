"""What a layer kind is: an :class:`Operator`, the structured linear map ``x ↦ A x`` of its layers.

A *kind* is the certificate's ``kind`` word (``checker.vocabulary.LAYER_KINDS``); in the model it
is one class of this package holding the map's geometry and weight tensor (or none), registered
in :data:`exactnorm.model.operators.OPERATORS`. ``A`` is never written out: each operator applies
it exactly to a vector, to a batch of columns held as integers over one denominator, and in
floats, and gives the exact image of a box. What a layer does around that map (target, frozen,
float copy) is its *role*, written once for every kind (:mod:`exactnorm.model.layers`).

The γ groups (``channels``) are consecutive runs of outputs sharing one γ and one β: one per
output of a dense map, one per output channel of a convolution (its ``Ho·Wo`` positions, as
BatchNorm2d), none for a fixed map (a pooling tunes nothing). An operator is a frozen dataclass
whose weight tensor, if any, is its field ``weight`` (a 2-d FLINT matrix; a float64 array in a
float copy, which applies only in floats), so the roles round it without knowing the kind
(:func:`float_copy`).

Correctness contract of every operator (``tests/kinds/test_kind_contract.py``, for every
registered kind): ``apply`` equals the kind's dense unfolded reference exactly, and
``apply_columns`` equals it column by column; ``interval(lo, hi)`` is the exact range of ``A a``
over the box; ``apply_float`` agrees with ``apply`` up to rounding. Every entry of ``A`` is 0 or
one entry of the weight (a convolution's taps read distinct pixels), and a fixed map's entries
are ``≥ 0`` (means), so :func:`magnitude` (``|A|`` entry-wise) is the operator with its weight's
entries in absolute value, and a fixed map its own.

The exact image of a box (:func:`box_image`, every kind's ``interval``) is computed on integers,
kind-free, from ``apply_columns``: with the centre ``c = (lo + hi)/2`` and the radius ``r =
(hi − lo)/2 ≥ 0`` of the box, row ``i``'s minimum and maximum are ``(A c)_i ∓ (|A| r)_i``, since
each term ``w·a_k`` ranges over the interval with ends ``w c_k ∓ |w| r_k`` and a box is a product
of intervals (so the row's range is the sum of its terms' ranges). A fixed map, monotone, maps
``lo`` and ``hi`` to its ends. Two integer products over one denominator replace four rational
products (a gcd per entry each); the ends are the same rationals.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, Protocol

import numpy as np
from flint import fmpz

from exactnorm.errors import ShapeError
from exactnorm.exact.linalg import to_numpy
from exactnorm.model.batch import add, as_columns
from exactnorm.model.values import Scaled, Vector

__all__ = ["Operator", "float_copy", "rounded", "matrix_shape", "magnitude", "box_image",
           "box_image_columns"]


class Operator(Protocol):
    """The linear map ``x ↦ A x`` of one layer kind (module doc); ten members."""

    #: the certificate's word for the kind
    kind: ClassVar[str]

    @property
    def shape(self) -> tuple[int, int]: ...             # (rows, cols) of A unfolded

    @property
    def output_shape(self) -> tuple[int, ...]: ...      # the output as a tensor, C order

    @property
    def channels(self) -> int: ...                      # γ groups of the rows; 0: a fixed map

    @property
    def weight(self) -> Any: ...                        # the weight tensor as a matrix, or None

    def apply(self, a: Vector) -> Vector: ...           # exact A a

    # A S, one sample per column; one sample may come and go in another layout of its entries
    # (C order: a convolution's channels × positions; model.batch.as_columns gives the column)
    def apply_columns(self, S: Scaled) -> Scaled: ...

    def apply_float(self, A: np.ndarray, dtype: Any = np.float64) -> np.ndarray: ...  # rows A

    def interval(self, lo: Vector, hi: Vector) -> tuple[Vector, Vector]: ...  # exact image

    def describe(self) -> str: ...                      # "conv 3×3 s1 p1 d1, 1→6 channels"


def matrix_shape(M: Any) -> tuple[int, int]:
    """``(rows, columns)`` of a FLINT matrix or a 2-d NumPy array."""
    if isinstance(M, np.ndarray):
        if M.ndim != 2:
            raise ShapeError(f"a weight matrix is 2-d, got shape {list(M.shape)}")
        return int(M.shape[0]), int(M.shape[1])
    return M.nrows(), M.ncols()


def float_copy(op: Operator) -> Operator:
    """``op`` with its weight rounded once to float64 (each entry correctly); a fixed map is its
    own float copy."""
    if op.weight is None or isinstance(op.weight, np.ndarray):
        return op
    return dataclasses.replace(op, weight=to_numpy(op.weight))  # type: ignore[type-var]


def rounded(v: Any) -> np.ndarray:
    """Exact numbers (``fmpq``) rounded to float64, each correctly (``int / int`` is, as
    ``float(Fraction)`` is).

    >>> from flint import fmpq
    >>> rounded((fmpq(1, 3), fmpq(-2))).tolist()
    [0.3333333333333333, -2.0]
    """
    return np.array([int(x.p) / int(x.q) for x in v], dtype=np.float64)


def magnitude(op: Operator) -> Operator:
    """The operator of ``|A|`` (module doc): each weight entry in absolute value; a fixed map is
    its own (its entries are ``≥ 0``)."""
    W = op.weight
    if W is None:
        return op
    if isinstance(W, np.ndarray):
        return dataclasses.replace(op, weight=np.abs(W))  # type: ignore[type-var]
    rows, cols = matrix_shape(W)
    return dataclasses.replace(op, weight=type(W)(  # type: ignore[type-var]
        rows, cols, [abs(x) for x in W.entries()]))


def box_image_columns(op: Operator, lo: Scaled, hi: Scaled) -> tuple[Scaled, Scaled]:
    """The exact range of ``A a`` over the box ``lo ≤ a ≤ hi`` (one column each, integers over
    a denominator), by the centre and the radius of the box (module doc)."""
    n = op.shape[1]
    shape = (lo.num.nrows(), lo.num.ncols())
    if shape != (hi.num.nrows(), hi.num.ncols()) or shape[0] * shape[1] != n:
        lo, hi = as_columns(lo, n), as_columns(hi, n)  # else one sample, held alike: as it is
    if op.weight is None:  # a fixed map: monotone
        return op.apply_columns(lo), op.apply_columns(hi)
    L = fmpz(math.lcm(int(lo.den), int(hi.den)))
    a = lo.num if lo.den == L else lo.num * (L // lo.den)
    b = hi.num if hi.den == L else hi.num * (L // hi.den)
    centre = op.apply_columns(Scaled(a + b, 2 * L))
    radius = magnitude(op).apply_columns(Scaled(b - a, 2 * L))
    return add(centre, Scaled(-radius.num, radius.den)), add(centre, radius)


def box_image(op: Operator, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
    """:func:`box_image_columns` on vectors: every kind's ``interval``."""
    n = op.shape[1]
    if len(lo) != n or len(hi) != n:
        raise ShapeError(f"a box of {len(lo)} and {len(hi)} entries for a map of {n} inputs")
    mn, mx = box_image_columns(op, Scaled.of(lo, n, 1), Scaled.of(hi, n, 1))
    return mn.values(), mx.values()
