"""Independent certificate checker for exactnorm certificates, versions 1 and 2 (SPEC §3,
docs/certificate-format.md).

Standard library only. It imports nothing from exactnorm except its sibling
``exactnorm/regenerate.py`` (itself standard library only, importable alone), which regenerates
frozen random matrices from their draw records; copy both files to run it elsewhere. Written to be
read in one sitting: one function per rule, straight-line code, exact integers and Fractions.

Claim checked: for every x in the box D, the frozen network f equals the target g.
Rule names (Verdict.rule). Reading and structure come first, in document order (format, number,
shape, domain, provenance while reading; skip kinds with their layer), then checkpoints, then
segment and checkpoint-skip rules; only then the exact arithmetic, segment by segment, layer by
layer:

  format       the document is an exactnorm.certificate, version 1 or 2, with the required sections
  number       every number is an integer or a string "p", "p/q" (q > 0) or a finite decimal, with
               at most max_digits digits (free text such as provenance is not a number)
  shape        matrices are rectangular and non-empty, widths chain correctly
  domain       lower <= upper coordinate-wise
  provenance   (version 2) every layer weight and every random skip is regenerated from a draw
               record (by reference, or explicit and equal entry by entry to the regenerated
               matrix) or declared fixed; all records name one seed and distinct stream keys
  skip         skip kinds are identity / selection / random and match their matrices (or
               their compact forms {"identity": n}, {"selection": [...], "columns": d});
               a checkpoint layer has no skip
  checkpoints  L strictly increasing node indices in 1..N, the last one is the last layer N
  segment      a layer reads only nodes of its own segment (previous checkpoint or later)
  limit        no affine map of a segment has more than MAX_MAP_ENTRIES entries (a resource
               bound of this checker, stated so that a small certificate cannot demand a huge map)
  stability    every ReLU neuron strictly inside a segment has exact min >= 0 or max <= 0 on the
               box B_{i-1} of the target's interval bound propagation
  activation   the checkpoint activation equals sigma_i
  width        the checkpoint width equals d_i
  identity     the checkpoint pre-activation map equals (W_i, b_i) exactly on the box: every
               coefficient of a coordinate with lower < upper, and the bias with the
               coordinates where lower = upper folded in
  valid        (ok) every rule holds

Degenerate boxes. A neuron whose exact range on the box is the single point 0 (min = max = 0,
e.g. on a point box) is stable: ReLU is both the identity and the constant 0 on it. The checker
keeps the row; the identity rule compares the checkpoint map with the target *on the box*
(coefficients of coordinates with lower = upper are folded into the bias), so a true claim is
accepted whichever of the two readings it was built with.

Correctness argument. Inside a segment every node is an exact affine map A a + c of the segment
input a = h_start (the previous checkpoint's output); a stable ReLU is the identity or the constant
0 on the box, so the maps stay affine; at the checkpoint the map must equal the target layer
(W_i, b_i) entry by entry, hence f = g on the box by induction over segments (SPEC §3, and
Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the Normalization Layers",
COLT 2023, arXiv:2302.07937, for the constructions that produce such certificates).

Arithmetic. A map is kept as integer numerators over one denominator per map, and only on the
columns of a it depends on (its *support*): a node built from a selection of k coordinates
stores k columns, the segment input itself is never written as an identity matrix, and a node's
map is dropped after the last layer that reads it. Each layer's map is put over its smallest
denominator (and on no column when its matrix is zero), so denominators do not pile up along a
segment of thousands of layers; identity and selection skips copy rows instead of multiplying.
Box minima and maxima are sums of rationals added pairwise in a balanced tree (no running
fraction with a growing denominator).

Usage: ``python -m exactnorm.checker CERT [--pure] [--max-bytes N]`` (this file is always the
pure checker). Exit 0 valid, 1 invalid, 2 unreadable input or usage, 141 stdout closed.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
import zlib
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from operator import mul
from typing import Any, Callable  # noqa: UP035  (keeps the standalone import list minimal)

try:
    from exactnorm.regenerate import (
        RecordError,
        regenerate,
        regenerate_integers,
        validate_record,
    )
except ImportError:  # this file copied next to regenerate.py and run alone
    from regenerate import (  # type: ignore[no-redef, import-not-found]
        RecordError,
        regenerate,
        regenerate_integers,
        validate_record,
    )

__all__ = ["Verdict", "CertificateError", "ReadError", "parse_certificate_text",
           "check_certificate", "check_certificate_text", "check_file", "read_file_bytes",
           "verdict_of", "main"]

DEFAULT_MAX_DIGITS = 200_000
#: uncompressed certificate bytes read unless the caller raises the limit
DEFAULT_MAX_BYTES = 2 * 1024**3
#: the largest size limit a caller may set (1 TiB): beyond it the limit protects nothing
MAX_BYTES_CAP = 1024**4
#: entries (rows x support columns) of one affine map, and of one regenerated matrix
MAX_MAP_ENTRIES = 1 << 26
VERSIONS = (1, 2)
ACTIVATIONS = ("relu", "identity")
SKIP_KINDS = ("identity", "selection", "random")
EXIT_BROKEN_PIPE = 141
_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")  # always used with fullmatch
_DECIMAL = re.compile(r"(-?)([0-9]*)\.([0-9]*)")
_CHUNK = 1 << 20
_SHOWN_BITS = 200


@dataclass(frozen=True)
class Verdict:
    """The checker's answer (SPEC §3): ok, the rule that decided, where (1-based layer, 0-based
    neuron), and for a valid certificate the facts proven (box, target widths, counts)."""

    ok: bool
    rule: str
    message: str
    layer: int | None = None
    neuron: int | None = None
    facts: dict[str, Any] | None = dc_field(default=None, compare=True)

    def to_json(self) -> dict[str, Any]:
        """The verdict as one JSON object (``exactnorm check --json``)."""
        return {"ok": self.ok, "rule": self.rule, "message": self.message, "layer": self.layer,
                "neuron": self.neuron, "facts": self.facts}


class CertificateError(ValueError):
    """A rule violation found while reading or checking; becomes a failed Verdict."""

    def __init__(self, rule: str, message: str, layer: int | None = None,
                 neuron: int | None = None) -> None:
        super().__init__(message)
        self.rule, self.layer, self.neuron = rule, layer, neuron


class ReadError(Exception):
    """A certificate file that cannot be read: ``kind`` is "input" (missing, not a regular
    file, unreadable), "limit" (above the size limit) or "corrupt" (broken gzip stream)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------- messages


