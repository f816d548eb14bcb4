"""The exact target on a batch of samples by residues: many primes, float64 products, exact signs.

Contract
--------
:func:`exact_batch` returns, for a :class:`~exactnorm.model.network.TargetNetwork` ``g`` and a
float sample array ``X`` (``n × d_0``, each entry the dyadic rational it denotes), integers
``N`` (``n × d_L``, Python ints) and one positive integer ``D`` with ``g(x_s) = N[s] / D``
exactly — the same numbers as :meth:`~exactnorm.model.network.TargetNetwork.evaluate_columns`,
which multiplies the integers themselves (the reference this module is tested against, on
every layer kind and wiring). Nothing here rounds a result: floats only carry small integers.

Why. On a trained ResNet-8 the numerators reach about 330 bits; multiplying them as integers
costs most of the time in converting entries (FLINT matrices built from and read into Python
lists), not in arithmetic. Here every node is held as its residues modulo ``K`` primes
``p_k < 2^b``, in float64 arrays; each layer's linear map is the operator's own float code
(:meth:`~exactnorm.model.operators.base.Operator.apply_float`) on those arrays with the weight
replaced by its residues (:func:`dataclasses.replace`, as a float copy replaces it by floats), so
every kind and layout is the operator's and this module names none.

Correctness
-----------
1. *Exact float products.* Residues lie in ``(−p, p)``. A weighted layer's output entry is a
   sum of at most ``fan_in`` products of a residue and a weight residue, one bias residue and
   one skip term (a residue times a constant below ``p``): every partial sum is an integer
   below ``(fan_in + 2)·p² ≤ 2^53`` (``b`` is chosen so, :func:`prime_bits`), each float
   operation is exact whatever the order, BLAS or thread count, and reducing modulo ``p`` is
   exact (:func:`_mod`). The batch's denominators enter as constants folded into the small
   maps (:meth:`ResiduePlan.scaled`: the weight's and the bias's residues times the factors
   of item 2), so a layer's values are reduced once.
2. *Denominators and bounds.* Node ``i`` holds ``a_i = N_i / D_i`` with ``D_i`` an exact Python
   integer: the input's common power of two; a weighted layer ``A = A_n/D_A`` with bias
   ``b = b_n/D_b`` gives ``D = lcm(D_A·D_in, D_b)``; a fixed map (a pooling, ``A = S/k``) gives
   ``k·D_in``; a skip (a route, which copies rows) adds over the lcm. An exact bound
   ``|a_i| ≤ V_i`` follows from the exact row sums of ``|A|`` (the operator's exact
   :meth:`interval` on ``[−1, 1]``), ``max |b|`` and the largest sample entry, so
   ``|N_i| ≤ V_i·D_i``. Node ``i`` is held modulo the first ``K_i`` primes, the fewest whose
   product ``M`` is at least ``2^9 · V_i·D_i`` (its *basis*): an early layer's values are
   short, and its maps run for few primes.
3. *Signs (ReLU) without the integers.* With ``t_k = r_k·(M/p_k)^{-1} mod p_k`` (``k ≤ K_i``)
   the Chinese remainder theorem gives ``N/M ≡ Σ_k t_k/p_k (mod 1)``. In fixed point,
   ``F = Σ_k t_k·⌊2^110/p_k⌋ mod 2^110`` is computed exactly in five 22-bit limbs
   (:meth:`_Basis.fraction`: per limb a float64 matrix product whose sums of at most 64
   products of 24 and 22 bits stay below ``2^52``, then the carries in int64) and lies below
   ``F* = 2^110·frac(N/M)`` by at most ``K·2^24 ≤ 2^30`` (modulo ``2^110``). As ``|N| ≤
   M·2^-9``, ``F*`` lies in ``[0, 2^101]`` for ``N ≥ 0`` and in ``[2^110 − 2^101, 2^110)`` for
   ``N < 0``; so ``2^44 ≤ F < 2^109`` proves ``N > 0`` and ``2^109 ≤ F < 2^110 − 2^44`` proves
   ``N < 0``. The other entries (``|N| < 2^-65·M``) are
   decided exactly: ``N = 0`` iff every residue is 0, else ``N`` is rebuilt by the CRT in
   Python integers.
4. *A fixed map* (no weight) is ``S/k`` with ``S`` integer (a pooling's window sums):
   ``apply_float`` gives the window means of the residues, within ``k·p·(k + 2)·2^-53`` of
   ``S r / k``, so ``rint(k · mean)`` is ``S r`` exactly while ``k²·p ≤ 2^48``; larger windows
   use the operator's exact integer map on the residues (:meth:`apply_columns`).
5. *Base extension.* A layer that needs more primes than its input's basis holds extends the
   input exactly: with the digits ``t`` of item 3 in the basis ``M``, ``N = Σ_k t_k·M/p_k −
   α·M`` where ``α = rint(Σ_k t_k/p_k)`` (``Σ_k t_k/p_k`` lies within ``2^-9`` of the integer
   ``α``, far more than its float error ``K²·2^-53``), so ``N mod q = Σ_k t_k·(M/p_k mod q) −
   α·(M mod q)``, a float64 matrix product of sums below ``2^50`` (:meth:`_Basis.extend`).

The outputs are rebuilt once, by the CRT, as Python integers.

References: D. E. Knuth, *The Art of Computer Programming*, vol. 2, §4.3.2 (modular arithmetic);
J. von zur Gathen and J. Gerhard, *Modern Computer Algebra*, §5.4 (the Chinese remainder
algorithm).

>>> from exactnorm.model.network import TargetNetwork
>>> g = TargetNetwork.from_lists([[[1, -2], [3, 1]], [[1, 1]]], [[0, 1], [-1]],
...                              ["relu", "identity"], lower=[-1, -1], upper=[1, 1])
>>> N, D = exact_batch(g, np.array([[0.5, 0.25], [-1.0, 1.0]]))
>>> [[n / D for n in row] for row in N]
[[1.75], [-1.0]]
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from flint import fmpq, fmpz, fmpz_mat

from exactnorm.exact.linalg import clear_denominators
from exactnorm.exact.modular import common_denominator
from exactnorm.model.batch import as_columns
from exactnorm.model.operators.base import matrix_shape
from exactnorm.model.values import Scaled

__all__ = ["exact_batch", "ResiduePlan", "prime_bits", "primes_below", "SIGN_MARGIN_BITS"]

#: ``M ≥ 2^SIGN_MARGIN_BITS · |N|`` for every node (correctness, item 3)
SIGN_MARGIN_BITS = 8
#: the fixed-point fraction of item 3: five limbs of 22 bits (110 bits); its truncation error
#: is at most K·2^24 ≤ 2^30 (primes below 2^24, at most 64 of them)
_LIMB = 22
_LIMBS = 5
_FRACTION_BITS = _LIMB * _LIMBS
_MASK = (1 << _LIMB) - 1
#: a fixed map's window ``k`` goes through floats while ``k²·p`` is at most this (item 4)
FLOAT_WINDOW_LIMIT = 1 << 48
#: at most this many primes (item 3's error bound assumes K ≤ 64)
MAX_PRIMES = 64


def prime_bits(fan_in: int) -> int:
    """The bit length ``b`` of the primes: ``fan_in · (2^b)² ≤ 2^53`` (item 1), at most 24
    (item 3's int64 sums)."""
    return min(24, (53 - max(1, fan_in).bit_length()) // 2)


@functools.lru_cache(maxsize=8)
def primes_below(bits: int, count: int) -> list[int]:
    """The ``count`` largest primes below ``2^bits``, descending (trial division: ``bits ≤
    24``)."""
    out: list[int] = []
    n = (1 << bits) - 1
    while len(out) < count and n > 2:
        if n % 2 and all(n % d for d in range(3, math.isqrt(n) + 1, 2)):
            out.append(n)
        n -= 2 if n % 2 else 1
    return out


def _exact_input(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``X = m · 2^s / 2^e``: odd integer mantissas ``m`` (float64, ``< 2^53``), shifts
    ``s ≥ 0`` (int64) and the common exponent ``e`` (so ``D_0 = 2^e``)."""
    mant, exp = np.frexp(X)
    m = np.ldexp(mant, 53)  # exact: 53-bit integers
    q = exp.astype(np.int64) - 53
    nonzero = m != 0
    if not nonzero.any():
        return np.zeros_like(X), np.zeros(X.shape, dtype=np.int64), 0
    mi = np.where(nonzero, m, 1).astype(np.int64)
    tz = np.zeros(X.shape, dtype=np.int64)
    low = np.abs(mi) & -np.abs(mi)  # the lowest set bit
    tz = np.log2(low.astype(np.float64)).astype(np.int64)
    m_odd = np.where(nonzero, (mi >> tz).astype(np.float64), 0.0)
    q = q + tz
    e = int(max(0, -int(q[nonzero].min())))
    return m_odd, np.where(nonzero, q + e, 0), e


def _pow2_mod(shifts: np.ndarray, p: int) -> np.ndarray:
    """``2^s mod p`` entrywise: Python's ``pow`` on each distinct shift (the floats of a batch
    have few distinct exponents)."""
    values, inverse = np.unique(shifts, return_inverse=True)
    table = np.array([pow(2, int(v), p) for v in values], dtype=np.float64)
    return table[inverse].reshape(shifts.shape)


def _mod(u: np.ndarray, P: np.ndarray) -> np.ndarray:
    """A residue of ``u`` modulo ``p`` in ``(−p, p)``, for float64 integers ``|u| < 2^53``
    (``P`` broadcast against ``u``), exact: ``q = rint(u/p)`` computed in floats is within one
    of the nearest quotient (the float quotient's error is below ``2^53/p · 2^-52``), and
    ``q·p`` and ``u − q·p`` are integers below ``2^53``. Residues are kept in this symmetric
    range (item 1's bound ``fan_in·p² ≤ 2^53`` holds for them); only the sign test needs
    ``[0, p)`` (:meth:`_Basis.digits`)."""
    q = u * (1.0 / P)
    np.rint(q, out=q)
    q *= P
    np.subtract(u, q, out=q)
    return q


def _times(res: np.ndarray, factor: int, P: np.ndarray) -> np.ndarray:
    """``res · factor`` modulo each prime of ``P`` (``(K, 1, …)``), symmetric residues."""
    if factor == 1:
        return res
    c = np.array([factor % int(p) for p in P.ravel()], dtype=np.float64).reshape(P.shape)
    return _mod(res * c, P)


class _Basis:
    """The first ``K`` primes: the CRT constants of item 3 (signs), the exact rebuild of
    chosen entries, and the base extension of item 5 to more primes."""

    def __init__(self, primes: Sequence[int]) -> None:
        self.primes = list(primes)
        self.M = math.prod(self.primes)
        self.cofactors = [self.M // p for p in self.primes]
        inv = [pow(c % p, -1, p) for c, p in zip(self.cofactors, self.primes)]
        self.inv = np.array(inv, dtype=np.float64).reshape(-1, 1, 1)
        self.P = np.array(self.primes, dtype=np.float64).reshape(-1, 1, 1)
        self.reciprocal = 1.0 / np.array(self.primes, dtype=np.float64)
        scaled = [(1 << _FRACTION_BITS) // p for p in self.primes]  # ⌊2^110/p_k⌋
        self.limbs = np.array([[(c >> (_LIMB * j)) & _MASK for c in scaled]
                               for j in range(_LIMBS)], dtype=np.float64)
        self._extension: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}

    def digits(self, res: np.ndarray) -> np.ndarray:
        """``t_k`` of item 3 for the first ``K`` primes' residues (each in ``[0, p_k)``)."""
        t = _mod(res[:len(self.primes)] * self.inv, self.P)
        t += np.where(t < 0, self.P, 0.0)
        return t

    def integers(self, t: np.ndarray) -> list[int]:
        """The integers in ``(−M/2, M/2]`` with the digits ``t`` (``K × m``)."""
        out = []
        for col in t.T.astype(np.int64).tolist():
            x = sum(d * c for d, c in zip(col, self.cofactors)) % self.M
            out.append(x - self.M if 2 * x > self.M else x)
        return out

    def fraction(self, t: np.ndarray) -> list[np.ndarray]:
        """``F = Σ_k t_k·⌊2^110/p_k⌋ mod 2^110`` as five 22-bit limbs ``[F_0, …, F_4]``
        (item 3): per limb a float64 product of sums of at most 64 products of 24 and 22 bits
        (below ``2^52``: exact in any order), then the carries in int64."""
        s = np.tensordot(self.limbs, t, axes=(1, 0)).astype(np.int64)
        for j in range(1, _LIMBS):
            s[j] += s[j - 1] >> _LIMB
        return [s[j] & _MASK for j in range(_LIMBS)]

    def positive(self, res: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``N > 0`` entrywise (item 3), and the digits ``t`` it was decided from."""
        t = self.digits(res)
        F = self.fraction(t)
        low = (F[4] == 0) & (F[3] == 0) & (F[2] == 0)                  # F < 2^44
        high = (F[4] == _MASK) & (F[3] == _MASK) & (F[2] == _MASK)     # F ≥ 2^110 − 2^44
        pos = (F[4] < 1 << (_LIMB - 1)) & ~low
        # near a multiple of M: 0 when every residue is (padding, dead patches), else a small
        # nonzero N (|N| < 2^-65·M) rebuilt exactly
        unsure = (low | high) & np.any(res[:len(self.primes)] != 0, axis=0)
        if unsure.any():
            idx = np.nonzero(unsure)
            exact = self.integers(t[:, idx[0], idx[1]])
            pos[idx] = np.array(exact, dtype=object) > 0
        return pos, t

    def extend(self, t: np.ndarray, more: Sequence[int]) -> np.ndarray:
        """The residues modulo the primes ``more`` of the integer ``N`` with digits ``t``
        (item 5): ``N = Σ_k t_k·M/p_k − α·M`` with ``α = rint(Σ_k t_k/p_k)``."""
        key = tuple(more)
        if key not in self._extension:
            self._extension[key] = (
                np.array([[c % q for q in more] for c in self.cofactors], dtype=np.float64),
                np.array([self.M % q for q in more], dtype=np.float64).reshape(-1, 1, 1))
        C, m = self._extension[key]
        alpha = np.rint(np.tensordot(self.reciprocal, t, axes=(0, 0)))
        Q = np.array(more, dtype=np.float64).reshape(-1, 1, 1)
        return _mod(np.tensordot(C, t, axes=(0, 0)) - alpha[None] * m, Q)


def _bound_of(op: Any) -> Fraction:
    """``max_r Σ_c |A_rc|``, exact: the operator's exact image of ``[−1, 1]^cols``."""
    cols = op.shape[1]
    _, hi = op.interval((fmpq(-1),) * cols, (fmpq(1),) * cols)
    top = max((fmpq(x) for x in hi), default=fmpq(0))
    return Fraction(int(top.p), int(top.q))


class ResiduePlan:
    """Per layer: the exact denominators and bounds of the maps (once per network), their
    residues (once per prime), scaled by a batch's factors (cached: the factors depend on the
    input grid only). A target's skips are routes (0/1 rows)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        fan = 1
        for layer in target.layers:
            op = layer.operator
            if op.weight is not None:
                fan = max(fan, op.weight.ncols() if hasattr(op.weight, "ncols")
                          else op.weight.shape[1])
        # a weighted layer's sum has fan products, a bias and a skip term (item 1)
        self.bits = prime_bits(fan + 2)
        self.norms = [_bound_of(layer.operator) for layer in target.layers]
        self.bias_bound = [max((abs(Fraction(int(fmpq(b).p), int(fmpq(b).q)))
                                for b in layer.bias), default=Fraction(0))
                           for layer in target.layers]
        self.window: dict[int, int] = {}
        for i, layer in enumerate(target.layers):
            if layer.operator.weight is None:  # a fixed map S/k: k from its exact batch form
                cols = layer.operator.shape[1]
                self.window[i] = int(layer.operator.apply_columns(
                    Scaled(fmpz_mat(cols, 1), fmpz(1))).den)
        self.weight_den = [1 if layer.operator.weight is None
                           else int(clear_denominators(layer.operator.weight)[1])
                           for layer in target.layers]
        # each bias as integer numerators over its least common denominator
        biases = [common_denominator(layer.bias) for layer in target.layers]
        self.bias_den = [int(den) for _, den in biases]
        self._bias_numerators = [[int(v) for v in nums] for nums, _ in biases]
        self._weight_numerators: dict[int, list[int] | None] = {}
        self._residues: dict[tuple[int, int], tuple[np.ndarray | None, np.ndarray]] = {}
        self._scaled: dict[tuple[int, tuple[int, ...], int, int], Any] = {}
        self._bases: dict[tuple[int, ...], _Basis] = {}

    def bounds(self, x_bound: Fraction, e: int) -> tuple[list[int], list[Fraction]]:
        """Exact denominators and value bounds of every node for an input ``2^-e`` grid."""
        g = self.target
        dens, vals = [1 << e], [x_bound]
        for i, layer in enumerate(g.layers, 1):
            w = g.wire(i)
            d_in, v_in = dens[w.input], vals[w.input]
            if layer.operator.weight is None:
                d = self.window[i - 1] * d_in
            else:
                d = math.lcm(self.weight_den[i - 1] * d_in, self.bias_den[i - 1])
            v = self.norms[i - 1] * v_in + self.bias_bound[i - 1]
            if w.skip is not None:  # a route: a 0/1 matrix, one 1 at most per row
                d = math.lcm(d, dens[w.skip.source])
                v += vals[w.skip.source]
            dens.append(d)
            vals.append(v)
        return dens, vals

    def basis(self, primes: Sequence[int]) -> _Basis:
        """The :class:`_Basis` of ``primes`` (cached)."""
        key = tuple(primes)
        if key not in self._bases:
            self._bases[key] = _Basis(key)
        return self._bases[key]

    def _prime_residues(self, i: int, p: int) -> tuple[np.ndarray | None, np.ndarray]:
        """Layer ``i``'s (0-based) weight numerator (``None`` for a fixed map) and bias
        numerator modulo ``p``."""
        if (i, p) not in self._residues:
            op = self.target.layers[i].operator
            if i not in self._weight_numerators:
                self._weight_numerators[i] = None if op.weight is None else \
                    [int(v) for v in clear_denominators(op.weight)[0].entries()]
            num = self._weight_numerators[i]
            W = None if num is None else np.array([v % p for v in num], dtype=np.float64) \
                .reshape(matrix_shape(op.weight)[0], -1)
            self._residues[(i, p)] = (W, np.array([v % p for v in self._bias_numerators[i]],
                                                  dtype=np.float64))
        return self._residues[(i, p)]

    def scaled(self, i: int, primes: tuple[int, ...], weight_factor: int,
               bias_factor: int) -> tuple[list[Any], np.ndarray | None]:
        """Layer ``i``'s operator per prime with its weight residues times ``weight_factor``,
        and its bias residues times ``bias_factor`` (``(K, width)``, ``None`` without a
        bias): the denominators of a batch folded into the small maps, so that the batch's
        values are reduced once per layer (item 1)."""
        key = (i, primes, weight_factor, bias_factor)
        value = self._scaled.get(key)
        if value is None:  # batches on two threads may both build it: the same value
            op = self.target.layers[i].operator
            ops, biases = [], []
            for p in primes:
                W, b = self._prime_residues(i, p)
                assert W is not None  # a weighted layer (a fixed map has no factors)
                P = np.float64(p)
                ops.append(dataclasses.replace(op, weight=_mod(W * (weight_factor % p), P)))
                biases.append(_mod(b * (bias_factor % p), P))
            value = (ops, np.stack(biases) if self.target.layers[i].bias else None)
            if len(self._scaled) > 64:  # another input grid: the old factors are not reused
                self._scaled.clear()
            self._scaled[key] = value
        return value


@dataclasses.dataclass
class _Node:
    """A node of the batch: symmetric residues ``(K', n, width)`` for the first ``K'`` primes,
    its denominator, its own basis (the fewest primes that hold it, item 3) and, once known,
    its digits in that basis."""

    res: np.ndarray
    den: int
    basis: _Basis
    digits: np.ndarray | None = None


def exact_batch(target: Any, X: np.ndarray, plan: ResiduePlan | None = None
                ) -> tuple[list[list[int]], int]:
    """``N, D`` with ``target(X[s]) = N[s] / D`` exactly (module doc)."""
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    plan = ResiduePlan(target) if plan is None else plan
    m_odd, shifts, e = _exact_input(X)
    top = float(np.max(np.abs(X))) if X.size else 0.0
    dens, vals = plan.bounds(Fraction(top), e)
    pool = primes_below(plan.bits, MAX_PRIMES)

    def count(i: int) -> int:
        """The fewest primes whose product is at least ``2^9·V_i·D_i`` (item 3)."""
        bound, M, k = vals[i] * dens[i] * (2 << SIGN_MARGIN_BITS), 1, 0
        while bound > M:
            if k == len(pool):
                raise ValueError(f"the exact batch needs more than {MAX_PRIMES} primes of "
                                 f"{plan.bits} bits")
            M *= pool[k]
            k += 1
        return max(k, 1)

    counts = [count(i) for i in range(len(dens))]
    primes = pool[:max(counts)]
    x_res = np.stack([_mod(_mod(m_odd, np.float64(p)) * _pow2_mod(shifts, p), np.float64(p))
                      for p in primes])
    nodes = {0: _Node(x_res, dens[0], plan.basis(primes[:counts[0]]))}

    def read(k: int, K: int) -> np.ndarray:
        """Node ``k``'s residues for the first ``K`` primes, extended from its own basis when
        it holds fewer (item 5)."""
        node = nodes[k]
        have = node.res.shape[0]
        if have < K:
            if node.digits is None:
                node.digits = node.basis.digits(node.res)
            node.res = np.concatenate([node.res, node.basis.extend(node.digits,
                                                                   primes[have:K])])
        return node.res[:K]

    last = target.last_readers()
    g = target
    for i, layer in enumerate(g.layers, 1):
        w = g.wire(i)
        K = counts[i]
        P = np.array(primes[:K], dtype=np.float64).reshape(-1, 1, 1)
        a = read(w.input, K)
        a_den = nodes[w.input].den
        op = layer.operator
        d = dens[i]
        if op.weight is None:
            k = plan.window[i - 1]
            if k * k * max(primes) <= FLOAT_WINDOW_LIMIT:
                u = np.stack([np.rint(op.apply_float(a[j]) * k) for j in range(K)])
            else:
                u = _fixed_exact(op, a, primes[:K])
            u = _times(_mod(u, P), d // (k * a_den), P)
        else:
            ops, bias = plan.scaled(i - 1, tuple(primes[:K]),
                                    d // (plan.weight_den[i - 1] * a_den),
                                    d // plan.bias_den[i - 1])
            u = np.stack([ops[j].apply_float(a[j]) for j in range(K)])
            if bias is not None:
                per = u.shape[2] // bias.shape[1]
                u += np.repeat(bias, per, axis=1)[:, None, :]
        if w.skip is not None:
            src = w.skip.source  # a route (a target's skips are): rows copied
            s = read(src, K)
            picks = np.array([-1 if c is None else c for c in w.skip.weight.picks])
            padded = np.concatenate([s, np.zeros(s.shape[:2] + (1,))], axis=2)
            c = np.array([(d // nodes[src].den) % p for p in primes[:K]],
                         dtype=np.float64).reshape(-1, 1, 1)
            u += padded[:, :, picks] * c
        u = _mod(u, P)  # |u| < fan·p² + p² + p ≤ 2^53 (item 1)
        node = _Node(u, d, plan.basis(primes[:K]))
        if layer.activation == "relu":
            pos, t = node.basis.positive(u)
            u *= pos[None]
            node.digits = t * pos[None]
        nodes[i] = node
        for q in [q for q in nodes if last[q] <= i and q != i]:
            del nodes[q]
    out = nodes[g.depth]
    t = out.basis.digits(out.res) if out.digits is None else out.digits
    flat = out.basis.integers(t.reshape(len(out.basis.primes), -1))
    width = out.res.shape[2]
    return [flat[s * width:(s + 1) * width] for s in range(n)], out.den


def _fixed_exact(op: Any, res: np.ndarray, primes: Sequence[int]) -> np.ndarray:
    """A fixed map's integer form ``S r`` on residues by its exact batch map (item 4): its
    ``apply_columns`` on the residues as integers, read back one sample per row."""
    out = []
    for j in range(len(primes)):
        R = res[j].astype(np.int64)  # n × cols
        S = op.apply_columns(Scaled(fmpz_mat(R.shape[1], R.shape[0], R.T.ravel().tolist()),
                                    fmpz(1)))
        Z = as_columns(S, op.shape[0]).num  # rows × n
        out.append(np.array([int(v) for v in Z.entries()], dtype=np.float64)
                   .reshape(op.shape[0], R.shape[0]).T)
    return np.stack(out)
