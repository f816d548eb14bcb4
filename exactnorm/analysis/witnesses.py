"""Witnesses that ``det(Xᵀ ⊙ Y) ≢ 0`` at any size: a matching monomial and Theorem 5's structure.

Contract: :func:`matching_certificate` certifies the determinant nonzero for any ``m`` without
expanding it — one monomial whose coefficient is isolated by a 0/1 evaluation (FLINT) plus an
exact nonzero evaluation at a seeded integer point, with full rank modulo a checked prime.
:func:`structured_witness` (FLINT, any size) and :func:`prove_structured_symbolic` (SymPy, sides
``≤ 3``, ``B`` a matrix of symbols) check Theorem 5 of [1]_: with the neurons in ``d_in`` groups
whose input rows are ``e_kᵀ`` and whose output columns form an invertible ``B``,
``K = (I ⊗ B)·P`` for a permutation matrix ``P`` and ``det K = sign(P)·det(B)^{d_in}``.

Correctness: a monomial of ``det K`` takes exactly one ``X[k][·]`` and one ``Y[·][k]`` per column
``k``; at the 0/1 point that sets only the matching's variables to 1 every other monomial vanishes,
so the determinant there *is* the coefficient. For Theorem 5, column ``n`` of ``K`` is
``e_g ⊗ B[:, j]`` by the Khatri–Rao definition, which is column ``σ(n)`` of ``I ⊗ B``.

References
----------
.. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
   Normalization Layers", COLT 2023, arXiv:2302.07937.

>>> w = structured_witness(3, 2, layout="interleaved", B=[[2, 1], [1, 1]])
>>> w.sign, w.det_B, w.det_K, w.verified
(-1, 1, -1, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from flint import fmpq_mat, fmpz_mat
from sympy.polys.domains import ZZ
from sympy.polys.matrices import DomainMatrix

from exactnorm.analysis.detpoly import sympy_ground_types
from exactnorm.analysis.detsystem import KhatriRaoSize, check_dims, permutation_sign
from exactnorm.errors import InputError, LimitExceededError, ShapeError, SingularSystemError
from exactnorm.exact.linalg import khatri_rao, kronecker, random_prime, rank_mod_prime
from exactnorm.exact.sampling import layer_rng, sample_matrix

__all__ = [
    "MATCHING_LIMIT",
    "SYMBOLIC_SIDE_LIMIT",
    "MatchingCertificate",
    "matching_certificate",
    "structured_frozen",
    "interleaved_sign_formula",
    "StructuredWitness",
    "structured_witness",
    "StructuredSymbolicProof",
    "prove_structured_symbolic",
]

#: Largest m for the matching certificate's exact FLINT determinant (overridable).
MATCHING_LIMIT = 1024

#: Largest d_in, d_out for the symbolic Theorem 5 proof and m for the symbolic Cramer solution.
SYMBOLIC_SIDE_LIMIT = 3

_LAYOUTS = ("blocked", "interleaved")


@dataclass(frozen=True)
class MatchingCertificate(KhatriRaoSize):
    """det(Xᵀ ⊙ Y) ≢ 0 at any size: one monomial with coefficient ±1 and a nonzero evaluation.

    ``coefficient`` is FLINT's determinant at the 0/1 point that sets exactly the monomial's
    variables to 1 (which isolates that coefficient, see :func:`matching_certificate`);
    ``det_value`` is the exact determinant at a seeded integer point, and ``rank_mod_prime = m``
    modulo the checked prime ``prime`` proves it nonzero a second, independent way.
    """

    d_in: int
    d_out: int
    rows_of_columns: tuple[int, ...]
    monomial: tuple[str, ...]
    coefficient: int
    permutation_sign: int
    seed: int
    distribution: str
    attempts: int
    det_value: int
    prime: int
    rank_mod_prime: int

    @property
    def det_bits(self) -> int:
        return abs(self.det_value).bit_length()

    @property
    def verified(self) -> bool:
        return (self.coefficient in (1, -1) and self.coefficient == self.permutation_sign
                and self.det_value != 0 and self.rank_mod_prime == self.m)


def matching_certificate(d_in: int, d_out: int, *, seed: int = 0, distribution: str = "int:8",
                         max_attempts: int = 20, max_m: int = MATCHING_LIMIT
                         ) -> MatchingCertificate:
    """Certify ``det(Xᵀ ⊙ Y) ≢ 0`` for any size without expanding it (docs/model.md, Lemma 6).

    The identity-like matching pairs column ``k`` with row ``k = a_k·d_out + b_k``; its monomial is
    ``∏_k X[k][a_k]·Y[b_k][k]``. Setting these ``2m`` variables to 1 and all others to 0 makes
    every other monomial vanish: a monomial of det K takes exactly one ``X[k][·]`` and one
    ``Y[·][k]`` per column ``k``, and only one of each is nonzero here. So the determinant at
    that point *is* the coefficient, which must be the sign of the matching (here the identity, +1).
    A nonzero coefficient means a nonzero polynomial; the seeded integer point with exact FLINT
    determinant ≠ 0 (and full rank modulo a checked prime) is the explicit evaluation witness.

    Raises
    ------
    LimitExceededError
        For ``m > max_m``.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Lemma 6).

    See Also
    --------
    structured_witness : a second, structured proof at any size (Theorem 5).

    Examples
    --------
    >>> c = matching_certificate(3, 3)
    >>> c.coefficient, c.degree, c.verified
    (1, 18, True)
    """
    d_in, d_out = check_dims(d_in, d_out)
    m = d_in * d_out
    if m > max_m:
        raise LimitExceededError(f"matching certificate limited to m ≤ {max_m}, got {m} "
                                 f"(raise max_m)")
    rows_of_columns = tuple(range(m))
    X0 = fmpz_mat(m, d_in)
    Y0 = fmpz_mat(d_out, m)
    names = []
    for k, row in enumerate(rows_of_columns):
        a, b = divmod(row, d_out)
        X0[k, a] = 1
        Y0[b, k] = 1
        names += [f"X[{k}][{a}]", f"Y[{b}][{k}]"]
    coefficient = int(khatri_rao(X0.transpose(), Y0).det())
    sign = permutation_sign(rows_of_columns)
    for attempt in range(max_attempts):
        rng = layer_rng(seed, d_in, d_out, attempt)
        X = sample_matrix(rng, m, d_in, distribution)
        Y = sample_matrix(rng, d_out, m, distribution)
        K = khatri_rao(X.transpose(), Y)
        if isinstance(K, fmpq_mat):
            raise InputError(f"the evaluation witness needs integers, got {distribution!r}")
        det = int(K.det())
        if not det:
            continue
        prime = random_prime(62, rng)
        while det % prime == 0:  # a prime dividing det would hide full rank
            prime = random_prime(62, rng)
        return MatchingCertificate(d_in, d_out, rows_of_columns, tuple(names), coefficient, sign,
                                   seed, distribution, attempt + 1, det, prime,
                                   rank_mod_prime(K, prime))
    raise SingularSystemError(f"no nonsingular draw in {max_attempts} attempts", rank=-1, size=m)


# --------------------------------------------------------------------- Theorem 5 witness


def structured_frozen(B: Sequence[Sequence[Any]], d_in: int, layout: str = "blocked"
                      ) -> tuple[list[list[int]], list[list[Any]], list[int]]:
    """The frozen pair of the Theorem 5 witness, for any entry type (integers or SymPy symbols).

    Neuron ``n`` belongs to group ``g`` at position ``j`` — ``n = g·d_out + j`` (``"blocked"``)
    or ``n = j·d_in + g`` (``"interleaved"``). Its input row is ``e_gᵀ`` and its output column is
    ``B[:, j]``, so column ``n`` of ``K = Xᵀ ⊙ Y`` is ``e_g ⊗ B[:, j]``, which is column
    ``σ(n) = g·d_out + j`` of ``I_{d_in} ⊗ B``: ``K = (I ⊗ B)·P`` with ``P[σ(n), n] = 1``.

    Returns
    -------
    (V_in rows (m×d_in, 0/1), V_out rows (d_out×m), σ as a list)
    """
    d_out = len(B)
    if d_out == 0 or any(len(r) != d_out for r in B):
        raise ShapeError("B must be a nonempty square matrix")
    if layout not in _LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    m = d_in * d_out
    V_in = [[0] * d_in for _ in range(m)]
    V_out: list[list[Any]] = [[0] * m for _ in range(d_out)]
    sigma = [0] * m
    for g in range(d_in):
        for j in range(d_out):
            n = g * d_out + j if layout == "blocked" else j * d_in + g
            V_in[n][g] = 1
            for b in range(d_out):
                V_out[b][n] = B[b][j]
            sigma[n] = g * d_out + j
    return V_in, V_out, sigma


def interleaved_sign_formula(d_in: int, d_out: int) -> int:
    """Closed-form sign of the interleaved layout: ``(-1)^{C(d_in,2)·C(d_out,2)}``.

    σ is the perfect shuffle (the permutation taking vec of a d_out×d_in array to vec of its
    transpose); it is stated here so that tests can compare it with a cycle count.
    """
    return -1 if (math.comb(d_in, 2) * math.comb(d_out, 2)) % 2 else 1


@dataclass(frozen=True)
class StructuredWitness(KhatriRaoSize):
    """Exact check of Theorem 5 at one size.

    ``K = (I ⊗ B)·P`` entry by entry, and ``det K = sign(P)·det(B)^{d_in}``.
    """

    d_in: int
    d_out: int
    layout: str
    B: tuple[tuple[int, ...], ...]
    det_B: int
    sign: int
    det_K: int
    kron_identity: bool

    @property
    def verified(self) -> bool:
        return self.kron_identity and self.det_K == self.sign * self.det_B**self.d_in


def _invertible_B(d_out: int, seed: int) -> fmpz_mat:
    for attempt in range(100):
        B = sample_matrix(layer_rng(seed, 5, d_out, attempt), d_out, d_out, "int:3")
        if isinstance(B, fmpz_mat) and B.det() != 0:
            return B
    raise SingularSystemError("no invertible B found", rank=-1, size=d_out)  # pragma: no cover


def structured_witness(d_in: int, d_out: int, *, layout: str = "blocked",
                       B: Sequence[Sequence[int]] | None = None, seed: int = 0
                       ) -> StructuredWitness:
    """Check Theorem 5 exactly for integer ``B`` (FLINT determinants, any size).

    With ``B=None`` an invertible ``B`` is drawn from ``int:3`` with ``layer_rng(seed, 5, d_out,
    attempt)``. Checks ``K == (I ⊗ B)·P`` entry by entry and computes ``det K`` directly, to be
    compared with ``sign(σ)·det(B)^{d_in}`` (:attr:`StructuredWitness.verified`).

    Parameters
    ----------
    d_in, d_out : int
    layout : {"blocked", "interleaved"}
        Neuron order within the groups (it changes only ``sign(P)``).
    B : d_out×d_out integer rows, optional
    seed : int

    Returns
    -------
    StructuredWitness

    Raises
    ------
    ShapeError
        ``B`` not ``d_out×d_out``.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 5).

    See Also
    --------
    prove_structured_symbolic : the same identities with ``B`` symbolic.

    Examples
    --------
    >>> structured_witness(2, 2, B=[[1, 1], [0, 1]]).verified
    True
    """
    d_in, d_out = check_dims(d_in, d_out)
    Bm = _invertible_B(d_out, seed) if B is None else fmpz_mat([[int(x) for x in r] for r in B])
    if Bm.nrows() != d_out or Bm.ncols() != d_out:
        raise ShapeError(f"B must be {d_out}×{d_out}")
    V_in, V_out, sigma = structured_frozen(Bm.tolist(), d_in, layout)
    K = khatri_rao(fmpz_mat(V_in).transpose(), fmpz_mat(V_out))
    m = d_in * d_out
    P = fmpz_mat(m, m)
    for n, s in enumerate(sigma):
        P[s, n] = 1
    identity = fmpz_mat([[int(i == j) for j in range(d_in)] for i in range(d_in)])
    kron_ok = kronecker(identity, Bm) * P == K
    return StructuredWitness(d_in, d_out, layout, tuple(tuple(int(x) for x in r)
                                                        for r in Bm.tolist()),
                             int(Bm.det()), permutation_sign(sigma), int(K.det()), bool(kron_ok))


@dataclass(frozen=True)
class StructuredSymbolicProof:
    """Symbolic Theorem 5 at one size: identities in ``ZZ[B]`` for a matrix of symbols ``B``."""

    d_in: int
    d_out: int
    layout: str
    sign: int
    kron_identity: bool
    det_identity: bool
    det_terms: int
    ground_types: str

    @property
    def proved(self) -> bool:
        return self.kron_identity and self.det_identity


def prove_structured_symbolic(d_in: int, d_out: int, layout: str = "blocked"
                              ) -> StructuredSymbolicProof:
    """Prove ``K = (I ⊗ B)·P`` and ``det K = sign(P)·det(B)^{d_in}`` with ``B`` symbolic.

    ``B[i][j]`` are SymPy symbols; ``K`` is built from the frozen pair of
    :func:`structured_frozen` by the Khatri–Rao definition, the matrix identity is checked entry by
    entry, and the determinant identity is an equality of polynomials in ``ZZ[B]`` (DomainMatrix
    determinants). Sizes ``d_in, d_out ≤ 3``.

    Raises
    ------
    LimitExceededError
        Beyond :data:`SYMBOLIC_SIDE_LIMIT`.

    References
    ----------
    .. [1] A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
       Normalization Layers", COLT 2023, arXiv:2302.07937 (Theorem 5).

    See Also
    --------
    structured_witness

    >>> prove_structured_symbolic(2, 2, "interleaved").proved
    True
    """
    d_in, d_out = check_dims(d_in, d_out)
    if max(d_in, d_out) > SYMBOLIC_SIDE_LIMIT:
        raise LimitExceededError(f"symbolic Theorem 5 proof limited to d_in, d_out ≤ "
                                 f"{SYMBOLIC_SIDE_LIMIT}; use structured_witness for larger sizes")
    B = sympy.Matrix(d_out, d_out, lambda i, j: sympy.Symbol(f"B[{i}][{j}]"))
    V_in, V_out, sigma = structured_frozen(B.tolist(), d_in, layout)
    m = d_in * d_out
    K = sympy.Matrix(m, m, lambda r, n: V_in[n][r // d_out] * V_out[r % d_out][n])
    P = sympy.zeros(m, m)
    for n, s in enumerate(sigma):
        P[s, n] = 1
    kron_ok = (K - sympy.kronecker_product(sympy.eye(d_in), B) * P).is_zero_matrix
    ring = ZZ[tuple(B)]
    det_K = DomainMatrix.from_Matrix(K).convert_to(ring).det()
    det_B = DomainMatrix.from_Matrix(B).convert_to(ring).det()
    sign = permutation_sign(sigma)
    det_ok = det_K == ring.convert(sign) * det_B**d_in
    return StructuredSymbolicProof(d_in, d_out, layout, sign, bool(kron_ok), bool(det_ok),
                                   len(det_K), sympy_ground_types())