class _IntDigits:
    """Lift CPython's int/str digit limit for a while; our own max_digits replaces it."""

    def __enter__(self) -> None:
        self.old = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        getattr(sys, "set_int_max_str_digits", lambda n: None)(0)

    def __exit__(self, *exc: object) -> None:
        getattr(sys, "set_int_max_str_digits", lambda n: None)(self.old)


def show(value: object) -> str:
    """A value for a one-line message, as JSON text, cheap for any size.

    Exact below 200 bits; a larger number is shown by its sign and bit sizes (converting
    a million-digit integer to decimal would cost minutes); long strings and containers are cut.

    >>> show(Fraction(-3, 4)), show(True), show(None), show({"p": 1}), show(2**300)
    ('-3/4', 'true', 'null', '{"p": 1}', '(301-bit integer)')
    """
    if isinstance(value, Fraction):
        p, q = value.numerator, value.denominator
        if max(p.bit_length(), q.bit_length()) > _SHOWN_BITS:
            return (f"{'-' if p < 0 else ''}({abs(p).bit_length()}-bit integer)/"
                    f"({q.bit_length()}-bit integer)")
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) \
            and value.bit_length() > _SHOWN_BITS:
        return f"{'-' if value < 0 else ''}({abs(value).bit_length()}-bit integer)"
    if isinstance(value, str) and len(value) > 60:
        return json.dumps(value[:40]) + f"... ({len(value)} characters)"
    if isinstance(value, (list, dict)) and len(value) > 8:
        return f"a JSON {'array' if isinstance(value, list) else 'object'} of {len(value)} items"
    try:
        with _IntDigits():
            text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


# ---------------------------------------------------------------- reading (SPEC §3, numbers)


def _refuse_inexact(text: str) -> None:
    """json.loads hook for floats (1.5, 1e3) and constants (NaN, Infinity, -Infinity)."""
    raise CertificateError("number", f"JSON {show(text)} is not an exact number "
                                     f"(numbers are integers or strings \"p/q\")")


def _refuse_duplicates(pairs: list) -> dict:
    out = {}
    for key, value in pairs:
        if key in out:
            raise CertificateError("format", f"duplicated key {show(key)}")
        out[key] = value
    return out


def parse_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = DEFAULT_MAX_DIGITS) -> dict:
    """Strict JSON (SPEC §3): no floats, no NaN/Infinity, no duplicated keys, no JSON integer
    with more than ``max_digits`` digits (numbers written as strings are limited where they are
    read as numbers, with the same limit).

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
        raise CertificateError("format", f"not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    return doc


def _too_long(text: str, max_digits: int) -> bool:
    """Digits per number: of p and of q in "p/q"; all digits of a decimal."""
    body = text.lstrip("-")
    if "." in body:
        return len(body) - 1 > max_digits
    return any(len(part) > max_digits for part in body.split("/"))


def decimal_int(digits: str) -> int:
    """int(digits) by halves: CPython 3.11 converts a long decimal string in quadratic time
    (19 s for a million digits); splitting makes it a few Karatsuba products (4 s)."""
    if len(digits) <= 3000:
        return int(digits)
    k = len(digits) // 2
    return decimal_int(digits[:-k]) * 10**k + decimal_int(digits[-k:])


def number(value: object, where: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Fraction:
    """An exact number (SPEC §3): int, "p", "-p", "p/q" with q > 0, or a finite decimal, with at
    most ``max_digits`` digits in each of p and q (the same limit for JSON integers)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    if isinstance(value, int):
        if value.bit_length() > 3 * max_digits:  # 2^(3n) < 10^n: below that, at most n digits
            with _IntDigits():
                if value.bit_length() > 4 * max_digits or len(str(abs(value))) > max_digits:
                    raise CertificateError("number", f"{where}: more than {max_digits} digits")
        return Fraction(value)
    # no part of a string is longer than the string: count digits only for long ones
    if len(value) > max_digits and (len(value) > 2 * max_digits + 3
                                    or _too_long(value, max_digits)):
        raise CertificateError("number", f"{where}: more than {max_digits} digits")
    rat = _RATIONAL.fullmatch(value)
    if rat and len(value) <= 640:
        # the common short "p/q": CPython's smallest settable digit limit is 640, so plain int()
        sign, p, q = rat.groups()
        if q is None:
            return Fraction(int(value))
        if not q.strip("0"):
            raise CertificateError("number", f"{where}: zero denominator in {show(value)}")
        x = Fraction(int(p), int(q))
        return -x if sign else x
    dec = None if rat else _DECIMAL.fullmatch(value)
    if not rat and not (dec and (dec.group(2) or dec.group(3))):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    with _IntDigits():
        if rat:
            sign, p, q = rat.groups()
            if q is not None and not q.strip("0"):
                raise CertificateError("number", f"{where}: zero denominator in {show(value)}")
            x = Fraction(decimal_int(p), decimal_int(q or "1"))
        else:
            sign, ip, fp = dec.groups()  # type: ignore[union-attr]
            x = Fraction(decimal_int(ip + fp), 10 ** len(fp))
    return -x if sign else x


