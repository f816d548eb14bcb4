"""Modular pivots and exact solves for rectangular systems: choose with a prime, prove over Q.

Contract. The ranks, pivot columns and independent rows found here are those of the matrix
reduced modulo a prime ``p``; they are *choices*, never claims: a rank modulo ``p`` is a lower
bound of the rational rank (a minor nonzero modulo ``p`` is nonzero), and every solution returned
by :func:`left_solution`, :func:`kernel_vector` and :func:`solve_full_row_rank` has been
multiplied back and checked exactly over ``Q`` (``None`` when the check fails, e.g. for a prime
that lowered the rank). Integer matrices are ``fmpz_mat``; rational results are lists of
``fmpq``.

>>> from flint import fmpz_mat
>>> A = fmpz_mat([[1, 2, 3], [2, 4, 7]])
>>> rank_and_pivots(A, WITNESS_PRIMES[0])
(2, [0, 2])
>>> v = kernel_vector(A, WITNESS_PRIMES[0])
>>> [int(x) for x in v], (A * fmpz_mat([[int(x)] for x in v])).tolist()
([-2, 1, 0], [[0], [0]])
>>> left_solution(A, [1, 2, 4], WITNESS_PRIMES[0])
[-1, 1]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from flint import fmpq, fmpz, fmpz_mat, nmod_mat

from exactnorm.errors import InputError

__all__ = ["WITNESS_PRIMES", "witness_prime", "rank_and_pivots", "independent_rows",
           "det_mod", "left_solution", "kernel_vector", "solve_consistent", "solve_full_row_rank",
           "submatrix", "common_denominator"]

#: primes below 2^62 (the checker's bound on witness primes), tried in this order
WITNESS_PRIMES = (2**61 - 1, 4611686018427387847, 4611686018427387817, 2305843009213693921)


def witness_prime(denominators: Iterable[Any] = ()) -> int:
    """The first of :data:`WITNESS_PRIMES` that divides none of ``denominators``."""
    dens = [int(d) for d in denominators]
    for p in WITNESS_PRIMES:
        if all(d % p for d in dens):
            return p
    raise InputError("every witness prime divides a denominator of the data")


def _mod(M: fmpz_mat, p: int) -> nmod_mat:
    return nmod_mat(M, p) if M.nrows() and M.ncols() else nmod_mat(M.nrows(), M.ncols(), p)


def rank_and_pivots(M: fmpz_mat, p: int) -> tuple[int, list[int]]:
    """Rank of ``M`` modulo ``p`` and its pivot columns (the leftmost independent columns)."""
    if M.nrows() == 0 or M.ncols() == 0:
        return 0, []
    R, rank = _mod(M, p).rref()
    entries = R.entries()
    n = M.ncols()
    pivots, start = [], 0
    for i in range(rank):
        row = entries[i * n:(i + 1) * n]
        start = next(j for j in range(start, n) if int(row[j]))
        pivots.append(start)
    return rank, pivots


def independent_rows(M: fmpz_mat, p: int) -> list[int]:
    """Rows of ``M`` independent modulo ``p``, as many as its rank there (the topmost ones)."""
    return rank_and_pivots(M.transpose(), p)[1]


def submatrix(M: fmpz_mat, rows: Sequence[int], cols: Sequence[int]) -> fmpz_mat:
    """``M[rows, cols]``."""
    if not rows or not cols:
        return fmpz_mat(len(rows), len(cols))
    entries = M.entries()
    n = M.ncols()
    return fmpz_mat(len(rows), len(cols), [entries[r * n + c] for r in rows for c in cols])


def det_mod(M: fmpz_mat, p: int) -> int:
    """``det(M) mod p`` for a square integer matrix."""
    return int(_mod(M, p).det()) if M.nrows() else 1 % p


def common_denominator(values: Sequence[Any]) -> tuple[list[fmpz], fmpz]:
    """Rationals as integer numerators over their least common denominator."""
    den = fmpz(1)
    for v in values:
        d = fmpq(v).denom()
        if den % d:
            den = den * d // den.gcd(d)
    return [fmpq(v).numer() * (den // fmpq(v).denom()) for v in values], den


def _times(M: fmpz_mat, v: Sequence[Any]) -> list[fmpq]:
    """``M v`` for a rational vector ``v`` (one integer product over a common denominator)."""
    nums, den = common_denominator(v)
    col = M * fmpz_mat(len(nums), 1, nums) if nums else fmpz_mat(M.nrows(), 1)
    return [fmpq(x) / den for x in col.entries()]


def left_solution(M: fmpz_mat, c: Sequence[Any], p: int) -> list[fmpq] | None:
    """A rational ``y`` with ``yᵀM = cᵀ``, checked exactly, or ``None`` when the modular choice
    of rows and columns gives none (``c`` is then outside the row space modulo ``p``)."""
    cols = rank_and_pivots(M, p)[1]
    if not cols:
        return None
    rows = independent_rows(submatrix(M, range(M.nrows()), cols), p)
    square = submatrix(M, rows, cols).transpose()
    rhs_nums, rhs_den = common_denominator([c[k] for k in cols])
    try:
        part = square.solve(fmpz_mat(len(cols), 1, rhs_nums))
    except ZeroDivisionError:
        return None
    y = [fmpq(0)] * M.nrows()
    for r, x in zip(rows, part.entries()):
        y[r] = x / rhs_den
    if _times(M.transpose(), y) != [fmpq(x) for x in c]:
        return None
    return y


def kernel_vector(M: fmpz_mat, p: int, free_values: dict[int, int] | None = None
                  ) -> list[fmpq] | None:
    """A nonzero rational ``v`` with ``M v = 0``, checked exactly: the columns that are not
    pivots modulo ``p`` get ``free_values`` (default: the first of them 1, the others 0), the
    pivot columns are solved for; ``None`` when ``M`` has full column rank modulo ``p`` or the
    check fails."""
    rank, pivots = rank_and_pivots(M, p)
    free = [j for j in range(M.ncols()) if j not in set(pivots)]
    if not free:
        return None
    values = free_values if free_values is not None else {free[0]: 1}
    t = {j: fmpq(values.get(j, 0)) for j in free}
    if not any(t.values()):
        return None
    rows = independent_rows(submatrix(M, range(M.nrows()), pivots), p) if pivots else []
    v = [fmpq(0)] * M.ncols()
    for j, x in t.items():
        v[j] = x
    if pivots:
        rhs = _times(submatrix(M, rows, free), [t[j] for j in free])
        nums, den = common_denominator([-x for x in rhs])
        try:
            part = submatrix(M, rows, pivots).solve(fmpz_mat(len(nums), 1, nums))
        except ZeroDivisionError:
            return None
        for j, x in zip(pivots, part.entries()):
            v[j] = x / den
    if any(_times(M, v)):
        return None
    return v


def solve_consistent(M: fmpz_mat, rhs: Sequence[Any], p: int) -> list[fmpq] | None:
    """A rational ``u`` with ``M u = rhs``, checked exactly: the pivot columns modulo ``p`` are
    solved for on independent rows, the other columns are 0; ``None`` when the check fails
    (``rhs`` outside the column space, or a prime that lowered the rank)."""
    rank, pivots = rank_and_pivots(M, p)
    if not pivots:
        return [fmpq(0)] * M.ncols() if not any(rhs) else None
    rows = list(range(M.nrows())) if rank == M.nrows() else \
        independent_rows(submatrix(M, range(M.nrows()), pivots), p)
    nums, den = common_denominator([rhs[r] for r in rows])
    try:
        part: Any = submatrix(M, rows, pivots).solve(fmpz_mat(len(nums), 1, nums))
    except ZeroDivisionError:  # impossible: the square part is invertible modulo p
        return None
    u = [fmpq(0)] * M.ncols()
    for j, x in zip(pivots, part.entries()):
        u[j] = x / den
    if rank != M.nrows() and _times(M, u) != [fmpq(x) for x in rhs]:
        return None
    return u


def solve_full_row_rank(M: fmpz_mat, rhs: Sequence[Any], p: int) -> list[fmpq] | None:
    """A rational ``u`` with ``M u = rhs`` when ``M`` has full row rank modulo ``p`` (then over
    ``Q`` too, and every ``rhs`` is reached): the pivot columns are solved for, the others are 0;
    ``None`` otherwise."""
    if rank_and_pivots(M, p)[0] != M.nrows():
        return None
    return solve_consistent(M, rhs, p)
