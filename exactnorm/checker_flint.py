"""The certificate checker's fast path (SPEC §3, docs/certificate-format.md): the same rules as
:mod:`exactnorm.checker`, with the arithmetic (affine maps, products, box minima and maxima) done
by python-flint ``fmpz_mat``/``fmpq_mat``.

Contract. Same input, same :class:`~exactnorm.checker.Verdict` as the pure checker, message and
facts included (tests/test_checker.py, tests/test_checker_v2.py and tests/test_fuzz.py compare them
on every case and mutant).

Correctness argument. Reading, structural rules, the provenance rule (versions 1 and 2), the
checkpoint identity and the verdict are the pure checker's own functions; well-formed layers
(plain or compact numbers, integer draws by reference, compact 0/1 skips) are read by a faster
reader here, which validates draw records with the pure checker's rule and hands anything
unusual back to the pure reader; a draw is regenerated when its layer is checked. The segment
arithmetic is the pure checker's, on FLINT integers: a node is a sum of *pieces*
``(A_p·a[cols_p])/den_p`` on disjoint columns of the segment input plus a constant (the input
itself is never an identity matrix); stability is decided on the exact minimum and maximum of
each scaled row, the same numbers the pure checker finds; each piece is kept over its smallest
denominator; and a node's map is dropped after the last layer that reads it, so memory grows
with the widest layer times the segment input width it depends on, not with the depth.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm import checker as pure
from exactnorm.checker import CertificateError, Verdict
from exactnorm.regenerate import regenerate_integers_flat

_INTEGER = re.compile(r"-?[0-9]+")  # always used with fullmatch

__all__ = ["Verdict", "check_certificate", "check_certificate_text", "check_file"]


class _UsePureReader(Exception):
    """The fast reader met something it does not handle itself; the pure reader decides."""


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _mat(rows: list[list[Fraction]]) -> fmpq_mat:
    """Rows of Fractions (or of plain ints, as regenerated integer draws are) as an fmpq_mat."""
    flat: list[Any] = [x for row in rows for x in row]
    if all(type(x) is int for x in flat):
        return fmpq_mat(fmpz_mat(len(rows), len(rows[0]), flat))
    return fmpq_mat([[_q(x) for x in row] for row in rows])


def _col(v: list[Fraction]) -> fmpq_mat:
    return fmpq_mat([[_q(x)] for x in v])


def _frac(x: fmpq) -> Fraction:
    return Fraction(int(x.numer()), int(x.denom()))


def _box_ranges(A: fmpq_mat, c: fmpq_mat, lo: fmpq_mat, hi: fmpq_mat) -> tuple[list, list]:
    """Row-wise exact min and max of A a + c over the box: A⁺lo + A⁻hi + c and A⁺hi + A⁻lo + c."""
    rows = A.tolist()
    zero = fmpq(0)
    pos = fmpq_mat([[x if x > 0 else zero for x in row] for row in rows])
    neg = fmpq_mat([[x if x < 0 else zero for x in row] for row in rows])
    mn = pos * lo + neg * hi + c
    mx = pos * hi + neg * lo + c
    return mn.entries(), mx.entries()


# A map of the segment input a is (pieces, cn, cden, support): node = Σ_p (A_p·a[cols_p])/den_p
# + cn/cden, with integer matrices A_p on pairwise disjoint, sorted column lists cols_p, an integer
# column cn, and its support: the columns the pure checker's map has (they contain the pieces'
# columns; rule ``limit`` counts them, so both checkers count the same). Each piece keeps its own
# (reduced) denominator, so a sum of many maps never goes over the lcm of them all, and adding
# maps with disjoint supports (a trade-off accumulator gaining one input block per layer) joins
# piece lists instead of rewriting the whole sum: O(rows) per layer, not O(rows × segment width).
# Products run on fmpz_mat in FLINT; the per-entry Python work is scaling rows by integer
# numerators. Layers hold γ and β as (integer numerators, denominator). The segment input itself
# is None.

Piece = tuple[list[int], fmpz_mat, fmpz]
Map = tuple[list[Piece], fmpz_mat, fmpz, frozenset[int]]


def _common(values: list[fmpq]) -> tuple[list[fmpz], fmpz]:
    """Numerators over the lcm of the denominators (cheap when they are mostly equal)."""
    L = fmpz(1)
    for v in values:
        q = v.denom()
        if L % q:
            L = L.lcm(q)
    return [v.numer() * (L // v.denom()) for v in values], L


def _lcm(a: fmpz, b: fmpz) -> fmpz:
    return a if a % b == 0 else a.lcm(b)


class _Draw:
    """A frozen integer matrix by reference, validated while reading and regenerated when its
    layer is checked: the check holds one regenerated matrix at a time, not all of them."""

    __slots__ = ("record", "rows", "cols")

    def __init__(self, record: dict, rows: int, cols: int) -> None:
        self.record, self.rows, self.cols = record, rows, cols

    def nrows(self) -> int:
        return self.rows

    def matrix(self) -> fmpz_mat:
        r, c, flat = regenerate_integers_flat(self.record, max_entries=pure.MAX_MAP_ENTRIES,
                                              convert=fmpz)
        return fmpz_mat(r, c, flat)


def _split(M: fmpq_mat | fmpz_mat | _Draw) -> tuple[fmpz_mat, fmpz]:
    if isinstance(M, _Draw):
        return M.matrix(), fmpz(1)
    if isinstance(M, fmpz_mat):
        return M, fmpz(1)
    if M.nrows() == 0 or M.ncols() == 0:
        return fmpz_mat(M.nrows(), M.ncols()), fmpz(1)
    return M.numer_denom()


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


def _box_over_one_denominator(lo: fmpq_mat, hi: fmpq_mat) -> tuple[list[fmpz], list[fmpz],
                                                                     fmpz]:
    """The box as integer numerators ``lo·Q``, ``hi·Q`` over one denominator ``Q``."""
    Q = fmpz(1)
    for x in lo.entries() + hi.entries():
        Q = _lcm(Q, x.denom())
    return ([x.numer() * (Q // x.denom()) for x in lo.entries()],
            [x.numer() * (Q // x.denom()) for x in hi.entries()], Q)


def _piece_ranges(A: fmpz_mat, cols: list[int], lon: list[fmpz],
                  hin: list[fmpz]) -> tuple[fmpz_mat, fmpz_mat]:
    """Row-wise exact min and max of ``A a[cols]`` over the box given by integer numerators
    (:func:`_box_over_one_denominator`): numerators over ``Q`` times the piece's denominator."""
    sub_lo = fmpz_mat(len(cols), 1, [lon[t] for t in cols])
    sub_hi = fmpz_mat(len(cols), 1, [hin[t] for t in cols])
    rows = A.tolist()
    zero = fmpz(0)
    pos = fmpz_mat([[x if x > 0 else zero for x in row] for row in rows])
    neg = fmpz_mat([[x if x < 0 else zero for x in row] for row in rows])
    return pos * sub_lo + neg * sub_hi, pos * sub_hi + neg * sub_lo


