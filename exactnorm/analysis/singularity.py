"""Exact probability that a uniform integer draw makes ``Xᵀ ⊙ Y`` singular (exhaustive, Lemma 5).

Contract: :func:`exhaustive_singularity` enumerates every assignment of ``X`` (m×d_in) and ``Y``
(d_out×m) with entries in a finite set ``S`` (``m ≤ 4``) and counts the zeros of the determinant,
to be compared with the Schwartz–Zippel bound ``P(det = 0) ≤ 2m/|S|`` used by Lemma 5 of [1]_.

Correctness: the Leibniz expansion (:mod:`~exactnorm.analysis.detsystem`) is split as
``Σ_α x^α·q_α(y)``; the determinant at every (X, Y) pair is then the integer matrix product
``A·Q`` (``A[i, α] = x_i^α``, ``Q[α, j] = q_α(y_j)``), evaluated with NumPy int64 — exact because
the largest possible ``|det|`` (sum of ``|coefficients|`` times ``max|S|^{2m}``) is checked to stay
below ``2^62`` first. No SymPy is imported.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from exactnorm.analysis.detsystem import (
    KhatriRaoSize,
    check_dims,
    check_expandable,
    leibniz_expansion,
)
from exactnorm.errors import InputError, LimitExceededError

__all__ = ["EXHAUSTIVE_LIMIT", "SingularityCount", "exhaustive_singularity"]

#: Exhaustive enumeration refuses more assignments than this.
EXHAUSTIVE_LIMIT = 60_000_000


@dataclass(frozen=True)
class SingularityCount(KhatriRaoSize):
    """Exhaustive singularity count of ``Xᵀ ⊙ Y`` with entries uniform on ``values`` (Lemma 5)."""

    d_in: int
    d_out: int
    values: tuple[int, ...]
    assignments: int
    singular: int

    @property
    def probability(self) -> Fraction:
        return Fraction(self.singular, self.assignments)

    @property
    def bound(self) -> Fraction:
        """Schwartz–Zippel: ``P(det = 0) ≤ 2m/|S|`` (capped at 1)."""
        return min(Fraction(self.degree, len(self.values)), Fraction(1))


def _all_assignments(values: np.ndarray, nvars: int) -> np.ndarray:
    s = len(values)
    idx = np.indices((s,) * nvars, dtype=np.int64).reshape(nvars, -1).T
    return values[idx] if nvars else np.zeros((1, 0), dtype=np.int64)


def exhaustive_singularity(d_in: int, d_out: int, values: Sequence[int], *,
                           chunk_entries: int = 1 << 22) -> SingularityCount:
    """Count the assignments of ``X``, ``Y`` with entries in ``S`` where ``det(Xᵀ ⊙ Y) = 0``.

    All ``|S|^{m·d_in + d_out·m}`` assignments are enumerated (``m ≤ 4``).

    The expanded determinant (``m ≤ 4``) is split as ``Σ_α x^α·q_α(y)`` with the X-monomials
    ``x^α`` grouped; then the determinant at every pair (X assignment, Y assignment) is the
    integer matrix product ``A·Q`` with ``A[i, α] = x_i^α`` and ``Q[α, j] = q_α(y_j)``, evaluated
    with NumPy int64 in chunks. This is exact: the largest possible |det| (sum of |coefficients|
    times ``max|S|^{2m}``) is checked to stay below 2^62.

    Parameters
    ----------
    d_in, d_out : int
        Sizes with ``m = d_in·d_out ≤ 4``.
    values : sequence of int
        The set ``S`` (no repeats).
    chunk_entries : int
        Entries of ``A·Q`` evaluated at once (memory, not results).

    Returns
    -------
    SingularityCount
        With the exact probability and the Schwartz–Zippel bound.

    Raises
    ------
    LimitExceededError
        Beyond :data:`EXHAUSTIVE_LIMIT` assignments or when int64 could overflow.
    InputError
        An empty set or repeated values.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemma 5).

    Examples
    --------
    >>> c = exhaustive_singularity(1, 1, [-1, 0, 1])
    >>> c.probability, c.bound
    (Fraction(5, 9), Fraction(2, 3))
    """
    d_in, d_out = check_dims(d_in, d_out)
    m = check_expandable(d_in, d_out)
    vals = tuple(sorted({int(v) for v in values}))
    if len(vals) < 1:
        raise InputError("the value set S is empty")
    if len(vals) != len(list(values)):
        raise InputError("the value set S has repeated values")
    nx, ny = m * d_in, d_out * m
    total = len(vals) ** (nx + ny)
    if total > EXHAUSTIVE_LIMIT:
        raise LimitExceededError(f"{total:,} assignments exceed the exhaustive limit "
                                 f"{EXHAUSTIVE_LIMIT:,}")
    terms = leibniz_expansion(d_in, d_out)
    vmax = max(abs(v) for v in vals)
    if sum(abs(c) for c in terms.values()) * vmax ** (2 * m) >= 2**62:
        raise LimitExceededError("values too large for exact int64 enumeration")
    x_monomials = sorted({e[:nx] for e in terms})
    where = {a: i for i, a in enumerate(x_monomials)}
    arr = np.array(vals, dtype=np.int64)
    xs, ys = _all_assignments(arr, nx), _all_assignments(arr, ny)
    A = np.ones((len(xs), len(x_monomials)), dtype=np.int64)
    for i, alpha in enumerate(x_monomials):
        for v, e in enumerate(alpha):
            if e:
                A[:, i] *= xs[:, v] ** e
    Q = np.zeros((len(x_monomials), len(ys)), dtype=np.int64)
    for exps, coeff in terms.items():
        col = np.full(len(ys), coeff, dtype=np.int64)
        for v, e in enumerate(exps[nx:]):
            if e:
                col *= ys[:, v] ** e
        Q[where[exps[:nx]]] += col
    rows_per_chunk = max(1, chunk_entries // max(1, len(ys)))
    singular = 0
    for start in range(0, len(xs), rows_per_chunk):
        singular += int(np.count_nonzero(A[start:start + rows_per_chunk] @ Q == 0))
    return SingularityCount(d_in, d_out, vals, total, singular)
