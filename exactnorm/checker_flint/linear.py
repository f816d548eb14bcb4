"""The impossibility checker's two operations with python-flint (docs/certificate-format.md §9):
the same interface as :class:`exactnorm.checker.modular.PureLinear`.

Contract. ``det_mod(rows, p)`` returns ``det(rows) mod p`` in ``0 … p−1`` with FLINT's
``nmod_mat`` (``p`` is a prime below ``2^62``, checked by the rules before this is called:
FLINT's modular elimination must never see a composite modulus); ``product(A, B)`` returns the
integer product ``A·B`` as rows of Python integers, with ``fmpz_mat``. Both return exactly what
the standard-library reference returns, so the rules of :mod:`exactnorm.checker.impossibility`
reach the same verdict and message with either (tests/checker/test_checker_impossibility.py compares
them on every witness and on mutated documents).
"""

from __future__ import annotations

from flint import fmpz_mat, nmod_mat

__all__ = ["FlintLinear"]


class FlintLinear:
    """``det_mod`` and ``product`` in python-flint (module docstring)."""

    name = "flint"

    def det_mod(self, rows: list[list[int]], p: int) -> int:
        n = len(rows)
        if n == 0:
            return 1 % p
        return int(nmod_mat(n, n, [x for row in rows for x in row], p).det())

    def product(self, A: list[list[int]], B: list[list[int]]) -> list[list[int]]:
        if not A:
            return []
        k = len(B)
        n = len(B[0]) if B else 0
        if k == 0 or n == 0:
            return [[0] * n for _ in A]
        # one column of B at a time when the operands are long: FLINT's multi-modular
        # matrix-matrix product is slow with entries of tens of thousands of bits
        X = fmpz_mat(A)
        if n > 1 and max(abs(x) for row in A for x in row).bit_length() > 4096:
            cols = [(X * fmpz_mat(k, 1, [row[j] for row in B])).entries() for j in range(n)]
            return [[int(cols[j][i]) for j in range(n)] for i in range(len(A))]
        return [[int(x) for x in row] for row in (X * fmpz_mat(B)).tolist()]