def _restricted(Vn: fmpz_mat, width: int) -> tuple[list[int], fmpz_mat]:
    """The columns ``Vn`` reads and ``Vn`` on them (no copy when it reads all of them)."""
    rows = Vn.tolist()
    cols = [t for t, column in enumerate(zip(*rows)) if any(column)]
    if len(cols) == width:
        return cols, Vn
    return cols, fmpz_mat(len(rows), len(cols), [row[t] for row in rows for t in cols])


def _compose(Vn: fmpz_mat, vden: fmpz, node: Map | None, width: int, j: int) -> Map:
    """(Vn/vden)·node."""
    if node is None:
        cols, An = _restricted(Vn, width)
        return (([(cols, An, vden)] if cols else []), fmpz_mat(Vn.nrows(), 1), fmpz(1),
                frozenset(cols))
    pieces, cn, cden, support = node
    pure.rule_map_size(Vn.nrows(), len(support), j)
    return ([(cols, _product(Vn, A), vden * den) for cols, A, den in pieces], Vn * cn,
            vden * cden, support)


def _compose_picks(P: pure.Picks, node: Map | None, width: int, j: int) -> Map:
    """P·node for a 0/1 skip (:func:`exactnorm.checker.compose_picks`): rows are copied, an
    identity on the whole node returns the node itself (maps are never modified in place)."""
    n = len(P.rows)
    if node is None:
        cols = sorted({t for t in P.rows if t is not None})
        at = {t: k for k, t in enumerate(cols)}
        flat = [0] * (n * len(cols))
        for r, t in enumerate(P.rows):
            if t is not None:
                flat[r * len(cols) + at[t]] = 1
        pieces = [(cols, fmpz_mat(n, len(cols), flat), fmpz(1))] if cols else []
        return pieces, fmpz_mat(n, 1), fmpz(1), frozenset(cols)
    pieces, cn, cden, support = node
    pure.rule_map_size(n, len(support), j)
    if P.rows == tuple(range(cn.nrows())):
        return node
    zero = fmpz(0)
    picked = []
    for cols, A, den in pieces:
        rows, k = A.tolist(), len(cols)
        entries: list[Any] = [x for t in P.rows
                              for x in (rows[t] if t is not None else [zero] * k)]
        picked.append((cols, fmpz_mat(n, k, entries), den))
    consts = cn.entries()
    return (picked, fmpz_mat(n, 1, [consts[t] if t is not None else zero for t in P.rows]), cden,
            support)


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


