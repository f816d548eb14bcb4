"""Op-by-op agreement of the checker's two arithmetics (python-flint's test-suite style).

A table of operations × input families: for every member of the typed protocol
:class:`exactnorm.checker.protocol.Arithmetic` (and of its :class:`~.protocol.Linear`), on
Hypothesis-generated exact inputs — integers small (many zeros, cancellations, singular
matrices), big (64–300 bits, big coprime denominators), huge (thousands of bits) and degenerate
shapes (1×1, zero maps, empty supports, empty matrices) — the result of
:class:`~exactnorm.checker.arithmetic.PureArithmetic` and of
:class:`~exactnorm.checker_flint.FlintArithmetic` both equal an independent
:class:`fractions.Fraction` computation of the operation's contract written here (maps are
compared through their exact values, their support, their least common denominator and their
height; integers that the contract says are the same in every arithmetic are compared as
integers). Frozen draws are compared with the package's vectorised generator
(:func:`exactnorm.exact.generator.matrix_from_record`), not the checker's regenerator. Where an
operation can fail, both raise the same exception type with the same message. A member of the
protocol without a row in the table fails :func:`test_every_protocol_member_has_a_row`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exactnorm.checker.arithmetic import PureArithmetic
from exactnorm.checker.budget import Budget
from exactnorm.checker.numbers import CertificateError, IntMatrix, IntVector
from exactnorm.checker.protocol import Arithmetic, Linear
from exactnorm.checker.provenance import Draw
from exactnorm.checker.reading import Picks
from exactnorm.checker.regenerate import RecordError, validate_record, words_per_entry
from exactnorm.checker.vocabulary import GENERATOR, MAX_MAP_ENTRIES
from exactnorm.checker_flint import FlintArithmetic
from exactnorm.exact.generator import matrix_from_record
from exactnorm.exact.linalg import to_fractions

PURE, FLINT = PureArithmetic(), FlintArithmetic()
BOTH = (PURE, FLINT)

# --------------------------------------------------------------------------- number families


@dataclass(frozen=True)
class Numbers:
    """An input family: numerators, denominators and the largest shape."""

    ints: st.SearchStrategy[int]
    dens: st.SearchStrategy[int]
    size: int


def _huge(low: int, high: int) -> st.SearchStrategy[int]:
    return st.builds(lambda s, e, k: s * ((1 << e) + k), st.sampled_from([-1, 1]),
                     st.integers(low, high), st.integers(-3, 3))


FAMILIES = {
    # many zeros and ±1: cancellations, zero maps, singular products
    "small": Numbers(st.integers(-2, 2), st.integers(1, 6), 4),
    # 64–300-bit numerators and big, mostly coprime denominators
    "big": Numbers(st.one_of(st.integers(-3, 3), st.integers(-(2 ** 300), 2 ** 300)),
                   st.one_of(st.just(1), st.integers(1, 2 ** 80),
                             st.builds(lambda e, k: (1 << e) + 2 * k + 1, st.integers(64, 300),
                                       st.integers(0, 40))), 4),
    # thousands of bits (FLINT's column-by-column products start at 4,096 entries or bits)
    "huge": Numbers(st.one_of(st.just(0), _huge(1000, 5000)),
                    st.one_of(st.just(1), _huge(1000, 3000).map(lambda x: abs(x) | 1)), 3),
    # 1×1 and one-coordinate shapes, entries 0 or ±1
    "degenerate": Numbers(st.integers(-1, 1), st.just(1), 1),
}

# --------------------------------------------------------------------------- exact inputs


@st.composite
def int_rows(draw: Any, fam: Numbers, rows: int, cols: int) -> list[list[int]]:
    """An integer matrix, some of its columns (sometimes all) zero."""
    zero = draw(st.sets(st.integers(0, cols - 1), max_size=cols)) if cols else set()
    return [[0 if t in zero else draw(fam.ints) for t in range(cols)] for _ in range(rows)]


@st.composite
def int_matrix(draw: Any, fam: Numbers, rows: int, cols: int) -> IntMatrix:
    return IntMatrix(draw(int_rows(fam, rows, cols)), draw(fam.dens))


@st.composite
def int_vector(draw: Any, fam: Numbers, n: int) -> IntVector:
    return IntVector([draw(fam.ints) for _ in range(n)], draw(fam.dens))


@st.composite
def picks(draw: Any, rows: int, cols: int) -> Picks:
    if rows == cols and draw(st.booleans()):
        return Picks(tuple(range(rows)), cols)  # an identity skip
    return Picks(tuple(draw(st.lists(st.one_of(st.none(), st.integers(0, cols - 1)),
                                     min_size=rows, max_size=rows))), cols)


def _dim(fam: Numbers) -> st.SearchStrategy[int]:
    return st.integers(1, fam.size)


@st.composite
def recipe(draw: Any, fam: Numbers, width: int, rows: int, depth: int = 2) -> tuple:
    """How to build a map of ``rows`` rows of a segment input of ``width`` coordinates, with
    the operations of the protocol (so that every map shape an arithmetic can hold arises:
    several pieces on disjoint columns, zero maps, identity skips)."""
    leaves = ["input", "picks_input"]
    kind = draw(st.sampled_from(leaves if depth == 0 else
                                leaves + ["affine", "add", "compose", "picks", "scaled"]))
    if kind == "input":
        return ("input", draw(int_matrix(fam, rows, width)))
    if kind == "picks_input":
        return ("picks_input", draw(picks(rows, width)))
    if kind == "affine":
        return ("affine", draw(int_vector(fam, rows)), draw(recipe(fam, width, rows, depth - 1)),
                draw(int_vector(fam, rows)))
    if kind == "add":
        return ("add", draw(recipe(fam, width, rows, depth - 1)),
                draw(recipe(fam, width, rows, depth - 1)))
    k = draw(_dim(fam))
    sub = draw(recipe(fam, width, k, depth - 1))
    if kind == "compose":
        return ("compose", draw(int_matrix(fam, rows, k)), sub)
    if kind == "picks":
        return ("picks", draw(picks(rows, k)), sub)
    return ("scaled", draw(int_matrix(fam, rows, k)), sub, draw(int_vector(fam, k)),
            draw(int_vector(fam, k)))


def build(ar: Any, r: tuple, width: int) -> Any:
    """The map of a recipe in arithmetic ``ar``."""
    kind = r[0]
    if kind == "input":
        return ar.compose(*ar.weight(r[1]), None, width)
    if kind == "picks_input":
        return ar.compose_picks(r[1], None)
    if kind == "affine":
        return ar.affine(r[1], build(ar, r[2], width), r[3])
    if kind == "add":
        return ar.add(build(ar, r[1], width), build(ar, r[2], width))
    if kind == "compose":
        return ar.compose(*ar.weight(r[1]), build(ar, r[2], width), width)
    if kind == "picks":
        return ar.compose_picks(r[1], build(ar, r[2], width))
    return ar.compose_scaled(*ar.weight(r[1]), build(ar, r[2], width), r[3], r[4], width)


# --------------------------------------------------------------------------- the reference


@dataclass
class Ref:
    """A map as Fractions: ``A`` (rows × width, dense), ``c``, and its support."""

    A: list[list[Fraction]]
    c: list[Fraction]
    support: frozenset[int]


def _fr(M: IntMatrix) -> list[list[Fraction]]:
    return [[Fraction(x, M.den) for x in row] for row in M.rows]


def _fv(v: IntVector) -> list[Fraction]:
    return [Fraction(x, v.den) for x in v.nums]


def _mul(M: list[list[Fraction]], X: list[list[Fraction]], width: int) -> list[list[Fraction]]:
    return [[sum((m * X[k][t] for k, m in enumerate(row)), Fraction(0)) for t in range(width)]
            for row in M]


def _ref(A: list[list[Fraction]], c: list[Fraction], support: frozenset[int]) -> Ref:
    """The support is structural, except that a zero matrix depends on no column."""
    return Ref(A, c, support if any(x for row in A for x in row) else frozenset())


def reference(r: tuple, width: int) -> Ref:
    """The contract of each operation over ℚ, written independently of both arithmetics."""
    kind = r[0]
    if kind == "input":
        A = _fr(r[1])
        return _ref(A, [Fraction(0)] * len(A),
                    frozenset(t for t in range(width) if any(row[t] for row in A)))
    if kind == "picks_input":
        rows = r[1].rows
        A = [[Fraction(int(s == t)) for t in range(width)] for s in rows]
        return _ref(A, [Fraction(0)] * len(rows), frozenset(s for s in rows if s is not None))
    if kind == "affine":
        g, sub, b = _fv(r[1]), reference(r[2], width), _fv(r[3])
        return _ref([[gk * x for x in row] for gk, row in zip(g, sub.A)],
                    [gk * x + bk for gk, x, bk in zip(g, sub.c, b)], sub.support)
    if kind == "add":
        s1, s2 = reference(r[1], width), reference(r[2], width)
        return _ref([[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(s1.A, s2.A)],
                    [x + y for x, y in zip(s1.c, s2.c)], s1.support | s2.support)
    if kind == "compose":
        M, sub = _fr(r[1]), reference(r[2], width)
        return _ref(_mul(M, sub.A, width), [row[0] for row in _mul(M, [[x] for x in sub.c], 1)],
                    sub.support)
    if kind == "picks":
        sub = reference(r[2], width)
        zero = [Fraction(0)] * width
        return _ref([zero if s is None else sub.A[s] for s in r[1].rows],
                    [Fraction(0) if s is None else sub.c[s] for s in r[1].rows], sub.support)
    M, sub, g, b = _fr(r[1]), reference(r[2], width), _fv(r[3]), _fv(r[4])
    inner = Ref([[gk * x for x in row] for gk, row in zip(g, sub.A)],
                [gk * x + bk for gk, x, bk in zip(g, sub.c, b)], sub.support)
    return _ref(_mul(M, inner.A, width), [row[0] for row in _mul(M, [[x] for x in inner.c], 1)],
                sub.support)


def lcd(values: list[Fraction]) -> int:
    return math.lcm(1, *(x.denominator for x in values))


def ref_height(R: Ref) -> tuple[int, int]:
    values = [x for row in R.A for x in row] + R.c
    D = lcd(values)
    return max((abs(x * D).numerator for x in values), default=0).bit_length(), D.bit_length()


def agree_map(pm: Any, fm: Any, R: Ref) -> None:
    """Both maps have the reference's rows, support, height and values, each written over its
    least common denominator (the same integers in both arithmetics)."""
    values = [x for row in R.A for x in row] + R.c
    D = lcd(values)
    nonzero = {t for row in R.A for t, x in enumerate(row) if x}
    seen = []
    for ar, m in zip(BOTH, (pm, fm)):
        assert ar.nrows(m) == len(R.c), ar.name
        assert set(ar.support(m)) == R.support, ar.name
        assert len(set(ar.support(m))) == len(ar.support(m)), ar.name
        assert ar.height(m) == ref_height(R), ar.name
        cols, rows, consts, den = ar.plain(m)
        assert den == D, ar.name
        assert all(a < b for a, b in zip(cols, cols[1:])), ar.name
        assert nonzero <= set(cols) <= R.support, ar.name
        at = {t: k for k, t in enumerate(cols)}
        assert [[Fraction(row[at[t]], den) if t in at else Fraction(0)
                 for t in range(len(R.A[0]) if R.A else 0)] for row in rows] == R.A, ar.name
        assert [Fraction(x, den) for x in consts] == R.c, ar.name
        seen.append((consts, den, [[row[at[t]] for t in sorted(nonzero)] for row in rows]))
    assert seen[0] == seen[1]


# --------------------------------------------------------------------------- draws


def as_draw(record: dict) -> Draw:
    """The reader's lazy matrix of a draw record (as :func:`.provenance.rule_provenance`)."""
    rec = validate_record(record, max_entries=MAX_MAP_ENTRIES)
    return Draw(record, rec.rows, rec.cols, rec.law not in ("rational", "gauss"),
                Budget.draw_bits(rec), words_per_entry(rec),
                rec.mask is not None and rec.mask.key is not None)


