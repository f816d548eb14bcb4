"""The sparse Theorem 1 proof chain, step by step, as exact quantities (docs/sparse.md).

Contract. Every probability here is exact: a :class:`fractions.Fraction` when ``p`` is one, a
SymPy polynomial in ``p`` when ``p`` is a SymPy symbol (the functions only use ``+ − ×`` and
integer powers, so the same code serves both). Only the least-squares fit of measured thresholds
(:func:`least_squares`) returns floats, summed with :func:`math.fsum` so the result does not depend
on summation order; it is a statistic of measurements, not a certified value.

The chain of the source's sparse result and what each step is here:

1. Continuous values: the support decides (the no-cancellation lemma of
   :mod:`exactnorm.analysis.structural`): ``det K ≢ 0`` iff the Boolean determinant (a perfect
   matching) of the pattern of ``K = M_inᵀ ⊙ M_out`` is nonzero.
2. The Boolean matrix: the 0/1 matrix ``M_inᵀ ⊙ M_out`` *nonsingular over Q* implies step 1
   (evaluate ``det K`` at the all-ones point of the support), but not conversely: at ``p = 1`` it
   has rank 1. :func:`enumerate_square_patterns` counts both events exactly.
3. The column law and its replacement. Column ``k`` of ``K``'s pattern is ``r_k ⊗ c_k`` (row
   ``k`` of ``M_in`` Kronecker column ``k`` of ``M_out``): each entry is ``Bern(p²)`` (both sides
   masked) or ``Bern(p)`` (one side), but the entries of one column are *not* independent — the
   number of ones is a product ``|r_k|·|c_k|`` (:func:`column_ones_law`). The source replaces
   each column by i.i.d. ``Bern(q)^n`` vectors, ``n = d²``, with ``q`` a free parameter — the
   density of the *replacement*, not the entry probability — and asks that the real column
   stochastically dominate the replacement (then a pattern that is nonsingular for the
   replacement is so for the real masks, by monotone coupling). :func:`replacement_flow` decides
   the domination exactly (Strassen: a coupling with ``replacement ≤ real`` exists iff a maximum
   flow carries mass 1); it holds at ``q = p²/(2d)`` and fails at ``q = p²`` for ``d = 2, 3, 4``
   (T8), where the event "column nonzero" is a witness (:func:`zero_column_probability`: by
   Harris' inequality ``P_real(column zero) ≥ (1 − p²)^n``). At ``q ≤ p²/(2d)`` the comparison
   reverses: the replacement *over*-estimates dead neurons. A single row of ``K`` has exactly the
   i.i.d. law at ``q = p²`` (:func:`zero_row_probability`).
4. The condition "p ≥ √(2qd)" is ``q ≤ p²/(2d)``: the replacement density may be at most
   ``p²/(2d)``. The singularity theorem needs ``q ≥ q_req(n) ≈ c·log n / n``, so the chain asks
   ``p ≥ √(2d·q_req(d²))`` (:func:`source_chain_threshold`), of order ``2√(ln d / d)``, with
   ``2d³p = Õ(d²√d)`` non-zeros — the source's headline. The summary's "p = Θ(log d/d)" is read
   as ``Θ(√(log d/d))``, the only reading consistent with both.
5. The singularity theorem for i.i.d. Boolean matrices (Basak–Rudelson: above
   ``(1+ε)·log n / n`` the singularity probability tends to 0 and is dominated by a zero row or
   column). No explicit finite-``n`` constant is used; the chain takes the dominant term
   ``2n(1 − q)^n`` as its estimate.
6. Union bound over ``L`` layers: ``P(some layer fails) ≤ L·P(one layer fails)``, so each layer
   is given ``δ/L`` (:func:`dead_neuron_threshold`, :func:`chain_threshold`).

References
----------
A. Giannou, S. Rajput, D. Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937 (the sparse result and its proof sketch).
A. Basak, M. Rudelson, "Sharp transition of the invertibility of the adjacency matrices of
sparse random graphs", Probability Theory and Related Fields, 2021.
V. Strassen, "The existence of probability measures with given marginals", Ann. Math. Statist.
36, 1965 (stochastic domination as a monotone coupling).
T. E. Harris, "A lower bound for the critical probability in a certain percolation process",
1960 (positive correlation of monotone events).

>>> from fractions import Fraction
>>> entry_probability(Fraction(1, 2), "both")
Fraction(1, 4)
>>> column_ones_law(2, 2, Fraction(1, 2), "both")[4]     # both inputs and both outputs kept
Fraction(1, 16)
>>> exact, iid = zero_column_probability(2, 2, Fraction(1, 2), "both")
>>> exact, iid, exact >= iid
(Fraction(7, 16), Fraction(81, 256), True)
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from exactnorm.errors import InputError

__all__ = [
    "entry_probability",
    "column_ones_law",
    "iid_ones_law",
    "zero_column_probability",
    "zero_row_probability",
    "dead_neuron_lower_bound",
    "zero_row_lower_bound",
    "zero_row_threshold",
    "PatternCounts",
    "enumerate_square_patterns",
    "enumerate_iid_square",
    "one_sided_no_matching_counts",
    "counts_to_probability",
    "dead_neuron_threshold",
    "chain_threshold",
    "hull_class_law",
    "rectangle_class_law",
    "replacement_flow",
    "chain_density_required",
    "source_chain_threshold",
    "LinearFit",
    "least_squares",
]

SIDES = ("input", "output", "both")


def _check_side(side: str) -> None:
    if side not in SIDES:
        raise InputError(f"mask side must be one of {', '.join(SIDES)}, got {side!r}")


def entry_probability(p: Any, side: str = "both") -> Any:
    """``q = P(K-pattern entry = 1)``: ``p²`` when both frozen matrices are masked, else ``p``.

    Entry ``(a·d_out + b, k)`` is ``M_in[k, a]·M_out[b, k]``, a product of two independent
    ``Bern(p)`` bits (or one bit when the other side is unmasked).
    """
    _check_side(side)
    return p * p if side == "both" else p


def _binomial_law(n: int, p: Any) -> list[Any]:
    return [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]


def column_ones_law(d_in: int, d_out: int, p: Any, side: str = "both") -> dict[int, Any]:
    """Exact law of the number of ones in one column of the pattern of ``M_inᵀ ⊙ M_out``.

    The column is ``r ⊗ c`` with ``r ~ Bern(p)^{d_in}`` and ``c ~ Bern(p)^{d_out}`` independent,
    so it has ``|r|·|c|`` ones: ``P(N = t) = Σ_{i·j = t} C(d_in, i)p^i(1−p)^{d_in−i}·
    C(d_out, j)p^j(1−p)^{d_out−j}``. An unmasked side has ``|r| = d_in`` (or ``|c| = d_out``).

    Parameters
    ----------
    d_in, d_out : int
    p : Fraction or sympy expression
        Keep probability.
    side : {"both", "input", "output"}
        Which frozen matrix is masked.

    Returns
    -------
    dict
        ``{t: P(N = t)}`` over the reachable counts ``t``.

    >>> law = column_ones_law(2, 3, Fraction(1, 3), "both")
    >>> sum(law.values()), sorted(law)
    (Fraction(1, 1), [0, 1, 2, 3, 4, 6])
    """
    _check_side(side)
    rows = _binomial_law(d_in, p) if side != "output" else [0] * d_in + [1]
    cols = _binomial_law(d_out, p) if side != "input" else [0] * d_out + [1]
    law: dict[int, Any] = {}
    for i, pi in enumerate(rows):
        for j, pj in enumerate(cols):
            if pi == 0 or pj == 0:
                continue
            law[i * j] = law.get(i * j, 0) + pi * pj
    return law


def iid_ones_law(n: int, q: Any) -> dict[int, Any]:
    """The replacement's law: ``N ~ Binomial(n, q)`` for a column of ``n`` i.i.d. ``Bern(q)``."""
    return dict(enumerate(_binomial_law(n, q)))