def _add_maps(m1: Map, m2: Map, j: int) -> Map:
    """m1 + m2: pieces whose columns meet are merged, the others are kept as they are."""
    (p1, c1, d1, s1), (p2, c2, d2, s2) = m1, m2
    rows = c1.nrows()
    den = _lcm(d1, d2)
    cn = (c1 if d1 == den else c1 * (den // d1)) + (c2 if d2 == den else c2 * (den // d2))
    support = s1 | s2
    pure.rule_map_size(rows, len(support), j)
    if s1.isdisjoint(s2):  # e.g. an accumulator gaining a block: no piece changes
        return p1 + p2, *_reduced_column(cn, den), support
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
    return [p for p in out if p is not None], *_reduced_column(cn, den), support


def _checkpoint_ints(node: Map, rows: int) -> tuple:
    """The checkpoint map in the pure checker's form: (cols, integer rows, consts, den)."""
    pieces, cn, cden, _ = node
    if pieces:
        cols, A, den = _merged(pieces, rows)
    else:
        cols, A, den = [], fmpz_mat(rows, 0), fmpz(1)
    D = _lcm(den, cden)
    A = A if den == D else A * (D // den)
    cn = cn if cden == D else cn * (D // cden)
    return (cols, [[int(x) for x in row] for row in A.tolist()] if cols else
            [[] for _ in range(rows)], [int(x) for x in cn.entries()], int(D))


def _check_segment(layers: list[dict], start: int, end: int, target_layer: tuple, i: int,
                   lo: fmpq_mat, hi: fmpq_mat, step: Callable[[int], None] | None = None) -> None:
    width = lo.nrows()
    lon, hin, Q = _box_over_one_denominator(lo, hi)
    maps: dict[int, Map | None] = {start: None}
    last = pure.last_uses(layers, start, end)
    for j in range(start + 1, end + 1):
        if step is not None:
            step(j)
        layer = layers[j - 1]
        Vn, vden = _split(layer["V"])
        composed, en, eden, support = _compose(Vn, vden, maps[layer["input"]], width, j)  # V·node
        (gn, gden), (bn, bden) = layer["gamma"], layer["beta"]
        # diag(γ)·(V·node) + β: pieces over gden·den, constants over lcm(gden·eden, bden)
        pieces = [p for p in (_reduced((cols, _scale_int_rows(gn, A), gden * den))
                              for cols, A, den in composed) if p is not None]
        D0 = gden * eden
        D = _lcm(D0, bden)
        s1, s2 = D // D0, D // bden
        consts = [g * x * s1 + b * s2 for g, x, b in zip(gn, en.entries(), bn)]
        if j < end and layer["act"] == "relu":
            # the exact min and max of each scaled row on the box, as numerators over L: the
            # numbers the pure checker finds from the unscaled row and the sign of γ_k
            mn = mx = fmpz_mat(len(consts), 1, consts)
            L = D
            for cols, A, den in pieces:
                pmn, pmx = _piece_ranges(A, cols, lon, hin)
                pd = den * Q
                L2 = _lcm(L, pd)
                s_old, s_new = L2 // L, L2 // pd
                if s_old != 1:
                    mn, mx = mn * s_old, mx * s_old
                if s_new != 1:
                    pmn, pmx = pmn * s_new, pmx * s_new
                mn, mx, L = mn + pmn, mx + pmx, L2
            keep = _stable_rows(mn.entries(), mx.entries(), L, j)
            if not all(keep):
                zero = fmpz(0)
                mask = [fmpz(1) if k else zero for k in keep]
                pieces = [p for p in (_reduced((cols, _scale_int_rows(mask, A), den))
                                      for cols, A, den in pieces) if p is not None]
                consts = [x if k else zero for x, k in zip(consts, keep)]
        if not pieces:  # a zero matrix depends on no column (the pure checker's rule, which
            support = frozenset()  # the map-size limit is counted on)
        node: Map = (pieces, *_reduced_column(fmpz_mat(len(consts), 1, consts), D), support)
        if j == end:
            # the checkpoint map is target-sized: compare it with the pure checker's own rule
            pure.rule_checkpoint(layer, _checkpoint_ints(node, len(consts)), target_layer, j, i,
                                 [_frac(x) for x in lo.entries()],
                                 [_frac(x) for x in hi.entries()])
            return
        for src, Pm in layer["skips"]:
            if isinstance(Pm, pure.Picks):
                term = _compose_picks(Pm, maps[src], width, j)
            else:
                Pn, pden = _split(Pm)
                term = _compose(Pn, pden, maps[src], width, j)
            node = _add_maps(node, term, j)
        if j in last:
            maps[j] = node
        for src in {layer["input"]} | {s for s, _ in layer["skips"]}:
            if last[src] == j:
                del maps[src]


def _stable_rows(mins: list[fmpz], maxs: list[fmpz], den: fmpz, j: int) -> list[bool]:
    """Which ReLU neurons are active (min >= 0: True) or dead (max <= 0: False) on the whole
    box, from the numerators of min and max over ``den > 0``; else an error. A neuron with
    min = max = 0 is kept, as the pure checker keeps it."""
    keep = []
    for k, (mn, mx) in enumerate(zip(mins, maxs)):
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            low, high = Fraction(int(mn), int(den)), Fraction(int(mx), int(den))
            raise CertificateError("stability", f"network layer {j} neuron {k} is not stable on "
                                                f"the box: min {pure.show(low)} < 0 < max "
                                                f"{pure.show(high)}", layer=j, neuron=k)
    return keep


def _fast_number(x: object, max_digits: int) -> fmpq:
    """The pure checker's ``number`` for ints and ``"p"``/``"p/q"`` strings, via FLINT's parser.

    Anything else (decimals, over-long or malformed strings, bools) goes back to the pure reader,
    which then accepts or rejects it with its own message.
    """
    if type(x) is int and x.bit_length() <= 3 * max_digits:  # 2^(3n) < 10^n: at most n digits
        return fmpq(x)
    if type(x) is str and len(x) <= max_digits:
        m = pure._RATIONAL.fullmatch(x)
        if m:
            sign, p, q = m.groups()
            if q is None:
                num = fmpz(p)
                return fmpq(-num if sign else num)
            den = fmpz(q)
            if den != 0:
                num = fmpz(p)
                return fmpq(-num if sign else num, den)
    raise _UsePureReader


def _fast_matrix(value: object, rows: int | None, cols: int | None, max_digits: int) -> fmpq_mat:
    if type(value) is not list or not value or (rows is not None and len(value) != rows):
        raise _UsePureReader
    width = cols if cols is not None else (len(value[0]) if type(value[0]) is list else -1)
    if width <= 0:
        raise _UsePureReader
    flat: list = []
    for row in value:
        if type(row) is not list or len(row) != width:
            raise _UsePureReader
        flat.extend(row)
    bound = 1 << (3 * max_digits)  # below 2^(3n) an integer has at most n digits
    if all(type(x) is int for x in flat) and -bound < min(flat) and max(flat) < bound:
        return fmpq_mat(fmpz_mat(len(value), width, flat))
    return fmpq_mat(len(value), width, [_fast_number(x, max_digits) for x in flat])


def _fast_vector(value: object, length: int, max_digits: int) -> list[fmpq]:
    if type(value) is not list or not value or len(value) != length:
        raise _UsePureReader
    return [_fast_number(x, max_digits) for x in value]


def _read_network(doc: dict, d0: int, max_digits: int,
                  prov: pure.Provenance) -> tuple[list[dict], list[int]]:
    """The fast reader for well-formed documents, else the pure reader (same verdicts)."""
    scratch = pure.Provenance(prov.version)
    try:
        layers, cps = _read_network_fast(doc, d0, max_digits, scratch)
    except (_UsePureReader, CertificateError):
        pass
    else:
        prov.seeds |= scratch.seeds
        prov.keys.update(scratch.keys)
        prov.regenerated += scratch.regenerated
        prov.explicit += scratch.explicit
        return layers, cps
    layers, cps = pure.read_network(doc, d0, max_digits, prov)
    return [{"input": L["input"], "V": _mat(L["V"]),
             "gamma": _common([_q(g) for g in L["gamma"]]),
             "beta": _common([_q(b) for b in L["beta"]]), "act": L["act"],
             "skips": [(src, P if isinstance(P, pure.Picks) else _mat(P))
                       for src, P in L["skips"]]} for L in layers], cps


def _fast_integer(x: object, max_digits: int) -> fmpz:
    """The pure checker's ``integer`` (compact numerators and denominators) via FLINT."""
    if type(x) is int and x.bit_length() <= 3 * max_digits:
        return fmpz(x)
    if type(x) is str and len(x) <= max_digits and _INTEGER.fullmatch(x):
        return fmpz(x)
    raise _UsePureReader


def _fast_numbers(value: object, length: int, max_digits: int) -> tuple[list[fmpz], fmpz]:
    """A vector of ``length`` numbers, plain or compact ``{"den", "num"}``, as integer
    numerators over one denominator (a compact vector as written: no gcd per entry)."""
    if type(value) is dict:
        if set(value) != {"den", "num"}:
            raise _UsePureReader
        den, nums = _fast_integer(value["den"], max_digits), value["num"]
        if den <= 0 or type(nums) is not list or len(nums) != length:
            raise _UsePureReader
        return [_fast_integer(x, max_digits) for x in nums], den
    return _common(_fast_vector(value, length, max_digits))


def _fast_frozen(obj: dict, key: str, rows: int | None, cols: int, kind: str | None,
                 where: str, j: int, max_digits: int,
                 prov: pure.Provenance) -> fmpq_mat | _Draw:
    """A layer weight or random skip: regenerated from ``{"random": R}`` (integer
    distributions), or explicit where the pure reader would take it without a record."""
    value = obj.get(key)
    if "source" in obj:
        raise _UsePureReader
    if type(value) is dict:
        if set(value) != {"random"}:
            raise _UsePureReader
        rec = pure.rule_draw_record(value["random"], where, j, prov)
        if rec.cols != cols or (rows is not None and rec.rows != rows) \
                or rec.kind in ("rational", "gauss"):
            raise _UsePureReader
        prov.regenerated += 1
        return _Draw(value["random"], rec.rows, rec.cols)
    if prov.version >= 2 and kind in (None, "random"):
        raise _UsePureReader  # the provenance rule refuses it; the pure reader says how
    prov.explicit += 1
    return _fast_matrix(value, rows, cols, max_digits)


def _read_network_fast(doc: dict, d0: int, max_digits: int,
                       prov: pure.Provenance) -> tuple[list[dict], list[int]]:
    """:func:`exactnorm.checker.read_network` for well-formed documents, into FLINT matrices.

    Plain and compact numbers, by-reference integer draws and compact 0/1 skips are read here,
    with the same checks in the same order; anything else (explicit weights with a record,
    fixed declarations, rational draws, any departure from the well-formed forms) raises
    _UsePureReader or CertificateError, and the pure reader reads the whole network again, so
    valid and invalid documents get the pure checker's verdict.
    """
    net = doc["network"]
    layers = net.get("layers") if isinstance(net, dict) else None
    if type(layers) is not list or not layers:
        raise _UsePureReader
    dims = [d0]
    out = []
    for j, layer in enumerate(layers, 1):
        where = f"network layer {j}"
        if type(layer) is not dict:
            raise _UsePureReader
        src = layer.get("input")
        if type(src) is not int or not 0 <= src < j:
            raise _UsePureReader
        V = _fast_frozen(layer, "weight", None, dims[src], None, where, j, max_digits, prov)
        n = V.nrows()
        gamma = _fast_numbers(layer.get("gamma"), n, max_digits)
        beta = _fast_numbers(layer.get("beta"), n, max_digits)
        act = layer.get("activation")
        if act not in pure.ACTIVATIONS:
            raise _UsePureReader
        skips_raw = layer.get("skip", [])
        if type(skips_raw) is not list:
            raise _UsePureReader
        skips: list[tuple[int, Any]] = []
        for t, sk in enumerate(skips_raw):
            sw = f"{where} skip {t}"
            if type(sk) is not dict or type(sk.get("from")) is not int \
                    or not 0 <= sk["from"] < j or sk.get("kind") not in pure.SKIP_KINDS:
                raise _UsePureReader
            kind, frm, weight = sk["kind"], sk["from"], sk.get("weight")
            if kind != "random" and type(weight) is dict:
                if "source" in sk:
                    raise _UsePureReader
                prov.explicit += 1
                skips.append((frm, pure.compact_picks(weight, kind, sw, n, dims[frm], j)))
                continue
            P = _fast_frozen(sk, "weight", n, dims[frm], kind, sw, j, max_digits, prov)
            if kind == "random":  # any matrix is a random skip (rule_skip_kind has no test)
                skips.append((frm, P))
                continue
            if isinstance(P, _Draw):
                raise _UsePureReader  # a drawn identity or selection: rare, the pure reader
            rule_rows = P.tolist()
            pure.rule_skip_kind(kind, rule_rows, sw, j)
            skips.append((frm, pure.picks_of(rule_rows)))
        out.append({"input": src, "V": V, "gamma": gamma, "beta": beta, "act": act,
                    "skips": skips})
        dims.append(n)
    cps = net.get("checkpoints")
    if type(cps) is not list or any(type(c) is not int for c in cps):
        raise _UsePureReader
    return out, list(cps)


def check_certificate(doc: object, *, max_digits: int = pure.DEFAULT_MAX_DIGITS,
                      progress: Callable[[int, int], None] | None = None) -> Verdict:
    """Same contract and verdicts as :func:`exactnorm.checker.check_certificate` (SPEC §3)."""
    return pure.verdict_of(lambda: _run_rules(doc, max_digits, progress))


def _run_rules(doc: object, max_digits: int,
               progress: Callable[[int, int], None] | None = None) -> dict:
    """The pure checker's rule order, with the arithmetic in python-flint."""
    lower, upper, target, layers, cps, prov = pure.read_certificate(doc, max_digits,
                                                                    _read_network)
    lo, hi = _col(lower), _col(upper)
    start = 0
    step = pure.progress_step(progress, len(layers))
    for i, (end, tl) in enumerate(zip(cps, target), 1):
        _check_segment(layers, start, end, tl, i, lo, hi, step)
        W, b, sigma = tl
        mins, maxs = _box_ranges(_mat(W), _col(b), lo, hi)
        if sigma == "relu":
            zero = fmpq(0)
            mins = [x if x > 0 else zero for x in mins]
            maxs = [x if x > 0 else zero for x in maxs]
        lo, hi = fmpq_mat([[x] for x in mins]), fmpq_mat([[x] for x in maxs])
        start = end
    if progress is not None:
        progress(len(layers), len(layers))
    return pure.facts_of(doc, lower, upper, target, len(layers), prov)  # type: ignore[arg-type]


def check_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = pure.DEFAULT_MAX_DIGITS) -> Verdict:
    try:
        doc = pure.parse_certificate_text(text, max_digits=max_digits)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    return check_certificate(doc, max_digits=max_digits)


def check_file(path: str, *, max_digits: int = pure.DEFAULT_MAX_DIGITS,
               max_bytes: int = pure.DEFAULT_MAX_BYTES,
               progress: Callable[[int, int], None] | None = None) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file (unreadable: rule ``format``)."""
    try:
        text = pure.read_file_bytes(path, max_bytes)
        doc = pure.parse_certificate_text(text, max_digits=max_digits)
    except pure.ReadError as exc:
        return Verdict(False, "format", str(exc))
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    del text  # the document is parsed: the bytes need not stay in memory during the check
    return check_certificate(doc, max_digits=max_digits, progress=progress)