DISTRIBUTIONS = ["int:1", "int:3", "nonzero:8", "bits:0", "bits:62", "set:-5,0,7",
                 "int:4611686018427387904", "rational:1", "rational:6",
                 "rational:4611686018427387904", "gauss:1", "gauss:52"]
keys = st.lists(st.integers(0, 2 ** 64 - 1), max_size=3)


@st.composite
def draws(draw: Any, rows: int, cols: int, integral: bool | None = None,
          zero_columns: frozenset[int] = frozenset()) -> Draw:
    """A valid draw record; ``zero_columns`` are masked out by a columns mask."""
    dists = [d for d in DISTRIBUTIONS
             if integral is None or integral == (d.split(":")[0] not in ("rational", "gauss"))]
    key = draw(keys)
    record: dict[str, Any] = {"generator": GENERATOR, "seed": draw(st.integers(0, 2 ** 256 - 1)),
                              "key": key + [0], "distribution": draw(st.sampled_from(dists)),
                              "shape": [rows, cols]}
    if zero_columns:
        record["mask"] = {"columns": [t for t in range(cols) if t not in zero_columns]}
    else:
        mask = draw(st.sampled_from(["none", "bernoulli", "p0", "p1", "columns"]))
        if mask == "bernoulli":
            record["mask"] = {"p": draw(st.sampled_from(["1/2", "1/3", "4/5"])), "key": key + [1]}
        elif mask in ("p0", "p1"):
            record["mask"] = {"p": int(mask[1]), "key": key + [1]}
        elif mask == "columns":
            record["mask"] = {"columns": sorted(draw(st.sets(st.integers(0, cols - 1))))}
    return as_draw(record)