def zero_column_probability(d_in: int, d_out: int, p: Any,
                            side: str = "both") -> tuple[Any, Any]:
    """``(exact, iid)`` probability that one column of the pattern is zero (a dead neuron).

    Exact: the column is zero iff ``r = 0`` or ``c = 0``:
    ``(1−p)^{d_in} + (1−p)^{d_out} − (1−p)^{d_in+d_out}`` (one term for a one-sided mask).
    i.i.d. replacement: ``(1 − q)^{d_in·d_out}``. Harris' inequality gives exact ≥ iid.
    """
    _check_side(side)
    a = (1 - p) ** d_in if side != "output" else 0
    b = (1 - p) ** d_out if side != "input" else 0
    exact = a + b - a * b
    return exact, (1 - entry_probability(p, side)) ** (d_in * d_out)


def zero_row_probability(m: int, p: Any, side: str = "both") -> Any:
    """Probability that row ``(a, b)`` of the pattern is zero: ``(1 − q)^m``, exact.

    The entries of one row, ``M_in[k, a]·M_out[b, k]`` for ``k = 1 … m``, use disjoint mask bits,
    so they are independent: here the i.i.d. replacement is exact.
    """
    return (1 - entry_probability(p, side)) ** m


def dead_neuron_lower_bound(d: int, m: int, p: Fraction) -> Fraction:
    """A rigorous lower bound on ``P(some neuron of one square layer is dead)`` (``m`` neurons).

    Neurons are independent, each dead with probability ``z`` (:func:`zero_column_probability`),
    so ``P = 1 − (1−z)^m ≥ mz/(1+mz)`` (from ``(1−z)^m ≤ 1/(1+mz)``). With ``m = n = d²`` a dead
    neuron makes ``K`` singular for every value, so this bounds the failure probability below.

    >>> dead_neuron_lower_bound(2, 4, Fraction(1, 2))
    Fraction(7, 11)
    """
    z, _ = zero_column_probability(d, d, p, "both")
    return m * z / (1 + m * z)


