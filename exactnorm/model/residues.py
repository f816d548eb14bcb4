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
1. *Exact float products.* Residues lie in ``(−p, p)``; a weighted map's output entry is a sum of
   at most ``fan_in`` products, so every partial sum is an integer below ``fan_in·p² ≤ 2^53``
   (``b`` is chosen so, :func:`prime_bits`): each float operation is exact whatever the order,
   BLAS or thread count, and reducing modulo ``p`` is exact (:func:`_mod`). Products by constants
   are taken of reduced values (``< p² < 2^53``).
2. *Denominators and bounds.* Node ``i`` holds ``a_i = N_i / D_i`` with ``D_i`` an exact Python
   integer: the input's common power of two; a weighted layer ``A = A_n/D_A`` with bias
   ``b = b_n/D_b`` gives ``D = lcm(D_A·D_in, D_b)``; a fixed map (a pooling, ``A = S/k``) gives
   ``k·D_in``; a skip (a route, which copies rows) adds over the lcm. An exact bound
   ``|a_i| ≤ V_i`` follows from the exact row sums of ``|A|`` (the operator's exact
   :meth:`interval` on ``[−1, 1]``), ``max |b|`` and the largest sample entry, so
   ``|N_i| ≤ V_i·D_i``; the primes are as many as make their product at least
   ``2^9 · max_i V_i·D_i``, and node ``i``'s sign test uses the first ``K_i`` of them, the
   fewest whose product ``M`` is at least ``2^9 · V_i·D_i``.
3. *Signs (ReLU) without the integers.* With ``t_k = r_k·(M/p_k)^{-1} mod p_k`` (``k ≤ K_i``)
   the Chinese remainder theorem gives ``N/M ≡ Σ_k t_k/p_k (mod 1)``. In fixed point,
   ``F = Σ_k t_k·⌊2^93/p_k⌋ mod 2^93`` is computed exactly in int64 limbs (:meth:`_Signs.
   fraction`; ``t_k < 2^24`` times a 31-bit limb, 64 of them: below ``2^61``) and lies below
   ``F* = 2^93·frac(N/M)`` by at most ``K·2^24 ≤ 2^30`` (modulo ``2^93``). As ``|N| ≤
   M·2^-9``, ``F*`` lies in ``[0, 2^84]`` for ``N ≥ 0`` and in ``[2^93 − 2^84, 2^93)`` for
   ``N < 0``; so ``2^31 ≤ F < 2^92`` proves ``N > 0`` and ``2^92 ≤ F < 2^93 − 2^31`` proves
   ``N < 0``. The other entries (``|N| < 2^-61·M``) are
   decided exactly: ``N = 0`` iff every residue is 0, else ``N`` is rebuilt by the CRT in
   Python integers.