def draw_reference(V: Draw) -> list[list[Fraction]]:
    return to_fractions(matrix_from_record(V.flat_record()))


def _ints(X: Any) -> list[list[int]]:
    return [[int(x) for x in row] for row in (X if isinstance(X, list) else X.tolist())]


# --------------------------------------------------------------------------- the checks


def check_weight(V: IntMatrix | Draw) -> None:
    """``(M, den)`` with ``M/den = V``; an explicit matrix as written, a draw over one
    denominator; the same integers in both arithmetics."""
    expected = _fr(V) if isinstance(V, IntMatrix) else draw_reference(V)
    out = []
    for ar in BOTH:
        M, den = ar.weight(V)
        rows, den = _ints(M), int(den)
        assert den > 0
        assert [[Fraction(x, den) for x in row] for row in rows] == expected, ar.name
        if isinstance(V, IntMatrix):
            assert (rows, den) == (V.rows, V.den), ar.name
        elif V.integral:
            assert den == 1, ar.name
        out.append((rows, den))
    assert out[0] == out[1]


def check_map_op(case: tuple[tuple, int]) -> None:
    """An operation that returns a map: the recipe's last step is the operation."""
    r, width = case
    agree_map(build(PURE, r, width), build(FLINT, r, width), reference(r, width))