def zero_row_lower_bound(d: int, m: int, p: Fraction) -> Fraction:
    """A rigorous lower bound on ``P(some row of the pattern is zero)`` (``n = d²`` rows).

    A zero row ``(a, b)`` is an entry of ``W`` that no neuron connects: fatal for every width.
    Rows are dependent, so the second-moment (de Caen / Chung–Erdős) inequality
    ``P(∪A_i) ≥ (Σ P(A_i))² / Σ_{i,j} P(A_i ∩ A_j)`` is used, with the exact pair laws per
    neuron: rows sharing ``a`` (or ``b``) are both missed with probability
    ``u = (1−p) + p(1−p)²``, rows sharing nothing with ``(1−p²)²``.

    >>> zero_row_lower_bound(2, 4, Fraction(1, 2)) < Fraction(43805, 65536)   # exact, T8
    True
    """
    n = d * d
    w = (1 - p * p) ** m
    u = (1 - p) + p * (1 - p) ** 2
    first = n * w
    pairs = first + 2 * n * (d - 1) * u**m + n * (d - 1) ** 2 * w * w
    return first * first / pairs if pairs else Fraction(0)


# ----------------------------------------------------------------- exhaustive small cases


@dataclass
class PatternCounts:
    """Counts of patterns by number of ones among their ``bits`` Bernoulli bits, per event.

    ``counts[event][t]`` is the number of bit patterns with ``t`` ones in which ``event``
    happens, so ``P(event) = Σ_t counts[event][t]·x^t(1−x)^{bits−t}`` with ``x`` the bits'
    Bernoulli parameter (:func:`counts_to_probability`).
    """

    bits: int
    counts: dict[str, list[int]]


EVENTS = ("no_matching", "singular_01", "zero_column", "zero_row")


