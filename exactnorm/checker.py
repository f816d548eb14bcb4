"""Independent certificate checker for exactnorm certificates, version 1 (SPEC §3).

Standard library only; imports nothing from exactnorm, so this file can be copied and run alone.
Written to be read in one sitting: one function per rule, straight-line code, exact Fractions.

Claim checked: for every x in the box D, the frozen network f equals the target g.
Rule names (Verdict.rule). Reading and structure come first, in document order (format, number,
shape, domain while reading; skip kinds with their layer), then checkpoints, then segment and
checkpoint-skip rules; only then the exact arithmetic, segment by segment, layer by layer:

  format       the document is an exactnorm.certificate, version 1, with the required sections
  number       every number is an integer or a string "p", "p/q" (q > 0) or a finite decimal
  shape        matrices are rectangular and non-empty, widths chain correctly
  domain       lower <= upper coordinate-wise
  skip         skip kinds are identity / selection / random and match their matrices;
               a checkpoint layer has no skip
  checkpoints  L strictly increasing node indices in 1..N, the last one is the last layer N
  segment      a layer reads only nodes of its own segment (previous checkpoint or later)
  stability    every ReLU neuron strictly inside a segment has exact min >= 0 or max <= 0 on the
               box B_{i-1} of the target's interval bound propagation
  activation   the checkpoint activation equals sigma_i
  width        the checkpoint width equals d_i
  identity     the checkpoint pre-activation map equals (W_i, b_i) exactly
  valid        (ok) every rule holds

Usage: ``python -m exactnorm.checker CERT [--pure]`` (this file is always the pure checker).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import zlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable  # noqa: UP035  (keeps the standalone import list minimal)

__all__ = ["Verdict", "CertificateError", "parse_certificate_text", "check_certificate",
           "check_certificate_text", "check_file", "read_file_bytes", "main"]

DEFAULT_MAX_DIGITS = 200_000
ACTIVATIONS = ("relu", "identity")
SKIP_KINDS = ("identity", "selection", "random")
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")  # always used with fullmatch
_DECIMAL = re.compile(r"(-?)([0-9]*)\.([0-9]*)")


@dataclass(frozen=True)
class Verdict:
    """The checker's answer (SPEC §3): ok, the rule that decided, and where (1-based layer)."""

    ok: bool
    rule: str
    message: str
    layer: int | None = None
    neuron: int | None = None


class CertificateError(ValueError):
    """A rule violation found while reading or checking; becomes a failed Verdict."""

    def __init__(self, rule: str, message: str, layer: int | None = None,
                 neuron: int | None = None) -> None:
        super().__init__(message)
        self.rule, self.layer, self.neuron = rule, layer, neuron


# ---------------------------------------------------------------- reading (SPEC §3, numbers)


class _IntDigits:
    """Lift CPython's int/str digit limit for a while; our own max_digits replaces it."""

    def __enter__(self) -> None:
        self.old = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        getattr(sys, "set_int_max_str_digits", lambda n: None)(0)

    def __exit__(self, *exc: object) -> None:
        getattr(sys, "set_int_max_str_digits", lambda n: None)(self.old)


def show(value: object) -> str:
    """A value for a one-line message: exact (str of a Fraction, repr of anything else), safe for
    huge integers, abbreviated to head...tail beyond 60 characters."""
    with _IntDigits():
        s = str(value) if isinstance(value, Fraction) else repr(value)
    return s if len(s) <= 60 else f"{s[:25]}...{s[-25:]} ({len(s)} chars)"


def _too_long(text: str, max_digits: int) -> bool:
    """Digits per number: of p and of q in "p/q"; all digits of a decimal."""
    body = text.lstrip("-")
    if "." in body:
        return len(body) - 1 > max_digits
    return any(len(part) > max_digits for part in body.split("/"))


def _refuse_inexact(text: str) -> None:
    """json.loads hook for floats (1.5, 1e3) and constants (NaN, Infinity, -Infinity)."""
    raise CertificateError("number", f"JSON {show(text)} is not an exact number (write \"p/q\")")