def check_observers(case: tuple[tuple, int]) -> None:
    """nrows, support, height, plain: read on maps of every shape (agree_map reads all four)."""
    check_map_op(case)


def check_support_of_input(case: tuple[tuple, int]) -> None:
    for ar in BOTH:
        assert len(ar.support(None)) == 0, ar.name
    check_map_op(case)


def check_reduced(case: tuple[tuple, int]) -> None:
    r, width = case
    R = reference(r, width)
    pm, fm = build(PURE, r, width), build(FLINT, r, width)
    agree_map(PURE.reduced(pm), FLINT.reduced(fm), R)


def ref_ranges(R: Ref, lo: list[list[int]], hi: list[list[int]],
               Q: int) -> tuple[list[Fraction], list[Fraction], list[int], list[int]]:
    P = len(lo[0]) if lo else 1
    mins, maxs, at_min, at_max = [], [], [], []
    for row, c in zip(R.A, R.c):
        lows, highs = [], []
        for p in range(P):
            lows.append(c + sum((w * Fraction(lo[t][p] if w > 0 else hi[t][p], Q)
                                 for t, w in enumerate(row)), Fraction(0)))
            highs.append(c + sum((w * Fraction(hi[t][p] if w > 0 else lo[t][p], Q)
                                  for t, w in enumerate(row)), Fraction(0)))
        mins.append(min(lows))
        maxs.append(max(highs))
        at_min.append(lows.index(mins[-1]))
        at_max.append(highs.index(maxs[-1]))
    return mins, maxs, at_min, at_max