@functools.lru_cache(maxsize=4)
def _signed_permutations(n: int) -> list[tuple[tuple[int, ...], int]]:
    out = []
    for perm in itertools.permutations(range(n)):
        inversions = sum(perm[i] > perm[j] for i in range(n) for j in range(i + 1, n))
        out.append((perm, -1 if inversions % 2 else 1))
    return out


def _classify(columns: Sequence[int], n: int) -> dict[str, bool]:
    """Events of one square 0/1 matrix given by column bitmasks (row ``i`` ↔ bit ``i``)."""
    det = 0
    matched = False
    for perm, sign in _signed_permutations(n):
        if all(columns[k] >> perm[k] & 1 for k in range(n)):
            matched = True
            det += sign
    union = 0
    for c in columns:
        union |= c
    return {"no_matching": not matched, "singular_01": det == 0,
            "zero_column": any(c == 0 for c in columns), "zero_row": union != (1 << n) - 1}


def enumerate_square_patterns(d: int) -> PatternCounts:
    """Exhaustive law of the square pattern ``M_inᵀ ⊙ M_out`` (``m = n = d²``, both sides masked).

    Enumerates all ``2^{2d³}`` mask pairs (``d = 2``: 65 536) and counts, by number of kept
    mask bits, the events ``no_matching`` (generic singularity: Boolean determinant zero),
    ``singular_01`` (the 0/1 matrix is singular over Q), ``zero_column`` (a dead neuron) and
    ``zero_row``. Determinants are Leibniz sums over integers (exact).

    Parameters
    ----------
    d : int
        ``d_in = d_out``; only ``2·d³ ≤ 20`` mask bits are enumerated (``d ≤ 2``).

    Returns
    -------
    PatternCounts
        Counts with ``bits = 2·d³``; :func:`counts_to_probability` at ``x = p`` gives the law.

    Raises
    ------
    InputError
        If the enumeration would exceed ``2²⁰`` patterns.
    """
    n = d * d
    if 2 * d * n > 20:
        raise InputError(f"exhaustive enumeration is for 2·d³ ≤ 20 mask bits, got d = {d}")
    rowsets = {}
    for A in range(1 << d):
        for B in range(1 << d):
            rowsets[(A, B)] = sum(1 << (a * d + b) for a in range(d) for b in range(d)
                                  if A >> a & 1 and B >> b & 1)
    bits = 2 * d * n
    counts = {e: [0] * (bits + 1) for e in EVENTS}
    # a neuron is a pair (A_k, B_k) of input and output sets; enumerate the n-tuples of pairs
    pairs = list(rowsets)
    for choice in itertools.product(pairs, repeat=n):
        ones = sum(bin(A).count("1") + bin(B).count("1") for A, B in choice)
        for e, hit in _classify([rowsets[c] for c in choice], n).items():
            counts[e][ones] += hit
    return PatternCounts(bits, counts)


def enumerate_iid_square(n: int) -> PatternCounts:
    """The i.i.d. replacement: all ``2^{n²}`` square 0/1 matrices (``n = 4``: 65 536), same events.

    Here the counts are by number of ones of the matrix itself, i.e. the law has ``x = q``.
    """
    if n * n > 20:
        raise InputError(f"exhaustive enumeration is for n² ≤ 20 entries, got n = {n}")
    counts = {e: [0] * (n * n + 1) for e in EVENTS}
    for columns in itertools.product(range(1 << n), repeat=n):
        ones = sum(bin(c).count("1") for c in columns)
        for e, hit in _classify(columns, n).items():
            counts[e][ones] += hit
    return PatternCounts(n * n, counts)


