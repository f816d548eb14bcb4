"""Routes: 0/1 matrices with at most one 1 per row, kept as the column each row copies.

Identity and selection skips (docs/certificate-format.md §1.5) are such matrices. Written out they
cost ``rows × columns`` numbers — 39 million for the identity on the ``8 × 28 × 28`` feature map
of a residual block — so the model keeps them as :class:`Route`: row ``r`` of the ``n × d``
matrix has its one 1 in column ``picks[r]``, or no 1 at all when ``picks[r]`` is ``None``. A
:class:`Skip` (topology: a skip connection of any layer kind) has a Route or a FLINT matrix as
its weight; the functions :func:`apply_linear`, :func:`apply_linear_float` and
:func:`linear_interval` apply either.

Correctness: ``apply`` is the matrix–vector product of the matrix the route denotes (each output
is one input coordinate or 0), and ``interval`` is its exact range over a box (a coordinate's
range, or ``[0, 0]``), since each output depends on one coordinate only.

>>> r = Route((2, None, 0), 3)
>>> r.apply((fmpq(5), fmpq(6), fmpq(7)))
(7, 0, 5)
>>> r.to_matrix().tolist()
[[0, 0, 1], [0, 0, 0], [1, 0, 0]]
>>> Route.from_matrix(r.to_matrix()) == r
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flint import fmpq, fmpz_mat

from exactnorm.checker.vocabulary import SKIP_KINDS
from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, clear_denominators, to_numpy
from exactnorm.model.batch import gather
from exactnorm.model.values import Scaled, Vector, affine_interval, column

__all__ = ["Route", "Skip", "matrix_of", "apply_linear", "apply_linear_float", "linear_interval",
           "linear_shape", "FloatIdentity", "apply_linear_columns"]


@dataclass(frozen=True)
class Route:
    """The ``len(picks) × columns`` 0/1 matrix whose row ``r`` copies column ``picks[r]`` (or is
    zero when ``picks[r]`` is ``None``)."""

    picks: tuple[int | None, ...]
    columns: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "picks", tuple(self.picks))
        if type(self.columns) is not int or self.columns < 1:
            raise ShapeError(f"a route reads at least one column, got {self.columns!r}")
        for r, c in enumerate(self.picks):
            if c is not None and (type(c) is not int or not 0 <= c < self.columns):
                raise ShapeError(f"route row {r} copies column {c!r}, not a column below "
                                 f"{self.columns}")

    @classmethod
    def identity(cls, n: int) -> Route:
        """The ``n × n`` identity."""
        return cls(tuple(range(n)), n)

    @classmethod
    def from_matrix(cls, M: Any) -> Route:
        """The route of a 0/1 matrix with at most one 1 per row (else :class:`ShapeError`)."""
        rows = M.tolist() if hasattr(M, "tolist") else [list(r) for r in M]
        picks: list[int | None] = []
        for r, row in enumerate(rows):
            ones = [c for c, x in enumerate(row) if x != 0]
            if len(ones) > 1 or any(row[c] != 1 for c in ones):
                raise ShapeError(f"row {r} is not a 0/1 row with at most one 1")
            picks.append(ones[0] if ones else None)
        return cls(tuple(picks), len(rows[0]) if rows else 1)

    def nrows(self) -> int:
        return len(self.picks)

    def ncols(self) -> int:
        return self.columns

    @property
    def is_identity(self) -> bool:
        return self.columns == len(self.picks) and all(c == r for r, c in enumerate(self.picks))

    def apply(self, v: Sequence[Any]) -> Vector:
        zero = fmpq(0)
        return tuple(zero if c is None else fmpq(v[c]) for c in self.picks)

    def apply_float(self, A: np.ndarray) -> np.ndarray:
        """The route applied to every row of a batch ``A`` (n × columns)."""
        A = np.asarray(A)
        idx = np.array([-1 if c is None else c for c in self.picks], dtype=np.int64)
        padded = np.concatenate([A, np.zeros((len(A), 1), dtype=A.dtype)], axis=1)
        return padded[:, idx]

    def interval(self, lo: Sequence[Any], hi: Sequence[Any]) -> tuple[Vector, Vector]:
        return self.apply(lo), self.apply(hi)

    def to_matrix(self) -> fmpz_mat:
        """The matrix written out (small sizes only: ``rows × columns`` entries)."""
        M = fmpz_mat(len(self.picks), self.columns)
        for r, c in enumerate(self.picks):
            if c is not None:
                M[r, c] = 1
        return M


@dataclass(frozen=True)
class Skip:
    """A skip connection ``P h_source`` (topology, any kind): after the activation as a frozen
    layer's ``skips``, before it as a network's residual (a target layer's skip, a checkpoint's
    residual).

    ``weight`` is a FLINT matrix or, for the 0/1 kinds, a :class:`Route` (a row's one column).
    ``record`` is the draw record of a ``random`` skip (docs/certificate-format.md §2), so a
    certificate can prove it is the seeded draw; ``identity`` and ``selection`` skips need none.
    """

    source: int
    weight: FlintMatrix | Route
    kind: str  # identity | selection | random
    # where the matrix came from, not what it is: two layers with equal matrices are equal
    record: dict[str, Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise InputError(f"unknown skip kind {self.kind!r}; expected one of {SKIP_KINDS}")
        if isinstance(self.weight, Route):
            if self.kind == "random":
                raise InputError("a random skip is a drawn matrix, not a 0/1 route")
            if self.kind == "identity" and not self.weight.is_identity:
                raise InputError("a skip of kind identity has the identity as its route")

    @property
    def parameters(self) -> int:
        """Frozen entries: a random skip's drawn matrix; a 0/1 route is layout, not drawn."""
        return self.weight.nrows() * self.weight.ncols() if self.kind == "random" else 0

    def float_weight(self) -> Any:
        """The skip's matrix for a float copy: float64 entries, an identity never written out
        (:class:`FloatIdentity`)."""
        if self.kind == "identity":
            return FloatIdentity(self.weight.nrows())
        return to_numpy(matrix_of(self.weight))


class FloatIdentity:
    """The ``n × n`` identity of a float copy's identity skip, never written out: ``A @ P.T``
    is ``A`` itself (NumPy defers ``@`` to :meth:`__rmatmul__`, since ``__array_ufunc__`` is
    ``None``), and ``np.asarray(P)`` writes it out only where a file format needs the matrix (an
    npz or state-dict export). A convolution's accumulator skip is the identity on a whole
    feature map: ``(c·H·W)²`` float64 entries (315 MB at 32 × 14 × 14) per skip otherwise.

    >>> A = np.arange(6.0).reshape(2, 3)
    >>> P = FloatIdentity(3)
    >>> bool((A @ P.astype(np.float32).T == A).all()), P.shape, float(np.asarray(P).sum())
    (True, (3, 3), 3.0)
    """

    __array_ufunc__ = None

    def __init__(self, n: int) -> None:
        self.n = int(n)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.n

    @property
    def size(self) -> int:
        return self.n * self.n

    @property
    def T(self) -> FloatIdentity:  # noqa: N802 - NumPy's name
        return self

    def astype(self, dtype: Any) -> FloatIdentity:
        return self

    def __rmatmul__(self, A: Any) -> Any:
        if np.shape(A)[-1] != self.n:
            raise ShapeError(f"a batch of width {np.shape(A)[-1]} times the identity of size "
                             f"{self.n}")
        return A

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.eye(self.n, dtype=dtype or np.float64)


def matrix_of(P: FlintMatrix | Route) -> FlintMatrix:
    """``P`` as a FLINT matrix (a route written out: small sizes only)."""
    return P.to_matrix() if isinstance(P, Route) else P


def linear_shape(P: FlintMatrix | Route) -> tuple[int, int]:
    return P.nrows(), P.ncols()


def apply_linear(P: FlintMatrix | Route, v: Sequence[Any]) -> Vector:
    """``P v`` exactly, for a route or a FLINT matrix."""
    if isinstance(P, Route):
        return P.apply(v)
    p = P * column(v)
    return tuple(p[r, 0] for r in range(p.nrows()))


def apply_linear_float(P: FlintMatrix | Route, A: np.ndarray) -> np.ndarray:
    """``A Pᵀ`` for a batch ``A`` (one input per row), in A's float type."""
    if isinstance(P, Route):
        return P.apply_float(A)
    return A @ to_numpy(P).T.astype(np.asarray(A).dtype)


def linear_interval(P: FlintMatrix | Route, lo: Vector, hi: Vector) -> tuple[Vector, Vector]:
    """The exact range of ``P a`` over the box ``[lo, hi]``."""
    if isinstance(P, Route):
        return P.interval(lo, hi)
    zero = tuple(fmpq(0) for _ in range(P.nrows()))
    return affine_interval(P, zero, lo, hi)


def apply_linear_columns(P: FlintMatrix | Route, S: Scaled) -> Scaled:
    """``P`` applied to a batch (integers over one denominator, one sample per column): a
    route copies rows (:func:`~exactnorm.model.batch.gather`), a matrix multiplies."""
    if isinstance(P, Route):
        if S.num.nrows() != P.columns:
            raise ShapeError(f"a route of {P.columns} columns applied to {S.num.nrows()} rows")
        picks = np.array([-1 if c is None else c for c in P.picks], dtype=np.int64)
        return Scaled(gather(S.num, picks), S.den)
    num, den = clear_denominators(P)
    return Scaled(num * S.num, den * S.den)
