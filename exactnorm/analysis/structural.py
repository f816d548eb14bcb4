"""Structural (generic) rank of sparse Khatri–Rao systems: matchings and the Boolean determinant.

docs/sparse.md. With Bernoulli masks on the frozen weights, Theorem 1's system is
``K = V_inᵀ ⊙ V_out`` (``n = d_in·d_out`` rows, ``m`` hidden neurons as columns), and entry
``(a·d_out + b, k)`` of ``K`` is ``V_in[k, a]·V_out[b, k]``. This module decides, from the
*support* of ``V_in`` and ``V_out`` alone, whether ``K`` has full row rank for generic values on
that support, and explains failures.

Why the support decides (the no-cancellation lemma). Treat the unmasked entries as independent
variables ``x[k, a] = V_in[k, a]`` and ``y[b, k] = V_out[b, k]``. Take any ``r × r`` minor of ``K``
on rows ``R`` and columns ``C``. Its Leibniz expansion is a sum over bijections ``π: C → R`` with
``π(k) = (a_k, b_k)`` of ``± ∏_{k∈C} x[k, a_k]·y[b_k, k]``. The variable ``x[k, ·]`` occurs in
column ``k`` only, and ``y[·, k]`` likewise, so the monomial of ``π`` contains exactly one variable
with first index ``k`` (namely ``x[k, a_k]``) and exactly one ``y`` with second index ``k``
(``y[b_k, k]``): reading them off recovers ``π`` (:func:`permutation_from_monomial`). Different
bijections give different monomials, every coefficient is ``±1`` and nothing cancels. Hence the
minor is a nonzero polynomial iff its support graph has a perfect matching, and the generic rank
of ``K`` equals the maximum matching size of the bipartite support graph — its *structural rank*.
For square ``K`` this is the statement "det K ≢ 0 iff the Boolean determinant (perfect matching)
of the pattern is nonzero". The same argument does **not** hold for an arbitrary pattern with
shared variables; it holds here because each column owns its variables.

A nonzero minor has total degree ``2r`` (two variables per column), so by Schwartz–Zippel
(Lemma 5) values drawn uniformly from a finite set ``S`` make it vanish with probability at most
``2r/|S|`` (:func:`schwartz_zippel_bound`).

Two independent matching implementations are provided and cross-checked in the tests: SciPy's
``structural_rank`` / ``maximum_bipartite_matching`` and NetworkX's Hopcroft–Karp; a brute-force
Boolean permanent covers tiny sizes.

>>> import numpy as np
>>> mask_in = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], bool)    # m × d_in
>>> mask_out = np.array([[1, 0, 1, 0], [0, 1, 0, 1]], bool)        # d_out × m
>>> P = khatri_rao_pattern(mask_in, mask_out)
>>> P.shape, structural_rank_scipy(P), structural_rank_networkx(P), boolean_determinant(P)
((4, 4), 4, 4, True)
>>> d = diagnose_pattern(mask_in, np.array([[1, 1, 1, 0], [0, 0, 0, 1]], bool))
>>> d.cause, d.structural_rank, d.zero_rows     # nothing links input 0 to output 1
('deficiency', 3, [(1, 0)])
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import maximum_bipartite_matching
from scipy.sparse.csgraph import structural_rank as _scipy_structural_rank

from exactnorm.errors import InputError, ShapeError
from exactnorm.exact.linalg import FlintMatrix, exact_rank, khatri_rao_system, rank_mod_prime

__all__ = [
    "khatri_rao_pattern",
    "support_masks",
    "structural_rank_scipy",
    "structural_rank_networkx",
    "maximum_matching_scipy",
    "maximum_matching_networkx",
    "structural_rank",
    "boolean_determinant",
    "boolean_permanent_bruteforce",
    "permutation_monomial",
    "permutation_from_monomial",
    "dead_neurons",
    "zero_rows",
    "schwartz_zippel_bound",
    "Diagnosis",
    "diagnose_pattern",
    "diagnose_draw",
]

# ----------------------------------------------------------------------------- patterns


def _as_bool(mask: Any, what: str) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.ndim != 2:
        raise ShapeError(f"{what} must be a 2-D mask, got shape {arr.shape}")
    return arr.astype(bool, copy=False)


def _check_masks(mask_in: Any, mask_out: Any) -> tuple[np.ndarray, np.ndarray]:
    mi = _as_bool(mask_in, "input mask (m × d_in)")
    mo = _as_bool(mask_out, "output mask (d_out × m)")
    if mi.shape[0] != mo.shape[1]:
        raise ShapeError(f"input mask has {mi.shape[0]} neurons (rows), output mask has "
                         f"{mo.shape[1]} (columns)")
    return mi, mo


def support_masks(V_in: FlintMatrix, V_out: FlintMatrix) -> tuple[np.ndarray, np.ndarray]:
    """The supports (nonzero entries) of a concrete frozen pair, as Boolean arrays.

    The support of a draw combines its Bernoulli mask and any zero *values* (``int:8`` contains
    0), which is what decides the generic rank of that draw's pattern.
    """
    mi = np.array([[x != 0 for x in row] for row in V_in.tolist()], dtype=bool)
    mo = np.array([[x != 0 for x in row] for row in V_out.tolist()], dtype=bool)
    return mi.reshape(V_in.nrows(), V_in.ncols()), mo.reshape(V_out.nrows(), V_out.ncols())


def khatri_rao_pattern(mask_in: Any, mask_out: Any) -> sp.csc_matrix:
    """Support of ``K = V_inᵀ ⊙ V_out`` as a Boolean CSC matrix of shape ``(d_in·d_out) × m``.

    Entry ``(a·d_out + b, k)`` is set iff ``mask_in[k, a]`` and ``mask_out[b, k]`` — the same
    row order as :func:`exactnorm.exact.linalg.khatri_rao` and
    :func:`exactnorm.exact.linalg.khatri_rao_system` (column-major vec).

    Parameters
    ----------
    mask_in : array_like of bool, shape (m, d_in)
        Support of ``V_in`` (hidden neuron ``k`` reads input ``a`` iff ``mask_in[k, a]``).
    mask_out : array_like of bool, shape (d_out, m)
        Support of ``V_out``.

    Notes
    -----
    Column ``k`` is the product set ``A_k × B_k`` of the inputs and outputs of neuron ``k``, so
    the CSC arrays are built directly (no dense ``n × m`` intermediate): sizes ``|A_k|·|B_k|``,
    and row indices ``a·d_out + b`` in increasing order.
    """
    mi, mo = _check_masks(mask_in, mask_out)
    m, d_in = mi.shape
    d_out = mo.shape[0]
    in_k, in_a = np.nonzero(mi)                      # sorted by neuron k, then input a
    out_k, out_b = np.nonzero(mo.T)                  # sorted by neuron k, then output b
    count_a = np.bincount(in_k, minlength=m)
    count_b = np.bincount(out_k, minlength=m)
    start_b = np.concatenate(([0], np.cumsum(count_b)[:-1])).astype(np.int64)
    reps = count_b[in_k]                             # each (k, a) pairs with every b of B_k
    total = int(reps.sum())
    rep_k = np.repeat(in_k, reps)
    rep_a = np.repeat(in_a, reps)
    block_start = np.repeat(np.cumsum(reps) - reps, reps)
    offset = np.arange(total, dtype=np.int64) - block_start
    rows = rep_a.astype(np.int64) * d_out + out_b[start_b[rep_k] + offset]
    indptr = np.concatenate(([0], np.cumsum(count_a * count_b))).astype(np.int64)
    data = np.ones(total, dtype=bool)
    return sp.csc_matrix((data, rows, indptr), shape=(d_in * d_out, m))


def _csr(pattern: Any) -> sp.csr_matrix:
    if sp.issparse(pattern):
        return sp.csr_matrix(pattern, dtype=bool)
    return sp.csr_matrix(np.asarray(pattern, dtype=bool))


# ----------------------------------------------------------------------------- matchings


def maximum_matching_scipy(pattern: Any) -> dict[int, int]:
    """A maximum matching row → column of the support graph (SciPy, Hopcroft–Karp)."""
    P = _csr(pattern)
    if P.shape[0] == 0 or P.shape[1] == 0:
        return {}
    col_of_row = maximum_bipartite_matching(P, perm_type="column")
    return {int(r): int(c) for r, c in enumerate(col_of_row) if c >= 0}


def maximum_matching_networkx(pattern: Any) -> dict[int, int]:
    """A maximum matching row → column of the support graph (NetworkX Hopcroft–Karp).

    Independent of SciPy: the graph is built from the coordinate list, rows as ``("r", i)`` and
    columns as ``("c", k)``.
    """
    import networkx as nx
    from networkx.algorithms.bipartite import hopcroft_karp_matching

    P = sp.coo_matrix(_csr(pattern))
    G = nx.Graph()
    rows = [("r", i) for i in range(P.shape[0])]
    G.add_nodes_from(rows)
    G.add_nodes_from(("c", k) for k in range(P.shape[1]))
    G.add_edges_from((("r", int(i)), ("c", int(k))) for i, k in zip(P.row, P.col))
    matching = hopcroft_karp_matching(G, top_nodes=rows)
    return {u[1]: v[1] for u, v in matching.items() if u[0] == "r"}


def structural_rank_scipy(pattern: Any) -> int:
    """Structural rank (maximum matching size) via ``scipy.sparse.csgraph.structural_rank``."""
    if sp.issparse(pattern) and pattern.format == "csc":
        # The CSC arrays of K are the CSR arrays of Kᵀ, which has the same structural rank.
        P = sp.csr_matrix((pattern.data, pattern.indices, pattern.indptr),
                          shape=pattern.shape[::-1])
    else:
        P = _csr(pattern)
    if P.shape[0] == 0 or P.shape[1] == 0:
        return 0
    return int(_scipy_structural_rank(P))


def structural_rank_networkx(pattern: Any) -> int:
    """Structural rank via NetworkX's Hopcroft–Karp matching."""
    return len(maximum_matching_networkx(pattern))


