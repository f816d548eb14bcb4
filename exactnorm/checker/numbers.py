"""Reading exact numbers and shapes of a certificate (docs/certificate-format.md §0–§1):
strict JSON, numbers, vectors and matrices, one-line messages. Standard library only.

Contract. :func:`parse_certificate_text` accepts strict JSON only (no float, NaN, Infinity or
duplicated key; no JSON integer above ``max_digits`` digits); :func:`number` accepts an integer or
a string ``"p"``, ``"p/q"`` (q > 0) or a finite decimal. A vector or matrix is read as integer
numerators over **one denominator** (:class:`IntVector`, :class:`IntMatrix`): a compact
``{"den": D, "num": [...]}`` keeps its one ``D`` (it is never copied into every entry), a plain list
is put over the lcm of its denominators. Every failure is a :class:`CertificateError` naming the
rule (``format``, ``number``, ``shape``) and the place.
"""

from __future__ import annotations

import gc
import json
import math
import re
import sys
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from typing import Any

from .vocabulary import ACTIVATIONS, DEFAULT_MAX_DIGITS, MAX_DIGITS_CAP, MAX_MAP_ENTRIES

__all__ = ["Verdict", "CertificateError", "ReadError", "IntVector", "IntMatrix", "show",
           "show_ratio", "bits_of", "written_bits",
           "parse_certificate_text", "number", "integer", "vector", "matrix", "field",
           "activation", "index", "layer_list", "check_max_digits", "decimal_int",
           "paused_collector"]

_RATIONAL = re.compile(r"(-?)([0-9]+)(?:/([0-9]+))?")  # always used with fullmatch
_DECIMAL = re.compile(r"(-?)([0-9]*)\.([0-9]*)")
_SHOWN_BITS = 200


@dataclass(frozen=True)
class Verdict:
    """The checker's answer (docs/certificate-format.md §0): ok, the rule that decided, where
    (1-based layer, 0-based neuron), and for a valid certificate the facts proven (box, target
    widths, counts)."""

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
    """A certificate file that cannot be read: ``reason`` is "input" (missing, not a regular
    file, unreadable), "limit" (above the size limit) or "corrupt" (broken gzip stream)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


# ---------------------------------------------------------------- messages


class _IntDigits:
    """Set CPython's int/str digit limit for a while (by default lift it: our own max_digits
    replaces it), then restore it."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit

    def __enter__(self) -> None:
        self.old = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        getattr(sys, "set_int_max_str_digits", lambda n: None)(self.limit)

    def __exit__(self, *exc: object) -> None:
        getattr(sys, "set_int_max_str_digits", lambda n: None)(self.old)


def show_ratio(p: int, q: int) -> str:
    """``p/q`` (``q > 0``) for a message: :func:`show` of the fraction in lowest terms when the
    numbers are small enough for a cheap gcd (8192 bits), else the unreduced sizes — never a
    quadratic gcd of numbers of a million bits for one line of text.

    >>> show_ratio(-6, 4), show_ratio(1, 1 << 9000)
    ('-3/2', '(1-bit integer)/(9001-bit integer)')
    """
    if p == 0 or max(abs(p).bit_length(), q.bit_length()) <= 8192:
        return show(Fraction(p, q))
    return f"{'-' if p < 0 else ''}({abs(p).bit_length()}-bit integer)/({q.bit_length()}-bit " \
           f"integer)"


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


# ---------------------------------------------------------------- reading (format §0)


def _refuse_inexact(text: str) -> None:
    """json.loads hook for floats (1.5, 1e3) and constants (NaN, Infinity, -Infinity)."""
    raise CertificateError("number", f"JSON {show(text)} is not an exact number "
                                     f"(numbers are integers or strings \"p/q\")")


