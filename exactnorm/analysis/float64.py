"""A float64 baseline whose every bit is fixed by IEEE-754: Gaussian elimination in plain Python.

Contract
--------
:func:`lu_factor`, :func:`lu_solve`, :func:`solve`, :func:`matvec` and
:func:`condition_estimate_1` compute with Python ``float`` (IEEE-754 binary64) only, one scalar
operation at a time, in a loop order fixed by this code. No NumPy linear algebra, no BLAS or
LAPACK, no fused multiply-add, no reductions whose summation order a library may choose
(pairwise, blocked, threaded or SIMD).
They exist so that the float64 column of the proof tables (T7) is the same on every machine.

Correctness argument
--------------------
IEEE-754 requires ``+ − × ÷`` and ``abs`` to be correctly rounded, so each scalar result is a
function of its operands alone. CPython evaluates ``x - l * y`` as two separately rounded
operations (it never contracts them into a fused multiply-add); the optional NumPy path of
:func:`lu_factor` uses only elementwise ufuncs (``/``, ``×``, ``−`` as separate calls, each
correctly rounded per entry, no reduction and no matrix product) and is tested to give the same
bits as the loops. Every loop and every sum here runs in an order written in the code
(ascending indices; pivot ties go to the smallest row). The
whole computation is therefore a fixed sequence of correctly rounded operations on fixed inputs:
its result does not depend on the CPU, the BLAS build, the thread count or the NumPy version.
Inputs must be floats obtained by correct rounding (``int / int`` and ``float(Fraction)`` are).

Reference
---------
G. H. Golub, C. F. Van Loan, *Matrix Computations*, 4th ed., §3.4 (partial pivoting);
N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., Alg. 15.4 (Hager's
1-norm estimator, as in LAPACK ``xLACON``). Used for the float64 comparison of Theorem 1 of
Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the Normalization Layers",
COLT 2023, arXiv 2302.07937.

>>> solve([[0.0, 2.0], [4.0, 1.0]], [2.0, 9.0])
[2.0, 1.0]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from exactnorm.errors import ExactnormError

__all__ = ["LUFactors", "SingularFloatMatrix", "lu_factor", "lu_solve", "solve", "dot", "matvec",
           "norm_1", "condition_estimate_1"]


class SingularFloatMatrix(ExactnormError):
    """A zero pivot met during float64 elimination (the float baseline gives up, as LAPACK does)."""


@dataclass(frozen=True)
class LUFactors:
    """``P A = L U`` in one array: ``lu[i][j]`` is ``L`` below the diagonal (unit diagonal
    implied) and ``U`` on and above it; row ``i`` of ``P A`` is row ``perm[i]`` of ``A``."""

    lu: list[list[float]]
    perm: list[int]


def lu_factor(A: Sequence[Sequence[float]], *, vectorized: bool = True) -> LUFactors:
    """LU factorization with partial pivoting of a square float matrix, in a fixed order.

    Parameters
    ----------
    A : sequence of sequences of float
        Square matrix, row-major. Not modified.
    vectorized : bool
        Apply each elimination step to the trailing block with NumPy's *elementwise* ``/``, ``×``
        and ``−`` (separate ufunc calls, so each entry is still ``a − (l·u)`` with two correctly
        rounded operations and no reduction); ``False`` runs the same steps as Python loops.
        Both give the same bits (tested); the loops are the reference, the ufuncs are ~20× faster.

    Returns
    -------
    LUFactors

    Raises
    ------
    SingularFloatMatrix
        If a pivot column is exactly zero.
    """
    n = len(A)
    if any(len(row) != n for row in A):
        raise ValueError("lu_factor needs a square matrix")
    if vectorized:
        return _lu_factor_ufuncs(np.array([[float(x) for x in row] for row in A],
                                          dtype=np.float64).reshape(n, n))
    a = [[float(x) for x in row] for row in A]
    perm = list(range(n))
    for k in range(n):
        # max() keeps the first of equal candidates: ties go to the smallest row index.
        p = max(range(k, n), key=lambda i: abs(a[i][k]))
        if a[p][k] == 0.0:
            raise SingularFloatMatrix(f"float64 elimination met a zero pivot in column {k}")
        if p != k:
            a[k], a[p] = a[p], a[k]
            perm[k], perm[p] = perm[p], perm[k]
        pivot_row = a[k]
        pivot = pivot_row[k]
        tail = pivot_row[k + 1:]
        for i in range(k + 1, n):
            row = a[i]
            factor = row[k] / pivot
            row[k] = factor
            row[k + 1:] = [x - factor * y for x, y in zip(row[k + 1:], tail)]
    return LUFactors(a, perm)


def _lu_factor_ufuncs(a: np.ndarray) -> LUFactors:
    """:func:`lu_factor` with each step's trailing update as elementwise ufuncs (same bits)."""
    n = a.shape[0]
    perm = list(range(n))
    for k in range(n):
        # argmax returns the first maximum, as max() over ascending indices does.
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0.0:
            raise SingularFloatMatrix(f"float64 elimination met a zero pivot in column {k}")
        if p != k:
            a[[k, p]] = a[[p, k]]
            perm[k], perm[p] = perm[p], perm[k]
        factors = np.divide(a[k + 1:, k], a[k, k])
        a[k + 1:, k] = factors
        # Two ufunc calls, never a fused multiply-add or a matrix product: each entry is rounded
        # exactly as in the loop version.
        products = np.multiply.outer(factors, a[k, k + 1:])
        np.subtract(a[k + 1:, k + 1:], products, out=a[k + 1:, k + 1:])
    return LUFactors([[float(x) for x in row] for row in a.tolist()], perm)