def structural_rank(pattern: Any, method: str = "scipy") -> int:
    """Structural rank of a support pattern = generic rank of the sparse Khatri–Rao ``K``.

    Parameters
    ----------
    pattern : scipy sparse matrix or array_like of bool
    method : {"scipy", "networkx"}

    Notes
    -----
    Equal to the exact rank of ``K`` for generic values on the support by the no-cancellation
    lemma in the module docstring (docs/sparse.md).
    """
    if method == "scipy":
        return structural_rank_scipy(pattern)
    if method == "networkx":
        return structural_rank_networkx(pattern)
    raise InputError(f"method must be 'scipy' or 'networkx', got {method!r}",
                     parameter="method")


def boolean_determinant(pattern: Any) -> bool:
    """The Boolean determinant of a square pattern: ``True`` iff it has a perfect matching.

    For the Khatri–Rao pattern this is exactly "det K is not the zero polynomial" (docs/sparse.md).
    """
    P = _csr(pattern)
    if P.shape[0] != P.shape[1]:
        raise ShapeError(f"the Boolean determinant needs a square pattern, got {P.shape}")
    return structural_rank_scipy(P) == P.shape[0]


def boolean_permanent_bruteforce(pattern: Any) -> int:
    """Number of perfect matchings of a small square pattern, by enumerating permutations.

    An independent third path for tiny sizes (n ≤ 8); it also counts the terms of the symbolic
    determinant, since no two permutations share a monomial.
    """
    A = np.asarray(_csr(pattern).toarray(), dtype=bool)
    n, n2 = A.shape
    if n != n2:
        raise ShapeError(f"the permanent needs a square pattern, got {A.shape}")
    if n > 8:
        raise ShapeError(f"brute force is for n ≤ 8, got n = {n}")
    return sum(all(A[perm[k], k] for k in range(n)) for perm in itertools.permutations(range(n)))


