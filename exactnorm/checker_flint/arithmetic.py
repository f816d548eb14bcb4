"""The checker's second arithmetic: the interface of :mod:`exactnorm.checker.arithmetic` with
python-flint ``fmpz_mat`` (the default of ``exactnorm check``; ``--pure`` uses the reference).

Contract. :class:`FlintArithmetic` satisfies the typed protocol
:class:`exactnorm.checker.protocol.Arithmetic` (checked by mypy: ``_DECLARED``), whose
docstrings state each operation's exact contract. Every operation returns the same exact numbers as
:class:`exactnorm.checker.arithmetic.PureArithmetic` (up to the common denominator it is written
over), so the one walk of :mod:`exactnorm.checker.walk` reaches the same verdict and message with
either; tests/checker/test_checker_kernel.py compares every operation with the reference and a plain
Fraction computation, and the fuzz and mutation suites compare whole verdicts.

Representation. A map is a list of *pieces* ``(cols, A, den)`` — ``A`` an ``fmpz_mat`` on
disjoint columns of the segment input — plus a constant column over its own denominator and the
support (the union of the columns, as the reference counts them). Adding a block on new columns
joins two lists; every piece and the constant are kept over their smallest denominators, so the
least common denominator of a map is the lcm of theirs and its *height* (:meth:`height`, what
the work budget is computed from) equals the reference's exactly; a map caches the lcm and the
largest numerator of its pieces (:class:`FMap`), so joining a block costs no pass over the
others. Products of a frozen matrix with a piece run in FLINT, one column at a time when an
operand is long (FLINT's multi-modular product is pathologically slow with entries of tens of
thousands of bits). Box families are lists of lower and upper numerators; a row's extremes over
the family are two FLINT products, over the pieces' own denominator: the box's denominator and
the constant enter once per row, never once per position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flint import fmpz, fmpz_mat

from exactnorm.checker.numbers import IntMatrix, IntVector, over_one_denominator
from exactnorm.checker.provenance import Draw
from exactnorm.checker.reading import Picks
from exactnorm.checker.regenerate import regenerate_integers_flat
from exactnorm.checker.vocabulary import (
    MAX_MAP_ENTRIES,
)
from exactnorm.checker_flint.linear import FlintLinear

if TYPE_CHECKING:
    from exactnorm.checker.protocol import Arithmetic

__all__ = ["FlintArithmetic"]

Piece = tuple[list[int], fmpz_mat, fmpz]


class FMap(tuple):
    """``(pieces, constant column numerators, constant denominator, support)``; ``info`` caches
    ``(lcm of the pieces' denominators, largest absolute numerator of the pieces over it)``."""

    info: tuple[fmpz, fmpz]


Map = FMap


def _fmap(pieces: list[Piece], cn: fmpz_mat, cden: fmpz, support: frozenset,
          info: tuple[fmpz, fmpz] | None = None) -> FMap:
    """A map; with no nonzero piece left it depends on no column (as the reference's
    reduction, which drops the columns of an all-zero matrix)."""
    out = FMap((pieces, cn, cden, support if pieces else frozenset()))
    out.info = info if info is not None else _pieces_info(pieces)
    return out


def _amax(A: fmpz_mat) -> fmpz:
    entries = A.entries()
    return max(max(entries), -min(entries)) if entries else fmpz(0)


def _pieces_info(pieces: list[Piece]) -> tuple[fmpz, fmpz]:
    """(lcm of the pieces' denominators, largest absolute numerator over it)."""
    L = fmpz(1)
    for _, _, d in pieces:
        L = _lcm(L, d)
    top = fmpz(0)
    for _, A, d in pieces:
        top = max(top, _amax(A) * (L // d))
    return L, top


def _info(node: Any) -> tuple[fmpz, fmpz]:
    info = getattr(node, "info", None)
    return info if info is not None else _pieces_info(node[0])


def _lcm(a: fmpz, b: fmpz) -> fmpz:
    return a if a % b == 0 else a.lcm(b)


def _product(X: fmpz_mat, Y: fmpz_mat) -> fmpz_mat:
    """``X·Y``, one column of ``Y`` at a time when ``Y`` is large.

    FLINT's matrix-matrix product picks a multi-modular method that is pathologically slow when
    one factor has entries of tens of thousands of bits (31 s for 48×2304 by 2304×48 at 22,000
    bits, against 1.5 s for the same work as 48 matrix-vector products). Same exact result.
    """
    r, n = Y.nrows(), Y.ncols()
    if n <= 1 or r * n < 4096 or X.nrows() == 0:
        return X * Y
    rows = Y.tolist()
    cols = [(X * fmpz_mat(r, 1, [row[j] for row in rows])).entries() for j in range(n)]
    return fmpz_mat([[cols[j][i] for j in range(n)] for i in range(X.nrows())])


def _scale_int_rows(scale: list[fmpz], M: fmpz_mat) -> fmpz_mat:
    """diag(scale)·M; one FLINT product when every scale is the same (γ = 1)."""
    first = scale[0] if scale else None
    if first is not None and all(g == first for g in scale):
        return M if first == 1 else M * first
    rows = M.tolist()
    if not rows or not rows[0]:
        return M
    return fmpz_mat([[g * x for x in row] for g, row in zip(scale, rows)])


def _gcd_with(den: fmpz, values: list[fmpz]) -> fmpz:
    """gcd(den, values...), stopping as soon as it is 1 (the usual case, after a few values)."""
    g = den
    for x in values:
        if g == 1:
            break
        if x:
            g = g.gcd(x)
    return g



def _reduced(piece: Piece) -> Piece | None:
    """The piece over its smallest denominator (entries and den divided by their gcd), None
    when it is zero (:func:`exactnorm.checker.reduced`)."""
    cols, A, den = piece
    if A.is_zero():
        return None
    if den == 1:
        return piece
    entries = A.entries()
    g = _gcd_with(den, entries)
    if g == 1:
        return piece
    return cols, fmpz_mat(A.nrows(), A.ncols(), [x // g for x in entries]), den // g


def _reduced_column(cn: fmpz_mat, cden: fmpz) -> tuple[fmpz_mat, fmpz]:
    entries = cn.entries()
    g = _gcd_with(cden, entries)
    if g == 1:
        return cn, cden
    return fmpz_mat(cn.nrows(), 1, [x // g for x in entries]), cden // g


def _merged(pieces: list[Piece], rows: int) -> Piece:
    """One piece equal to the sum of ``pieces``, on the union of their columns: each entry is
    placed once (no full-width matrix per piece), sums of equal supports run in FLINT."""
    if len(pieces) == 1:
        return pieces[0]
    den = fmpz(1)
    for _, _, d in pieces:
        den = _lcm(den, d)
    scaled = [(cs, A if d == den else A * (den // d)) for cs, A, d in pieces]
    first = scaled[0][0]
    if all(cs == first for cs, _ in scaled):
        total = scaled[0][1]
        for _, A in scaled[1:]:
            total += A
        return first, total, den
    cols = sorted({t for cs, _ in scaled for t in cs})
    at = {t: k for k, t in enumerate(cols)}
    width = len(cols)
    flat: list[Any] = [0] * (rows * width)
    for cs, A in scaled:
        places = [at[t] for t in cs]
        for r, row in enumerate(A.tolist()):
            base = r * width
            for p, x in zip(places, row):
                flat[base + p] += x
    return cols, fmpz_mat(rows, width, flat), den



def _add_maps(m1: Map, m2: Map) -> Map:
    """m1 + m2: pieces whose columns meet are merged, the others are kept as they are."""
    (p1, c1, d1, s1), (p2, c2, d2, s2) = m1[:4], m2[:4]
    rows = c1.nrows()
    den = _lcm(d1, d2)
    cn = (c1 if d1 == den else c1 * (den // d1)) + (c2 if d2 == den else c2 * (den // d2))
    support = s1 | s2
    if s1.isdisjoint(s2):  # e.g. an accumulator gaining a block: no piece changes
        (L1, t1), (L2, t2) = _info(m1), _info(m2)
        L = _lcm(L1, L2)
        info = (L, max(t1 * (L // L1), t2 * (L // L2)))
        return _fmap(p1 + p2, *_reduced_column(cn, den), support, info)
    pieces = p1 + p2
    owner: dict[int, int] = {}
    parent = list(range(len(pieces)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for k, (cols, _, _) in enumerate(pieces):
        for t in cols:
            other = owner.setdefault(t, k)
            if other != k:
                parent[root(k)] = root(other)
    groups: dict[int, list[Piece]] = {}
    for k, piece in enumerate(pieces):
        groups.setdefault(root(k), []).append(piece)
    out = [_reduced(_merged(group, rows)) if len(group) > 1 else group[0]
           for group in groups.values()]  # a lone piece is kept as it is
    # the support stays the union even where a merged piece summed to zero, as the pure
    # checker's columns do: the map-size limit must count the same columns in both checkers
    return _fmap([p for p in out if p is not None], *_reduced_column(cn, den), support)



def _restricted(Vn: fmpz_mat, width: int) -> tuple[list[int], fmpz_mat]:
    """The columns ``Vn`` reads and ``Vn`` on them (no copy when it reads all of them)."""
    rows = Vn.tolist()
    cols = [t for t, column in enumerate(zip(*rows)) if any(column)]
    if len(cols) == width:
        return cols, Vn
    return cols, fmpz_mat(len(rows), len(cols), [row[t] for row in rows for t in cols])


class _Family:
    __slots__ = ("lo", "hi", "Q", "positions")

    def __init__(self, lo: list[list[int]], hi: list[list[int]], Q: int) -> None:
        self.positions = len(lo[0]) if lo else 1
        self.lo, self.hi, self.Q = lo, hi, fmpz(Q)


def _matrix_of(rows: list[list[int]]) -> fmpz_mat:
    return fmpz_mat(rows) if rows and rows[0] else fmpz_mat(len(rows), 0)


class FlintArithmetic:
    """The arithmetic of :mod:`exactnorm.checker.arithmetic` with python-flint integers."""

    name = "flint"
    #: the impossibility rules' modular determinant and integer product (§9)
    linear = FlintLinear()

    def weight(self, V: IntMatrix | Draw) -> tuple[fmpz_mat, fmpz]:
        if isinstance(V, IntMatrix):
            return fmpz_mat(V.rows), fmpz(V.den)
        if V.integral:
            r, c, flat = regenerate_integers_flat(V.record, max_entries=MAX_MAP_ENTRIES,
                                                  convert=fmpz)
            return fmpz_mat(r, c, flat), fmpz(1)
        flat2, den = over_one_denominator([(x.numerator, x.denominator)
                                           for row in V.fractions() for x in row],
                                          "a frozen draw")
        return fmpz_mat(V.rows, V.cols, flat2), fmpz(den)

    def nrows(self, node: Map) -> int:
        return node[1].nrows()

    def support(self, node: Map | None) -> frozenset:
        return frozenset() if node is None else node[3]

    def height(self, node: Map) -> tuple[int, int]:
        """(bits of the largest absolute numerator, bits of the denominator) of the map over
        its least common denominator: the lcm of its reduced pieces' and constant's
        denominators."""
        pieces, cn, cden, _ = node[:4]
        L, top = _info(node)
        D = _lcm(L, cden)
        consts = cn.entries()
        cmax = max(max(consts), -min(consts)) if consts else fmpz(0)
        num = max(top * (D // L), cmax * (D // cden))
        return int(num).bit_length(), int(D).bit_length()

    def compose(self, Vn: fmpz_mat, vden: fmpz, node: Map | None, width: int) -> Map:
        """(Vn/vden)·node, every piece over its smallest denominator."""
        if node is None:
            cols, An = _restricted(Vn, width)
            pieces = [p for p in [_reduced((cols, An, vden))] if p is not None] if cols else []
            return _fmap(pieces, fmpz_mat(Vn.nrows(), 1), fmpz(1), frozenset(cols))
        pieces, cn, cden, support = node[:4]
        out = [_reduced((cols, _product(Vn, A), vden * den)) for cols, A, den in pieces]
        return _fmap([p for p in out if p is not None],
                     *_reduced_column(Vn * cn, vden * cden), support)

    def compose_picks(self, P: Picks, node: Map | None) -> Map:
        """P·node for a 0/1 skip: rows are copied, an identity on the whole node returns the
        node itself (maps are never modified in place)."""
        n = len(P.rows)
        if node is None:
            cols = sorted({t for t in P.rows if t is not None})
            at = {t: k for k, t in enumerate(cols)}
            flat = [0] * (n * len(cols))
            for r, t in enumerate(P.rows):
                if t is not None:
                    flat[r * len(cols) + at[t]] = 1
            pieces = [(cols, fmpz_mat(n, len(cols), flat), fmpz(1))] if cols else []
            return _fmap(pieces, fmpz_mat(n, 1), fmpz(1), frozenset(cols))
        pieces, cn, cden, support = node[:4]
        if P.is_identity(cn.nrows()):
            return node
        zero = fmpz(0)
        picked = []
        for cols, A, den in pieces:
            rows, k = A.tolist(), len(cols)
            entries: list[Any] = [x for t in P.rows
                                  for x in (rows[t] if t is not None else [zero] * k)]
            piece = _reduced((cols, fmpz_mat(n, k, entries), den))
            if piece is not None:
                picked.append(piece)
        consts = cn.entries()
        column = fmpz_mat(n, 1, [consts[t] if t is not None else zero for t in P.rows])
        return _fmap(picked, *_reduced_column(column, cden), support)

    def affine(self, gamma: IntVector, node: Map, beta: IntVector) -> Map:
        """diag(γ)·node + β: pieces over gden·den, constants over lcm(gden·cden, bden)."""
        pieces, cn, cden, support = node[:4]
        gn = [fmpz(x) for x in gamma.nums]
        gden, bden = fmpz(gamma.den), fmpz(beta.den)
        scaled = [p for p in (_reduced((cols, _scale_int_rows(gn, A), gden * den))
                              for cols, A, den in pieces) if p is not None]
        D0 = gden * cden
        D = _lcm(D0, bden)
        s1, s2 = D // D0, D // bden
        consts = [g * x * s1 + b * s2 for g, x, b in zip(gn, cn.entries(), beta.nums)]
        return _fmap(scaled, *_reduced_column(fmpz_mat(len(consts), 1, consts), D),
                     support if scaled else frozenset())

    def ranges(self, node: Map, family: _Family) -> tuple[list[Any], list[Any], Any,
                                                            list[int], list[int]]:
        """Per row: min over positions of the row minimum, max of the row maximum, as
        numerators over the map's least common denominator times the family's, and the first
        positions attaining them. The pieces' products are summed over the lcm of their own
        denominators; the constant and the family's denominator enter once per row."""
        pieces, cn, cden, _ = node[:4]
        P = family.positions
        rows = cn.nrows()
        L, _ = _info(node)
        mn: Any = None
        mx: Any = None
        for cols, A, den in pieces:
            lo = fmpz_mat(len(cols), P, [x for t in cols for x in family.lo[t]])
            hi = fmpz_mat(len(cols), P, [x for t in cols for x in family.hi[t]])
            entries = A.tolist()
            zero = fmpz(0)
            pos = fmpz_mat([[x if x > 0 else zero for x in row] for row in entries])
            neg = fmpz_mat([[x if x < 0 else zero for x in row] for row in entries])
            pmn, pmx = _product(pos, lo) + _product(neg, hi), _product(pos, hi) + _product(neg, lo)
            s = L // den
            if s != 1:
                pmn, pmx = pmn * s, pmx * s
            mn, mx = (pmn, pmx) if mn is None else (mn + pmn, mx + pmx)
        D = _lcm(L, cden)
        sp, sc = D // L, (D // cden) * family.Q
        consts = cn.entries()
        mins, maxs, at_min, at_max = [], [], [], []
        lows = mn.tolist() if mn is not None else [[fmpz(0)] * P for _ in range(rows)]
        highs = mx.tolist() if mx is not None else lows
        for r in range(rows):
            low, high = lows[r], highs[r]
            a = min(range(P), key=low.__getitem__)
            b = max(range(P), key=high.__getitem__)
            base = consts[r] * sc
            mins.append(low[a] * sp + base)
            maxs.append(high[b] * sp + base)
            at_min.append(a)
            at_max.append(b)
        return mins, maxs, D * family.Q, at_min, at_max

    def compose_scaled(self, Vn: fmpz_mat, vden: fmpz, B: Map, gamma: IntVector,
                       beta: IntVector, width: int) -> Map:
        """(Vn/vden)·(diag(γ)·B + β): γ scales the columns of Vn, never the entries of B."""
        gn = [fmpz(x) for x in gamma.nums]
        rows = Vn.tolist()
        Vg = fmpz_mat([[m * g for m, g in zip(row, gn)] for row in rows]) if rows and rows[0] \
            else Vn
        pieces, cn, cden, support = self.compose(Vg, vden * gamma.den, B, width)[:4]
        extra = Vn * fmpz_mat(len(beta.nums), 1, beta.nums)
        d2 = vden * beta.den
        D = _lcm(cden, d2)
        cn = (cn if cden == D else cn * (D // cden)) + (extra if d2 == D else extra * (D // d2))
        return _fmap(pieces, *_reduced_column(cn, D), support)

    def reduced(self, node: Map) -> Map:
        """Zero pieces dropped, every piece and the constant over their smallest
        denominators."""
        pieces, cn, cden, support = node[:4]
        kept = [p for p in (_reduced(piece) for piece in pieces) if p is not None]
        return _fmap(kept, *_reduced_column(cn, cden), support if kept else frozenset())

    def add(self, m1: Map, m2: Map) -> Map:
        return _add_maps(m1, m2)

    def plain(self, node: Map) -> tuple[list[int], list[list[int]], list[int], int]:
        """The map as (cols, integer rows, consts, den) in Python integers, over its least
        common denominator (as the reference)."""
        pieces, cn, cden, _ = node[:4]
        rows = cn.nrows()
        merged = _reduced(_merged(pieces, rows)) if pieces else None
        cols: list[int]
        if merged is None:
            cols, A, den = [], fmpz_mat(rows, 0), fmpz(1)
        else:
            cols, A, den = merged
        cn, cden = _reduced_column(cn, cden)
        D = _lcm(den, cden)
        A = A if den == D else A * (D // den)
        cn = cn if cden == D else cn * (D // cden)
        return (cols, [[int(x) for x in row] for row in A.tolist()] if cols else
                [[] for _ in range(rows)], [int(x) for x in cn.entries()], int(D))

    def box(self, lo: list[list[int]], hi: list[list[int]], Q: int) -> _Family:
        return _Family(lo, hi, Q)

    def vanishes(self, A: Draw, B: Draw | None, v: list[int]) -> bool:
        """Whether ``V_A·v = 0`` (B None) or ``V_B·diag(v)·V_A = 0`` for the regenerated
        matrices (their denominators do not matter)."""
        VA, _ = self.weight(A)
        if B is None:
            return (VA * fmpz_mat(len(v), 1, v)).is_zero()
        VB, _ = self.weight(B)
        scaled = _matrix_of([[int(x) * c for x, c in zip(row, v)] for row in VB.tolist()])
        return _product(scaled, VA).is_zero()


if TYPE_CHECKING:
    #: mypy checks that this arithmetic satisfies the protocol, with its own types
    _DECLARED: Arithmetic[FMap, fmpz_mat, fmpz, _Family] = FlintArithmetic()