def integer(value: object, where: str, max_digits: int) -> int:
    """A JSON integer or a decimal integer string "-123" (compact form: no "p/q", no ".")."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]+", value):
        raise CertificateError("number", f"{where}: {show(value)} is not an integer")
    x = number(value, where, max_digits)
    if x.denominator != 1:
        raise CertificateError("number", f"{where}: {show(value)} is not an integer")
    return x.numerator


def _compact(value: dict, where: str, max_digits: int) -> tuple[int, list]:
    """The denominator and the integer numerators of ``{"den": D, "num": [...]}`` (version 2)."""
    if set(value) != {"den", "num"}:
        raise CertificateError("shape", f"{where} must be a list or {{\"den\", \"num\"}}, "
                                        f"got keys {show(sorted(map(str, value)))}")
    den = integer(value["den"], f"{where}.den", max_digits)
    if den <= 0:
        raise CertificateError("number", f"{where}.den must be positive, got {show(den)}")
    return den, value["num"]


def vector(value: object, where: str, length: int | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS) -> list[Fraction]:
    """A non-empty vector: a list of numbers, or (version 2) ``{"den": D, "num": [...]}``."""
    if isinstance(value, dict):
        den, nums = _compact(value, where, max_digits)
        if not isinstance(nums, list) or not nums or isinstance(nums[0], list):
            raise CertificateError("shape", f"{where}.num must be a non-empty list of integers")
        if length is not None and len(nums) != length:
            raise CertificateError("shape", f"{where} has length {len(nums)}, expected {length}")
        return [Fraction(integer(x, f"{where}.num[{k}]", max_digits), den)
                for k, x in enumerate(nums)]
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list")
    if length is not None and len(value) != length:
        raise CertificateError("shape", f"{where} has length {len(value)}, expected {length}")
    return [number(x, f"{where}[{k}]", max_digits) for k, x in enumerate(value)]


def matrix(value: object, where: str, rows: int | None = None, cols: int | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS) -> list[list[Fraction]]:
    """A non-empty rectangular matrix: rows of numbers, or ``{"den": D, "num": [[...], ...]}``."""
    den, compact = 1, isinstance(value, dict)
    if compact:
        den, value = _compact(value, where, max_digits)  # type: ignore[arg-type]
        where = f"{where}.num"
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
        if not compact:
            out.append(vector(row, f"{where}[{r}]", max_digits=max_digits))
        else:
            out.append([Fraction(integer(x, f"{where}[{r}][{t}]", max_digits), den)
                        for t, x in enumerate(row)])
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
        raise CertificateError("format", f"{where} must be an integer node index, got "
                                         f"{show(value)}")
    return value


def layer_list(section: object, where: str) -> list:
    """The ``layers`` array of the target or network section."""
    layers = field(section, "layers", where)
    if not isinstance(layers, list):
        got = "an object" if isinstance(layers, dict) else show(layers)
        raise CertificateError("shape", f"{where} layers must be a JSON array, got {got}")
    if not layers:
        raise CertificateError("shape", f"{where} has no layers")
    return layers


# ---------------------------------------------------------------- structural rules (SPEC §3)


def rule_format(doc: dict) -> int:
    if doc.get("format") != "exactnorm.certificate":
        raise CertificateError("format", "format must be \"exactnorm.certificate\"")
    version = doc.get("version")
    if type(version) is not int or version not in VERSIONS:
        raise CertificateError("format", f"unsupported version {show(version)} (this checker "
                                         f"reads versions 1 and 2)")
    for key in ("domain", "target", "network"):
        field(doc, key, "certificate")
    return version


def rule_domain(doc: dict, max_digits: int) -> tuple[list[Fraction], list[Fraction]]:
    lower = vector(field(doc["domain"], "lower", "domain"), "domain.lower", None, max_digits)
    upper = vector(field(doc["domain"], "upper", "domain"), "domain.upper", len(lower),
                   max_digits)
    for k, (lo, hi) in enumerate(zip(lower, upper)):
        if lo > hi:
            raise CertificateError("domain", f"domain: lower[{k}] = {show(lo)} > "
                                             f"upper[{k}] = {show(hi)}")
    return lower, upper


def read_target(doc: dict, d0: int,
                max_digits: int = DEFAULT_MAX_DIGITS) -> list[tuple[list[list[Fraction]],
                                                                    list[Fraction], str]]:
    """Target layers (W_i, b_i, sigma_i); W_i has d_{i-1} columns."""
    out, width = [], d0
    for i, layer in enumerate(layer_list(doc["target"], "target"), 1):
        where = f"target layer {i}"
        W = matrix(field(layer, "weight", where), f"{where} weight", None, width, max_digits)
        b = vector(field(layer, "bias", where), f"{where} bias", len(W), max_digits)
        out.append((W, b, activation(field(layer, "activation", where), where)))
        width = len(W)
    return out


@dataclass
class Provenance:
    """What the frozen matrices were proven to be: draws (seed, key) or given explicitly."""

    version: int
    seeds: set[int] = dc_field(default_factory=set)
    keys: dict[tuple[int, ...], str] = dc_field(default_factory=dict)
    regenerated: int = 0
    explicit: int = 0


def rule_provenance(obj: dict, value: object, kind: str | None, where: str, j: int,
                    rows: int | None, cols: int, prov: Provenance,
                    max_digits: int) -> list[list[Fraction]]:
    """The matrix of a layer weight or skip (``kind`` None for a layer), with its provenance.

    ``{"random": R}`` is regenerated from R; an explicit matrix with ``"source": R`` must equal
    the regenerated one entry by entry; ``"source": {"kind": "fixed", "why": text}`` declares a
    matrix that is not a draw. In version 2 a layer weight or a random skip needs one of these.
    """
    source = obj.get("source")
    record = value["random"] if isinstance(value, dict) and set(value) == {"random"} else None
    if record is not None and source is not None:
        raise CertificateError("provenance", f"{where}: a weight given by reference carries no "
                                             f"separate source", layer=j)
    if isinstance(source, dict) and source.get("kind") == "fixed":
        if set(source) != {"kind", "why"} or not isinstance(source["why"], str):
            raise CertificateError("provenance", f"{where} source: a fixed declaration is "
                                                 f"{{\"kind\": \"fixed\", \"why\": text}}", layer=j)
        if kind == "random":
            raise CertificateError("provenance", f"{where}: a random skip cannot be declared "
                                                 f"fixed", layer=j)
        source = None
        fixed = True
    else:
        fixed = False
    if record is None and source is None:
        if prov.version >= 2 and not fixed and kind in (None, "random"):
            raise CertificateError("provenance", f"{where} has neither a draw record nor a "
                                                 f"fixed declaration", layer=j)
        prov.explicit += 1
        return matrix(value, f"{where} weight", rows, cols, max_digits)
    drawn = regenerated(record if record is not None else source, where, j, prov)
    if record is not None:
        M = drawn
    else:
        M = matrix(value, f"{where} weight", rows, cols, max_digits)
        rule_same_as_draw(M, drawn, where, j)
    if (rows is not None and len(M) != rows) or len(M[0]) != cols:
        raise CertificateError("shape", f"{where}: the draw record has shape {len(M)} x "
                                        f"{len(M[0])}, expected {rows or len(M)} x {cols}",
                               layer=j)
    prov.regenerated += 1
    return M


def regenerated(record: object, where: str, j: int, prov: Provenance) -> list[list[Any]]:
    """The matrix a draw record names; one seed per certificate, one stream key per matrix.

    Integer distributions come back as plain ints (8 bytes a small entry instead of a
    Fraction object); everything downstream reads .numerator/.denominator, which ints have.
    """
    rec = rule_draw_record(record, where, j, prov)
    integral = rec.kind not in ("rational", "gauss")
    # a record that validate_record accepted regenerates without error
    return (regenerate_integers if integral else regenerate)(record, max_entries=MAX_MAP_ENTRIES)


def rule_draw_record(record: object, where: str, j: int, prov: Provenance) -> Any:
    """Validate a draw record (rules provenance and shape) and register its seed and key."""
    try:
        rec = validate_record(record, max_entries=MAX_MAP_ENTRIES)
    except RecordError as exc:
        raise CertificateError("provenance", f"{where}: {exc}", layer=j) from None
    if rec.rows == 0 or rec.cols == 0:
        raise CertificateError("shape", f"{where}: the draw record has an empty shape", layer=j)
    if prov.seeds and rec.seed not in prov.seeds:
        raise CertificateError("provenance", f"{where}: draw record seed {rec.seed}, other "
                                             f"matrices of this certificate were drawn with seed "
                                             f"{min(prov.seeds)}", layer=j)
    if rec.key in prov.keys:
        raise CertificateError("provenance", f"{where}: stream key {show(list(rec.key))} is also "
                                             f"the key of {prov.keys[rec.key]}", layer=j)
    prov.seeds.add(rec.seed)
    prov.keys[rec.key] = where
    return rec


def rule_same_as_draw(M: list[list[Fraction]], drawn: list[list[Fraction]], where: str,
                      j: int) -> None:
    """An explicit matrix with a draw record equals the regenerated matrix entry by entry."""
    if len(M) != len(drawn) or len(M[0]) != len(drawn[0]):
        raise CertificateError("provenance", f"{where}: weight is {len(M)} x {len(M[0])}, its "
                                             f"draw record has shape {len(drawn)} x "
                                             f"{len(drawn[0])}", layer=j)
    for r, (row, drow) in enumerate(zip(M, drawn)):
        if row != drow:
            t = next(t for t, (x, y) in enumerate(zip(row, drow)) if x != y)
            raise CertificateError("provenance", f"{where}: weight[{r}][{t}] is {show(row[t])}, "
                                                 f"the draw record gives {show(drow[t])}",
                                   layer=j, neuron=r)


@dataclass(frozen=True)
class Picks:
    """A 0/1 skip matrix with at most one 1 per row (kinds identity and selection), kept as the
    column each row copies (None: a zero row) instead of rows x cols numbers."""

    rows: tuple[int | None, ...]
    cols: int


def picks_of(P: list[list]) -> Picks:
    """The picks of an explicit 0/1 matrix that :func:`rule_skip_kind` has accepted."""
    return Picks(tuple(next((t for t, x in enumerate(row) if x), None) for row in P), len(P[0]))


def compact_picks(value: dict, kind: object, where: str, rows: int, cols: int,
                  j: int) -> Picks:
    """``{"identity": n}`` or ``{"selection": [c_0, ...], "columns": d}`` (version 2 compact
    skips): the declared kind must match the form, and the shape must fit (rule ``shape``)."""
    if set(value) == {"identity"} and kind == "identity":
        n = value["identity"]
        if type(n) is not int or n != rows or n != cols:
            raise CertificateError("shape", f"{where}: identity of size {show(n)}, the skip "
                                            f"maps {cols} to {rows} values", layer=j)
        return Picks(tuple(range(n)), n)
    if set(value) == {"selection", "columns"} and kind == "selection":
        picked, d = value["selection"], value["columns"]
        if type(d) is not int or d != cols:
            raise CertificateError("shape", f"{where}: selection columns {show(d)}, the node "
                                            f"read has width {cols}", layer=j)
        if not isinstance(picked, list) or len(picked) != rows:
            raise CertificateError("shape", f"{where}: selection must list one column (or null) "
                                            f"for each of the {rows} rows", layer=j)
        for r, t in enumerate(picked):
            if t is not None and (type(t) is not int or not 0 <= t < d):
                raise CertificateError("shape", f"{where}: selection[{r}] = {show(t)} is not a "
                                                f"column index below {d} or null", layer=j)
        return Picks(tuple(picked), d)
    raise CertificateError("skip", f"{where}: kind {show(kind)} with weight keys "
                                   f"{show(sorted(map(str, value)))} (compact skips are "
                                   f"{{\"identity\": n}} for kind identity, {{\"selection\": "
                                   f"[...], \"columns\": d}} for kind selection)", layer=j)


def read_network(doc: dict, d0: int, max_digits: int = DEFAULT_MAX_DIGITS,
                 prov: Provenance | None = None) -> tuple[list[dict], list[int]]:
    """Frozen layers as dicts (input, V, gamma, beta, act, skips) and the checkpoint list."""
    prov = Provenance(1) if prov is None else prov
    dims, out = [d0], []
    for j, layer in enumerate(layer_list(doc["network"], "network"), 1):
        where = f"network layer {j}"
        src = index(field(layer, "input", where), f"{where} input")
        if not 0 <= src < j:
            raise CertificateError("segment", f"{where} reads node {show(src)}, not an earlier "
                                              f"node", layer=j)
        V = rule_provenance(layer, field(layer, "weight", where), None, where, j, None,
                            dims[src], prov, max_digits)
        n = len(V)
        gamma = vector(field(layer, "gamma", where), f"{where} gamma", n, max_digits)
        beta = vector(field(layer, "beta", where), f"{where} beta", n, max_digits)
        act = activation(field(layer, "activation", where), where)
        skips_raw = layer.get("skip", [])
        if not isinstance(skips_raw, list):
            raise CertificateError("skip", f"{where} skip must be a list", layer=j)
        skips: list[tuple[int, list[list[Fraction]] | Picks]] = []
        for t, s in enumerate(skips_raw):
            sw = f"{where} skip {t}"
            frm = index(field(s, "from", sw), f"{sw} from")
            if not 0 <= frm < j:
                raise CertificateError("segment", f"{sw} reads node {show(frm)}, not an earlier "
                                                  f"node",
                                       layer=j)
            kind = field(s, "kind", sw)
            if not isinstance(kind, str) or kind not in SKIP_KINDS:
                raise CertificateError("skip", f"{sw}: kind {show(kind)} is not one of "
                                               f"{show(list(SKIP_KINDS))}", layer=j)
            weight = field(s, "weight", sw)
            if isinstance(weight, dict) and ({"identity"} <= set(weight)
                                             or {"selection"} <= set(weight)):
                if "source" in s:
                    raise CertificateError("provenance", f"{sw}: a compact {kind} skip carries "
                                                         f"no source", layer=j)
                prov.explicit += 1
                skips.append((frm, compact_picks(weight, kind, sw, n, dims[frm], j)))
                continue
            P = rule_provenance(s, weight, kind, sw, j, n, dims[frm], prov, max_digits)
            rule_skip_kind(kind, P, sw, j)
            skips.append((frm, P if kind == "random" else picks_of(P)))
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
        raise CertificateError("skip", f"{where}: kind {show(kind)} is not one of "
                                       f"{show(list(SKIP_KINDS))}", layer=layer)
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
    checkpoints = set(cps)
    start = 0
    for j, layer in enumerate(layers, 1):
        for src in [layer["input"]] + [s for s, _ in layer["skips"]]:
            if not start <= src < j:
                raise CertificateError("segment", f"network layer {j} reads node {src}, outside "
                                                  f"its segment [{start}, {j})", layer=j)
        if j in checkpoints:
            if layer["skips"]:
                raise CertificateError("skip", f"checkpoint layer {j} has a skip connection",
                                       layer=j)
            start = j


def last_uses(layers: list[dict], start: int, end: int) -> dict[int, int]:
    """For every node read in segment (start, end], the last layer that reads it."""
    last: dict[int, int] = {}
    for j in range(start + 1, end + 1):
        for src in [layers[j - 1]["input"]] + [s for s, _ in layers[j - 1]["skips"]]:
            last[src] = j
    return last


# ---------------------------------------------------------------- exact integer arithmetic


def over_common_denominator(values: list[Fraction]) -> tuple[list[int], int]:
    """Integer numerators over the lcm of the denominators (cheap when they are mostly equal)."""
    den = 1
    for x in values:
        if den % x.denominator:
            den = math.lcm(den, x.denominator)
    return [x.numerator * (den // x.denominator) for x in values], den


def rational_sum(terms: list[tuple[int, int]]) -> Fraction:
    """The exact sum of fractions p/q given as pairs (p, q > 0), added pairwise in a balanced
    tree over the lcm of each pair: n - 1 additions on operands that double in size per level,
    instead of n additions on an ever larger running sum."""
    if not terms:
        return Fraction(0)
    while len(terms) > 1:
        paired = []
        for k in range(0, len(terms) - 1, 2):
            (p1, q1), (p2, q2) = terms[k], terms[k + 1]
            if q1 == q2:
                paired.append((p1 + p2, q1))
            else:
                q = math.lcm(q1, q2)
                paired.append((p1 * (q // q1) + p2 * (q // q2), q))
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return Fraction(*terms[0])


def box_range(row: list[int], den: int, const: int, cols: list[int], lo: list[Fraction],
              hi: list[Fraction]) -> tuple[Fraction, Fraction]:
    """Exact min and max of (row·a[cols] + const)/den over the box lo <= a <= hi."""
    mins, maxs = [(const, 1)], [(const, 1)]
    for w, t in zip(row, cols):
        if w > 0:
            mins.append((w * lo[t].numerator, lo[t].denominator))
            maxs.append((w * hi[t].numerator, hi[t].denominator))
        elif w < 0:
            mins.append((w * hi[t].numerator, hi[t].denominator))
            maxs.append((w * lo[t].numerator, lo[t].denominator))
    return rational_sum(mins) / den, rational_sum(maxs) / den


def next_box(W: list[list[Fraction]], b: list[Fraction], act: str, lo: list[Fraction],
             hi: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    """B_i from B_{i-1}: interval bound propagation of target layer i, relu clamps at 0."""
    cols = list(range(len(lo)))
    ranges = []
    for row, const in zip(W, b):
        nums, den = over_common_denominator(row + [const])
        ranges.append(box_range(nums[:-1], den, nums[-1], cols, lo, hi))
    if act == "relu":
        ranges = [(max(mn, Fraction(0)), max(mx, Fraction(0))) for mn, mx in ranges]
    return [mn for mn, _ in ranges], [mx for _, mx in ranges]


# An affine map of the segment input a is (cols, rows, consts, den): node = (rows·a[cols] +
# consts)/den with integer rows and consts. The segment input itself is None (never a matrix).
AffineMap = tuple[list[int], list[list[int]], list[int], int]


def compose(M: list[list[int]], den: int, node: AffineMap | None, width: int,
            j: int) -> AffineMap:
    """(M/den)·node as an affine map: M restricted to the columns it reads when ``node`` is the
    segment input, else the integer product over the product of the denominators."""
    if node is None:
        cols = [t for t in range(width) if any(row[t] for row in M)]
        return cols, [[row[t] for t in cols] for row in M], [0] * len(M), den
    cols, A, c, d = node
    rule_map_size(len(M), len(cols), j)
    columns = list(zip(*A)) if cols else []
    return (cols, [[sum(map(mul, row, col)) for col in columns] for row in M],
            [sum(map(mul, row, c)) for row in M], den * d)


def compose_picks(P: Picks, node: AffineMap | None, width: int, j: int) -> AffineMap:
    """P·node for a 0/1 skip: row r of the result is row P.rows[r] of ``node`` (0 for None).
    Copying rows instead of multiplying keeps an identity skip of width n at O(n) per layer."""
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
    rule_map_size(len(P.rows), len(cols), j)
    zero = [0] * len(cols)
    # rows are shared, never modified in place: every operation builds new rows
    return (cols, [zero if t is None else A[t] for t in P.rows],
            [0 if t is None else c[t] for t in P.rows], d)


def reduced(m: AffineMap) -> AffineMap:
    """The same map over the smallest denominator (numerators and den divided by their gcd),
    and on no column at all when its matrix is zero.

    Without it a denominator only grows (each layer multiplies in those of its gamma and beta)
    and a sum of many maps carries the lcm of them all, although the values themselves (e.g. a
    block's contribution V_F^-1 W[:, S_t] in the trade-off) have small denominators.
    """
    cols, A, c, den = m
    if cols and not any(map(any, A)):
        cols, A = [], [[] for _ in A]  # a constant map (e.g. gamma = 0) depends on no column
    if den == 1:
        return cols, A, c, den
    g = math.gcd(den, *c)
    for row in A:
        if g == 1:
            return cols, A, c, den
        g = math.gcd(g, *row)
    if g == 1:
        return cols, A, c, den
    return cols, [[x // g for x in row] for row in A], [x // g for x in c], den // g


def add_maps(m1: AffineMap, m2: AffineMap, j: int) -> AffineMap:
    """m1 + m2 on the union of their supports, over the lcm of their denominators."""
    (c1, A1, e1, d1), (c2, A2, e2, d2) = m1, m2
    den = math.lcm(d1, d2)
    s1, s2 = den // d1, den // d2
    if c1 == c2:
        return (c1, [[s1 * x + s2 * y for x, y in zip(r1, r2)] for r1, r2 in zip(A1, A2)],
                [s1 * x + s2 * y for x, y in zip(e1, e2)], den)
    cols = sorted(set(c1) | set(c2))
    rule_map_size(len(A1), len(cols), j)
    at = {t: k for k, t in enumerate(cols)}
    rows = []
    for r1, r2 in zip(A1, A2):
        row = [0] * len(cols)
        for t, x in zip(c1, r1):
            row[at[t]] += s1 * x
        for t, y in zip(c2, r2):
            row[at[t]] += s2 * y
        rows.append(row)
    return cols, rows, [s1 * x + s2 * y for x, y in zip(e1, e2)], den


def rule_map_size(rows: int, cols: int, j: int) -> None:
    """Bound an affine map before allocating it (rule ``limit``)."""
    if rows * cols > MAX_MAP_ENTRIES:
        raise CertificateError("limit", f"network layer {j}: its affine map would have {rows} x "
                                        f"{cols} entries, above this checker's limit "
                                        f"{MAX_MAP_ENTRIES}", layer=j)


# ---------------------------------------------------------------- arithmetic rules (SPEC §3)


def rule_stability(gamma: list[Fraction], B: AffineMap, lo: list[Fraction], hi: list[Fraction],
                   beta: list[Fraction], j: int) -> list[bool]:
    """Which ReLU neurons gamma_k·(B_k a) + beta_k are active (min >= 0: True) or dead
    (max <= 0: False) on the box; anything else is an unstable neuron.

    The extremes of gamma_k·t + beta_k for t in [min B_k, max B_k] are at the ends, swapped when
    gamma_k < 0: exactly the min and max of the scaled row, found on the small unscaled row.
    A neuron with min = max = 0 is stable (both tests hold; it is kept, and is 0 on the box).
    """
    cols, A, c, den = B
    keep = []
    for k, (row, const) in enumerate(zip(A, c)):
        bmin, bmax = box_range(row, den, const, cols, lo, hi)
        g = gamma[k]
        mn = g * (bmin if g >= 0 else bmax) + beta[k]
        mx = g * (bmax if g >= 0 else bmin) + beta[k]
        if mn >= 0:
            keep.append(True)
        elif mx <= 0:
            keep.append(False)
        else:
            raise CertificateError("stability", f"network layer {j} neuron {k} is not stable on "
                                                f"the box: min {show(mn)} < 0 < max {show(mx)}",
                                   layer=j, neuron=k)
    return keep


def scale_rows(gamma: list[Fraction], B: AffineMap, beta: list[Fraction],
               keep: list[bool] | None) -> AffineMap:
    """diag(gamma)·B + beta over one denominator; rows not kept (dead ReLU) become 0."""
    cols, A, c, den = B
    gn, gden = over_common_denominator(gamma)
    bn, bden = over_common_denominator(beta)
    D = math.lcm(gden * den, bden)
    s1, s2 = D // (gden * den), D // bden
    rows, consts = [], []
    for k, (row, const) in enumerate(zip(A, c)):
        if keep is not None and not keep[k]:
            rows.append([0] * len(cols))
            consts.append(0)
        else:
            g = gn[k] * s1
            rows.append([g * x for x in row])
            consts.append(g * const + bn[k] * s2)
    return cols, rows, consts, D


def rule_checkpoint(layer: dict, A: AffineMap, target_layer: tuple, j: int, i: int,
                    lo: list[Fraction], hi: list[Fraction]) -> None:
    """At checkpoint c_i: sigma equals sigma_i, width equals d_i, and A a + c equals
    W_i a + b_i for every a in the box.

    On a full-dimensional box that is equality of every coefficient. A degenerate coordinate
    (lower = upper = v) is a constant on the box: its coefficients are not compared, their
    products with v are folded into the bias on both sides. This is exactly "equal on the box",
    which is all f = g needs (the box contains every reachable h_{i-1}); it makes the choice
    between "active" and "dead" for a neuron with min = max = 0 immaterial.
    """
    W, b, sigma = target_layer
    cols, rows, consts, den = A
    if layer["act"] != sigma:
        raise CertificateError("activation", f"checkpoint layer {j} has activation "
                                             f"{layer['act']}, target layer {i} has {sigma}",
                               layer=j)
    if len(rows) != len(W):
        raise CertificateError("width", f"checkpoint layer {j} has width {len(rows)}, target "
                                        f"layer {i} has {len(W)}", layer=j)
    at = {t: k for k, t in enumerate(cols)}
    fixed = [t for t in range(len(lo)) if lo[t] == hi[t]]
    skip = set(fixed)
    for r in range(len(W)):
        for t in range(len(W[r])):
            a = rows[r][at[t]] if t in at else 0
            w = W[r][t]
            if t not in skip and a * w.denominator != w.numerator * den:
                raise CertificateError("identity", f"checkpoint layer {j}: pre-activation weight "
                                                   f"[{r}][{t}] is {show(Fraction(a, den))}, "
                                                   f"target layer {i} has {show(w)}",
                                       layer=j, neuron=r)
        mine, theirs = Fraction(consts[r], den), b[r]
        for t in fixed:
            mine += Fraction(rows[r][at[t]] if t in at else 0, den) * lo[t]
            theirs += W[r][t] * lo[t]
        if mine != theirs:
            folded = " (with the coordinates where lower = upper folded in)" if fixed else ""
            raise CertificateError("identity", f"checkpoint layer {j}: pre-activation bias [{r}]"
                                               f"{folded} is {show(mine)}, target layer {i} has "
                                               f"{show(theirs)}", layer=j, neuron=r)


def check_segment(layers: list[dict], start: int, end: int, target_layer: tuple, i: int,
                  lo: list[Fraction], hi: list[Fraction],
                  step: Callable[[int], None] | None = None) -> None:
    """Nodes start+1..end as affine maps of a = h_start (SPEC §3): stability inside, the
    checkpoint rule at the end. A node's map is dropped after its last reader. ``step(j)`` is
    called before layer j is checked (progress only)."""
    width = len(lo)
    maps: dict[int, AffineMap | None] = {start: None}
    last = last_uses(layers, start, end)
    for j in range(start + 1, end + 1):
        if step is not None:
            step(j)
        layer = layers[j - 1]
        Vn, vden = over_matrix_denominator(layer["V"])
        B = compose(Vn, vden, maps[layer["input"]], width, j)
        keep = None
        if j < end and layer["act"] == "relu":
            keep = rule_stability(layer["gamma"], B, lo, hi, layer["beta"], j)
        A = scale_rows(layer["gamma"], B, layer["beta"], keep)
        if j == end:
            rule_checkpoint(layer, A, target_layer, j, i, lo, hi)
            return
        A = reduced(A)
        for src, P in layer["skips"]:
            if isinstance(P, Picks):
                S = compose_picks(P, maps[src], width, j)
            else:
                Pn, pden = over_matrix_denominator(P)
                S = compose(Pn, pden, maps[src], width, j)
            A = add_maps(A, S, j)
        if j in last:
            maps[j] = A
        for src in {layer["input"]} | {s for s, _ in layer["skips"]}:
            if last[src] == j:
                del maps[src]


def over_matrix_denominator(M: list[list[Fraction]]) -> tuple[list[list[int]], int]:
    """A matrix as integer numerators over one denominator."""
    flat, den = over_common_denominator([x for row in M for x in row])
    width = len(M[0])
    return [flat[r * width:(r + 1) * width] for r in range(len(M))], den


# ---------------------------------------------------------------- entry points


def describe_box(lo: list[Fraction], hi: list[Fraction]) -> str:
    """``[0,1]^784`` for a cube, else the first coordinates' intervals."""
    if len(set(lo)) == 1 and len(set(hi)) == 1:
        return f"[{show(lo[0])},{show(hi[0])}]^{len(lo)}"
    shown = " x ".join(f"[{show(a)},{show(b)}]" for a, b in list(zip(lo, hi))[:3])
    return f"{shown}{' x ...' if len(lo) > 3 else ''} (dimension {len(lo)})"


def facts_of(doc: dict, lo: list[Fraction], hi: list[Fraction], target: list, n_layers: int,
             prov: Provenance) -> dict[str, Any]:
    """What a valid verdict proves, as JSON-ready facts (shared by both checkers)."""
    info = doc.get("provenance")
    construction = info.get("construction") if isinstance(info, dict) else None
    return {"box": describe_box(lo, hi), "dimension": len(lo),
            "target_widths": [len(lo)] + [len(W) for W, _, _ in target],
            "construction": construction[:60] if isinstance(construction, str) else None,
            "segments": len(target), "frozen_layers": n_layers, "version": prov.version,
            "regenerated": prov.regenerated, "explicit": prov.explicit,
            "seed": min(prov.seeds) if prov.seeds else None}


def verdict_of(run: Callable[[], dict[str, Any]]) -> Verdict:
    """Run the rules; ``run`` returns the facts of :func:`facts_of` or raises CertificateError."""
    try:
        facts = run()
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc), exc.layer, exc.neuron)
    except RecursionError:
        return Verdict(False, "format", "document is nested too deeply")
    widths = "-".join(map(str, facts["target_widths"]))
    how = f" by construction {show(facts['construction'])}" if facts["construction"] else ""
    regen = f"{facts['regenerated']:,} frozen matrices regenerated from seed {facts['seed']}" \
        if facts["regenerated"] else "no frozen matrix regenerated from a seed"
    return Verdict(True, "valid", f"f = g on {facts['box']} for target {widths}{how}; "
                                  f"{facts['segments']} segment(s), {facts['frozen_layers']} "
                                  f"frozen layer(s); {regen}, {facts['explicit']:,} given "
                                  f"explicitly", facts=facts)


