"""The boxes of the walk (docs/certificate-format.md §0, §8): the domain, the exact interval
bounds of an affine target layer (dense, or at every position of a window; a fixed map's box is
its kind's rule, :mod:`.kinds`), and the family of patch boxes of a convolution. Standard
library only, shared by both arithmetics, every size and cost counted before it is built (rule
``limit``, :mod:`.budget`).

A box is ``(lo, hi, Q)``: lower and upper numerators over one denominator ``Q > 0``.

Correctness argument. A box is a product set, so the minimum of ``w·a + b`` over it takes each
coordinate at the end the sign of its coefficient asks for (:func:`.arithmetic.row_interval`);
a ReLU clamps both ends at 0; a padding pixel is the point 0. Every number here is exact.
"""

from __future__ import annotations

import math
from typing import Any

from .arithmetic import row_interval
from .budget import STEP, Budget, mul_cost, words
from .numbers import IntMatrix, IntVector, bits_of
from .records import TargetRecord

__all__ = ["Box", "domain_box", "box_bits", "reduced_box", "patch_family", "affine_box"]

Box = tuple[list[int], list[int], int]


def box_bits(box: Box) -> int:
    """Bits of the largest absolute numerator of a box (its denominator ``Q`` is stored once)."""
    lo, hi, _ = box
    top = max(max(map(abs, lo), default=0), max(map(abs, hi), default=0))
    return top.bit_length()


def _top(v: IntVector) -> int:
    return max(map(abs, v.nums), default=0).bit_length()


def domain_box(lower: IntVector, upper: IntVector, budget: Budget) -> Box:
    """B_0 over one denominator; its size is bounded before the scaled numerators exist (one
    long denominator of the lower bounds would otherwise be multiplied into every upper bound)."""
    n = len(lower)
    big = lower.den.bit_length() + upper.den.bit_length()
    if lower.den == upper.den or big <= 8192:
        Q = math.lcm(lower.den, upper.den)
        sl, su = Q // lower.den, Q // upper.den
    else:  # a common multiple without CPython's quadratic gcd of huge numbers
        Q, sl, su = lower.den * upper.den, upper.den, lower.den
    bits = max(_top(lower) + sl.bit_length(), _top(upper) + su.bit_length())
    budget.size(2, n, None, bits, where="domain", what="the box")
    budget.work(2 * n * (STEP + mul_cost(bits, max(sl, su).bit_length())), None, "domain")
    return [x * sl for x in lower.nums], [x * su for x in upper.nums], Q