def one_sided_no_matching_counts(d: int) -> PatternCounts:
    """Exact law of generic singularity when only ``V_in`` is masked (``m = n = d²``).

    Column ``k`` is ``A_k × [d]``; a perfect matching depends only on the multiset of the
    ``A_k``, so multisets of ``n`` input sets are enumerated with their multinomial weights
    (``d = 3``: 5 005 multisets of nonempty sets instead of ``2^{27}`` masks). Events:
    ``no_matching`` and ``zero_column``; the 0/1 matrix has rank ≤ d < n, so ``singular_01``
    always holds.
    """
    n = d * d
    bits = d * n
    counts = {e: [0] * (bits + 1) for e in ("no_matching", "singular_01", "zero_column")}
    rowset = {A: sum(1 << (a * d + b) for a in range(d) if A >> a & 1 for b in range(d))
              for A in range(1 << d)}
    import networkx as nx
    from networkx.algorithms.bipartite import (
        hopcroft_karp_matching,
    )

    for multiset in itertools.combinations_with_replacement(range(1, 1 << d), n):
        weight = math.factorial(n)
        for A in set(multiset):
            weight //= math.factorial(multiset.count(A))
        ones = sum(bin(A).count("1") for A in multiset)
        G = nx.Graph()
        top = [("c", k) for k in range(n)]
        G.add_nodes_from(top)
        G.add_edges_from((("c", k), ("r", i)) for k, A in enumerate(multiset)
                         for i in range(n) if rowset[A] >> i & 1)
        matched = len(hopcroft_karp_matching(G, top_nodes=top)) // 2 == n
        counts["no_matching"][ones] += 0 if matched else weight
        counts["singular_01"][ones] += weight
    # patterns with an empty A_k (a dead neuron) never match; count them by inclusion–exclusion
    # over the number of ones: all patterns minus those with every A_k nonempty
    for ones in range(bits + 1):
        nonempty = _count_nonempty_rows(n, d, ones)
        total = math.comb(bits, ones)
        counts["zero_column"][ones] = total - nonempty
        counts["no_matching"][ones] += total - nonempty
        counts["singular_01"][ones] += total - nonempty
    return PatternCounts(bits, counts)


def _count_nonempty_rows(n: int, d: int, ones: int) -> int:
    """Number of ``n × d`` 0/1 matrices with ``ones`` ones and no zero row."""
    # coefficient of x^ones in ((1+x)^d − 1)^n
    poly = [1]
    row = [math.comb(d, i) for i in range(d + 1)]
    row[0] = 0
    for _ in range(n):
        new = [0] * (len(poly) + d)
        for i, a in enumerate(poly):
            if a:
                for j, b in enumerate(row):
                    new[i + j] += a * b
        poly = new
    return poly[ones] if ones < len(poly) else 0


def counts_to_probability(counts: Sequence[int], x: Any) -> Any:
    """``Σ_t counts[t]·x^t·(1−x)^{bits−t}`` (``bits = len(counts) − 1``): exact in ``x``."""
    bits = len(counts) - 1
    return sum((c * x**t * (1 - x) ** (bits - t) for t, c in enumerate(counts) if c), 0)


# ----------------------------------------------------------------- thresholds and the chain


def _smallest_grid_p(ok: Callable[[Fraction], bool], step: Fraction) -> Fraction:
    """Smallest ``p = k·step`` with ``ok(p)``, for ``ok`` monotone in ``p`` (bisection)."""
    lo, hi = 0, int(1 / step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid * step):
            hi = mid
        else:
            lo = mid
    return hi * step


def dead_neuron_threshold(d: int, m: int, delta: Fraction, layers: int = 1,
                          step: Fraction = Fraction(1, 10**4)) -> Fraction:
    """Smallest grid ``p`` with ``mz/(1+mz) ≤ δ/L``: below it one square layer has a dead neuron
    with probability ``> δ/L`` (:func:`dead_neuron_lower_bound`), so for ``m = d²`` no ``p`` below
    it can reach failure probability ``δ/L`` per layer — a necessary condition, exact.

    Parameters
    ----------
    d : int
        ``d_in = d_out``.
    m : int
        Hidden width; the bound means "failure" only for ``m = d²`` (no spare neuron).
    delta : Fraction
        Target failure probability of the whole network.
    layers : int
        Number of layers ``L`` sharing ``delta`` (union bound).
    step : Fraction
        Grid step of ``p``.

    Returns
    -------
    Fraction
        The grid point; the bound is increasing in ``p``, so bisection finds the smallest.

    >>> dead_neuron_threshold(4, 16, Fraction(1, 100), step=Fraction(1, 100))
    Fraction(87, 100)
    """
    budget = delta / layers

    def ok(p: Fraction) -> bool:
        z, _ = zero_column_probability(d, d, p, "both")
        return m * z <= budget / (1 - budget)

    return _smallest_grid_p(ok, step)