def _refuse_duplicates(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise CertificateError("format", f"duplicated key {show(key)}")
        out[key] = value
    return out


def _check_number_strings(doc: object, max_digits: int) -> None:
    """max_digits for every number written as a string (iteratively: documents may be deep)."""
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and (_RATIONAL.fullmatch(item) or _DECIMAL.fullmatch(item)) \
                and _too_long(item, max_digits):
            raise CertificateError("number", f"a number has more than {max_digits} digits")


def parse_certificate_text(text: str | bytes, *, max_digits: int = DEFAULT_MAX_DIGITS) -> dict:
    """Strict JSON (SPEC §3): no floats, no NaN/Infinity, no duplicated keys, no over-long numbers.

    Raises CertificateError (a ValueError with ``.rule``) with a one-line message.
    """
    def parse_int(literal: str) -> int:
        if len(literal.lstrip("-")) > max_digits:
            raise CertificateError("number", f"integer literal with more than {max_digits} digits")
        return int(literal)

    try:
        with _IntDigits():
            doc = json.loads(text, parse_float=_refuse_inexact, parse_constant=_refuse_inexact,
                             parse_int=parse_int, object_pairs_hook=_refuse_duplicates)
    except RecursionError:
        raise CertificateError("format", "document is nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CertificateError("format", f"not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    _check_number_strings(doc, max_digits)
    return doc


def number(value: object, where: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Fraction:
    """An exact number (SPEC §3): int, "p", "-p", "p/q" with q > 0, or a finite decimal."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    if isinstance(value, int):
        return Fraction(value)
    if len(value) > 2 * max_digits + 3:
        raise CertificateError("number", f"{where}: more than {max_digits} digits")
    rat = _RATIONAL.fullmatch(value)
    dec = None if rat else _DECIMAL.fullmatch(value)
    if not rat and not (dec and (dec.group(2) or dec.group(3))):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    if _too_long(value, max_digits):
        raise CertificateError("number", f"{where}: more than {max_digits} digits")
    with _IntDigits():
        if rat:
            sign, p, q = rat.groups()
            if q is not None and int(q) == 0:
                raise CertificateError("number", f"{where}: zero denominator in {show(value)}")
            x = Fraction(int(p), int(q or "1"))
        else:
            sign, ip, fp = dec.groups()  # type: ignore[union-attr]
            x = Fraction(int(ip + fp), 10 ** len(fp))
    return -x if sign else x


def vector(value: object, where: str, length: int | None = None) -> list[Fraction]:
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list")
    if length is not None and len(value) != length:
        raise CertificateError("shape", f"{where} has length {len(value)}, expected {length}")
    return [number(x, f"{where}[{k}]") for k, x in enumerate(value)]


def matrix(value: object, where: str, rows: int | None = None,
           cols: int | None = None) -> list[list[Fraction]]:
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list of rows")
    if rows is not None and len(value) != rows:
        raise CertificateError("shape", f"{where} has {len(value)} rows, expected {rows}")
    out = []
    for r, row in enumerate(value):
        if not isinstance(row, list):
            raise CertificateError("shape", f"{where} row {r} is not a list")
        cols = len(row) if cols is None else cols
        if len(row) != cols:
            raise CertificateError("shape", f"{where} row {r} has {len(row)} entries, "
                                            f"expected {cols}")
        out.append(vector(row, f"{where}[{r}]"))
    return out


def field(obj: object, key: str, where: str) -> object:
    if not isinstance(obj, dict) or key not in obj:
        raise CertificateError("format", f"{where} has no {show(key)}")
    return obj[key]


def activation(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in ACTIVATIONS:
        raise CertificateError("format", f"{where}: activation {show(value)} is not relu/identity")
    return value


def index(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CertificateError("format", f"{where} must be an integer node index")
    return value


# ---------------------------------------------------------------- structural rules (SPEC §3)


def rule_format(doc: dict) -> None:
    if doc.get("format") != "exactnorm.certificate":
        raise CertificateError("format", "format must be 'exactnorm.certificate'")
    if type(doc.get("version")) is not int or doc["version"] != 1:
        raise CertificateError("format", f"unsupported version {show(doc.get('version'))}")
    for key in ("domain", "target", "network"):
        field(doc, key, "certificate")


def rule_domain(doc: dict) -> tuple[list[Fraction], list[Fraction]]:
    lower = vector(field(doc["domain"], "lower", "domain"), "domain.lower")
    upper = vector(field(doc["domain"], "upper", "domain"), "domain.upper", len(lower))
    for k, (lo, hi) in enumerate(zip(lower, upper)):
        if lo > hi:
            raise CertificateError("domain", f"domain: lower[{k}] = {show(lo)} > "
                                             f"upper[{k}] = {show(hi)}")
    return lower, upper


def read_target(doc: dict, d0: int) -> list[tuple[list[list[Fraction]], list[Fraction], str]]:
    """Target layers (W_i, b_i, sigma_i); W_i has d_{i-1} columns."""
    layers = field(doc["target"], "layers", "target")
    if not isinstance(layers, list) or not layers:
        raise CertificateError("shape", "target has no layers")
    out, width = [], d0
    for i, layer in enumerate(layers, 1):
        where = f"target layer {i}"
        W = matrix(field(layer, "weight", where), f"{where} weight", cols=width)
        b = vector(field(layer, "bias", where), f"{where} bias", len(W))
        out.append((W, b, activation(field(layer, "activation", where), where)))
        width = len(W)
    return out


def read_network(doc: dict, d0: int) -> tuple[list[dict], list[int]]:
    """Frozen layers as dicts (input, V, gamma, beta, act, skips) and the checkpoint list."""
    layers = field(doc["network"], "layers", "network")
    if not isinstance(layers, list) or not layers:
        raise CertificateError("shape", "network has no layers")
    dims, out = [d0], []
    for j, layer in enumerate(layers, 1):
        where = f"network layer {j}"
        src = index(field(layer, "input", where), f"{where} input")
        if not 0 <= src < j:
            raise CertificateError("segment", f"{where} reads node {src}, not an earlier node",
                                   layer=j)
        V = matrix(field(layer, "weight", where), f"{where} weight", cols=dims[src])
        n = len(V)
        gamma = vector(field(layer, "gamma", where), f"{where} gamma", n)
        beta = vector(field(layer, "beta", where), f"{where} beta", n)
        act = activation(field(layer, "activation", where), where)
        skips_raw = layer.get("skip", [])
        if not isinstance(skips_raw, list):
            raise CertificateError("skip", f"{where} skip must be a list", layer=j)
        skips = []
        for t, s in enumerate(skips_raw):
            sw = f"{where} skip {t}"
            frm = index(field(s, "from", sw), f"{sw} from")
            if not 0 <= frm < j:
                raise CertificateError("segment", f"{sw} reads node {frm}, not an earlier node",
                                       layer=j)
            P = matrix(field(s, "weight", sw), f"{sw} weight", rows=n, cols=dims[frm])
            rule_skip_kind(field(s, "kind", sw), P, sw, j)
            skips.append((frm, P))
        out.append({"input": src, "V": V, "gamma": gamma, "beta": beta, "act": act,
                    "skips": skips})
        dims.append(n)
    cps = field(doc["network"], "checkpoints", "network")
    if not isinstance(cps, list):
        raise CertificateError("checkpoints", "checkpoints must be a list")
    return out, [index(c, "checkpoint") for c in cps]


def rule_skip_kind(kind: object, P: list[list], where: str, layer: int) -> None:
    """A declared kind must be true of the matrix: identity is I, selection is 0/1 rows with
    at most one 1; random is any matrix."""
    if not isinstance(kind, str) or kind not in SKIP_KINDS:
        raise CertificateError("skip", f"{where}: kind {show(kind)} is not one of {SKIP_KINDS}",
                               layer=layer)
    if kind == "identity":
        n = len(P)
        if len(P[0]) != n or any(P[r][c] != (1 if r == c else 0)
                                 for r in range(n) for c in range(n)):
            raise CertificateError("skip", f"{where}: kind identity but not an identity matrix",
                                   layer=layer)
    if kind == "selection":
        for r, row in enumerate(P):
            if any(x != 0 and x != 1 for x in row) or sum(row) > 1:
                raise CertificateError("skip", f"{where}: kind selection but row {r} is not "
                                               f"a 0/1 row with at most one 1", layer=layer)


def rule_checkpoints(cps: list[int], n_target: int, n_layers: int) -> None:
    if len(cps) != n_target:
        raise CertificateError("checkpoints", f"{len(cps)} checkpoints for {n_target} target "
                                              f"layers")
    prev = 0
    for c in cps:
        if not prev < c <= n_layers:
            raise CertificateError("checkpoints", f"checkpoints must strictly increase within "
                                                  f"1..{n_layers}, got {show(cps)}")
        prev = c
    if cps[-1] != n_layers:
        raise CertificateError("checkpoints", f"last checkpoint {cps[-1]} is not the last layer "
                                              f"{n_layers}")


def rule_segments(layers: list[dict], cps: list[int]) -> None:
    """Layer j with c_{i-1} < j <= c_i reads nodes s with c_{i-1} <= s < j; c_i has no skip."""
    start = 0
    for j, layer in enumerate(layers, 1):
        for src in [layer["input"]] + [s for s, _ in layer["skips"]]:
            if not start <= src < j:
                raise CertificateError("segment", f"network layer {j} reads node {src}, outside "
                                                  f"its segment [{start}, {j})", layer=j)
        if j in cps:
            if layer["skips"]:
                raise CertificateError("skip", f"checkpoint layer {j} has a skip connection",
                                       layer=j)
            start = j


# ---------------------------------------------------------------- arithmetic rules (SPEC §3)


def box_range(row: list[Fraction], const: Fraction, lo: list[Fraction],
              hi: list[Fraction]) -> tuple[Fraction, Fraction]:
    """Exact min and max of row·a + const over the box lo <= a <= hi."""
    mn = mx = const
    for w, l, h in zip(row, lo, hi):
        if w > 0:
            mn, mx = mn + w * l, mx + w * h
        elif w < 0:
            mn, mx = mn + w * h, mx + w * l
    return mn, mx


def next_box(W: list[list[Fraction]], b: list[Fraction], act: str, lo: list[Fraction],
             hi: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    """B_i from B_{i-1}: interval bound propagation of target layer i, relu clamps at 0."""
    ranges = [box_range(row, const, lo, hi) for row, const in zip(W, b)]
    if act == "relu":
        ranges = [(max(mn, Fraction(0)), max(mx, Fraction(0))) for mn, mx in ranges]
    return [mn for mn, _ in ranges], [mx for _, mx in ranges]


def compose(V: list[list[Fraction]], A: list[list[Fraction]],
            c: list[Fraction]) -> tuple[list[list[Fraction]], list[Fraction]]:
    """V·(A a + c) as an affine map (V A, V c)."""
    VA = [[sum((v[k] * A[k][t] for k in range(len(A)) if v[k]), Fraction(0))
           for t in range(len(A[0]))] for v in V]
    Vc = [sum((v[k] * c[k] for k in range(len(c)) if v[k]), Fraction(0)) for v in V]
    return VA, Vc


def rule_stability(A: list[list[Fraction]], c: list[Fraction], lo: list[Fraction],
                   hi: list[Fraction], j: int) -> tuple[list[list[Fraction]], list[Fraction]]:
    """ReLU of an affine map that must be stable on the box: min >= 0 keeps the row (identity),
    max <= 0 makes it the constant 0; anything else is an unstable neuron."""
    outA, outc = [], []
    for k, (row, const) in enumerate(zip(A, c)):
        mn, mx = box_range(row, const, lo, hi)
        if mn >= 0:
            outA.append(row)
            outc.append(const)
        elif mx <= 0:
            outA.append([Fraction(0)] * len(row))
            outc.append(Fraction(0))
        else:
            raise CertificateError("stability", f"network layer {j} neuron {k} is not stable on "
                                                f"the box: min {show(mn)} < 0 < max {show(mx)}",
                                   layer=j, neuron=k)
    return outA, outc


def rule_checkpoint(layer: dict, A: list[list[Fraction]], c: list[Fraction], target_layer: tuple,
                    j: int, i: int) -> None:
    """At checkpoint c_i: sigma equals sigma_i, width equals d_i, (A, c) equals (W_i, b_i)."""
    W, b, sigma = target_layer
    if layer["act"] != sigma:
        raise CertificateError("activation", f"checkpoint layer {j} has activation "
                                             f"{layer['act']}, target layer {i} has {sigma}",
                               layer=j)
    if len(A) != len(W):
        raise CertificateError("width", f"checkpoint layer {j} has width {len(A)}, target layer "
                                        f"{i} has {len(W)}", layer=j)
    for r in range(len(W)):
        for t in range(len(W[r])):
            if A[r][t] != W[r][t]:
                raise CertificateError("identity", f"checkpoint layer {j}: pre-activation weight "
                                                   f"[{r}][{t}] is {show(A[r][t])}, target layer "
                                                   f"{i} has {show(W[r][t])}", layer=j, neuron=r)
        if c[r] != b[r]:
            raise CertificateError("identity", f"checkpoint layer {j}: pre-activation bias [{r}] "
                                               f"is {show(c[r])}, target layer {i} has "
                                               f"{show(b[r])}", layer=j, neuron=r)


def check_segment(layers: list[dict], start: int, end: int, target_layer: tuple, i: int,
                  lo: list[Fraction], hi: list[Fraction]) -> None:
    """Nodes start+1..end as affine maps A a + c of a = h_start (SPEC §3): stability inside,
    the checkpoint rule at the end."""
    d = len(lo)
    maps = {start: ([[Fraction(int(r == t)) for t in range(d)] for r in range(d)],
                    [Fraction(0)] * d)}
    for j in range(start + 1, end + 1):
        layer = layers[j - 1]
        VA, Vc = compose(layer["V"], *maps[layer["input"]])
        A = [[g * x for x in row] for g, row in zip(layer["gamma"], VA)]
        c = [g * x + bt for g, x, bt in zip(layer["gamma"], Vc, layer["beta"])]
        if j == end:
            rule_checkpoint(layer, A, c, target_layer, j, i)
            return
        if layer["act"] == "relu":
            A, c = rule_stability(A, c, lo, hi, j)
        for src, P in layer["skips"]:
            PA, Pc = compose(P, *maps[src])
            A = [[x + y for x, y in zip(r1, r2)] for r1, r2 in zip(A, PA)]
            c = [x + y for x, y in zip(c, Pc)]
        maps[j] = (A, c)


# ---------------------------------------------------------------- entry points


def verdict_of(run: Callable[[], tuple[int, int]]) -> Verdict:
    """Run the rules; ``run`` returns (segments, layers) or raises CertificateError."""
    try:
        segments, n_layers = run()
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    return Verdict(True, "valid", f"f = g on the box: {segments} segment(s), "
                                  f"{n_layers} frozen layer(s) checked")


def check_certificate(doc: object) -> Verdict:
    """Check a parsed certificate (SPEC §3); never raises for bad content."""
    return verdict_of(lambda: run_rules(doc))


def run_rules(doc: object) -> tuple[int, int]:
    """Every rule of SPEC §3 in order; returns (segments, frozen layers) when all hold."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    rule_format(doc)
    lo, hi = rule_domain(doc)
    target = read_target(doc, len(lo))
    layers, cps = read_network(doc, len(lo))
    rule_checkpoints(cps, len(target), len(layers))
    rule_segments(layers, cps)
    for i, (start, end, tl) in enumerate(zip([0] + cps, cps, target), 1):
        check_segment(layers, start, end, tl, i, lo, hi)
        lo, hi = next_box(tl[0], tl[1], tl[2], lo, hi)
    return len(target), len(layers)


def check_certificate_text(text: str | bytes, *, max_digits: int = DEFAULT_MAX_DIGITS) -> Verdict:
    """Parse strictly, then check (SPEC §3); never raises for bad content."""
    try:
        doc = parse_certificate_text(text, max_digits=max_digits)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    return check_certificate(doc)


def read_file_bytes(path: str) -> bytes | Verdict:
    """The file's bytes (gunzipped for .gz), or a failed Verdict if it cannot be read."""
    try:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rb") as fh:
            return fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        return Verdict(False, "format", f"cannot read {path}: {exc}")


def check_file(path: str, *, max_digits: int = DEFAULT_MAX_DIGITS) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file."""
    text = read_file_bytes(path)
    if isinstance(text, Verdict):
        return text
    return check_certificate_text(text, max_digits=max_digits)


def main(argv: list[str] | None = None) -> int:
    """``python -m exactnorm.checker CERT [--pure]``: one line; exit 0 valid, 1 invalid, 2 usage.

    ``--pure`` is accepted for symmetry with ``exactnorm check``: this module is always pure.
    """
    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--pure"]
    if len(args) != 1:
        print("usage: python -m exactnorm.checker CERT [--pure]", file=sys.stderr)
        return 2
    v = check_file(args[0])
    print(("VALID: " if v.ok else f"INVALID [{v.rule}]: ") + v.message)
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
