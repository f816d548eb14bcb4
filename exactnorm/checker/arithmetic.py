"""The checker's arithmetic interface and its standard-library implementation (the reference).

The one walk (:mod:`.walk`) never touches numbers itself: it asks an *arithmetic* for a handful
of exact operations (:class:`.protocol.Arithmetic`), the way SymPy's DomainMatrix puts DDM, SDM
and DFM behind one interface. :class:`PureArithmetic` (this module, integers and lists only) is
the reference; :class:`exactnorm.checker_flint.FlintArithmetic` implements the same operations
with python-flint matrices. Both must return the same numbers, so the walk reaches the same
verdict and message with either (tests/checker/test_checker_kernel.py checks every operation of both
against a plain Fraction computation).

The operations and their exact contracts (maps, reduction, support, the ground domain) are
declared once, as the typed protocol :class:`.protocol.Arithmetic`; :class:`PureArithmetic`
satisfies it (checked by mypy below: ``_DECLARED``). A map here is the tuple
``(cols, rows, consts, den)``, ``node = (rows·a[cols] + consts)/den``, always over its least
common denominator; a box family is :class:`BoxFamily`.
"""

from __future__ import annotations

import math
from operator import mul
from typing import TYPE_CHECKING

from .modular import PureLinear
from .numbers import IntMatrix, IntVector, over_one_denominator
from .provenance import Draw
from .reading import Picks

if TYPE_CHECKING:
    from .protocol import Arithmetic

__all__ = ["PureArithmetic", "PureMap", "BoxFamily", "row_interval"]

# (cols, rows, consts, den): node = (rows·a[cols] + consts)/den
PureMap = tuple[list[int], list[list[int]], list[int], int]


def row_interval(row: list[int], lo: list[list[int]], hi: list[list[int]],
                 p: int) -> tuple[int, int]:
    """Exact min and max of ``row · a`` over the box of position ``p`` (numerators over the
    family's denominator): a box is a product set, so each coordinate sits at the end that the
    sign of its coefficient asks for."""
    mn = mx = 0
    for w, l, h in zip(row, lo, hi):
        if w > 0:
            mn += w * l[p]
            mx += w * h[p]
        elif w < 0:
            mn += w * h[p]
            mx += w * l[p]
    return mn, mx


class _Reduced(tuple):
    """A map over its least common denominator, caching its height."""

    height: tuple[int, int] | None = None


class BoxFamily:
    """Bounds ``lo[t][p]/Q ≤ a_t ≤ hi[t][p]/Q`` for coordinates ``t`` and positions ``p``."""

    __slots__ = ("lo", "hi", "Q", "positions")

    def __init__(self, lo: list[list[int]], hi: list[list[int]], Q: int) -> None:
        self.lo, self.hi, self.Q = lo, hi, Q
        self.positions = len(lo[0]) if lo else 1


