"""Exact solution of square Khatri–Rao systems by p-adic (Dixon) lifting, on one or two cores.

Ground types: frozen weights as ``numpy.ndarray`` of ``int64`` (they are small), the right-hand
side as a list of Python ``int``, the solution as a list of ``fmpq``. Nothing here is approximate:
every step is integer arithmetic, and the result is the unique solution of ``K γ = rhs`` for
``K = V_inᵀ ⊙ V_out`` (Lemma 6 / Theorem 1 step 1 of the source; docs/model.md).

Why not just ``fmpz_mat.solve``? FLINT solves a one-column system by Dixon lifting too
(``fmpz_mat_solve_dixon_den``), but it multiplies ``K`` by each p-adic digit through three
word-size modular products of the full m×m matrix (m = d_in·d_out). Here the product uses the
Khatri–Rao structure, ``K y = vec(V_out diag(y) V_in)`` — a d_out×m by m×d_in product — in
wrapping 64-bit arithmetic, which is exact because only ``K y mod 2^64`` is needed: the next
residual ``(r − K y)/p`` is known to be small, so it is recovered exactly from its value
modulo 2^64.
With two primes the lifting splits over two processes, and the Chinese remainder theorem joins
the two p-adic expansions.

Correctness (the classical argument, von zur Gathen & Gerhard, *Modern Computer Algebra*, §5.10):
``K`` invertible modulo ``p`` proves ``det K ≠ 0`` (so the rank-mod-p witness comes for free); by
Hadamard's inequality every entry of the solution is ``P/Q`` with ``|P| ≤ N`` and ``0 < Q ≤ D``;
once the modulus exceeds ``2·N·D`` there is at most one such fraction congruent to the lifted
value, and rational reconstruction finds it. Every accepted entry is checked against both bounds.

>>> import numpy as np
>>> V_in = np.array([[1, 2], [3, -1], [0, 1], [2, 2]])
>>> V_out = np.array([[1, 0, 2, 1], [1, 1, -1, 3]])
>>> sol = solve_khatri_rao(V_in, V_out, [1, 0, 0, 1], primes=[1000000007])
>>> from flint import fmpz_mat
>>> from exactnorm.exact.linalg import khatri_rao
>>> K = khatri_rao(fmpz_mat(V_in.T.tolist()), fmpz_mat(V_out.tolist()))
>>> K.solve(fmpz_mat([[1], [0], [0], [1]])).entries() == sol
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from flint import fmpq, fmpq_mat, fmpz, fmpz_mat, nmod_mat

from exactnorm.errors import InputError, PadicUnavailable
from exactnorm.exact.linalg import khatri_rao_int64, max_abs
from exactnorm.exact.parallel import map_tasks

__all__ = [
    "AUTO_MIN_SIZE",
    "PARALLEL_MIN_SIZE",
    "PadicUnavailable",
    "fits_fast_path",
    "khatri_rao_int64",
    "hadamard_bounds",
    "rational_reconstruction",
    "lift_modulus_needed",
    "padic_expansion",
    "solve_khatri_rao",
]

#: smallest system size m for which ``solver="auto"`` lifts here rather than calling FLINT: below
#: it FLINT's all-C solve wins over this module's per-step Python overhead (measured crossover)
AUTO_MIN_SIZE = 200

#: smallest system size m for which ``jobs=2`` lifts in two processes
PARALLEL_MIN_SIZE = 1500

_WORD = 2**64
_HALF_WORD = 2**63


def _as_int64(V: np.ndarray | Sequence[Sequence[int]]) -> np.ndarray:
    arr = np.asarray(V)
    if arr.dtype.kind not in "iu":
        arr = np.array([[int(x) for x in row] for row in V], dtype=object)
        if arr.size and max(abs(int(x)) for x in arr.ravel()) >= _HALF_WORD:
            raise PadicUnavailable("frozen weights do not fit 64-bit integers")
        arr = arr.astype(np.int64)
    return arr.astype(np.int64, copy=False)


def fits_fast_path(V_in: np.ndarray, V_out: np.ndarray, rhs: Sequence[int]) -> bool:
    """Whether the 64-bit residual argument applies: ``max|K| < 2^62``, row sums and rhs ``< 2^61``.

    Decided in exact Python integers from the small factors, never from the m×m matrix.
    """
    a, b = max_abs(V_in), max_abs(V_out)
    m = np.asarray(V_in).shape[0]
    rmax = max((abs(int(x)) for x in rhs), default=0)
    return a * b < 2**62 and m * a * b < 2**61 and rmax < 2**61


def hadamard_bounds(V_in: np.ndarray, V_out: np.ndarray, rhs: Sequence[int]) -> tuple[int, int]:
    """Integers ``(N, D)``: each solution entry is ``P/Q`` (lowest terms), ``|P| ≤ N``, ``Q ≤ D``.

    ``Q`` divides ``det K`` and ``|det K| ≤ ∏_k ‖K e_k‖`` (Hadamard), with the column norms
    ``‖K e_k‖² = ‖V_in[k,:]‖²·‖V_out[:,k]‖²`` read off the factors; by Cramer's rule
    ``|P| ≤ ‖rhs‖·∏_{k≠j} ‖K e_k‖``. Squares are multiplied exactly and the roots floored.
    Returns ``(0, 0)`` if a column of ``K`` is zero (then ``K`` is singular).
    """
    Vi, Vo = np.asarray(V_in), np.asarray(V_out)
    if max(max_abs(Vi), max_abs(Vo)) < 2**20 and max(Vi.shape + Vo.shape) < 2**20:
        # squares < 2^40 summed over < 2^20 terms: exact in int64
        row_in = [int(x) for x in (Vi.astype(np.int64) ** 2).sum(axis=1)]
        col_out = [int(x) for x in (Vo.astype(np.int64) ** 2).sum(axis=0)]
    else:
        row_in = [sum(int(x) ** 2 for x in row) for row in Vi.tolist()]
        col_out = [sum(int(x) ** 2 for x in col) for col in Vo.T.tolist()]
    col2 = [a * b for a, b in zip(row_in, col_out)]
    if not col2 or min(col2) == 0:
        return 0, 0
    D2 = math.prod(col2)
    rhs2 = sum(int(x) ** 2 for x in rhs)
    N2 = -(-(rhs2 * D2) // min(col2))
    return math.isqrt(N2), math.isqrt(D2)


def lift_modulus_needed(N: int, D: int) -> int:
    """Reconstruction is unique once the modulus exceeds this: ``2·N·D``."""
    return 2 * N * D


def rational_reconstruction(a: int | fmpz, M: int | fmpz, N: int | fmpz,
                            D: int | fmpz) -> fmpq | None:
    """The fraction ``r/s`` with ``r ≡ s·a (mod M)``, ``|r| ≤ N``, ``0 < s ≤ D``, or ``None``.

    Extended Euclid on ``(M, a)`` stopped at the first remainder ``≤ N`` (von zur Gathen &
    Gerhard, Theorem 5.26); unique when ``2·N·D < M``. The candidate is re-checked before use.
    Works on ``int`` or ``fmpz`` (much faster for thousands of digits).

    >>> rational_reconstruction(3 * pow(7, -1, 10**9 + 7) % (10**9 + 7), 10**9 + 7, 100, 100)
    3/7
    """
    r0, r1 = M, a % M
    t0: int | fmpz = 0
    t1: int | fmpz = 1
    while r1 > N:
        q = r0 // r1
        r0, r1 = r1, r0 - q * r1
        t0, t1 = t1, t0 - q * t1
    if t1 == 0:
        return None
    if t1 < 0:
        r1, t1 = -r1, -t1
    if t1 > D or (t1 * a - r1) % M != 0:
        return None
    return fmpq(r1, t1)


def _expansion(task: tuple[np.ndarray, np.ndarray, Sequence[int], int, int]) -> Any:
    """:func:`padic_expansion` of one ``(V_in, V_out, rhs, p, k)`` task (a worker process)."""
    return padic_expansion(*task)


def _modular_matrix(K: np.ndarray, p: int) -> nmod_mat:
    """``K mod p`` as an ``nmod_mat`` (through ``fmpz_mat``, which FLINT fills fastest from
    nested lists)."""
    return nmod_mat(fmpz_mat(K.tolist()), p)


#: entries of one BLAS product (rows × cols × inner) in the float path: below OpenBLAS's
#: threshold for threads (2^18), because a threaded BLAS on these small products spins and
#: slows the lifting down tenfold on a loaded machine
_CHUNK_WORK = 1 << 17


class _StructuredProduct:
    """``K y mod 2^64`` for ``K = V_inᵀ ⊙ V_out`` through the structure, ``vec(V_out diag(y)
    V_in)`` (column-major): a d_out×m by m×d_in product instead of m×m.

    When every partial sum stays below 2^53 the product runs in float64 on limbs of ``y``:
    ``y = Σ_j y_j·2^{jL}`` with ``0 ≤ y_j < 2^L`` and ``m·max|V_out|·max|V_in|·2^L < 2^52``, so
    every product and every partial sum of ``V_out diag(y_j) V_in`` is an integer of magnitude
    below 2^52, which float64 represents and adds exactly in any order (a BLAS may block,
    reorder or fuse; exact integers are unaffected). The inner dimension is cut into chunks
    (a stacked product, summed), each small enough to run on one thread. The limb results are
    joined in wrapping uint64 arithmetic. Otherwise the product is taken in wrapping uint64."""

    def __init__(self, Vi: np.ndarray, Vo: np.ndarray) -> None:
        m, k = Vi.shape
        d = Vo.shape[0]
        self.shape = (d, k)
        self.Vi_u, self.Vo_u = Vi.view(np.uint64), Vo.view(np.uint64)
        spread = m * max(max_abs(Vi), 1) * max(max_abs(Vo), 1)
        self.limb = 52 - spread.bit_length()
        if self.limb >= 16 and m:
            chunk = max(1, min(m, _CHUNK_WORK // max(d * k, 1)))
            n = -(-m // chunk)
            pad = n * chunk - m
            self.blocks = (n, chunk)
            self.Vo_b = np.ascontiguousarray(
                np.pad(Vo.astype(np.float64), ((0, 0), (0, pad))).reshape(d, n, chunk)
                .transpose(1, 0, 2))
            self.Vi_b = np.pad(Vi.astype(np.float64), ((0, pad), (0, 0))).reshape(n, chunk, k)
            self.limb_buffer = np.zeros(n * chunk, dtype=np.float64)  # zero padding kept
            self.limbs = [(np.uint64(j * self.limb), np.uint64((1 << self.limb) - 1))
                          for j in range(-(-64 // self.limb))]

    def __call__(self, y: np.ndarray) -> np.ndarray:
        """``K y mod 2^64`` (uint64) for ``y`` uint64."""
        if self.limb < 16 or not len(y):
            with np.errstate(over="ignore"):
                return (self.Vo_u @ (y[:, None] * self.Vi_u)).ravel(order="F")
        d, k = self.shape
        total = np.zeros(d * k, dtype=np.uint64)
        n, chunk = self.blocks
        with np.errstate(over="ignore"):
            for shift, mask in self.limbs:
                part = (y >> shift) & mask
                if not part.any():
                    continue
                self.limb_buffer[:len(part)] = part
                limb = self.limb_buffer.reshape(n, chunk, 1)
                exact = np.matmul(self.Vo_b, limb * self.Vi_b).sum(axis=0)
                total += exact.astype(np.int64).ravel(order="F").view(np.uint64) << shift
        return total


def padic_expansion(V_in: np.ndarray, V_out: np.ndarray, rhs: Sequence[int], p: int,
                    steps: int) -> list[fmpz]:
    """``x mod p^steps`` for the solution of ``K x = rhs`` (Dixon lifting), in ``[0, p^steps)``.

    Raises :class:`PadicUnavailable` if ``K`` is singular modulo ``p``, and
    :class:`~exactnorm.errors.InputError` unless ``p`` is an odd prime below 2^62 — checked before
    FLINT sees it, since modular inversion with a composite modulus can abort the interpreter
    (docs/model.md, known hazards). Arguments are plain integer arrays/lists so that this runs
    unchanged in a worker process (FLINT objects do not pickle).
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or not 2 < int(p) < 2**62 \
            or not fmpz(int(p)).is_prime():
        raise InputError(f"modulus {p!r} is not an odd prime below 2^62; refusing to lift")
    p = int(p)
    Vi, Vo = _as_int64(V_in), _as_int64(V_out)
    m = Vi.shape[0]
    try:
        Kinv = _modular_matrix(khatri_rao_int64(Vi, Vo), p).inv()
    except ZeroDivisionError:
        raise PadicUnavailable(f"system is singular modulo {p}") from None
    product = _StructuredProduct(Vi, Vo)
    p_inv_word = np.uint64(pow(p, -1, _WORD))
    residual = np.array([int(x) for x in rhs], dtype=np.int64)
    digits: list[list[int]] = []
    for step in range(steps):
        y = Kinv * nmod_mat(fmpz_mat(m, 1, residual.tolist()), p)
        y_int = [int(e) for e in y.entries()]
        digits.append(y_int)
        if step == steps - 1:
            break
        Ky = product(np.array(y_int, dtype=np.uint64))
        with np.errstate(over="ignore"):
            # (r − K y)/p is exact and |·| < 2^62, so its value mod 2^64 determines it
            residual = ((residual.view(np.uint64) - Ky) * p_inv_word).view(np.int64)
    return _join_digits(digits, p)