def _refuse_duplicates(pairs: list) -> dict:
    """json.loads hook: the object, refused when a key repeats (the dict is shorter than the
    list of pairs; both built in C)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise CertificateError("format", f"duplicated key {show(key)}")
    return out


class paused_collector:
    """Pause CPython's cyclic garbage collector while a document is parsed, read and checked,
    then restore it. The checker allocates millions of small objects and no cycle (JSON values,
    records, exact maps); with the collector running, each of its generational passes walks the
    document again (a third of the parsing time of a 16 MB chain, and a pass over all of it at
    the first allocation after the parse). Reference counting still frees everything as
    usual."""

    def __enter__(self) -> None:
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            gc.enable()


def parse_certificate_text(text: str | bytes | bytearray, *,
                           max_digits: int = DEFAULT_MAX_DIGITS) -> dict:
    """Strict JSON (docs/certificate-format.md §0): no floats, no NaN/Infinity, no duplicated
    keys, no JSON integer with more than ``max_digits`` digits (numbers written as strings are
    limited where they are read as numbers, with the same limit).

    Raises CertificateError (a ValueError with ``.rule``) with a one-line message.
    """
    def parse_int(literal: str) -> int:
        if len(literal.lstrip("-")) > max_digits:
            raise CertificateError("number", f"integer literal with more than {max_digits} digits")
        return int(literal)

    # a call per integer literal costs three times the parse: the digit limit of JSON integers
    # is CPython's own limit of integer conversion, set to max_digits while parsing, so that
    # the C scanner converts every literal itself (a scan of the text for long runs of digits
    # costs half the parse); below CPython's smallest settable limit the hook counts digits
    limit = getattr(sys.int_info, "str_digits_check_threshold", 0)
    own = bool(limit) and max_digits >= limit
    try:
        with paused_collector(), _IntDigits(max_digits if own else 0):
            doc = json.loads(text, parse_float=_refuse_inexact, parse_constant=_refuse_inexact,
                             parse_int=int if own else parse_int,
                             object_pairs_hook=_refuse_duplicates)
    except CertificateError:
        raise
    except RecursionError:
        raise CertificateError("format", "document is nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CertificateError("format", f"not valid JSON: {str(exc)[:200]}") from None
    except ValueError as exc:  # CPython's digit limit, set to max_digits
        if "integer string conversion" not in str(exc):
            raise
        raise CertificateError("number", f"integer literal with more than {max_digits} "
                                         f"digits") from None
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


def number_pair(value: object, where: str,
                max_digits: int = DEFAULT_MAX_DIGITS) -> tuple[int, int]:
    """An exact number as a pair ``(p, q)``, ``q > 0``, not reduced (docs/certificate-format.md
    §0): int, "p", "-p", "p/q" with q > 0, or a finite decimal, with at most ``max_digits``
    digits in each of p and q (the same limit for JSON integers). Long numbers are not reduced:
    CPython's gcd is quadratic, and the checker never needs lowest terms."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    if isinstance(value, int):
        if value.bit_length() > 3 * max_digits:  # 2^(3n) < 10^n: below that, at most n digits
            with _IntDigits():
                if value.bit_length() > 4 * max_digits or len(str(abs(value))) > max_digits:
                    raise CertificateError("number", f"{where}: more than {max_digits} digits")
        return value, 1
    # no part of a string is longer than the string: count digits only for long ones
    if len(value) > max_digits and (len(value) > 2 * max_digits + 3
                                    or _too_long(value, max_digits)):
        raise CertificateError("number", f"{where}: more than {max_digits} digits")
    rat = _RATIONAL.fullmatch(value)
    if rat and len(value) <= 640:
        # the common short "p/q": CPython's smallest settable digit limit is 640, so plain int()
        sign, p, q = rat.groups()
        if q is None:
            return int(value), 1
        if not q.strip("0"):
            raise CertificateError("number", f"{where}: zero denominator in {show(value)}")
        return (-int(p) if sign else int(p)), int(q)
    dec = None if rat else _DECIMAL.fullmatch(value)
    if not rat and not (dec and (dec.group(2) or dec.group(3))):
        raise CertificateError("number", f"{where}: {show(value)} is not an exact number")
    with _IntDigits():
        if rat:
            sign, p, q = rat.groups()
            if q is not None and not q.strip("0"):
                raise CertificateError("number", f"{where}: zero denominator in {show(value)}")
            num, den = decimal_int(p), decimal_int(q or "1")
        else:
            sign, ip, fp = dec.groups()  # type: ignore[union-attr]
            num, den = decimal_int(ip + fp), 10 ** len(fp)
    return (-num if sign else num), den


def number(value: object, where: str, max_digits: int = DEFAULT_MAX_DIGITS) -> Fraction:
    """:func:`number_pair` as a Fraction (in lowest terms)."""
    return Fraction(*number_pair(value, where, max_digits))