def reduced_box(lo: list[int], hi: list[int], Q: int, budget: Budget, where: str) -> Box:
    """Divide out common factors while that is cheap; the values never change."""
    if Q == 1 or Q.bit_length() > 4096:
        return lo, hi, Q
    budget.work(len(lo) * 2 * (STEP + mul_cost(box_bits((lo, hi, 1)), Q.bit_length())), None,
                where)
    g = Q
    for x in lo + hi:
        if g == 1:
            return lo, hi, Q
        g = math.gcd(g, x)
    return [x // g for x in lo], [x // g for x in hi], Q // g


def patch_family(box: Box, g: Any, budget: Budget, j: int | None,
                 where: str | None = None) -> tuple[list[list[int]], list[list[int]]]:
    """Lower and upper bounds of every patch coordinate at every output position (zero padding
    is the point 0): two (C·kh·kw) × (Ho·Wo) tables over the box's denominator, bounded first."""
    positions = g.Ho * g.Wo
    budget.size(2 * g.patch, positions, j, box_bits(box), where=where,
                what="the family of patch boxes")
    budget.work(2 * g.patch * positions * STEP, j, where)
    lo, hi, _ = box
    return [_positions(lo, g, t) for t in range(g.patch)], \
        [_positions(hi, g, t) for t in range(g.patch)]


def _positions(bounds: list[int], g: Any, t: int) -> list[int]:
    """Patch coordinate ``t = c·kh·kw + u·kw + v`` at every output position ``(y, x)`` (y-major):
    the pixel ``(c, y·sh − ph + u·dh, x·sw − pw + v·dw)`` of ``bounds``, 0 in the padding
    (:meth:`.records.Geometry.pixels`), an output row at a time as a strided slice of the input
    row between the columns ``x_lo … x_hi`` that fall inside it."""
    c, rest = divmod(t, g.kh * g.kw)
    u, v = divmod(rest, g.kw)
    col0 = v * g.dw - g.pw  # the input column at x = 0
    x_lo = max(0, (g.sw - 1 - col0) // g.sw)
    x_hi = min(g.Wo - 1, (g.W - 1 - col0) // g.sw)
    out: list[int] = []
    for y in range(g.Ho):
        row = y * g.sh - g.ph + u * g.dh
        if not 0 <= row < g.H or x_hi < x_lo:
            out += [0] * g.Wo
            continue
        base = (c * g.H + row) * g.W + col0
        out += [0] * x_lo
        out += bounds[base + x_lo * g.sw:base + x_hi * g.sw + 1:g.sw]
        out += [0] * (g.Wo - 1 - x_hi)
    return out


def _interval_rows(W: IntMatrix, b: IntVector, lo: list[list[int]], hi: list[list[int]],
                   Q: int) -> tuple[list[list[int]], list[list[int]], int]:
    """Exact min and max of W·a + b over a family of boxes (d × P), over W.den·Q·b.den."""
    scale = W.den * Q
    mins, maxs = [], []
    P = len(lo[0])
    for row, bias in zip(W.rows, b.nums):
        const = bias * scale
        rmin, rmax = [], []
        for p in range(P):
            mn, mx = row_interval(row, lo, hi, p)
            rmin.append(mn * b.den + const)
            rmax.append(mx * b.den + const)
        mins.append(rmin)
        maxs.append(rmax)
    return mins, maxs, scale * b.den


def _plus_skip(lo: list[int], hi: list[int], D: int, picks: Any, qbox: Box, budget: Budget,
               where: str) -> Box:
    """The interval of a pre-activation plus a 0/1 skip ``S·a_q`` (``a_q`` in ``qbox``): the
    sum of the two intervals, row by row (row r of ``S`` copies coordinate ``picks.rows[r]`` of
    ``a_q``, or nothing: ``[0, 0]``), over a common denominator; counted first."""
    qlo, qhi, Qq = qbox
    db, qb = D.bit_length(), Qq.bit_length()
    L = math.lcm(D, Qq) if db + qb <= 8192 else D * Qq
    sa, sq = L // D, L // Qq
    bits = max(box_bits((lo, hi, 1)) + sa.bit_length(), box_bits(qbox) + sq.bit_length()) + 1
    budget.size(2, len(lo), None, bits, where=where, what="its box")
    budget.work(mul_cost(db, qb) + 4 * words(db + qb) ** 2 + 2 * len(lo) * (
        3 * STEP + mul_cost(box_bits((lo, hi, 1)), sa.bit_length())
        + mul_cost(box_bits(qbox), sq.bit_length())), None, where)
    out_lo = [x * sa + (0 if t is None else qlo[t] * sq) for x, t in zip(lo, picks.rows)]
    out_hi = [x * sa + (0 if t is None else qhi[t] * sq) for x, t in zip(hi, picks.rows)]
    return out_lo, out_hi, L


def affine_box(layer: TargetRecord, box: Box, budget: Budget, i: int,
               skip: tuple[Any, Box] | None = None) -> Box:
    """B_i from B_p (``box``, p the node target layer i reads) for a layer ``(W, b, σ)``, dense
    or with a window: exact interval bounds of its pre-activation (at every output position of
    the window, channel-major), plus the interval of its skip ``(picks, B_q)`` when it has one
    (the sum of the intervals: sound, docs/certificate-format.md §10), relu clamping at 0; its
    size and cost bounded before it is computed."""
    where = f"target layer {i}"
    lo, hi, Q = box
    bits = box_bits(box)
    qbits = Q.bit_length()
    g = layer.geom
    W, b = layer.W, layer.b
    assert W is not None and b is not None  # an affine kind's record
    wbits, bbits = bits_of(W), bits_of(b)
    inner = W.ncols
    positions = 1 if g is None else g.Ho * g.Wo
    # mn = Σ w·lo (inner terms), then mn·b.den + bias·W.den·Q
    out_bits = max(wbits + bits + inner.bit_length() + bbits, bbits + wbits + qbits) + 2
    budget.size(2 * W.nrows, positions, None, out_bits, where=where, what="its box")
    if g is not None:
        fam_lo, fam_hi = patch_family(box, g, budget, None, where)
    else:
        fam_lo, fam_hi = [[x] for x in lo], [[x] for x in hi]
    budget.product(2 * W.nrows, inner, positions, wbits, bits, None, where)
    budget.work(W.nrows * mul_cost(2 * wbits, qbits)
                + 2 * W.nrows * positions * (2 * STEP + mul_cost(out_bits, bbits)), None, where)
    mins, maxs, D = _interval_rows(W, b, fam_lo, fam_hi, Q)
    flat_lo = [x for row in mins for x in row]  # channel-major: (o, y, x) in C order
    flat_hi = [x for row in maxs for x in row]
    if skip is not None:
        flat_lo, flat_hi, D = _plus_skip(flat_lo, flat_hi, D, skip[0], skip[1], budget, where)
    if layer.act == "relu":
        flat_lo = [max(x, 0) for x in flat_lo]
        flat_hi = [max(x, 0) for x in flat_hi]
    return reduced_box(flat_lo, flat_hi, D, budget, where)