# ---------------------------------------------------------------- the no-cancellation lemma

Monomial = tuple[tuple[str, int, int], ...]


def permutation_monomial(rows_of_columns: Sequence[int], d_out: int) -> Monomial:
    """The monomial of the Leibniz term that matches column ``k`` with row ``rows_of_columns[k]``.

    Row ``r = a·d_out + b`` of ``K`` in column ``k`` holds ``x[k, a]·y[b, k]``; the monomial is the
    sorted tuple of its variables ``("x", k, a)`` and ``("y", b, k)``.

    >>> permutation_monomial([1, 0], d_out=2)
    (('x', 0, 0), ('x', 1, 0), ('y', 0, 1), ('y', 1, 0))
    """
    factors = []
    for k, r in enumerate(rows_of_columns):
        a, b = divmod(int(r), d_out)
        factors += [("x", k, a), ("y", b, k)]
    return tuple(sorted(factors))


def permutation_from_monomial(monomial: Monomial, d_out: int) -> list[int]:
    """Recover the matching from its monomial: the proof that distinct matchings never cancel.

    Column ``k`` owns exactly the variables ``x[k, ·]`` and ``y[·, k]``, so the unique ``x`` with
    first index ``k`` gives ``a_k`` and the unique ``y`` with second index ``k`` gives ``b_k``;
    the row matched to ``k`` is ``a_k·d_out + b_k``.

    >>> permutation_from_monomial(permutation_monomial([3, 0, 2, 1], 2), 2)
    [3, 0, 2, 1]
    """
    a_of: dict[int, int] = {}
    b_of: dict[int, int] = {}
    for name, i, j in monomial:
        if name == "x":
            if i in a_of:
                raise InputError(f"two x-variables of column {i}: not a Khatri–Rao monomial")
            a_of[i] = j
        else:
            if j in b_of:
                raise InputError(f"two y-variables of column {j}: not a Khatri–Rao monomial")
            b_of[j] = i
    if set(a_of) != set(b_of):
        raise InputError("x and y variables name different columns")
    return [a_of[k] * d_out + b_of[k] for k in sorted(a_of)]