def integer(value: object, where: str, max_digits: int) -> int:
    """A JSON integer or a decimal integer string "-123" (compact form: no "p/q", no ".")."""
    if type(value) is int and value.bit_length() <= 3 * max_digits:  # 2^(3n) < 10^n
        return value
    if isinstance(value, str):
        if not re.fullmatch(r"-?[0-9]+", value):
            raise CertificateError("number", f"{where}: {show(value)} is not an integer")
        if len(value) <= 640:  # CPython's smallest settable digit limit
            return int(value)
    x = number(value, where, max_digits)
    if x.denominator != 1:
        raise CertificateError("number", f"{where}: {show(value)} is not an integer")
    return x.numerator


@dataclass(slots=True)
class IntVector:
    """A vector of rationals as integer numerators over one denominator ``den > 0``;
    ``written`` is the size of the numbers as the document writes them (:func:`written_bits`).
    Built by the reader and never changed (not declared frozen: a frozen dataclass sets each
    field through ``object.__setattr__``, which made building the records of a long chain a
    tenth of its reading)."""

    nums: list[int]
    den: int
    written: int = dc_field(default=0, compare=False)

    def __len__(self) -> int:
        return len(self.nums)

    def __getitem__(self, k: int) -> Fraction:
        return Fraction(self.nums[k], self.den)

    def fractions(self) -> list[Fraction]:
        return [Fraction(n, self.den) for n in self.nums]


@dataclass(slots=True)
class IntMatrix:
    """A non-empty matrix of rationals as integer rows over one denominator ``den > 0``;
    ``written`` as for :class:`IntVector`; never changed after reading."""

    rows: list[list[int]]
    den: int
    written: int = dc_field(default=0, compare=False)

    @property
    def nrows(self) -> int:
        return len(self.rows)

    @property
    def ncols(self) -> int:
        return len(self.rows[0])

    def entry(self, r: int, t: int) -> Fraction:
        return Fraction(self.rows[r][t], self.den)


def bits_of(x: IntVector | IntMatrix) -> int:
    """The larger of the bit lengths of the largest absolute numerator and of the denominator: the
    size of the numbers an operation with ``x`` multiplies (the work budget's operand size)."""
    rows = x.rows if isinstance(x, IntMatrix) else [x.nums]
    top = max((max(map(abs, row)) for row in rows if row), default=0)
    return max(top.bit_length(), x.den.bit_length())


def _compact(value: dict, where: str, max_digits: int) -> tuple[int, list]:
    """The denominator and the integer numerators of ``{"den": D, "num": [...]}`` (version 2)."""
    if set(value) != {"den", "num"}:
        raise CertificateError("shape", f"{where} must be a list or {{\"den\", \"num\"}}, "
                                        f"got keys {show(sorted(map(str, value)))}")
    den = integer(value["den"], f"{where}.den", max_digits)
    if den <= 0:
        raise CertificateError("number", f"{where}.den must be positive, got {show(den)}")
    return den, value["num"]


def written_bits(nums: list[int], den: int = 1) -> int:
    """The size of integers as a document writes them: the bit length of each ``|n|`` plus one,
    and the bit length of a shared denominator (docs/certificate-format.md §7: the work budget
    grows with it)."""
    return sum(map(int.bit_length, map(abs, nums))) + len(nums) + den.bit_length()


def _written_pairs(pairs: list[tuple[int, int]]) -> int:
    return sum(abs(p).bit_length() + q.bit_length() + 1 for p, q in pairs)


def _odd_part(q: int) -> tuple[int, int]:
    """``(a, o)`` with ``q = 2^a · o`` and ``o`` odd."""
    a = (q & -q).bit_length() - 1
    return a, q >> a