def check_certificate(doc: object, *, max_digits: int = DEFAULT_MAX_DIGITS,
                      progress: Callable[[int, int], None] | None = None) -> Verdict:
    """Check a parsed certificate (SPEC §3); never raises for bad content. ``progress(done,
    total)`` is told the frozen layers checked so far (it cannot change the verdict)."""
    return verdict_of(lambda: run_rules(doc, max_digits, progress))


def read_certificate(doc: object, max_digits: int,
                     network_reader: Callable[..., tuple[list[dict], list[int]]] | None = None
                     ) -> tuple[Any, ...]:
    """The reading and structural rules shared by both checkers, in order; returns
    (lower, upper, target, layers, checkpoints, provenance). ``network_reader`` (default
    :func:`read_network`) lets the fast checker read layers into its own matrices."""
    if not isinstance(doc, dict):
        raise CertificateError("format", "a certificate is a JSON object")
    prov = Provenance(rule_format(doc))
    lo, hi = rule_domain(doc, max_digits)
    target = read_target(doc, len(lo), max_digits)
    layers, cps = (network_reader or read_network)(doc, len(lo), max_digits, prov)
    rule_checkpoints(cps, len(target), len(layers))
    rule_segments(layers, cps)
    return lo, hi, target, layers, cps, prov