4. *A fixed map* (no weight) is ``S/k`` with ``S`` integer (a pooling's window sums):
   ``apply_float`` gives the window means of the residues, within ``k·p·(k + 2)·2^-53`` of
   ``S r / k``, so ``rint(k · mean)`` is ``S r`` exactly while ``k²·p ≤ 2^48``; larger windows
   use the operator's exact integer map on the residues (:meth:`apply_columns`).

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
from exactnorm.model.batch import as_columns
from exactnorm.model.values import Scaled

__all__ = ["exact_batch", "ResiduePlan", "prime_bits", "primes_below", "SIGN_MARGIN_BITS"]

#: ``M ≥ 2^SIGN_MARGIN_BITS · |N|`` for every node (correctness, item 3)
SIGN_MARGIN_BITS = 8
#: the fixed-point fraction of item 3: three limbs of 31 bits (93 bits); its truncation error
#: is at most K·2^24 ≤ 2^30 (primes below 2^24, at most 64 of them), below one lowest limb
_LIMB = 31
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


@dataclasses.dataclass
class _Node:
    """A node of the batch: residues ``(K, n, width)`` in ``[0, p)``, denominator, value bound."""

    res: np.ndarray
    den: int
    bound: Fraction


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
    """``2^s mod p`` entrywise, by squaring (float64 values below ``p² < 2^53``)."""
    out = np.ones(shifts.shape, dtype=np.float64)
    base = np.full(shifts.shape, 2.0)
    s = shifts.copy()
    while s.any():
        odd = (s & 1).astype(bool)
        out = np.where(odd, np.fmod(out * base, p), out)
        base = np.fmod(base * base, p)
        s >>= 1
    return out


def _matrix_residues(M: Any, primes: Sequence[int]) -> tuple[list[np.ndarray], int]:
    """An exact matrix ``M = M_n / D``: the residues of ``M_n`` per prime (float64) and ``D``."""
    num, den = clear_denominators(M)
    rows, cols = num.nrows(), num.ncols()
    flat = [int(v) for v in num.entries()]
    return ([np.array([v % p for v in flat], dtype=np.float64).reshape(rows, cols)
             for p in primes], int(den))


def _vector_residues(v: Sequence[Any], primes: Sequence[int]) -> tuple[np.ndarray, int]:
    """Exact numbers ``v = v_n / D``: residues ``(K, len(v))`` of ``v_n`` and ``D``."""
    fr = [Fraction(int(fmpq(x).p), int(fmpq(x).q)) for x in v]
    den = math.lcm(*(x.denominator for x in fr)) if fr else 1
    nums = [int(x * den) for x in fr]
    return np.array([[n % p for n in nums] for p in primes], dtype=np.float64), den


def _mod(u: np.ndarray, P: np.ndarray) -> np.ndarray:
    """A residue of ``u`` modulo ``p`` in ``(−p, p)``, for float64 integers ``|u| < 2^53``
    (``P`` broadcast against ``u``), exact: ``q = rint(u/p)`` computed in floats is within one
    of the nearest quotient (the float quotient's error is below ``2^53/p · 2^-52``), and
    ``q·p`` and ``u − q·p`` are integers below ``2^53``. Residues are kept in this symmetric
    range (item 1's bound ``fan_in·p² ≤ 2^53`` holds for them); only the sign test needs
    ``[0, p)`` (:meth:`_Signs.digits`)."""
    q = u * (1.0 / P)
    np.rint(q, out=q)
    q *= P
    np.subtract(u, q, out=q)
    return q


def _scale(res: np.ndarray, factor: int, P: np.ndarray) -> np.ndarray:
    """``res · factor`` modulo each prime (``P`` of shape ``(K, 1, 1)``)."""
    if factor == 1:
        return res
    c = np.array([factor % int(p) for p in P.ravel()], dtype=np.float64).reshape(P.shape)
    return _mod(res * c, P)


class _Signs:
    """The CRT constants of item 3 for primes ``P`` and the exact rebuild of chosen entries."""

    def __init__(self, primes: Sequence[int]) -> None:
        self.primes = list(primes)
        self.M = math.prod(self.primes)
        self.cofactors = [self.M // p for p in self.primes]
        inv = [pow(c % p, -1, p) for c, p in zip(self.cofactors, self.primes)]
        self.inv = np.array(inv, dtype=np.float64).reshape(-1, 1, 1)
        self.P = np.array(self.primes, dtype=np.float64).reshape(-1, 1, 1)
        scaled = [(1 << 3 * _LIMB) // p for p in self.primes]  # ⌊2^93/p_k⌋, below 2^72
        self.limbs = [np.array([(c >> (_LIMB * j)) & _MASK for c in scaled], dtype=np.int64)
                      for j in range(3)]

    def digits(self, res: np.ndarray) -> np.ndarray:
        """``t_k`` of item 3 for the first ``K`` primes' residues (each below ``p_k``)."""
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

    def fraction(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``F = Σ_k t_k·⌊2^93/p_k⌋ mod 2^93`` in three 31-bit limbs ``(F_2, F_1, F_0)``
        (item 3): int64 sums of at most 64 products of 22 and 31 bits, then the carries."""
        t = t.astype(np.int64)
        s = [np.tensordot(self.limbs[j], t, axes=(0, 0)) for j in range(3)]
        s[1] += s[0] >> _LIMB
        s[2] += s[1] >> _LIMB
        return s[2] & _MASK, s[1] & _MASK, s[0] & _MASK

    def positive(self, res: np.ndarray) -> np.ndarray:
        """``N > 0`` entrywise (item 3)."""
        t = self.digits(res)
        f2, f1, f0 = self.fraction(t)
        low = (f2 == 0) & (f1 == 0)            # F < 2^31
        high = (f2 == _MASK) & (f1 == _MASK)   # F ≥ 2^93 − 2^31
        pos = (f2 < 1 << (_LIMB - 1)) & ~low
        # near a multiple of M: 0 when every residue is (padding, dead patches), else a small
        # nonzero N (|N| < 2^-61·M) rebuilt exactly
        unsure = (low | high) & np.any(res[:len(self.primes)] != 0, axis=0)
        if unsure.any():
            idx = np.nonzero(unsure)
            exact = self.integers(t[:, idx[0], idx[1]])
            pos[idx] = np.array(exact, dtype=object) > 0
        return pos


def _bound_of(op: Any) -> Fraction:
    """``max_r Σ_c |A_rc|``, exact: the operator's exact image of ``[−1, 1]^cols``."""
    cols = op.shape[1]
    _, hi = op.interval((fmpq(-1),) * cols, (fmpq(1),) * cols)
    top = max((fmpq(x) for x in hi), default=fmpq(0))
    return Fraction(int(top.p), int(top.q))


class ResiduePlan:
    """Per layer: the exact denominators and bounds of the maps (once per network), their
    residues (once per set of primes). A target's skips are routes (0/1 rows)."""

    def __init__(self, target: Any) -> None:
        self.target = target
        fan = 1
        for layer in target.layers:
            op = layer.operator
            if op.weight is not None:
                fan = max(fan, op.weight.ncols() if hasattr(op.weight, "ncols")
                          else op.weight.shape[1])
        self.bits = prime_bits(fan)
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
        self.bias_den = [_vector_residues(layer.bias, [2])[1] for layer in target.layers]
        self._residues: dict[tuple[int, ...], Any] = {}

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

    def residues(self, primes: tuple[int, ...]) -> Any:
        """Weights, biases and skip matrices modulo ``primes`` (cached)."""
        if primes not in self._residues:
            g = self.target
            ops: list[Any] = []
            biases: list[Any] = []
            for layer in g.layers:
                op = layer.operator
                if op.weight is None:
                    ops.append(None)
                else:
                    mats, _ = _matrix_residues(op.weight, primes)
                    ops.append([dataclasses.replace(op, weight=W) for W in mats])
                biases.append(_vector_residues(layer.bias, primes)[0] if layer.bias else None)
            self._residues = {primes: (ops, biases)}
        return self._residues[primes]


def exact_batch(target: Any, X: np.ndarray, plan: ResiduePlan | None = None
                ) -> tuple[list[list[int]], int]:
    """``N, D`` with ``target(X[s]) = N[s] / D`` exactly (module doc)."""
    X = np.asarray(X, dtype=np.float64)
    n = len(X)
    plan = ResiduePlan(target) if plan is None else plan
    m_odd, shifts, e = _exact_input(X)
    top = float(np.max(np.abs(X))) if X.size else 0.0
    dens, vals = plan.bounds(Fraction(top), e)
    need = max(v * d for v, d in zip(vals, dens)) * (1 << SIGN_MARGIN_BITS) * 2
    pool = primes_below(plan.bits, MAX_PRIMES)
    primes, M = [], 1
    for prime in pool:
        if need <= M:
            break
        primes.append(prime)
        M *= prime
    if need > M:
        raise ValueError(f"the exact batch needs more than {MAX_PRIMES} primes of "
                         f"{plan.bits} bits")
    key = tuple(primes)
    ops, biases = plan.residues(key)
    P = np.array(primes, dtype=np.float64).reshape(-1, 1, 1)
    # the sign test of node i runs on the fewest primes whose product passes its own bound
    # (item 3): with the whole product, small early values would all look like zero
    signs: dict[int, _Signs] = {}

    def signs_for(i: int) -> _Signs:
        bound, M, count = vals[i] * dens[i] * (2 << SIGN_MARGIN_BITS), 1, 0
        while bound > M:
            M *= primes[count]
            count += 1
        count = max(count, 1)
        if count not in signs:
            signs[count] = _Signs(primes[:count])
        return signs[count]

    x_res = np.stack([_mod(_mod(m_odd, np.float64(p)) * _pow2_mod(shifts, p), np.float64(p))
                      for p in primes])
    nodes = {0: _Node(x_res, dens[0], vals[0])}
    last = target.last_readers()
    g = target
    for i, layer in enumerate(g.layers, 1):
        w = g.wire(i)
        a = nodes[w.input]
        op = layer.operator
        d = dens[i]
        if op.weight is None:
            k = plan.window[i - 1]
            if k * k * max(primes) <= FLOAT_WINDOW_LIMIT:
                u = np.stack([np.rint(op.apply_float(a.res[j]) * k) for j in range(len(primes))])
            else:
                u = _fixed_exact(op, a.res, primes)
            u = _scale(_mod(u, P), d // (k * a.den), P)
        else:
            u = _mod(np.stack([ops[i - 1][j].apply_float(a.res[j]) for j in range(len(primes))]),
                     P)
            u = _scale(u, d // (plan.weight_den[i - 1] * a.den), P)
            if biases[i - 1] is not None:
                per = u.shape[2] // biases[i - 1].shape[1]
                b = np.repeat(biases[i - 1], per, axis=1)[:, None, :]
                u = _mod(u + _scale(b, d // plan.bias_den[i - 1], P), P)
        if w.skip is not None:
            src = nodes[w.skip.source]  # a route (a target's skips are): rows copied
            picks = np.array([-1 if c is None else c for c in w.skip.weight.picks])
            padded = np.concatenate([src.res, np.zeros(src.res.shape[:2] + (1,))], axis=2)
            u = _mod(u + _scale(padded[:, :, picks], d // src.den, P), P)
        if layer.activation == "relu":
            u = u * signs_for(i).positive(u)[None]
        nodes[i] = _Node(u, d, vals[i])
        for q in [q for q in nodes if last[q] <= i and q != i]:
            del nodes[q]
    out = nodes[g.depth]
    last_signs = signs_for(g.depth)
    t = last_signs.digits(out.res)
    flat = last_signs.integers(t.reshape(len(last_signs.primes), -1))
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
