"""The Khatri–Rao determinant ``det(Xᵀ ⊙ Y)`` as a polynomial: variables and Leibniz expansion.

Contract: for the frozen pair ``X = V_in`` (m×d_in) and ``Y = V_out`` (d_out×m) with
``m = d_in·d_out``, entry ``(a·d_out + b, k)`` of ``K = Xᵀ ⊙ Y`` is ``X[k][a]·Y[b][k]`` (so that
``vec(Y diag(γ) X) = K γ`` column-major). This module fixes the canonical variable order
(:func:`variable_names`), expands ``det K`` by the Leibniz formula in plain Python integers
(:func:`leibniz_expansion`, no SymPy) and evaluates ``K`` at an integer point with FLINT. It is the
common ground of :mod:`~exactnorm.analysis.detpoly` (SymPy expansion, checked against this one),
:mod:`~exactnorm.analysis.witnesses` and :mod:`~exactnorm.analysis.singularity`.

Correctness: ``det K = Σ_π sgn(π) ∏_k K[π(k), k]``; column ``k`` contributes one variable of row
``k`` of X and one of column ``k`` of Y, so distinct permutations give distinct monomials and no
term cancels (Lemma 6 of [1]_): the expansion has exactly ``m!`` terms with coefficients ``±1``.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.

>>> len(leibniz_expansion(2, 2)), permutation_sign([1, 0])
(24, -1)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from flint import fmpz_mat

from exactnorm.errors import InputError, LimitExceededError
from exactnorm.exact.linalg import khatri_rao

__all__ = [
    "EXPANSION_LIMIT",
    "KhatriRaoSize",
    "check_dims",
    "check_expandable",
    "variable_names",
    "x_index",
    "y_index",
    "permutation_sign",
    "leibniz_expansion",
    "numeric_system",
]

#: Largest m = d_in·d_out whose determinant is expanded (m! terms: 9! = 362,880 at d = 3;
#: docs/model.md, known hazards).
EXPANSION_LIMIT = 4


class KhatriRaoSize:
    """Mixin of the result types here: ``m = d_in·d_out`` and ``det K``'s degree ``2m``."""

    d_in: int
    d_out: int

    @property
    def m(self) -> int:
        return self.d_in * self.d_out

    @property
    def degree(self) -> int:
        """Total degree of ``det(Xᵀ ⊙ Y)``: two variables per column of ``K``."""
        return 2 * self.m


def check_dims(d_in: Any, d_out: Any) -> tuple[int, int]:
    """``(d_in, d_out)`` as Python ints, or an :class:`InputError` naming the bad one."""
    for name, d in (("d_in", d_in), ("d_out", d_out)):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
            raise InputError(f"{name} must be a positive integer, got {d!r}")
    return int(d_in), int(d_out)


def check_expandable(d_in: int, d_out: int) -> int:
    """``m = d_in·d_out`` if ``m!`` terms may be expanded (``m ≤`` :data:`EXPANSION_LIMIT`)."""
    m = d_in * d_out
    if m > EXPANSION_LIMIT:
        raise LimitExceededError(
            f"expanding det(Xᵀ ⊙ Y) is limited to d_in·d_out ≤ {EXPANSION_LIMIT} (got "
            f"{d_in}·{d_out} = {m}: {math.factorial(m):,} terms); use the matching certificate "
            f"(exactnorm detpoly --matching) instead")
    return m


def variable_names(d_in: int, d_out: int) -> tuple[str, ...]:
    """Canonical variable order: ``X[k][a]`` (k < m, a < d_in), then ``Y[b][k]`` (b < d_out).

    Parameters
    ----------
    d_in, d_out : int
        Target layer sizes; ``m = d_in·d_out``.

    Returns
    -------
    tuple of str
        ``m·d_in + d_out·m`` names; exponent vectors of every polynomial here follow this order.

    Raises
    ------
    InputError
        Non-positive sizes.

    See Also
    --------
    leibniz_expansion, exactnorm.analysis.detpoly.expand_determinant

    Examples
    --------
    >>> variable_names(1, 1)
    ('X[0][0]', 'Y[0][0]')
    """
    d_in, d_out = check_dims(d_in, d_out)
    m = d_in * d_out
    xs = [f"X[{k}][{a}]" for k in range(m) for a in range(d_in)]
    ys = [f"Y[{b}][{k}]" for b in range(d_out) for k in range(m)]
    return tuple(xs + ys)