def progress_step(progress: Callable[[int, int], None] | None,
                  total: int) -> Callable[[int], None] | None:
    """``step(j)`` reporting ``progress(j - 1, total)``, and the end once the last layer is in."""
    if progress is None:
        return None
    report = progress

    def step(j: int) -> None:
        report(j - 1, total)

    return step


def run_rules(doc: object, max_digits: int = DEFAULT_MAX_DIGITS,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Every rule of SPEC §3 in order; returns the facts proven when all hold."""
    lower, upper, target, layers, cps, prov = read_certificate(doc, max_digits)
    lo, hi = lower, upper
    step = progress_step(progress, len(layers))
    for i, (start, end, tl) in enumerate(zip([0] + cps, cps, target), 1):
        check_segment(layers, start, end, tl, i, lo, hi, step)
        lo, hi = next_box(tl[0], tl[1], tl[2], lo, hi)
    if progress is not None:
        progress(len(layers), len(layers))
    return facts_of(doc, lower, upper, target, len(layers), prov)  # type: ignore[arg-type]


def check_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = DEFAULT_MAX_DIGITS) -> Verdict:
    """Parse strictly, then check (SPEC §3); never raises for bad content."""
    try:
        doc = parse_certificate_text(text, max_digits=max_digits)
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    return check_certificate(doc, max_digits=max_digits)


# ---------------------------------------------------------------- files


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _read_limited(chunks: Any, max_bytes: int, path: str) -> bytearray:
    """The chunks joined, refused as soon as they exceed max_bytes: memory follows what is
    there, never the limit."""
    buf = bytearray()
    for chunk in chunks:
        buf += chunk
        if len(buf) > max_bytes:
            raise ReadError("limit", f"certificate {path} exceeds {max_bytes} bytes "
                                     f"(uncompressed; raise the limit with --max-bytes)")
    return buf


def _plain_chunks(fh: Any) -> Any:
    while chunk := fh.read(_CHUNK):
        yield chunk


def _inflated_chunks(fh: Any) -> Any:
    """The uncompressed bytes of a gzip file (one or more members), at most 1 MiB at a time:
    zlib checks each member's CRC-32 and length; a truncated stream is an EOFError."""
    inflater = zlib.decompressobj(31)
    pending = b""
    while True:
        data = pending or fh.read(1 << 16)
        pending = b""
        if not data:
            if not inflater.eof:
                raise EOFError("compressed file ended before the end-of-stream marker")
            return
        if inflater.eof:  # the next member, or the zero padding some writers append
            if not data.strip(b"\0"):
                continue
            inflater = zlib.decompressobj(31)
        while data and not inflater.eof:
            out = inflater.decompress(data, _CHUNK)
            if out:
                yield out
            data = inflater.unconsumed_tail
        pending = inflater.unused_data if inflater.eof else b""


def _gzip_trailer_size(fh: Any) -> int:
    """The last member's ISIZE field: its uncompressed size mod 2^32, a lower bound of the
    total size of a valid file (a file whose trailer lies is corrupt and refused anyway)."""
    end = fh.seek(0, os.SEEK_END)
    if end < 18:
        fh.seek(0)
        return 0
    fh.seek(end - 4)
    size = int.from_bytes(fh.read(4), "little")
    fh.seek(0)
    return size


def read_file_bytes(path: str | os.PathLike[str],
                    max_bytes: int = DEFAULT_MAX_BYTES) -> bytearray:
    """The bytes of a regular ``.json`` or ``.json.gz`` file, gunzipped, at most ``max_bytes``.

    The file is opened without blocking and checked to be a regular file before any byte is read
    (a FIFO, a device or a directory is refused by name). A ``.gz`` file whose gzip trailer
    already announces more than ``max_bytes`` is refused at once; otherwise it is inflated twice
    in chunks: first counting and discarding (so a gzip bomb is refused with O(1 MiB) of memory
    and the time to inflate max_bytes), then keeping. Raises :class:`ReadError`.
    """
    name = os.fspath(path)
    if not 0 <= max_bytes <= MAX_BYTES_CAP:
        raise ReadError("input", f"the size limit must be between 0 and {MAX_BYTES_CAP} bytes, "
                                 f"got {max_bytes}")
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ReadError("input", f"no such certificate file: {name}") from None
    except OSError as exc:
        raise ReadError("input", f"cannot open certificate {name}: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ReadError("input", f"certificate {name} is {_file_kind(mode)}, not a regular file")
    with os.fdopen(fd, "rb") as raw:
        try:
            if not name.endswith(".gz"):
                return _read_limited(_plain_chunks(raw), max_bytes, name)
            claimed = _gzip_trailer_size(raw)
            if claimed > max_bytes:
                raise ReadError("limit", f"certificate {name} is refused: its gzip trailer "
                                         f"announces {claimed} uncompressed bytes, above the "
                                         f"limit {max_bytes} (raise it with --max-bytes)")
            size = 0
            for chunk in _inflated_chunks(raw):
                size += len(chunk)
                if size > max_bytes:
                    raise ReadError("limit", f"certificate {name} exceeds {max_bytes} bytes "
                                             f"uncompressed (raise the limit with --max-bytes)")
            raw.seek(0)
            return _read_limited(_inflated_chunks(raw), max_bytes, name)
        except (EOFError, zlib.error) as exc:
            raise ReadError("corrupt", f"certificate {name} is not a valid gzip file: "
                                       f"{exc}") from None
        except OSError as exc:
            raise ReadError("input", f"cannot read certificate {name}: {exc.strerror}") from None


def check_file(path: str, *, max_digits: int = DEFAULT_MAX_DIGITS,
               max_bytes: int = DEFAULT_MAX_BYTES,
               progress: Callable[[int, int], None] | None = None) -> Verdict:
    """Check a ``.json`` or ``.json.gz`` certificate file; a file that cannot be read is a
    failed verdict with rule ``format`` (the command line exits 2 for it instead)."""
    try:
        text = read_file_bytes(path, max_bytes)
        doc = parse_certificate_text(text, max_digits=max_digits)
    except ReadError as exc:
        return Verdict(False, "format", str(exc))
    except CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    del text  # the document is parsed: the bytes need not stay in memory during the check
    return check_certificate(doc, max_digits=max_digits, progress=progress)


def print_or_broken_pipe(line: str) -> bool:
    """Print one line to stdout; False if stdout is closed (the reader went away)."""
    try:
        print(line, flush=True)
        return True
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return False


def main(argv: list[str] | None = None) -> int:
    """``python -m exactnorm.checker CERT [--pure] [--max-bytes N]``: one line; exit 0 valid,
    1 invalid, 2 unreadable file or usage, 141 when stdout is closed before the verdict is out.

    ``--pure`` is accepted for symmetry with ``exactnorm check``: this module is always pure.
    """
    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--pure"]
    max_bytes = DEFAULT_MAX_BYTES
    if "--max-bytes" in args:
        k = args.index("--max-bytes")
        value = args[k + 1] if k + 1 < len(args) else ""
        if not value.isdigit():
            print(f"error: --max-bytes needs a number of bytes, got {show(value)}",
                  file=sys.stderr)
            return 2
        max_bytes = int(value)
        del args[k:k + 2]
    if len(args) != 1:
        print("usage: python -m exactnorm.checker CERT [--pure] [--max-bytes N]", file=sys.stderr)
        return 2
    try:
        text = read_file_bytes(args[0], max_bytes)
    except ReadError as exc:
        if exc.kind != "corrupt":
            print(f"error: {exc}", file=sys.stderr)
            return 2
        v = Verdict(False, "format", str(exc))
    else:
        v = check_certificate_text(text)
    line = ("VALID: " if v.ok else f"INVALID [{v.rule}]: ") + v.message
    if not print_or_broken_pipe(line):
        return EXIT_BROKEN_PIPE
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
