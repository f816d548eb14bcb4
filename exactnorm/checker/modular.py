"""Exact linear algebra of the impossibility checker (docs/certificate-format.md §9), standard
library only: primality of a witness prime, a determinant modulo a prime, integer products.

Contract. :func:`is_prime` is deterministic for every ``n < 3.3·10^24`` (Miller–Rabin with the
first twelve primes as bases; the witness primes are below ``2^62``). :class:`PureLinear` is the
reference implementation of the two operations the impossibility rules ask of an arithmetic:

* ``det_mod(rows, p)`` — the determinant of a square matrix of residues ``0 ≤ x < p`` modulo the
  prime ``p``;
* ``product(A, B)`` — the integer matrix product ``A·B`` (rows of Python integers).

:class:`exactnorm.checker_flint.linear.FlintLinear` implements the same two operations with
python-flint (``nmod_mat.det``, ``fmpz_mat`` products); both return the same integers, so the
rules reach the same verdict and message with either.

Correctness argument. Gaussian elimination over the field ``Z/pZ`` (``p`` prime, checked before
any arithmetic) computes the determinant as the product of the pivots times the sign of the row
swaps; reduction modulo ``p`` is a ring homomorphism from the rationals whose denominators are
prime to ``p``, so a nonzero determinant modulo ``p`` proves a nonzero rational determinant.
Reference: any linear-algebra text (e.g. von zur Gathen and Gerhard, *Modern Computer Algebra*,
§5.5 for modular determinants).

>>> is_prime(2**61 - 1), is_prime(2**61 + 1)
(True, False)
>>> PureLinear().det_mod([[1, 2], [3, 4]], 7)
5
>>> PureLinear().product([[1, 2]], [[3], [4]])
[[11]]
"""

from __future__ import annotations

from operator import mul

__all__ = ["is_prime", "PureLinear"]

_BASES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Deterministic primality for ``n < 3.3·10^24`` (Miller–Rabin with the first twelve prime
    bases, which no composite below that bound passes)."""
    if n < 2:
        return False
    for q in _BASES:
        if n % q == 0:
            return n == q
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in _BASES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


class PureLinear:
    """The reference operations of the impossibility rules (module docstring)."""

    name = "pure"

    def det_mod(self, rows: list[list[int]], p: int) -> int:
        """``det(rows) mod p`` in ``0 … p−1`` by Gaussian elimination over ``Z/pZ``; the rows
        are residues and are not modified."""
        n = len(rows)
        work = [list(r) for r in rows]
        det = 1
        for c in range(n):
            pivot = next((r for r in range(c, n) if work[r][c]), None)
            if pivot is None:
                return 0
            if pivot != c:
                work[c], work[pivot] = work[pivot], work[c]
                det = -det
            top = work[c]
            det = det * top[c] % p
            inv = pow(top[c], p - 2, p)
            tail = top[c + 1:]
            for r in range(c + 1, n):
                row = work[r]
                f = row[c] * inv % p
                if f:
                    row[c + 1:] = [(x - f * y) % p for x, y in zip(row[c + 1:], tail)]
        return det % p

    def product(self, A: list[list[int]], B: list[list[int]]) -> list[list[int]]:
        """``A·B`` for integer matrices given as rows (``A`` is ``m × k``, ``B`` is ``k × n``)."""
        if not A:
            return []
        cols = list(zip(*B)) if B else []
        return [[sum(map(mul, row, col)) for col in cols] for row in A]