def x_index(k: int, a: int, d_in: int) -> int:
    return k * d_in + a


def y_index(b: int, k: int, d_in: int, d_out: int) -> int:
    m = d_in * d_out
    return m * d_in + b * m + k


def permutation_sign(perm: Sequence[int]) -> int:
    """Sign of a permutation of ``0..n-1`` from its cycle decomposition: ``(-1)^(n − #cycles)``.

    >>> permutation_sign([1, 0, 2]), permutation_sign([1, 2, 0])
    (-1, 1)
    """
    n = len(perm)
    if sorted(perm) != list(range(n)):
        raise InputError("not a permutation of 0..n-1")
    seen = [False] * n
    cycles = 0
    for start in range(n):
        if not seen[start]:
            cycles += 1
            j = start
            while not seen[j]:
                seen[j] = True
                j = perm[j]
    return -1 if (n - cycles) % 2 else 1


def leibniz_expansion(d_in: int, d_out: int) -> dict[tuple[int, ...], int]:
    """``det(Xᵀ ⊙ Y)`` by the Leibniz formula in plain Python (independent of SymPy).

    ``det K = Σ_π sgn(π) ∏_k K[π(k), k]`` with ``K[a·d_out + b, k] = X[k][a]·Y[b][k]``; the sign is
    the parity of the inversion count (not the cycle count of :func:`permutation_sign`, so the
    two signs check each other).

    Parameters
    ----------
    d_in, d_out : int
        Target layer sizes with ``m = d_in·d_out ≤`` :data:`EXPANSION_LIMIT`.

    Returns
    -------
    dict
        Exponent vector (order of :func:`variable_names`) → nonzero integer coefficient.

    Raises
    ------
    LimitExceededError
        For ``m > 4`` (``m!`` terms).

    Notes
    -----
    Distinct permutations give distinct monomials (column ``k`` contributes ``X[k][a]`` and
    ``Y[b][k]`` with ``a·d_out + b = π(k)``), so the expansion has exactly ``m!`` terms, each
    ``±1``: the no-cancellation argument behind Lemma 6 of [1]_.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937.

    See Also
    --------
    exactnorm.analysis.detpoly.expand_determinant : the same polynomial by SymPy.

    Examples
    --------
    >>> terms = leibniz_expansion(1, 2)
    >>> sorted(terms.values()), len(terms)
    ([-1, 1], 2)
    """
    d_in, d_out = check_dims(d_in, d_out)
    m = check_expandable(d_in, d_out)
    nvars = m * d_in + d_out * m
    terms: dict[tuple[int, ...], int] = {}
    for perm in itertools.permutations(range(m)):
        inversions = sum(1 for i in range(m) for j in range(i + 1, m) if perm[i] > perm[j])
        exps = [0] * nvars
        for k, row in enumerate(perm):
            a, b = divmod(row, d_out)
            exps[x_index(k, a, d_in)] += 1
            exps[y_index(b, k, d_in, d_out)] += 1
        key = tuple(exps)
        terms[key] = terms.get(key, 0) + (-1 if inversions % 2 else 1)
    return {k: c for k, c in terms.items() if c}


def numeric_system(point: Mapping[str, int], d_in: int, d_out: int) -> fmpz_mat:
    """``K = Xᵀ ⊙ Y`` (FLINT) at an integer point named as in :func:`variable_names`."""
    m = d_in * d_out
    X = fmpz_mat([[int(point[f"X[{k}][{a}]"]) for a in range(d_in)] for k in range(m)])
    Y = fmpz_mat([[int(point[f"Y[{b}][{k}]"]) for k in range(m)] for b in range(d_out)])
    return khatri_rao(X.transpose(), Y)