def _zero_row_bound_float(d: int, m: int, p: float) -> float:
    """Float twin of :func:`zero_row_lower_bound`, only to locate the grid point quickly."""
    if p >= 1:
        return 0.0
    n = d * d
    w = math.exp(m * math.log1p(-p * p))
    u = (1 - p) + p * (1 - p) ** 2
    first = n * w
    pairs = first + 2 * n * (d - 1) * u**m + n * (d - 1) ** 2 * w * w
    return first * first / pairs if pairs else 0.0


def zero_row_threshold(d: int, m: int, delta: Fraction, layers: int = 1,
                       step: Fraction = Fraction(1, 10**4)) -> Fraction:
    """The grid ``p`` with ``B(p) ≤ δ/L < B(p − step)`` for the exact zero-row lower bound
    ``B`` (:func:`zero_row_lower_bound`): at ``p − step`` a layer of width ``m`` has a zero row
    (an unreachable entry of ``W``) with probability ``> δ/L``, and so at every smaller ``p``
    (the failure probability decreases in ``p``) — a necessary condition for any width.

    A float bisection only proposes the point; both inequalities are then decided in exact
    Fractions, moving one grid step at a time until they hold.

    Parameters
    ----------
    d : int
        ``d_in = d_out``.
    m : int
        Hidden width (any ``m``: a zero row is fatal for every width).
    delta : Fraction
        Target failure probability of the whole network.
    layers : int
        Number of layers ``L`` sharing ``delta`` (union bound).
    step : Fraction
        Grid step of ``p``.

    Returns
    -------
    Fraction
        ``p`` with ``B(p) ≤ δ/L < B(p − step)`` (or the first grid point).

    >>> zero_row_threshold(4, 16, Fraction(1, 100), step=Fraction(1, 100))
    Fraction(61, 100)
    """
    budget = delta / layers
    k = int(_smallest_grid_p(lambda x: _zero_row_bound_float(d, m, float(x)) <= budget,
                             step) / step)
    top = int(1 / step)

    def ok(j: int) -> bool:
        return j >= top or zero_row_lower_bound(d, m, j * step) <= budget

    while not ok(k):
        k += 1
    while k > 1 and ok(k - 1):
        k -= 1
    return k * step


def chain_threshold(d: int, delta: Fraction, layers: int = 1, c: Fraction = Fraction(1),
                    step: Fraction = Fraction(1, 10**4)) -> Fraction:
    """Smallest grid ``p`` with ``L·2n(1 − p²)^n ≤ δ`` (``n = d²``): the chain with the
    replacement density ``q = p²`` — a stronger replacement than the source's (which takes
    ``q ≤ p²/(2d)``, :func:`source_chain_threshold`) and not a valid one: the real column does
    not dominate i.i.d. ``Bern(p²)`` (:func:`replacement_flow`). Kept for comparison only.

    Steps 3–6 of the module docstring with that replacement, the dominant
    zero-row-or-column term of the singularity theorem (its estimate, not a finite-``n`` bound),
    the union bound over ``L`` layers; ``c`` scales the density (``q ≥ c·log n / n`` family).
    Exact comparison on a grid of ``step``.

    Parameters
    ----------
    d : int
        ``d_in = d_out``; ``n = d²``.
    delta : Fraction
        Target failure probability of the whole network.
    layers : int
        Number of layers ``L`` (union bound).
    c : Fraction
        Density scale of the singularity theorem's hypothesis (1 by default).
    step : Fraction
        Grid step of ``p``.

    Returns
    -------
    Fraction
        The smallest grid ``p`` meeting the chain's estimate.

    >>> chain_threshold(8, Fraction(1, 100), step=Fraction(1, 1000))
    Fraction(371, 1000)
    """
    n = d * d

    def ok(p: Fraction) -> bool:
        return layers * 2 * n * (1 - c * p * p) ** n <= delta if c * p * p <= 1 else True

    return _smallest_grid_p(ok, step)