def _join_digits(digits: list[list[int]], p: int) -> list[fmpz]:
    """``Σ_i digits[i]·p^i`` entry-wise, by binary splitting on ``fmpz_mat`` columns."""
    m = len(digits[0])
    level = [fmpz_mat(m, 1, d) for d in digits]
    power = fmpz(p)
    while len(level) > 1:
        nxt = [level[j] + level[j + 1] * power for j in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
        power = power * power
    return level[0].entries()


def _steps_for(p: int, bits: int) -> int:
    return -(-bits // (p.bit_length() - 1))


def solve_khatri_rao(V_in: np.ndarray, V_out: np.ndarray, rhs: Sequence[int],
                     primes: Sequence[int], *, jobs: int = 1) -> list[fmpq]:
    """The exact solution of ``(V_inᵀ ⊙ V_out) x = rhs`` (square, integer), as a list of ``fmpq``.

    Parameters
    ----------
    V_in, V_out : int arrays of shapes m×d_in and d_out×m with ``m = d_in·d_out``
    rhs : m integers (``vec(W, "F")`` with denominators cleared)
    primes : checked primes below 2^62; the first proves ``det K ≠ 0`` (rank-mod-p witness),
        the second is used when ``jobs ≥ 2`` to lift in a second process.
    jobs : 1 or 2 processes (2 only from ``m ≥ PARALLEL_MIN_SIZE``).

    Raises
    ------
    PadicUnavailable
        If the sizes exceed the 64-bit argument or ``K`` is singular modulo a prime used; the
        caller then uses FLINT's general solver, which decides singularity exactly.
    """
    Vi, Vo = _as_int64(V_in), _as_int64(V_out)
    m, d_in = Vi.shape
    if Vo.shape != (m // max(d_in, 1), m) or d_in * Vo.shape[0] != m or len(rhs) != m:
        raise PadicUnavailable("not a square Khatri–Rao system")
    rhs = [int(x) for x in rhs]
    if not fits_fast_path(Vi, Vo, rhs):
        raise PadicUnavailable("entries too large for 64-bit residuals")
    N, D = hadamard_bounds(Vi, Vo, rhs)
    if D == 0:
        raise PadicUnavailable("a column of K is zero")
    need = lift_modulus_needed(N, D)
    bits = need.bit_length() + 1
    p1 = int(primes[0])
    # the second process repeats the O(m³) inverse; below m ≈ 1500 that copy costs more than
    # the half of the lifting it saves (measured in benchmarks/bench_performance.py jobs)
    if jobs >= 2 and len(primes) >= 2 and m >= PARALLEL_MIN_SIZE:
        p2 = int(primes[1])
        k1 = _steps_for(p1, bits // 2 + 1)
        rest = need // p1**k1 + 1
        k2 = max(1, _steps_for(p2, rest.bit_length() + 1))
        x1, x2 = map_tasks(_expansion, [(Vi, Vo, rhs, p1, k1), (Vi, Vo, rhs, p2, k2)], jobs=2)
        M1, M2 = fmpz(p1) ** k1, fmpz(p2) ** k2
        c = fmpz(pow(int(M1), -1, int(M2)))
        lifted = [a + M1 * (((b - a) * c) % M2) for a, b in zip(x1, x2)]
        M = M1 * M2
    else:
        k = _steps_for(p1, bits)
        lifted = padic_expansion(Vi, Vo, rhs, p1, k)
        M = fmpz(p1) ** k
    if int(M) <= need:
        raise PadicUnavailable("lifting stopped short of the reconstruction bound")
    return _reconstruct(lifted, M, N, D)


def _reconstruct(lifted: list[fmpz], M: fmpz, N: int, D: int) -> list[fmpq]:
    """Rational reconstruction of every entry with a running common denominator.

    With ``L`` the lcm of the denominators found so far, ``t ≡ L·a (mod M)`` in the symmetric
    range gives the candidate ``t/L``. When ``|t| ≤ N`` and ``L ≤ D`` it is the solution entry:
    in lowest terms its numerator is at most ``|t| ≤ N`` and its denominator divides ``L ≤ D``,
    it is congruent to ``a`` (``L`` is a divisor of ``det K``, a unit modulo ``p``), and by the
    uniqueness bound ``2·N·D < M`` there is no other such fraction. Every entry of the solution
    passes once ``L`` is its common denominator (which divides ``det K``, so ``|L·x_i| ≤ |det
    K_i| ≤ N`` by Cramer's rule). An entry that fails is reconstructed on its own and ``L``
    grows; the entries after it are taken again with the new ``L``. Arithmetic in ``fmpz``; the
    fractions are put in lowest terms by FLINT, all at once.
    """
    half = M // 2
    Nz, Dz = fmpz(N), fmpz(D)
    L = fmpz(1)
    numerators: list[fmpz] = []
    dens: list[fmpz] = []
    i, n = 0, len(lifted)
    while i < n:
        a = lifted[i]
        t = (L * a) % M
        if t > half:
            t -= M
        if abs(t) <= Nz:
            numerators.append(t)
            dens.append(L)
            i += 1
            continue
        rec = rational_reconstruction(a, M, Nz, Dz)
        if rec is None:
            raise PadicUnavailable("rational reconstruction failed")
        grown = L.lcm(rec.denom())
        if grown == L:  # cannot happen for a solution (Cramer); never loop on it
            raise PadicUnavailable("rational reconstruction is inconsistent")
        L = grown
        if Dz < L:
            raise PadicUnavailable("common denominator exceeds the Hadamard bound")
    # t_i / L_i with L_i the denominator current at entry i, which divides the final L: scale
    # every numerator to the final L, then one canonicalization in C
    scaled = [t * (L // d) if d != L else t for t, d in zip(numerators, dens)]
    if not scaled:
        return []
    return (fmpq_mat(fmpz_mat(len(scaled), 1, scaled)) / L).entries()
