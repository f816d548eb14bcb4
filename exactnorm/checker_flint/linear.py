"""The impossibility checker's modular determinant with python-flint (docs/certificate-format.md
§9): the same interface as :class:`exactnorm.checker.modular.PureLinear`.

Contract. ``det_mod(rows, p)`` returns ``det(rows) mod p`` in ``0 … p−1`` with FLINT's
``nmod_mat`` (``p`` is a prime below ``2^62``, checked by the rules before this is called:
FLINT's modular elimination must never see a composite modulus): exactly what the
standard-library reference returns, so the rules of :mod:`exactnorm.checker.impossibility` reach
the same verdict and message with either (tests/checker/test_checker_kernel.py compares them;
tests/checker/test_checker_impossibility.py runs every witness and mutated documents in both).
"""

from __future__ import annotations

from flint import nmod_mat

__all__ = ["FlintLinear"]


class FlintLinear:
    """``det_mod`` in python-flint (module docstring)."""

    name = "flint"

    def det_mod(self, rows: list[list[int]], p: int) -> int:
        n = len(rows)
        if n == 0:
            return 1 % p
        return int(nmod_mat(n, n, [x for row in rows for x in row], p).det())
