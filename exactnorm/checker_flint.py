"""The certificate checker's fast path: the same rules as :mod:`exactnorm.checker`, with the
arithmetic (affine maps, products, box minima, identities) done by python-flint ``fmpq_mat``.

Reading and structural rules are the pure checker's own functions, so both modes see the same
document; every arithmetic rule is re-implemented here on flint matrices and must give the same
verdict (the test suite compares them on every certificate and mutant).
"""

from __future__ import annotations

from fractions import Fraction

from flint import fmpq, fmpq_mat

from exactnorm import checker as pure
from exactnorm.checker import CertificateError, Verdict

__all__ = ["Verdict", "check_certificate", "check_certificate_text", "check_file"]


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _mat(rows: list[list[Fraction]]) -> fmpq_mat:
    return fmpq_mat([[_q(x) for x in row] for row in rows])


def _col(v: list[Fraction]) -> fmpq_mat:
    return fmpq_mat([[_q(x)] for x in v])


def _frac(x: fmpq) -> Fraction:
    return Fraction(int(x.numer()), int(x.denom()))


def _scale_rows(gamma: list[fmpq], M: fmpq_mat) -> fmpq_mat:
    rows = M.tolist()
    return fmpq_mat([[g * x for x in row] for g, row in zip(gamma, rows)]) if rows else M


def _box_ranges(A: fmpq_mat, c: fmpq_mat, lo: fmpq_mat, hi: fmpq_mat) -> tuple[list, list]:
    """Row-wise exact min and max of A a + c over the box: A⁺lo + A⁻hi + c and A⁺hi + A⁻lo + c."""
    rows = A.tolist()
    zero = fmpq(0)
    pos = fmpq_mat([[x if x > 0 else zero for x in row] for row in rows])
    neg = fmpq_mat([[x if x < 0 else zero for x in row] for row in rows])
    mn = pos * lo + neg * hi + c
    mx = pos * hi + neg * lo + c
    return mn.entries(), mx.entries()


def _stability(A: fmpq_mat, c: fmpq_mat, lo: fmpq_mat, hi: fmpq_mat,
               j: int) -> tuple[fmpq_mat, fmpq_mat]:
    mins, maxs = _box_ranges(A, c, lo, hi)
    keep = []
    for k, (mn, mx) in enumerate(zip(mins, maxs)):
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            raise CertificateError("stability", f"network layer {j} neuron {k} is not stable on "
                                                f"the box: min {pure.short(_frac(mn))} < 0 < max "
                                                f"{pure.short(_frac(mx))}", layer=j, neuron=k)
    if all(keep):
        return A, c
    one, zero = fmpq(1), fmpq(0)
    return _scale_rows([one if k else zero for k in keep], A), \
        _scale_rows([one if k else zero for k in keep], c)


def _identity(A: fmpq_mat, c: fmpq_mat, W: list[list[Fraction]], b: list[Fraction], j: int,
              i: int) -> None:
    if A.nrows() != len(W):
        raise CertificateError("width", f"checkpoint layer {j} has width {A.nrows()}, target "
                                        f"layer {i} has {len(W)}", layer=j)
    Wm, bm = _mat(W), _col(b)
    if Wm == A and c == bm:
        return
    # locate the first difference in the pure checker's order: row r weights, then row r bias
    for r in range(len(W)):
        for t in range(len(W[r])):
            if A[r, t] != Wm[r, t]:
                raise CertificateError(
                    "identity", f"checkpoint layer {j}: pre-activation weight [{r}][{t}] is "
                                f"{pure.short(_frac(A[r, t]))}, target layer {i} has "
                                f"{pure.short(W[r][t])}", layer=j, neuron=r)
        if c[r, 0] != bm[r, 0]:
            raise CertificateError(
                "identity", f"checkpoint layer {j}: pre-activation bias [{r}] is "
                            f"{pure.short(_frac(c[r, 0]))}, target layer {i} has "
                            f"{pure.short(b[r])}", layer=j, neuron=r)


def _check_segment(layers: list[dict], start: int, end: int, target_layer: tuple, i: int,
                   lo: fmpq_mat, hi: fmpq_mat) -> None:
    d = lo.nrows()
    eye = fmpq_mat([[1 if r == t else 0 for t in range(d)] for r in range(d)])
    maps = {start: (eye, fmpq_mat(d, 1))}
    W, b, sigma = target_layer
    for j in range(start + 1, end + 1):
        layer = layers[j - 1]
        pure.rule_segment(layer, j, start)
        A_in, c_in = maps[layer["input"]]
        V = _mat(layer["V"])
        gamma = [_q(g) for g in layer["gamma"]]
        A = _scale_rows(gamma, V * A_in)
        c = _scale_rows(gamma, V * c_in) + _col(layer["beta"])
        if j == end:
            if layer["skips"]:
                raise CertificateError("skip", f"checkpoint layer {j} has a skip connection",
                                       layer=j)
            if layer["act"] != sigma:
                raise CertificateError("activation", f"checkpoint layer {j} has activation "
                                                     f"{layer['act']}, target layer {i} has "
                                                     f"{sigma}", layer=j)
            _identity(A, c, W, b, j, i)
            return
        if layer["act"] == "relu":
            A, c = _stability(A, c, lo, hi, j)
        for src, P in layer["skips"]:
            Pm = _mat(P)
            A = A + Pm * maps[src][0]
            c = c + Pm * maps[src][1]
        maps[j] = (A, c)


def check_certificate(doc: object) -> Verdict:
    """Same contract and verdicts as :func:`exactnorm.checker.check_certificate`."""
    try:
        if not isinstance(doc, dict):
            raise CertificateError("format", "a certificate is a JSON object")
        pure.rule_format(doc)
        lower, upper = pure.rule_domain(doc)
        target = pure.read_target(doc, len(lower))
        layers, cps = pure.read_network(doc, len(lower))
        pure.rule_checkpoints(cps, len(target), len(layers))
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
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    return Verdict(True, "valid", f"f = g on the box: {len(target)} segment(s), "
                                  f"{len(layers)} frozen layer(s) checked")


def check_certificate_text(text: str | bytes, *,
                           max_digits: int = pure.DEFAULT_MAX_DIGITS) -> Verdict:
    try:
        doc = pure.parse_certificate_text(text, max_digits=max_digits)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    return check_certificate(doc)


def check_file(path: str) -> Verdict:
    text = pure.read_file_bytes(path)
    if isinstance(text, Verdict):
        return text
    return check_certificate_text(text)