def over_one_denominator(values: list[tuple[int, int]], where: str) -> tuple[list[int], int]:
    """Numbers ``p/q`` (pairs, ``q > 0``, not necessarily in lowest terms) as integer numerators
    over one common denominator, refused (rule ``limit``) before it is built when it would make
    the numerators much longer than the numbers written (docs/certificate-format.md §6).

    The common denominator is ``2^e · L · P``: ``2^e`` the largest power of two dividing a
    denominator, ``L`` the least common multiple of the odd parts of at most 64 bits, ``P`` the
    product of the distinct odd parts above 64 bits (their lcm would need a quadratic gcd of huge
    numbers; any common multiple is a common denominator). Float weights have power-of-two
    denominators (``L = P = 1``): ``2^e`` has at most 1,075 + 52 bits whatever their number. The
    denominator is refused when its bit length times the number of entries exceeds
    ``64·W + 2^20``, ``W`` the bits written (the sum over the entries of the bit lengths of
    ``|p|`` and ``q``); ``L`` is built one factor at a time and the refusal comes as soon as the
    bound is passed. Numerators are scaled by cofactors (prefix and suffix products for ``P``),
    never by a division of huge numbers.

    >>> over_one_denominator([(1, 2), (3, 8), (1, 1 << 1000)], "w")[1] == 1 << 1000
    True
    >>> over_one_denominator([(1, 6), (1, 10)], "w")
    ([5, 3], 30)
    """
    n = len(values)
    dens = {q for _, q in values if q != 1}
    if not dens:
        return [p for p, _ in values], 1
    written = sum(abs(p).bit_length() + q.bit_length() for p, q in values)
    allowance = (64 * written + (1 << 20)) // n  # bits the common denominator may have
    e = 0
    small: set[int] = set()
    big: set[int] = set()
    for q in dens:
        a, o = _odd_part(q)
        e = max(e, a)
        if o != 1:
            (small if o.bit_length() <= 64 else big).add(o)
    big_bits = sum(o.bit_length() for o in big)

    def refuse() -> CertificateError:
        return CertificateError("limit", f"{where}: {len(dens)} different denominators; over "
                                         f"their common denominator (more than {allowance:,} "
                                         f"bits) the {n:,} numbers would take more than 64 times "
                                         f"the bits they are written with (write them over one "
                                         f"denominator, {{\"den\", \"num\"}})")

    if e + big_bits > allowance:
        raise refuse()
    L = 1
    for o in sorted(small):
        if L % o:
            L = L * o // math.gcd(L, o)
            if e + L.bit_length() + big_bits > allowance:
                raise refuse()
    ordered = sorted(big)
    prefix = [1]
    for d in ordered:
        prefix.append(prefix[-1] * d)
    suffix = [1]
    for d in reversed(ordered):
        suffix.append(suffix[-1] * d)
    suffix.reverse()
    others = {d: prefix[k] * suffix[k + 1] for k, d in enumerate(ordered)}
    P = prefix[-1]
    den = (L * P) << e
    out = []
    for p, q in values:
        if q == 1:
            out.append(p * den)
            continue
        a, o = _odd_part(q)
        cof = (L // o) * P if o.bit_length() <= 64 else L * others[o]
        out.append((p * cof) << (e - a))
    return out, den


_INTS = {int}


def _int_bits(values: list) -> int:
    """The sum of the bit lengths of a list of JSON integers, or -1 when an entry is not one
    (every entry an ``int``, no ``bool``): a plain loop for a few entries, in C for more."""
    if len(values) < 8:
        bits = 0
        for x in values:
            if type(x) is not int:
                return -1
            bits += abs(x).bit_length()
        return bits
    if set(map(type, values)) != _INTS:
        return -1
    return sum(map(int.bit_length, map(abs, values)))


def vector(value: object, where: str, length: int | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS) -> IntVector:
    """A non-empty vector: a list of numbers, or (version 2) ``{"den": D, "num": [...]}``; at
    most ``MAX_MAP_ENTRIES`` entries (rule ``limit``, before any is converted)."""
    if type(value) is list:
        n = len(value)
        if 0 < n <= MAX_MAP_ENTRIES and (length is None or n == length):
            if n == 1:  # the one number of a 1-wide layer (a chain of them: 10^5 layers)
                first = value[0]
                bits = abs(first).bit_length() if type(first) is int else -1
            else:
                bits = _int_bits(value)
            if 0 <= bits <= 3 * max_digits:  # JSON integers, of at most max_digits digits each
                # the document's own list: nothing changes a record or a document while read
                return IntVector(value, 1, bits + n + 1)
    nums = value.get("num") if isinstance(value, dict) else value
    if isinstance(nums, list) and len(nums) > MAX_MAP_ENTRIES:
        raise CertificateError("limit", f"{where}: {len(nums)} entries, above this checker's "
                                        f"limit {MAX_MAP_ENTRIES} of one structure")
    if isinstance(value, dict):
        den, nums = _compact(value, where, max_digits)
        if not isinstance(nums, list) or not nums or isinstance(nums[0], list):
            raise CertificateError("shape", f"{where}.num must be a non-empty list of integers")
        if length is not None and len(nums) != length:
            raise CertificateError("shape", f"{where} has length {len(nums)}, expected {length}")
        ints = [integer(x, f"{where}.num[{k}]", max_digits) for k, x in enumerate(nums)]
        return IntVector(ints, den, written_bits(ints, den))
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list")
    if length is not None and len(value) != length:
        raise CertificateError("shape", f"{where} has length {len(value)}, expected {length}")
    if all(type(x) is int for x in value):
        ints = [integer(x, f"{where}[{k}]", max_digits) for k, x in enumerate(value)]
        return IntVector(ints, 1, written_bits(ints))
    pairs = [number_pair(x, f"{where}[{k}]", max_digits) for k, x in enumerate(value)]
    return IntVector(*over_one_denominator(pairs, where), _written_pairs(pairs))


def _int_rows(value: list, cols: int | None, max_digits: int) -> IntMatrix | None:
    """The common matrix, read in C: equally long non-empty rows of JSON integers of at most
    ``max_digits`` digits each; None for anything else (the general reading then decides)."""
    width = cols if cols is not None else len(value[0]) if type(value[0]) is list else 0
    if not width or len(value) * width > MAX_MAP_ENTRIES:  # the general reading refuses it
        return None
    bits = 0
    for row in value:
        if type(row) is not list or len(row) != width:
            return None
        if width == 1:
            x = row[0]
            if type(x) is not int:
                return None
            bits += abs(x).bit_length()
            continue
        b = _int_bits(row)
        if b < 0:
            return None
        bits += b
    if bits > 3 * max_digits:
        return None
    # the document's own rows: nothing changes a record or a document while it is read
    return IntMatrix(value, 1, bits + len(value) * (width + 1) + 1)


def matrix(value: object, where: str, rows: int | None = None, cols: int | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS) -> IntMatrix:
    """A non-empty rectangular matrix: rows of numbers, or ``{"den": D, "num": [[...], ...]}``."""
    if type(value) is list and value and (rows is None or len(value) == rows):
        fast = _int_rows(value, cols, max_digits)
        if fast is not None:
            return fast
    den, compact = 1, isinstance(value, dict)
    if compact:
        den, value = _compact(value, where, max_digits)  # type: ignore[arg-type]
        where = f"{where}.num"
    if not isinstance(value, list) or not value:
        raise CertificateError("shape", f"{where} must be a non-empty list of rows")
    if rows is not None and len(value) != rows:
        raise CertificateError("shape", f"{where} has {len(value)} rows, expected {rows}")
    width = cols if cols is not None else len(value[0]) if isinstance(value[0], list) else 0
    if len(value) * width > MAX_MAP_ENTRIES:  # before a single entry is converted (§7)
        raise CertificateError("limit", f"{where}: {len(value)} x {width} entries, above this "
                                        f"checker's limit {MAX_MAP_ENTRIES} of one structure")
    out: list[list[Any]] = []
    plain_ints = True
    for r, row in enumerate(value):
        if not isinstance(row, list):
            raise CertificateError("shape", f"{where} row {r} is not a list")
        cols = len(row) if cols is None else cols
        if len(row) != cols:
            raise CertificateError("shape", f"{where} row {r} has {len(row)} entries, "
                                            f"expected {cols}")
        if not row:
            raise CertificateError("shape", f"{where}[{r}] must be a non-empty list")
        if compact or all(type(x) is int for x in row):
            out.append([integer(x, f"{where}[{r}][{t}]", max_digits) for t, x in enumerate(row)])
        else:
            plain_ints = False
            out.append([number_pair(x, f"{where}[{r}][{t}]", max_digits)
                        for t, x in enumerate(row)])
    if compact or plain_ints:
        return IntMatrix(out, den, sum(written_bits(row) for row in out) + den.bit_length())
    pairs = [x if isinstance(x, tuple) else (x, 1) for row in out for x in row]
    flat, den = over_one_denominator(pairs, where)
    width = len(out[0])
    return IntMatrix([flat[r * width:(r + 1) * width] for r in range(len(out))], den,
                     _written_pairs(pairs))


def check_max_digits(max_digits: object) -> int:
    """The caller's digit limit, refused outside 1 … MAX_DIGITS_CAP (a ValueError)."""
    if isinstance(max_digits, bool) or not isinstance(max_digits, int) \
            or not 1 <= max_digits <= MAX_DIGITS_CAP:
        raise ValueError(f"the digit limit must be an integer from 1 to {MAX_DIGITS_CAP}, "
                         f"got {show(max_digits)}")
    return max_digits


def field(obj: object, key: str, where: str) -> object:
    try:
        return obj[key]  # type: ignore[index]
    except (KeyError, TypeError, IndexError):
        raise CertificateError("format", f"{where} has no {show(key)}") from None


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


# ---------------------------------------------------------------- structural rules (format §0)