def _hull_count(i: int, j: int, k: int) -> int:
    """``i × j`` 0/1 matrices with ``k`` ones and no zero row or column (inclusion–exclusion)."""
    return sum((-1) ** (s + t) * math.comb(i, s) * math.comb(j, t) * math.comb((i - s) * (j - t), k)
               for s in range(i + 1) for t in range(j + 1))


def hull_class_law(d: int, q: Any) -> dict[tuple[int, int], Any]:
    """Law of the row and column counts ``(i, j)`` of the *hull* (the smallest rectangle
    ``rows × columns`` containing the ones) of an i.i.d. ``Bern(q)`` ``d × d`` pattern; ``(0, 0)``
    is the zero pattern. Exact in ``q``.

    >>> hull_class_law(1, Fraction(1, 3))
    {(0, 0): Fraction(2, 3), (1, 1): Fraction(1, 3)}
    """
    n = d * d
    out = {(0, 0): (1 - q) ** n}
    for i in range(1, d + 1):
        for j in range(1, d + 1):
            out[(i, j)] = math.comb(d, i) * math.comb(d, j) * sum(
                _hull_count(i, j, k) * q**k * (1 - q) ** (n - k) for k in range(1, i * j + 1))
    return out


def rectangle_class_law(d: int, p: Any) -> dict[tuple[int, int], Any]:
    """Law of the sizes ``(|r|, |c|)`` of the rectangle ``supp(r) × supp(c)`` that a real column
    ``r ⊗ c`` (both masks ``Bern(p)^d``) fills; ``(0, 0)`` when the column is zero.

    >>> rectangle_class_law(1, Fraction(1, 2))
    {(0, 0): Fraction(3, 4), (1, 1): Fraction(1, 4)}
    """
    def size(i: int) -> Any:
        return math.comb(d, i) * p**i * (1 - p) ** (d - i)

    out = {(0, 0): 1 - (1 - (1 - p) ** d) ** 2}
    for i in range(1, d + 1):
        for j in range(1, d + 1):
            out[(i, j)] = size(i) * size(j)
    return out


def replacement_flow(d: int, p: Fraction, q: Fraction) -> Fraction:
    """The maximum flow of a monotone coupling of i.i.d. ``Bern(q)^{d²}`` below the real column
    ``r ⊗ c`` (masks ``Bern(p)``): 1 exactly when the real column stochastically dominates the
    replacement (step 3 of the chain), less otherwise. Exact (Fractions through NetworkX).

    Correctness argument. A 0/1 pattern ``x`` lies below a rectangle ``R`` iff its hull does, so
    the coupling may be built between hulls; both laws are invariant under permuting rows and
    columns, so a coupling exists iff one exists between the size classes ``(i, j)`` under the
    product order (spread a class-to-class flow uniformly over the pairs ``H ⊆ R``: every
    rectangle of a class receives the same amount). By Strassen's theorem a coupling with
    ``replacement ≤ real`` exists iff this transport problem carries all the mass.

    >>> replacement_flow(2, Fraction(1, 2), Fraction(1, 16))     # q = p²/(2d): dominated
    Fraction(1, 1)
    >>> replacement_flow(2, Fraction(1, 2), Fraction(1, 4)) < 1   # q = p²: not dominated
    True
    """
    import networkx as nx
    from networkx.algorithms.flow import edmonds_karp

    nu, mu = hull_class_law(d, q), rectangle_class_law(d, p)
    G = nx.DiGraph()
    for c, m in nu.items():
        G.add_edge("source", ("replacement", c), capacity=m)
    for c, m in mu.items():
        G.add_edge(("real", c), "sink", capacity=m)
    for a in nu:
        for b in mu:
            if a[0] <= b[0] and a[1] <= b[1]:
                G.add_edge(("replacement", a), ("real", b), capacity=Fraction(1))
    value, _ = nx.maximum_flow(G, "source", "sink", flow_func=edmonds_karp)
    return Fraction(value)


