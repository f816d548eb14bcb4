"""Exact numbers in and out: parsing, printing, float → dyadic rational, size limits.

Ground type: :class:`fractions.Fraction` on input, ``fmpq``/``Fraction``/``int`` on output. This
module knows nothing about networks.

Accepted number forms (docs/certificate-format.md): JSON integers, and strings ``"p"``,
``"p/q"`` (q > 0) or finite decimals such as ``"-1.25"``. JSON floats, ``NaN``/``Infinity``,
booleans and ``null`` are refused: a float in a certified document would be a silent rounding.

>>> parse_number("-3/6")
Fraction(-1, 2)
>>> format_number(Fraction(7, 1)), format_number(Fraction(-1, 2))
(7, '-1/2')
>>> float_to_fraction(0.1)
Fraction(3602879701896397, 36028797018963968)
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from exactnorm.checker.vocabulary import DEFAULT_MAX_DIGITS as _VOCABULARY_MAX_DIGITS
from exactnorm.errors import InputError, LimitExceededError, NumberFormatError

__all__ = [
    "DEFAULT_MAX_DIGITS",
    "parse_number",
    "format_number",
    "format_decimal",
    "JSON_INT_LIMIT",
    "float_to_fraction",
    "strict_json_loads",
    "unlimited_int_digits",
    "parse_option_number",
]

#: Integers of smaller magnitude are written as JSON numbers, larger ones as decimal strings: many
#: JSON readers (JavaScript, jq) hold numbers as IEEE doubles, exact only below 2^53 (RFC 8259 §6).
JSON_INT_LIMIT = 2**53

#: Default cap on the decimal digits of one number read from a file (overridable everywhere):
#: the checker's, from the format's one vocabulary
DEFAULT_MAX_DIGITS = _VOCABULARY_MAX_DIGITS

# re.ASCII: only 0-9 are digits (int() would also take "١٢" and full-width digits, which the
# independent checker refuses) and only ASCII blanks count as surrounding whitespace.
_RATIONAL = re.compile(r"^\s*(-?)(\d+)(?:/(\d+))?\s*$", re.ASCII)
_DECIMAL = re.compile(r"^\s*(-?)(\d*)\.(\d+)\s*$|^\s*(-?)(\d+)\.\s*$", re.ASCII)
_LOG2_10 = math.log2(10)


@contextlib.contextmanager
def unlimited_int_digits() -> Iterator[None]:
    """Lift CPython's int/str conversion limit (PEP 651's 4300 digits) for the duration.

    Certified Γ entries routinely have thousands of digits; the limit would turn a valid
    certificate into a ``ValueError``. Our own ``max_digits`` check replaces it.
    """
    getter = getattr(sys, "get_int_max_str_digits", None)
    if getter is None:  # Python < 3.10.7 has no limit
        yield
        return
    old = getter()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def parse_number(value: Any, *, max_digits: int = DEFAULT_MAX_DIGITS, where: str = "") -> Fraction:
    """Parse one exact number.

    Parameters
    ----------
    value : int | str | Fraction
        A JSON integer, or a string ``"p"``, ``"p/q"`` or a finite decimal.
    max_digits : int
        Refuse numbers whose numerator or denominator has more decimal digits.
    where : str
        Location for the error message (``"target layer 2 weight[0][1]"``).

    Returns
    -------
    Fraction

    Raises
    ------
    NumberFormatError
        For floats, booleans, ``None``, malformed strings, zero denominators.
    LimitExceededError
        For numbers longer than ``max_digits``.
    """
    loc = f" at {where}" if where else ""
    if isinstance(value, bool) or value is None:
        raise NumberFormatError(f"expected an exact number{loc}, got {value!r}")
    if isinstance(value, int):
        _check_int_digits(value, max_digits, loc)
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    if isinstance(value, float):
        raise NumberFormatError(
            f"float {value!r}{loc} is not allowed; write it as a string \"p/q\" or a decimal string"
        )
    if not isinstance(value, str):
        raise NumberFormatError(f"expected an exact number{loc}, got {type(value).__name__}")
    if len(value) > 2 * max_digits + 8:
        raise LimitExceededError(f"number{loc} has more than {max_digits} digits")
    with unlimited_int_digits():
        m = _RATIONAL.match(value)
        if m:
            sign, p, q = m.groups()
            if len(p) > max_digits or (q is not None and len(q) > max_digits):
                raise LimitExceededError(f"number{loc} has more than {max_digits} digits")
            den = int(q) if q is not None else 1
            if den == 0:
                raise NumberFormatError(f"zero denominator in {value!r}{loc}")
            num = int(p)
            return Fraction(-num if sign else num, den)
        m = _DECIMAL.match(value)
        if m:
            if m.group(3) is not None:
                sign, ip, fp = m.group(1), m.group(2) or "0", m.group(3)
            else:
                sign, ip, fp = m.group(4), m.group(5), ""
            if len(ip) + len(fp) > max_digits:
                raise LimitExceededError(f"number{loc} has more than {max_digits} digits")
            num = int(ip + fp) if (ip + fp) else 0
            return Fraction(-num if sign else num, 10 ** len(fp))
    raise NumberFormatError(f"not an exact number{loc}: {value[:40]!r}")


_SCIENTIFIC = re.compile(r"^\s*([+-]?)(\d*)(?:\.(\d*))?[eE]([+-]?\d+)\s*$", re.ASCII)


def parse_option_number(value: Any, *, max_digits: int = DEFAULT_MAX_DIGITS,
                        where: str = "") -> Fraction:
    """A number typed on the command line (``--box``, ``--mean``, ``--scale``): everything
    :func:`parse_number` reads, and decimal exponents, exactly (``1e-3`` is 1/1000, not the
    float nearest to it). Files keep the stricter :func:`parse_number` vocabulary.

    >>> parse_option_number("1e-3"), parse_option_number("-2.5E2"), parse_option_number("1/3")
    (Fraction(1, 1000), Fraction(-250, 1), Fraction(1, 3))
    """
    if isinstance(value, str):
        m = _SCIENTIFIC.match(value)
        if m and (m.group(2) or m.group(3)):
            sign, ip, fp, exp = m.group(1), m.group(2) or "", m.group(3) or "", int(m.group(4))
            if len(ip) + len(fp) + abs(exp) > max_digits:
                raise LimitExceededError(f"number at {where or 'option'} has more than "
                                         f"{max_digits} digits")
            mantissa = Fraction(int(ip + fp or "0"), 10 ** len(fp))
            value10 = mantissa * Fraction(10) ** exp
            return -value10 if sign == "-" else value10
    return parse_number(value, max_digits=max_digits, where=where)


def _check_int_digits(value: int, max_digits: int, loc: str) -> None:
    """Refuse an integer with more than ``max_digits`` decimal digits (without printing it)."""
    bits = abs(value).bit_length()
    if bits <= max_digits * _LOG2_10 - 1:  # |value| < 2^bits ≤ 10^max_digits / 2: short enough
        return
    if abs(value) >= 10**max_digits:
        raise LimitExceededError(f"number{loc} has more than {max_digits} digits")


def format_number(x: Any) -> int | str:
    """Exact number → JSON value: integers below :data:`JSON_INT_LIMIT` in magnitude as JSON
    ints, every other number as a string ``"p"`` or ``"p/q"`` (lowest terms).

    The one writer of exact numbers (certificates, targets, exports, tables), so that the same
    number is written the same way everywhere. Accepts ``int``, ``Fraction``, python-flint
    ``fmpz``/``fmpq``.

    >>> format_number(2**53 - 1), format_number(-2**53), format_number(Fraction(6, -4))
    (9007199254740991, '-9007199254740992', '-3/2')
    """
    if isinstance(x, bool):
        raise TypeError("booleans are not numbers here")
    if isinstance(x, float):
        raise TypeError("refusing to write a float into an exact document")
    with unlimited_int_digits():
        if isinstance(x, int):
            return x if -JSON_INT_LIMIT < x < JSON_INT_LIMIT else str(x)
        if isinstance(x, Fraction):
            if x.denominator == 1:
                return format_number(x.numerator)
            return f"{x.numerator}/{x.denominator}"
        # python-flint fmpz / fmpq: str() is exact, unlimited and in lowest terms
        s = str(x)
        if "/" in s:
            return s
        return format_number(int(s))


def format_decimal(q: Fraction, places: int) -> str:
    """``q`` as a fixed-point decimal with ``places`` digits, rounded half up, in integer
    arithmetic (no float ever sees ``q``): for tables, never for certificates.

    >>> format_decimal(Fraction(29, 32), 4), format_decimal(Fraction(-1, 8), 2)
    ('0.9063', '-0.12')
    >>> format_decimal(Fraction(5, 2), 0)
    '3'
    """
    scaled = math.floor(q * 10**places + Fraction(1, 2))
    sign = "-" if scaled < 0 else ""
    s = f"{abs(scaled):0{places + 1}d}"
    return f"{sign}{s[:-places]}.{s[-places:]}" if places else f"{sign}{s}"


def float_to_fraction(x: float, *, where: str = "") -> Fraction:
    """Convert a finite float exactly to the dyadic rational it denotes (no rounding)."""
    loc = f" at {where}" if where else ""
    xf = float(x)
    if not math.isfinite(xf):
        raise NumberFormatError(f"non-finite value {xf!r}{loc}")
    return Fraction(xf)


def _reject_float(text: str) -> Any:
    raise NumberFormatError(
        f"JSON float {text} is not allowed; write exact numbers as integers or strings \"p/q\""
    )


def _reject_constant(text: str) -> Any:
    raise NumberFormatError(f"JSON constant {text} is not allowed")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, val in pairs:
        if key in out:
            raise InputError(f"duplicated JSON key {key!r}")
        out[key] = val
    return out


def strict_json_loads(text: str | bytes, *, what: str = "document",
                      max_digits: int = DEFAULT_MAX_DIGITS) -> Any:
    """``json.loads`` that refuses floats, NaN/Infinity and duplicated keys, with clear errors.

    JSON integer literals longer than ``max_digits`` digits are refused before conversion: CPython
    converts decimal strings to ``int`` in quadratic time (a 4 MB literal takes minutes).
    """
    def parse_int(literal: str) -> int:
        if len(literal) - literal.startswith("-") > max_digits:
            raise LimitExceededError(f"JSON integer in {what} has more than {max_digits} digits")
        return int(literal)

    try:
        with unlimited_int_digits():
            return json.loads(
                text,
                parse_float=_reject_float,
                parse_int=parse_int,
                parse_constant=_reject_constant,
                object_pairs_hook=_no_duplicates,
            )
    except (NumberFormatError, InputError):
        raise
    except RecursionError:
        raise InputError(f"{what} is nested too deeply") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} is not valid JSON: {exc}") from None