# ----------------------------------------------------------------------------- diagnosis


def dead_neurons(mask_in: Any, mask_out: Any) -> tuple[list[int], list[int]]:
    """Hidden neurons whose input row is fully masked, and those whose output column is.

    Such a neuron ``k`` gives a zero column ``k`` of ``K``: it can never carry any part of
    ``W``, whatever its ``γ_k``.
    """
    mi, mo = _check_masks(mask_in, mask_out)
    no_input = [int(k) for k in np.flatnonzero(~mi.any(axis=1))]
    no_output = [int(k) for k in np.flatnonzero(~mo.any(axis=0))]
    return no_input, no_output


def zero_rows(mask_in: Any, mask_out: Any) -> list[tuple[int, int]]:
    """Entries ``(b, a)`` of ``W`` that no live neuron connects: zero rows ``a·d_out + b`` of K."""
    mi, mo = _check_masks(mask_in, mask_out)
    reach = mo.astype(np.int64) @ mi.astype(np.int64)       # (d_out, d_in): # paths b ← k ← a
    return [(int(b), int(a)) for b, a in zip(*np.nonzero(reach == 0))]


def schwartz_zippel_bound(size: int, support_size: int) -> Fraction:
    """``2·size/|S|`` (capped at 1): Schwartz–Zippel (Lemma 5) for one ``size × size`` minor of K.

    A nonzero polynomial of total degree ``t`` vanishes at a uniform point of ``S^N`` with
    probability at most ``t/|S|``; a ``size × size`` minor of ``K`` has degree ``2·size`` (two
    variables per column). So a generically invertible pattern filled with values uniform on
    ``S`` is singular with probability at most ``2·size/|S|``.

    >>> schwartz_zippel_bound(16, 17)
    Fraction(1, 1)
    >>> schwartz_zippel_bound(16, 2**21 + 1)
    Fraction(32, 2097153)
    """
    if size < 0 or support_size < 1:
        raise InputError("size must be ≥ 0 and support_size ≥ 1")
    return min(Fraction(1), Fraction(2 * size, support_size))