def dot(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Left-to-right sum of products, each product and each partial sum rounded once.

    >>> dot([0.1, 0.2], [1.0, 1.0]) == 0.1 + 0.2
    True
    """
    total = 0.0
    for x, y in zip(xs, ys):
        total += x * y
    return total


def lu_solve(f: LUFactors, b: Sequence[float], *, transpose: bool = False) -> list[float]:
    """Solve ``A x = b`` (or ``Aᵀ x = b``) from the factors of :func:`lu_factor`.

    Parameters
    ----------
    f : LUFactors
    b : sequence of float
    transpose : bool
        Solve with ``Aᵀ = Uᵀ Lᵀ P`` instead of ``A = Pᵀ L U``.

    Returns
    -------
    list of float
    """
    lu, perm, n = f.lu, f.perm, len(f.perm)
    if not transpose:
        y = [float(b[perm[i]]) for i in range(n)]
        for i in range(n):
            y[i] -= dot(lu[i][:i], y[:i])
        for i in range(n - 1, -1, -1):
            y[i] = (y[i] - dot(lu[i][i + 1:], y[i + 1:])) / lu[i][i]
        return y
    z = [float(v) for v in b]
    for i in range(n):  # Uᵀ w = b, forward
        z[i] = (z[i] - dot([lu[j][i] for j in range(i)], z[:i])) / lu[i][i]
    for i in range(n - 1, -1, -1):  # Lᵀ v = w, backward
        z[i] -= dot([lu[j][i] for j in range(i + 1, n)], z[i + 1:])
    x = [0.0] * n
    for i in range(n):
        x[perm[i]] = z[i]
    return x


def solve(A: Sequence[Sequence[float]], b: Sequence[float]) -> list[float]:
    """``A⁻¹ b`` by Gaussian elimination with partial pivoting (see the module docstring)."""
    return lu_solve(lu_factor(A), b)


def matvec(A: Sequence[Sequence[float]], x: Sequence[float]) -> list[float]:
    """``A x`` with each entry summed left to right.

    >>> matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, -1.0])
    [-1.0, -1.0]
    """
    return [dot(row, x) for row in A]


def norm_1(A: Sequence[Sequence[float]]) -> float:
    """``‖A‖₁``, the largest column sum of ``|A|`` (each sum correctly rounded by ``math.fsum``)."""
    ncols = len(A[0]) if A else 0
    return max((math.fsum(abs(row[j]) for row in A) for j in range(ncols)), default=0.0)


def condition_estimate_1(A: Sequence[Sequence[float]], f: LUFactors | None = None,
                         max_iter: int = 5) -> float:
    """Hager–Higham estimate of ``cond₁(A) = ‖A‖₁ ‖A⁻¹‖₁`` (a lower bound, usually within 3×).

    Parameters
    ----------
    A : sequence of sequences of float
        Square nonsingular matrix.
    f : LUFactors, optional
        Its factors, if already computed.
    max_iter : int
        At most this many solve pairs (LAPACK uses 5).

    Returns
    -------
    float

    References
    ----------
    Higham, *Accuracy and Stability of Numerical Algorithms*, Algorithm 15.4.

    >>> condition_estimate_1([[2.0, 0.0], [0.0, 0.5]])
    4.0
    """
    f = f if f is not None else lu_factor(A)
    n = len(f.perm)
    x = [1.0 / n] * n
    estimate = 0.0
    for it in range(max_iter):
        y = lu_solve(f, x)
        estimate = math.fsum(abs(v) for v in y)
        z = lu_solve(f, [1.0 if v >= 0 else -1.0 for v in y], transpose=True)
        j = max(range(n), key=lambda i: abs(z[i]))
        if it > 0 and abs(z[j]) <= dot(z, x):
            break
        x = [0.0] * n
        x[j] = 1.0
    return norm_1(A) * estimate