def chain_density_required(d: int, delta: Fraction, layers: int = 1,
                           step: Fraction = Fraction(1, 10**7)) -> Fraction:
    """``q_req``: the smallest grid density ``q`` with ``L·2n(1 − q)^n ≤ δ`` (``n = d²``), the
    dominant zero-row-or-column term of the Boolean singularity theorem for an i.i.d.
    ``Bern(q)`` ``n × n`` matrix, with the union bound over ``L`` layers (steps 5–6).

    >>> s = Fraction(1, 1000)
    >>> q = chain_density_required(4, Fraction(1, 100), step=s)
    >>> 2 * 16 * (1 - q) ** 16 <= Fraction(1, 100) < 2 * 16 * (1 - q + s) ** 16
    True
    """
    n = d * d
    return _smallest_grid_p(lambda q: layers * 2 * n * (1 - q) ** n <= delta, step)


def source_chain_threshold(d: int, delta: Fraction, layers: int = 1,
                           step: Fraction = Fraction(1, 10**4)) -> Fraction | None:
    """The source's chain ``p(d, δ)``: the smallest grid ``p`` with ``p ≥ √(2d·q_req)`` (the
    condition ``p ≥ √(2qd)`` at ``q = q_req``, :func:`chain_density_required`), decided exactly
    as ``p² ≥ 2d·q_req``; None when it exceeds 1 (the chain says nothing at that size).

    >>> float(source_chain_threshold(64, Fraction(1, 100)))     # 3.4 × the necessary 0.1916
    0.6518
    >>> source_chain_threshold(16, Fraction(1, 100)) is None
    True
    """
    need = 2 * d * chain_density_required(d, delta, layers)
    if need > 1:
        return None
    return _smallest_grid_p(lambda p: p * p >= need, step)


# ----------------------------------------------------------------- fitting measured thresholds

#: two-sided 95 % quantiles of Student's t by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


@dataclass(frozen=True)
class LinearFit:
    """``y ≈ intercept + slope·x`` by least squares, with standard errors and 95 % half-widths.

    ``r2`` is the coefficient of determination ``1 − rss/Σ(y − ȳ)²`` (scale-free, so fits of
    differently scaled responses can be compared).
    """

    intercept: float
    slope: float
    intercept_se: float
    slope_se: float
    rss: float
    points: int
    r2: float

    @property
    def slope_ci(self) -> float:
        """Half-width of the 95 % confidence interval of the slope (Student t, n − 2 dof)."""
        return _T95.get(self.points - 2, 2.0) * self.slope_se


def least_squares(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Ordinary least squares of ``ys`` on ``xs``; sums by :func:`math.fsum` (order-free).

    >>> f = least_squares([0.0, 1.0, 2.0], [1.0, 3.0, 5.0])
    >>> f.intercept, f.slope, f.rss
    (1.0, 2.0, 0.0)
    """
    k = len(xs)
    if k < 3 or len(ys) != k:
        raise InputError("a fit with standard errors needs at least 3 points")
    mx, my = math.fsum(xs) / k, math.fsum(ys) / k
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys))
    slope = sxy / sxx
    intercept = my - slope * mx
    rss = math.fsum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys))
    s2 = rss / (k - 2)
    syy = math.fsum((y - my) ** 2 for y in ys)
    return LinearFit(intercept, slope, math.sqrt(s2 * (1 / k + mx * mx / sxx)),
                     math.sqrt(s2 / sxx), rss, k, 1 - rss / syy if syy else 1.0)