def check_ranges(case: tuple[tuple, int, list[list[int]], list[list[int]], int]) -> None:
    """Exact extremes over the family, as numerators over (least common denominator)·Q, and
    the first positions attaining them."""
    r, width, lo, hi, Q = case
    R = reference(r, width)
    mins, maxs, at_min, at_max = ref_ranges(R, lo, hi, Q)
    D = lcd([x for row in R.A for x in row] + R.c) * Q
    out = []
    for ar in BOTH:
        m = build(ar, r, width)
        got = ar.ranges(m, ar.box(lo, hi, Q))
        gmin, gmax, den = [int(x) for x in got[0]], [int(x) for x in got[1]], int(got[2])
        assert den == D, ar.name
        assert [Fraction(x, den) for x in gmin] == mins, ar.name
        assert [Fraction(x, den) for x in gmax] == maxs, ar.name
        assert (list(got[3]), list(got[4])) == (at_min, at_max), ar.name
        out.append((gmin, gmax, den))
    assert out[0] == out[1]


def check_box(case: tuple[list[list[int]], list[list[int]], int]) -> None:
    lo, hi, Q = case
    for ar in BOTH:
        assert ar.box(lo, hi, Q).positions == (len(lo[0]) if lo else 1), ar.name


def check_vanishes(case: tuple[Draw, Draw | None, list[int]]) -> None:
    A, B, v = case
    VA = draw_reference(A)
    if B is None:
        expected = all(sum((x * y for x, y in zip(row, v)), Fraction(0)) == 0 for row in VA)
    else:
        VB = draw_reference(B)
        expected = all(sum((VB[i][k] * v[k] * VA[k][t] for k in range(len(v))), Fraction(0)) == 0
                       for i in range(len(VB)) for t in range(A.cols))
    for ar in BOTH:
        assert ar.vanishes(A, B, v) is expected, ar.name


def check_name(ar_index: int) -> None:
    """Each arithmetic names itself as its linear operations do, and the two names differ."""
    ar = BOTH[ar_index]
    assert isinstance(ar.name, str) and ar.name == ar.linear.name
    assert BOTH[0].name != BOTH[1].name


def check_linear(case: tuple[int, tuple[list[list[int]], int]]) -> None:
    """Each arithmetic lends the impossibility rules a :class:`Linear` with every member,
    whose determinant agrees with the reference (the rows ``linear.*`` compare the rest)."""
    ar, (rows, p) = BOTH[case[0]], case[1]
    for member in _members(Linear):
        assert hasattr(ar.linear, member), (ar.name, member)
    assert ar.linear.det_mod(rows, p) == ref_det(rows) % p, ar.name


def ref_det(rows: list[list[int]]) -> int:
    """The exact integer determinant by elimination over ℚ (Fractions)."""
    n = len(rows)
    M = [[Fraction(x) for x in row] for row in rows]
    det = Fraction(1)
    for c in range(n):
        pivot = next((r for r in range(c, n) if M[r][c] != 0), None)
        if pivot is None:
            return 0
        if pivot != c:
            M[c], M[pivot] = M[pivot], M[c]
            det = -det
        det *= M[c][c]
        for r in range(c + 1, n):
            f = M[r][c] / M[c][c]
            M[r] = [x - f * y for x, y in zip(M[r], M[c])]
    assert det.denominator == 1
    return int(det)