class PureArithmetic:
    """The reference arithmetic: Python integers, lists of rows."""

    name = "pure"
    #: the impossibility rules' modular determinant and integer product (§9)
    linear = PureLinear()

    def weight(self, V: IntMatrix | Draw) -> tuple[list[list[int]], int]:
        if isinstance(V, IntMatrix):
            return V.rows, V.den
        if V.integral:
            return V.integers(), 1
        flat, den = over_one_denominator([(x.numerator, x.denominator)
                                          for row in V.fractions() for x in row],
                                         "a frozen draw")
        return [flat[r * V.cols:(r + 1) * V.cols] for r in range(V.rows)], den

    def nrows(self, node: PureMap) -> int:
        return len(node[2])

    def support(self, node: PureMap | None) -> list[int]:
        return [] if node is None else node[0]

    def compose(self, M: list[list[int]], den: int, node: PureMap | None,
                width: int) -> PureMap:
        """(M/den)·node: M restricted to the columns it reads when ``node`` is the segment
        input, else the integer product over the product of the denominators."""
        if node is None:
            cols = [t for t in range(width) if any(row[t] for row in M)]
            if len(cols) == width:
                return self.reduced((cols, M, [0] * len(M), den))
            return self.reduced((cols, [[row[t] for t in cols] for row in M], [0] * len(M), den))
        cols, A, c, d = node
        columns = list(zip(*A)) if cols else []
        return self.reduced((cols, [[sum(map(mul, row, col)) for col in columns] for row in M],
                             [sum(map(mul, row, c)) for row in M], den * d))

    def compose_picks(self, P: Picks, node: PureMap | None) -> PureMap:
        """Row r of the result is row P.rows[r] of ``node`` (0 for None)."""
        if node is None:
            cols = sorted({t for t in P.rows if t is not None})
            at = {t: k for k, t in enumerate(cols)}
            rows = []
            for t in P.rows:
                row = [0] * len(cols)
                if t is not None:
                    row[at[t]] = 1
                rows.append(row)
            return cols, rows, [0] * len(P.rows), 1
        cols, A, c, d = node
        if P.is_identity(len(c)):
            return node
        zero = [0] * len(cols)
        # rows are shared, never modified in place: every operation builds new rows
        return self.reduced((cols, [zero if t is None else A[t] for t in P.rows],
                             [0 if t is None else c[t] for t in P.rows], d))

    def affine(self, gamma: IntVector, node: PureMap, beta: IntVector) -> PureMap:
        """diag(gamma)·node + beta over one denominator."""
        cols, A, c, den = node
        D = math.lcm(gamma.den * den, beta.den)
        s1, s2 = D // (gamma.den * den), D // beta.den
        rows, consts = [], []
        for g, b, row, const in zip(gamma.nums, beta.nums, A, c):
            g *= s1
            rows.append([g * x for x in row])
            consts.append(g * const + b * s2)
        return self.reduced((cols, rows, consts, D))

    def ranges(self, node: PureMap, box: BoxFamily) -> tuple[list[int], list[int], int,
                                                                  list[int], list[int]]:
        """Per row: min over positions of the row minimum and max of the row maximum, as
        numerators over ``den·Q``, and the first positions attaining them. The constant (times
        ``Q``) is the same at every position: it is added once per row."""
        cols, A, c, den = node
        P = box.positions
        lo = [box.lo[t] for t in cols]
        hi = [box.hi[t] for t in cols]
        mins, maxs, at_min, at_max = [], [], [], []
        for row, const in zip(A, c):
            best_lo = best_hi = 0
            p_lo = p_hi = 0
            for p in range(P):
                mn, mx = row_interval(row, lo, hi, p)
                if p == 0 or mn < best_lo:
                    best_lo, p_lo = mn, p
                if p == 0 or mx > best_hi:
                    best_hi, p_hi = mx, p
            base = const * box.Q
            mins.append(best_lo + base)
            maxs.append(best_hi + base)
            at_min.append(p_lo)
            at_max.append(p_hi)
        return mins, maxs, den * box.Q, at_min, at_max

    def compose_scaled(self, M: list[list[int]], den: int, B: PureMap, gamma: IntVector,
                       beta: IntVector, width: int) -> PureMap:
        """(M/den)·(diag(γ)·B + β): γ scales the columns of M, never the entries of B."""
        Mg = [[m * g for m, g in zip(row, gamma.nums)] for row in M]
        cols, A, c, d = self.compose(Mg, den * gamma.den, B, width)
        extra = [sum(map(mul, row, beta.nums)) for row in M]
        D = math.lcm(d, den * beta.den)
        s1, s2 = D // d, D // (den * beta.den)
        return self.reduced((cols, [[s1 * x for x in row] for row in A] if s1 != 1 else A,
                             [s1 * x + s2 * e for x, e in zip(c, extra)], D))

    def reduced(self, node: PureMap) -> PureMap:
        """The same map over the smallest denominator, and on no column when its matrix is zero.

        Without it a denominator only grows (each layer multiplies in those of its gamma and
        beta) and a sum of many maps carries the lcm of them all.
        """
        cols, A, c, den = node
        if cols and not any(map(any, A)):
            cols, A = [], [[] for _ in A]
        if den == 1:
            return _Reduced((cols, A, c, den))
        g = math.gcd(den, *c)
        for row in A:
            if g == 1:
                return _Reduced((cols, A, c, den))
            g = math.gcd(g, *row)
        if g == 1:
            return _Reduced((cols, A, c, den))
        return _Reduced((cols, [[x // g for x in row] for row in A], [x // g for x in c],
                         den // g))

    def add(self, m1: PureMap, m2: PureMap) -> PureMap:
        """m1 + m2 on the union of their supports, over the lcm of their denominators."""
        (c1, A1, e1, d1), (c2, A2, e2, d2) = m1, m2
        den = math.lcm(d1, d2)
        s1, s2 = den // d1, den // d2
        if c1 == c2:
            return self.reduced((c1, [[s1 * x + s2 * y for x, y in zip(r1, r2)]
                                      for r1, r2 in zip(A1, A2)],
                                 [s1 * x + s2 * y for x, y in zip(e1, e2)], den))
        cols = sorted(set(c1) | set(c2))
        at = {t: k for k, t in enumerate(cols)}
        rows = []
        for r1, r2 in zip(A1, A2):
            row = [0] * len(cols)
            for t, x in zip(c1, r1):
                row[at[t]] += s1 * x
            for t, y in zip(c2, r2):
                row[at[t]] += s2 * y
            rows.append(row)
        return self.reduced((cols, rows, [s1 * x + s2 * y for x, y in zip(e1, e2)], den))

    def height(self, node: PureMap) -> tuple[int, int]:
        """(bits of the largest absolute numerator, bits of the denominator); maps are kept
        over their least common denominator, so these are properties of the values."""
        known = getattr(node, "height", None)
        if known is not None:
            return known
        _, A, c, den = node
        top = max((max(map(abs, row)) for row in A if row), default=0)
        top = max(top, max(map(abs, c), default=0))
        out = top.bit_length(), den.bit_length()
        if isinstance(node, _Reduced):
            node.height = out  # maps are never modified: computed once per map
        return out

    def vanishes(self, A: Draw, B: Draw | None, v: list[int]) -> bool:
        """Whether ``V_A·v = 0`` (B None) or ``V_B·diag(v)·V_A = 0`` for the regenerated
        matrices (their denominators do not matter)."""
        VA, _ = self.weight(A)
        if B is None:
            return not any(sum(map(mul, row, v)) for row in VA)
        VB, _ = self.weight(B)
        columns = list(zip(*VA))
        for row in VB:
            scaled = [x * c for x, c in zip(row, v)]
            if any(sum(map(mul, scaled, col)) for col in columns):
                return False
        return True

    def plain(self, node: PureMap) -> tuple[list[int], list[list[int]], list[int], int]:
        return node

    def box(self, lo: list[list[int]], hi: list[list[int]], Q: int) -> BoxFamily:
        return BoxFamily(lo, hi, Q)


if TYPE_CHECKING:
    #: mypy checks that the reference satisfies the protocol, with its own types
    _DECLARED: Arithmetic[PureMap, list[list[int]], int, BoxFamily] = PureArithmetic()
