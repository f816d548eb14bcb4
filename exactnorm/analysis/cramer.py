"""The closed-form normalization scale of Lemma 8: Cramer's rule for a symbolic target ``W``.

Contract: for fixed frozen ``V_in`` (m×d_in), ``V_out`` (d_out×m) with ``K = V_inᵀ ⊙ V_out``
invertible, :func:`cramer_gamma` returns ``γ_k = det(K_k)/det K`` where ``K_k`` is ``K`` with
column ``k`` replaced by ``vec W`` and the entries of ``W`` are SymPy symbols; ``m ≤ 9``.

Correctness: Cramer's rule solves ``K γ = vec W`` whenever ``det K ≠ 0`` (Lemma 8 of [1]_);
determinants are computed over the explicit domains ``QQ`` and ``QQ[W]`` (SymPy DomainMatrix), so
every coefficient is an exact rational and ``det(K_k)`` is a linear form in the entries of ``W``.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import sympy
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix

from exactnorm.errors import LimitExceededError, ShapeError, SingularSystemError
from exactnorm.exact.linalg import (
    FlintMatrix,
    exact_rank,
    khatri_rao,
    to_fmpq_mat,
    to_fractions,
    to_sympy,
)

__all__ = ["CRAMER_LIMIT", "CramerSolution", "cramer_gamma"]

CRAMER_LIMIT = 9


@dataclass(frozen=True)
class CramerSolution:
    """Closed-form ``γ`` of Lemma 8: ``γ_k = det(K_k)/det K`` with ``K_k = K``, column k := vec W.

    ``symbols`` are the target entries ``W[b][a]`` in column-major vec order; ``numerators[k]`` is
    ``det(K_k)``, a linear form in them with integer-or-rational coefficients.
    """

    d_in: int
    d_out: int
    symbols: tuple[sympy.Symbol, ...]
    det_K: sympy.Rational
    numerators: tuple[sympy.Expr, ...]

    @property
    def gamma(self) -> tuple[sympy.Expr, ...]:
        return tuple(n / self.det_K for n in self.numerators)

    def evaluate(self, W: Sequence[Sequence[Any]]) -> list[Fraction]:
        """Substitute an exact rational ``W`` (d_out×d_in) and return ``γ`` exactly."""
        Wf = to_fractions(to_fmpq_mat(W, "W"))
        if len(Wf) != self.d_out or any(len(r) != self.d_in for r in Wf):
            raise ShapeError(f"W must be {self.d_out}×{self.d_in}")
        subs = {sympy.Symbol(f"W[{b}][{a}]"): sympy.Rational(Wf[b][a].numerator,
                                                             Wf[b][a].denominator)
                for b in range(self.d_out) for a in range(self.d_in)}
        out = []
        for g in self.gamma:
            r = sympy.Rational(g.xreplace(subs))
            out.append(Fraction(int(r.p), int(r.q)))
        return out


def cramer_gamma(V_in: FlintMatrix, V_out: FlintMatrix) -> CramerSolution:
    """Γ in closed form for a symbolic target ``W`` and fixed frozen ``V_in``, ``V_out`` (Lemma 8).

    Parameters
    ----------
    V_in : fmpz_mat or fmpq_mat, m×d_in
    V_out : fmpz_mat or fmpq_mat, d_out×m, with ``m = d_in·d_out ≤ 9``

    Returns
    -------
    CramerSolution
        ``det K`` and the ``m`` numerators ``det(K_k)``, linear forms in the symbols ``W[b][a]``.

    Raises
    ------
    SingularSystemError
        If ``K = V_inᵀ ⊙ V_out`` is singular (Cramer's rule needs ``det K ≠ 0``).
    LimitExceededError
        For ``m > 9``.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemma 8).

    See Also
    --------
    exactnorm.exact.linalg.solve_exact : the numeric solve it must agree with.

    Examples
    --------
    >>> from flint import fmpz_mat
    >>> s = cramer_gamma(fmpz_mat([[1], [1]]), fmpz_mat([[1, 0], [1, 1]]))
    >>> s.gamma
    (W[0][0], -W[0][0] + W[1][0])
    """
    m, d_in = V_in.nrows(), V_in.ncols()
    d_out = V_out.nrows()
    if V_out.ncols() != m or m != d_in * d_out:
        raise ShapeError(f"need V_in m×d_in and V_out d_out×m with m = d_in·d_out, got "
                         f"{m}×{d_in} and {d_out}×{V_out.ncols()}")
    if m > CRAMER_LIMIT:
        raise LimitExceededError(f"symbolic Cramer solution limited to m ≤ {CRAMER_LIMIT}")
    K = khatri_rao(V_in.transpose(), V_out)
    Ks = to_sympy(K)
    det_K = DomainMatrix.from_Matrix(Ks).convert_to(QQ).det()
    if det_K == 0:
        rank = exact_rank(K)
        raise SingularSystemError(f"K is singular (exact rank {rank} < {m}); Cramer's rule "
                                  f"does not apply", rank=rank, size=m)
    # column-major vec: entry a·d_out + b of vec W is W[b][a]
    symbols = tuple(sympy.Symbol(f"W[{b}][{a}]") for a in range(d_in) for b in range(d_out))
    ring = QQ[symbols]
    numerators = []
    for k in range(m):
        Kk = Ks.copy()
        for r in range(m):
            Kk[r, k] = symbols[r]
        det_k = DomainMatrix.from_Matrix(Kk).convert_to(ring).det()
        numerators.append(ring.to_sympy(det_k))
    return CramerSolution(d_in, d_out, symbols, QQ.to_sympy(det_K), tuple(numerators))