def check_det_mod(case: tuple[list[list[int]], int]) -> None:
    rows, p = case
    before = [list(r) for r in rows]
    for ar in BOTH:
        got = ar.linear.det_mod(rows, p)
        assert type(got) is int and got == ref_det(rows) % p, ar.name
        assert rows == before, ar.name  # not modified


# --------------------------------------------------------------------------- the table


@st.composite
def map_case(draw: Any, fam: Numbers, last: str | None = None, depth: int = 2) -> tuple:
    """A recipe of a map whose last operation is ``last`` (any when None)."""
    width = draw(_dim(fam)) if fam.size > 1 else 1
    rows = draw(_dim(fam))
    if last is None:
        return draw(recipe(fam, width, rows, depth)), width
    if True:
        # the wanted operation on top of smaller recipes (no rejection sampling)
        if last == "input":
            return ("input", draw(int_matrix(fam, rows, width))), width
        if last == "picks_input":
            return ("picks_input", draw(picks(rows, width))), width
        k = draw(_dim(fam))
        sub = draw(recipe(fam, width, k if last in ("compose", "picks", "scaled") else rows,
                          depth - 1))
        if last == "affine":
            return ("affine", draw(int_vector(fam, rows)), sub, draw(int_vector(fam, rows))), width
        if last == "add":
            return ("add", sub, draw(recipe(fam, width, rows, depth - 1))), width
        if last == "compose":
            return ("compose", draw(int_matrix(fam, rows, k)), sub), width
        if last == "picks":
            return ("picks", draw(picks(rows, k)), sub), width
        return ("scaled", draw(int_matrix(fam, rows, k)), sub, draw(int_vector(fam, k)),
                draw(int_vector(fam, k))), width


@st.composite
def family_box(draw: Any, fam: Numbers, width: int) -> tuple[list[list[int]], list[list[int]],
                                                             int]:
    positions = draw(st.integers(1, 3))
    lo = [[draw(fam.ints) for _ in range(positions)] for _ in range(width)]
    hi = [[x + abs(draw(fam.ints)) * draw(st.sampled_from([0, 1])) for x in row] for row in lo]
    return lo, hi, draw(fam.dens)


@st.composite
def ranges_case(draw: Any, fam: Numbers) -> tuple:
    r, width = draw(map_case(fam))
    return (r, width, *draw(family_box(fam, width)))


@st.composite
def vanishes_case(draw: Any, how: str) -> tuple:
    r, c = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    if how == "single":
        A = draw(draws(r, c))
        return A, None, [draw(st.integers(-3, 3)) for _ in range(c)]
    if how == "single kernel":  # v on the columns a columns mask removes: V_A·v = 0
        zero = frozenset(draw(st.sets(st.integers(0, c - 1), min_size=1)))
        A = draw(draws(r, c, zero_columns=zero))
        return A, None, [draw(st.integers(-(2 ** 70), 2 ** 70)) if t in zero else 0
                         for t in range(c)]
    s = draw(st.integers(1, 4))
    if how == "pair":
        A, B = draw(draws(r, c)), draw(draws(s, r))
        return A, B, [draw(st.integers(-3, 3)) for _ in range(r)]
    zero = frozenset(draw(st.sets(st.integers(0, r - 1), min_size=1)))
    A, B = draw(draws(r, c)), draw(draws(s, r, zero_columns=zero))
    return A, B, [draw(st.integers(-5, 5)) if k in zero else 0 for k in range(r)]


