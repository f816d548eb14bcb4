"""The certificate checker's fast path (SPEC §3, docs/certificate-format.md): the same rules as
:mod:`exactnorm.checker`, with the arithmetic (affine maps, products, box minima and maxima) done
by python-flint ``fmpz_mat``/``fmpq_mat``.

Contract. Same input, same :class:`~exactnorm.checker.Verdict` as the pure checker, message and
facts included (tests/test_checker.py, tests/test_checker_v2.py and tests/test_fuzz.py compare them
on every case and mutant).

Correctness argument. Reading, structural rules, the provenance rule (versions 1 and 2), the
checkpoint identity and the verdict are the pure checker's own functions; only plain version-1
layers are read by a faster reader here, which hands anything unusual back to the pure reader.
The segment arithmetic is the pure checker's, on FLINT integers: a node is
``(An·a[cols] + cn)/den`` over the columns ``cols`` of the segment input it depends on (the input
itself is never an identity matrix), stability is decided on the unscaled rows ``V·A`` with the
sign rule for ``γ_k``, and a node's map is dropped after the last layer that reads it, so memory
grows with the widest layer times the segment input width it depends on, not with the depth.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from flint import fmpq, fmpq_mat, fmpz, fmpz_mat

from exactnorm import checker as pure
from exactnorm.checker import CertificateError, Verdict

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


# An affine map A a + c is kept as (An, cn, den): integer matrix, integer column and one common
# denominator, A = An/den and c = cn/den. Products then run on fmpz_mat in FLINT, and the rational
# entries (with thousands of digits, one shared denominator) are never put over their lcm entry by
# entry; the only per-entry Python work is scaling rows by integer numerators.


def _common(values: list[fmpq]) -> tuple[list[fmpz], fmpz]:
    """Numerators over the lcm of the denominators (cheap when they are mostly equal)."""
    L = fmpz(1)
    for v in values:
        q = v.denom()
        if L % q:
            L = L.lcm(q)
    return [v.numer() * (L // v.denom()) for v in values], L


def _split(M: fmpq_mat) -> tuple[fmpz_mat, fmpz]:
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
    rows = M.tolist()
    if not rows or not rows[0]:
        return M
    return fmpz_mat([[g * x for x in row] for g, row in zip(scale, rows)])


def _unscaled_ranges(Bn: fmpz_mat, en: fmpz_mat, den: fmpz, lo: fmpq_mat,
                     hi: fmpq_mat) -> tuple[list, list]:
    """Row-wise exact min and max of (Bn a + en)/den over the box."""
    e = fmpq_mat(en)
    if Bn.ncols() == 0:
        mn = mx = e
        return (mn * fmpq(1, den)).entries(), (mx * fmpq(1, den)).entries()
    rows = Bn.tolist()
    zero = fmpz(0)
    pos = fmpq_mat(fmpz_mat([[x if x > 0 else zero for x in row] for row in rows]))
    neg = fmpq_mat(fmpz_mat([[x if x < 0 else zero for x in row] for row in rows]))
    mn, mx = pos * lo + neg * hi + e, pos * hi + neg * lo + e
    if den != 1:
        inv = fmpq(1, den)
        mn, mx = mn * inv, mx * inv
    return mn.entries(), mx.entries()


# A map of the segment input a is (cols, An, cn, den): node = (An·a[cols] + cn)/den, the pure
# checker's support-column form on FLINT integer matrices; the segment input itself is None.


def _restricted(Vn: fmpz_mat, width: int) -> tuple[list[int], fmpz_mat]:
    """The columns ``Vn`` reads and ``Vn`` on them (no copy when it reads all of them)."""
    rows = Vn.tolist()
    cols = [t for t in range(width) if any(row[t] for row in rows)]
    if len(cols) == width:
        return cols, Vn
    return cols, fmpz_mat(len(rows), len(cols), [row[t] for row in rows for t in cols])


def _compose(Vn: fmpz_mat, vden: fmpz, node: tuple | None, width: int, j: int) -> tuple:
    if node is None:
        cols, An = _restricted(Vn, width)
        return cols, An, fmpz_mat(Vn.nrows(), 1), vden
    cols, A, c, den = node
    pure.rule_map_size(Vn.nrows(), len(cols), j)
    if not cols:
        return cols, fmpz_mat(Vn.nrows(), 0), Vn * c, vden * den
    return cols, _product(Vn, A), Vn * c, vden * den


def _embed(cs: list[int], A: fmpz_mat, cols: list[int]) -> fmpz_mat:
    """``A`` (on the columns ``cs``) written on the larger support ``cols``, zeros elsewhere:
    placement only, no arithmetic, so the sum that follows runs in FLINT."""
    if cs == cols:
        return A
    at = {t: k for k, t in enumerate(cols)}
    places = [at[t] for t in cs]
    width, zero = len(cols), fmpz(0)
    flat = [zero] * (A.nrows() * width)
    for r, row in enumerate(A.tolist()):
        base = r * width
        for p, x in zip(places, row):
            flat[base + p] = x
    return fmpz_mat(A.nrows(), width, flat)


def _add_maps(m1: tuple, m2: tuple, j: int) -> tuple:
    """m1 + m2 on the union of their supports, over the lcm of their denominators."""
    (c1, A1, e1, d1), (c2, A2, e2, d2) = m1, m2
    den = d1 if d1 == d2 else d1.lcm(d2)
    s1, s2 = den // d1, den // d2
    cols = c1 if c1 == c2 else sorted(set(c1) | set(c2))
    pure.rule_map_size(A1.nrows(), len(cols), j)
    if not cols:
        return cols, A1, e1 * s1 + e2 * s2, den
    return cols, _embed(c1, A1, cols) * s1 + _embed(c2, A2, cols) * s2, e1 * s1 + e2 * s2, den


def _check_segment(layers: list[dict], start: int, end: int, target_layer: tuple, i: int,
                   lo: fmpq_mat, hi: fmpq_mat) -> None:
    width = lo.nrows()
    maps: dict[int, tuple | None] = {start: None}
    last = pure.last_uses(layers, start, end)
    for j in range(start + 1, end + 1):
        layer = layers[j - 1]
        Vn, vden = _split(layer["V"])
        # B a + e = V (A_in a + c_in), over the denominator bden
        cols, Bn, en, bden = _compose(Vn, vden, maps[layer["input"]], width, j)
        gamma, beta = layer["gamma"], layer["beta"]
        gn, gden = _common(gamma)
        betan, betaden = _common(beta.entries())
        # A = diag(γ) B, c = γ ⊙ e + β over D = lcm(gden·bden, betaden)
        D0 = gden * bden
        D = D0 if D0 % betaden == 0 else D0.lcm(betaden)
        s1, s2 = D // D0, D // betaden
        scale = gn if s1 == 1 else [g * s1 for g in gn]
        An = _scale_int_rows(scale, Bn)
        cn = fmpz_mat([[g * x + t * s2] for g, x, t in zip(scale, en.entries(), betan)])
        if j == end:
            # the checkpoint map is target-sized: compare it with the pure checker's own rule
            as_ints = (cols, [[int(x) for x in row] for row in An.tolist()] if cols else
                       [[] for _ in range(An.nrows())], [int(x) for x in cn.entries()], int(D))
            pure.rule_checkpoint(layer, as_ints, target_layer, j, i,
                                 [_frac(x) for x in lo.entries()],
                                 [_frac(x) for x in hi.entries()])
            return
        if layer["act"] == "relu":
            sub_lo = lo if len(cols) == width else fmpq_mat([[lo[t, 0]] for t in cols])
            sub_hi = hi if len(cols) == width else fmpq_mat([[hi[t, 0]] for t in cols])
            bmin, bmax = _unscaled_ranges(Bn, en, bden, sub_lo, sub_hi)
            keep = _stable_rows(gamma, bmin, bmax, beta.entries(), j)
            if not all(keep):
                zero = fmpz(0)
                An = _scale_int_rows([fmpz(1) if k else zero for k in keep], An)
                cn = fmpz_mat([[x if k else zero] for x, k in zip(cn.entries(), keep)])
        node = (cols, An, cn, D)
        for src, Pm in layer["skips"]:
            Pn, pden = _split(Pm)
            node = _add_maps(node, _compose(Pn, pden, maps[src], width, j), j)
        if j in last:
            maps[j] = node
        for src in {layer["input"]} | {s for s, _ in layer["skips"]}:
            if last[src] == j:
                del maps[src]


def _stable_rows(gamma: list[fmpq], bmin: list, bmax: list, beta: list, j: int) -> list[bool]:
    """Which ReLU neurons are active (True) or dead (False) on the whole box; else an error.

    The extremes of ``γ_k·t + β_k`` for ``t`` in ``[bmin_k, bmax_k]`` are at the ends, swapped
    when ``γ_k < 0``: the same exact numbers the pure checker finds on the row ``γ_k·B_k``.
    """
    keep = []
    for k, (g, x, y, t) in enumerate(zip(gamma, bmin, bmax, beta)):
        mn = g * (x if g >= 0 else y) + t
        mx = g * (y if g >= 0 else x) + t
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            raise CertificateError("stability", f"network layer {j} neuron {k} is not stable on "
                                                f"the box: min {pure.show(_frac(mn))} < 0 < max "
                                                f"{pure.show(_frac(mx))}", layer=j, neuron=k)
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
    """The fast reader for plain version-1 documents, else the pure reader (same verdicts)."""
    if prov.version == 1:
        try:
            layers, cps, matrices = _read_network_fast(doc, d0, max_digits)
        except _UsePureReader:
            pass
        else:
            prov.explicit += matrices
            return layers, cps
    layers, cps = pure.read_network(doc, d0, max_digits, prov)
    return [{"input": L["input"], "V": _mat(L["V"]), "gamma": [_q(g) for g in L["gamma"]],
             "beta": _col(L["beta"]), "act": L["act"],
             "skips": [(src, _mat(P)) for src, P in L["skips"]]} for L in layers], cps


def _read_network_fast(doc: dict, d0: int,
                       max_digits: int) -> tuple[list[dict], list[int], int]:
    """:func:`exactnorm.checker.read_network` for well-formed version-1 documents, into FLINT
    matrices; also returns the number of matrices read.

    Same checks in the same order; any departure from the plain forms (compact numbers, draw
    records, sources) raises _UsePureReader and the pure reader runs instead, so valid and
    invalid documents get the pure checker's verdict.
    """
    net = doc["network"]
    layers = net.get("layers") if isinstance(net, dict) else None
    if type(layers) is not list or not layers:
        raise _UsePureReader
    dims = [d0]
    out = []
    for j, layer in enumerate(layers, 1):
        if type(layer) is not dict or "source" in layer:
            raise _UsePureReader
        src = layer.get("input")
        if type(src) is not int or not 0 <= src < j:
            raise _UsePureReader
        V = _fast_matrix(layer.get("weight"), None, dims[src], max_digits)
        n = V.nrows()
        gamma = _fast_vector(layer.get("gamma"), n, max_digits)
        beta = fmpq_mat(n, 1, _fast_vector(layer.get("beta"), n, max_digits))
        act = layer.get("activation")
        if act not in pure.ACTIVATIONS:
            raise _UsePureReader
        skips_raw = layer.get("skip", [])
        if type(skips_raw) is not list:
            raise _UsePureReader
        skips = []
        for t, sk in enumerate(skips_raw):
            if type(sk) is not dict or type(sk.get("from")) is not int \
                    or not 0 <= sk["from"] < j or "kind" not in sk or "source" in sk:
                raise _UsePureReader
            P = _fast_matrix(sk.get("weight"), n, dims[sk["from"]], max_digits)
            try:
                pure.rule_skip_kind(sk["kind"], P.tolist(), f"network layer {j} skip {t}", j)
            except CertificateError:
                raise _UsePureReader from None
            skips.append((sk["from"], P))
        out.append({"input": src, "V": V, "gamma": gamma, "beta": beta, "act": act,
                    "skips": skips})
        dims.append(n)
    cps = net.get("checkpoints")
    if type(cps) is not list or any(type(c) is not int for c in cps):
        raise _UsePureReader
    return out, list(cps), len(out) + sum(len(L["skips"]) for L in out)


def check_certificate(doc: object, *, max_digits: int = pure.DEFAULT_MAX_DIGITS) -> Verdict:
    """Same contract and verdicts as :func:`exactnorm.checker.check_certificate` (SPEC §3)."""
    return pure.verdict_of(lambda: _run_rules(doc, max_digits))


def _run_rules(doc: object, max_digits: int) -> dict:
    """The pure checker's rule order, with the arithmetic in python-flint."""
    lower, upper, target, layers, cps, prov = pure.read_certificate(doc, max_digits,
                                                                    _read_network)
    lo, hi = _col(lower), _col(upper)
    start = 0
    for i, (end, tl) in enumerate(zip(cps, target), 1):
        _check_segment(layers, start, end, tl, i, lo, hi)
        W, b, sigma = tl
        mins, maxs = _box_ranges(_mat(W), _col(b), lo, hi)
        if sigma == "relu":
            zero = fmpq(0)
            mins = [x if x > 0 else zero for x in mins]
            maxs = [x if x > 0 else zero for x in maxs]
        lo, hi = fmpq_mat([[x] for x in mins]), fmpq_mat([[x] for x in maxs])
        start = end
    return pure.facts_of(doc, lower, upper, target, len(layers), prov)  # type: ignore[arg-type]


def check_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = pure.DEFAULT_MAX_DIGITS) -> Verdict:
    try:
        doc = pure.parse_certificate_text(text, max_digits=max_digits)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    return check_certificate(doc, max_digits=max_digits)


def check_file(path: str, *, max_digits: int = pure.DEFAULT_MAX_DIGITS,
               max_bytes: int = pure.DEFAULT_MAX_BYTES) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file (unreadable: rule ``format``)."""
    try:
        text = pure.read_file_bytes(path, max_bytes)
    except pure.ReadError as exc:
        return Verdict(False, "format", str(exc))
    return check_certificate_text(text, max_digits=max_digits)