@dataclass
class Diagnosis:
    """Why a sparse Khatri–Rao system is (or is not) generically of full row rank.

    ``cause`` is ``"none"`` (structural rank ``n``), ``"dead_neurons"`` (fewer than ``n`` live
    neurons remain, so zero columns alone forbid full rank — with ``m = n`` any dead neuron) or
    ``"deficiency"`` (enough live neurons but no matching of every row: a Hall violation, e.g.
    a zero row listed in ``zero_rows``). For a concrete draw ``exact_rank`` and, when a prime is
    given, ``rank_mod_prime`` are filled in.
    """

    n: int
    m: int
    structural_rank: int
    dead_input: list[int]
    dead_output: list[int]
    zero_rows: list[tuple[int, int]]
    exact_rank: int | None = None
    prime: int | None = None
    rank_mod_prime: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def dead(self) -> list[int]:
        """All dead neurons (input row or output column fully masked), sorted."""
        return sorted(set(self.dead_input) | set(self.dead_output))

    @property
    def generically_full_rank(self) -> bool:
        return self.structural_rank == self.n

    @property
    def cause(self) -> str:
        if self.generically_full_rank:
            return "none"
        if self.m - len(self.dead) < self.n:
            return "dead_neurons"
        return "deficiency"

    def message(self) -> str:
        """One line naming the cause, the dead neurons and the ranks."""
        parts = [f"structural rank {self.structural_rank}/{self.n} (m = {self.m})"]
        if self.dead:
            shown = ", ".join(map(str, self.dead[:12])) + (" …" if len(self.dead) > 12 else "")
            parts.append(f"dead neurons [{shown}] (no input: {len(self.dead_input)}, "
                         f"no output: {len(self.dead_output)})")
        if self.zero_rows:
            parts.append(f"{len(self.zero_rows)} unreachable entries (b, a) of W, e.g. "
                         f"{self.zero_rows[0]}")
        if self.exact_rank is not None:
            parts.append(f"exact rank {self.exact_rank}")
        if self.rank_mod_prime is not None:
            parts.append(f"rank {self.rank_mod_prime} mod {self.prime}")
        return f"{self.cause}: " + "; ".join(parts)


def diagnose_pattern(mask_in: Any, mask_out: Any) -> Diagnosis:
    """Structural diagnosis of the pattern given by two masks (docs/sparse.md)."""
    mi, mo = _check_masks(mask_in, mask_out)
    n = mi.shape[1] * mo.shape[0]
    no_input, no_output = dead_neurons(mi, mo)
    return Diagnosis(n=n, m=mi.shape[0],
                     structural_rank=structural_rank_scipy(khatri_rao_pattern(mi, mo)),
                     dead_input=no_input, dead_output=no_output, zero_rows=zero_rows(mi, mo))


def diagnose_draw(V_in: FlintMatrix, V_out: FlintMatrix, *, prime: int | None = None) -> Diagnosis:
    """Diagnose a concrete frozen pair: its support's structure plus the exact rank of ``K``.

    With ``prime`` the rank of ``K`` modulo that (checked) prime is recorded as well; full rank
    modulo a prime proves full rank over Q.
    """
    diag = diagnose_pattern(*support_masks(V_in, V_out))
    K = khatri_rao_system(V_in, V_out)
    diag.exact_rank = exact_rank(K)
    if prime is not None:
        diag.prime = prime
        diag.rank_mod_prime = rank_mod_prime(K, prime)
    return diag