@st.composite
def cancelling_case(draw: Any) -> tuple:
    """``(M1·a + M2·a) + (−M1)·a`` with ``M1``, ``M2`` on disjoint columns: a sum whose support
    keeps columns with only zero coefficients (the support is structural), where an arithmetic
    that keeps blocks on disjoint columns apart drops the cancelled block."""
    fam = FAMILIES["big"]
    width, rows = draw(st.integers(2, 5)), draw(st.integers(1, 3))
    left = draw(st.sets(st.integers(0, width - 1), min_size=1, max_size=width - 1))
    M1, M2 = draw(int_matrix(fam, rows, width)), draw(int_matrix(fam, rows, width))
    M1 = IntMatrix([[x if t in left else 0 for t, x in enumerate(row)] for row in M1.rows],
                   M1.den)
    M2 = IntMatrix([[0 if t in left else x for t, x in enumerate(row)] for row in M2.rows],
                   M2.den)
    minus = IntMatrix([[-x for x in row] for row in M1.rows], M1.den)
    return ("add", ("add", ("input", M1), ("input", M2)), ("input", minus)), width


PRIMES = [3, 5, 7, 2 ** 31 - 1, 2 ** 61 - 1]


@st.composite
def det_case(draw: Any, how: str) -> tuple[list[list[int]], int]:
    p = draw(st.sampled_from(PRIMES))
    n = {"empty": 0, "1x1": 1}[how] if how in ("empty", "1x1") else \
        draw(st.integers(12, 20)) if how == "large" else draw(st.integers(2, 6))
    rows = [[draw(st.integers(0, p - 1)) for _ in range(n)] for _ in range(n)]
    if how == "singular" and n:
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if i == j:
            rows[i] = [0] * n
        else:
            k = draw(st.integers(0, p - 1))
            rows[i] = [k * x % p for x in rows[j]]
    return rows, p


_MAP_OPS = ("compose", "compose_picks", "affine", "compose_scaled", "add")
_LAST = {"compose": "compose", "compose_picks": "picks", "affine": "affine",
         "compose_scaled": "scaled", "add": "add"}

#: operation → input family → (strategy of a case, the check)
TABLE: dict[str, dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], None]]]] = {
    op: {name: (map_case(fam, _LAST[op]), check_map_op) for name, fam in FAMILIES.items()}
    for op in _MAP_OPS}
# compose and compose_picks of the segment input itself (node None)
TABLE["compose"].update({f"input {name}": (map_case(fam, "input", 0), check_map_op)
                         for name, fam in FAMILIES.items()})
TABLE["add"]["cancelling"] = (cancelling_case(), check_map_op)
TABLE["compose_picks"]["input"] = (map_case(FAMILIES["small"], "picks_input", 0), check_map_op)
for _op in ("nrows", "height", "plain"):
    TABLE[_op] = {name: (map_case(fam), check_observers) for name, fam in FAMILIES.items()}
TABLE["plain"]["zero columns"] = (cancelling_case(), check_observers)
TABLE["support"] = {name: (map_case(fam), check_support_of_input)
                    for name, fam in FAMILIES.items()}
TABLE["reduced"] = {name: (map_case(fam), check_reduced) for name, fam in FAMILIES.items()}
TABLE["ranges"] = {name: (ranges_case(fam), check_ranges) for name, fam in FAMILIES.items()}
TABLE["box"] = {
    "positions": (st.integers(1, 4).flatmap(lambda w: family_box(FAMILIES["small"], w)),
                  check_box),
    "no coordinate": (st.just(([], [], 1)), check_box)}
TABLE["weight"] = {f"explicit {name}": (st.tuples(_dim(fam), _dim(fam)).flatmap(
    lambda s, fam=fam: int_matrix(fam, *s)), check_weight) for name, fam in FAMILIES.items()}
TABLE["weight"].update({
    "integer draw": (st.tuples(st.integers(1, 5), st.integers(1, 5)).flatmap(
        lambda s: draws(*s, integral=True)), check_weight),
    "rational draw": (st.tuples(st.integers(1, 5), st.integers(1, 5)).flatmap(
        lambda s: draws(*s, integral=False)), check_weight)})
TABLE["vanishes"] = {how: (vanishes_case(how), check_vanishes)
                     for how in ("single", "single kernel", "pair", "pair kernel")}
TABLE["name"] = {"pure": (st.just(0), check_name), "flint": (st.just(1), check_name)}
TABLE["linear"] = {name: (st.tuples(st.just(k), det_case("random")), check_linear)
                   for k, name in enumerate(("pure", "flint"))}
TABLE["linear.name"] = TABLE["name"]
TABLE["linear.det_mod"] = {how: (det_case(how), check_det_mod)
                           for how in ("random", "singular", "empty", "1x1", "large")}

CASES = [(op, family) for op, families in TABLE.items() for family in families]


def _members(proto: type) -> set[str]:
    """The members a protocol declares (its own attributes, not typing's machinery)."""
    return {n for n in vars(proto) if not n.startswith("_")}


def test_every_protocol_member_has_a_row():
    """A new operation of the protocol without a row of agreement checks fails here."""
    members = _members(Arithmetic) | {f"linear.{n}" for n in _members(Linear)}
    assert {"compose", "ranges", "plain", "linear.det_mod"} <= members  # the scan sees them
    assert set(TABLE) == members


def test_both_arithmetics_define_every_member():
    for ar in BOTH:
        for member in _members(Arithmetic):
            assert hasattr(ar, member), (ar.name, member)
        for member in _members(Linear):
            assert hasattr(ar.linear, member), (ar.name, member)


@pytest.mark.parametrize(("op", "family"), CASES, ids=[f"{o}-{f}" for o, f in CASES])
@given(data=st.data())
def test_operation_agrees(op: str, family: str, data: Any) -> None:
    strategy, check = TABLE[op][family]
    check(data.draw(strategy))


# --------------------------------------------------------------------------- the same refusals


def _oversized(distribution: str) -> Draw:
    """A draw one row beyond the map-entries limit: refused before anything is allocated."""
    record = {"generator": GENERATOR, "seed": 0, "key": [1], "distribution": distribution,
              "shape": [MAX_MAP_ENTRIES // 64 + 1, 64]}
    rec = validate_record(record, max_entries=2 * MAX_MAP_ENTRIES)
    return Draw(record, rec.rows, rec.cols, rec.law not in ("rational", "gauss"),
                Budget.draw_bits(rec), words_per_entry(rec), False)


def _many_denominators() -> Draw:
    """A rational draw whose 62-bit denominators have a common denominator far longer than the
    numbers written: refused by rule ``limit``."""
    return as_draw({"generator": GENERATOR, "seed": 3, "key": [2],
                    "distribution": "rational:4611686018427387904", "shape": [40, 50]})


REFUSALS: dict[str, tuple[type[Exception], Callable[[Any], Any]]] = {
    "weight of an oversized integer draw": (RecordError,
                                            lambda ar: ar.weight(_oversized("int:3"))),
    "weight of an oversized rational draw": (RecordError,
                                             lambda ar: ar.weight(_oversized("rational:3"))),
    "weight of a draw over too many denominators": (
        CertificateError, lambda ar: ar.weight(_many_denominators())),
    "vanishes with an oversized draw": (
        RecordError, lambda ar: ar.vanishes(_oversized("nonzero:8"), None, [1] * 64)),
    "vanishes with an oversized second draw": (RecordError, lambda ar: ar.vanishes(
        as_draw({"generator": GENERATOR, "seed": 0, "key": [1], "distribution": "int:3",
                 "shape": [64, 2]}), _oversized("int:3"), [1] * 64)),
}


@pytest.mark.parametrize("what", sorted(REFUSALS))
def test_same_refusal(what: str) -> None:
    """Both arithmetics refuse with the exception the contract names, with the same message."""
    expected, call = REFUSALS[what]
    raised = []
    for ar in BOTH:
        with pytest.raises(Exception) as info:
            call(ar)
        raised.append((type(info.value), str(info.value)))
    assert raised[0] == raised[1]
    assert raised[0][0] is expected
    if expected is CertificateError:
        assert "different denominators" in raised[0][1]
    else:
        assert f"above the limit {MAX_MAP_ENTRIES}" in raised[0][1]
