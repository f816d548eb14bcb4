"""Reference regenerator of frozen random weights: generator ``exactnorm.shake256.v1``.

Standard library only; imports nothing from exactnorm outside the checker package, so that
both checkers (and a copy of the package run alone) can regenerate a frozen matrix from its
*draw record* without trusting the code that drew it (docs/certificate-format.md §2–§3,
docs/generator.md).

Contract. A draw record is a JSON object::

    {"generator": "exactnorm.shake256.v1", "seed": 0, "key": [1, 2, 0, 0],
     "distribution": "nonzero:8", "shape": [12, 3],
     "mask": {"p": "1/4", "key": [1, 2, 0, 1]}}          # optional

:func:`validate_record` accepts exactly the records of the format (and refuses every other value
with a one-line :class:`RecordError` naming the field), bounding ``rows · cols`` by a limit given
by the caller *before* anything is allocated; :func:`regenerate` returns the matrix as rows of
:class:`fractions.Fraction`.

Correctness argument. The byte stream of ``(seed, key)`` is SHAKE-256 of the ASCII string
``"exactnorm.shake256.v1|<seed>|<k1>,<k2>,…"``; SHAKE-256 is fixed by FIPS 202, so the stream is the
same on every machine and every Python. The stream is cut into 64-bit *little-endian* words (read
with ``memoryview.cast("Q")`` on little-endian hosts and with an explicit ``"<Q"`` unpack
elsewhere, because ``cast`` uses the native byte order), and every entry is a fixed integer
function of its own words, in row-major order — so the matrix is a function of the record alone.
The key string separates fields by ``|`` and key parts by ``,``, and decimal integers contain
neither, so two different ``(seed, key)`` never hash the same input.

Reference: Giannou, Rajput, Papailiopoulos, "The Expressive Power of Tuning Only the
Normalization Layers", COLT 2023, arXiv:2302.07937 — the theorem is about *random* frozen networks;
the record lets a certificate prove which random draw it uses.

>>> rows = regenerate({"generator": "exactnorm.shake256.v1", "seed": 0, "key": [1, 2],
...                    "distribution": "nonzero:8", "shape": [2, 3]})
>>> len(rows), len(rows[0]), all(1 <= abs(x) <= 8 and x.denominator == 1 for r in rows for x in r)
(2, 3, True)
"""

from __future__ import annotations

import hashlib
import re
import struct
import sys
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable  # noqa: UP035  (standalone: no collections.abc needed)

from .vocabulary import GENERATOR, MAX_MAP_ENTRIES

__all__ = [
    "GENERATOR",
    "DEFAULT_MAX_ENTRIES",
    "MAX_PARAMETER",
    "MAX_SET_VALUE",
    "MAX_GAUSS_BITS",
    "RecordError",
    "Mask",
    "DrawRecord",
    "stream_input",
    "stream_words",
    "validate_record",
    "regenerate",
    "regenerate_integers",
    "regenerate_integers_flat",
    "regenerate_mask",
    "words_per_entry",
    "max_probability",
    "min_entropy_bits",
]

#: default bound on ``rows · cols`` of one record (the caller may pass its own)
DEFAULT_MAX_ENTRIES = MAX_MAP_ENTRIES
#: largest ``B`` of ``int:B``, ``nonzero:B``, ``rational:B`` and largest ``b`` of ``bits:b`` is 62:
#: every modulus ``2B+1`` stays below ``2^64``, so one word per draw suffices
MAX_PARAMETER = 1 << 62
MAX_BITS = 62
#: values of ``set:…`` lie strictly inside ``(−2^62, 2^62)`` (they fit a signed 64-bit word)
MAX_SET_VALUE = 1 << 62
#: ``gauss:b`` needs ``b ≤ 52`` (its twelve summands of ``b`` bits are exact; the bound keeps the
#: distribution meaningful and equal to what the doc promises, not a wrap-around)
MAX_GAUSS_BITS = 52
#: words of the stream consumed by one entry
_WORDS_PER_ENTRY = {"int": 1, "bits": 1, "nonzero": 1, "set": 1, "rational": 2, "gauss": 12}
_RECORD_FIELDS = {"generator", "seed", "key", "distribution", "shape", "mask"}
# at most 40 digits (every accepted value is below 2^62): int() never meets CPython's digit limit
_DECIMAL = r"(?:0|[1-9][0-9]{0,39})"
_SIGNED = r"(?:0|-?[1-9][0-9]{0,39})"  # canonical: no "-0", no leading zeros
_DIST = re.compile(rf"(int|nonzero|bits|rational|gauss):({_DECIMAL})")
_SET = re.compile(rf"set:({_SIGNED}(?:,{_SIGNED})*)")
_RATIO = re.compile(rf"({_DECIMAL})/({_DECIMAL})")
_LITTLE_ENDIAN = sys.byteorder == "little"
#: integer laws with at most this many values map words through a precomputed table
_TABLE_LIMIT = 1 << 16


class RecordError(ValueError):
    """A malformed or over-limit draw record (one line, naming the field)."""


@dataclass(frozen=True)
class Mask:
    """A validated mask: Bernoulli ``num/den`` on stream ``key``, or a fixed set of ``columns``."""

    num: int = 0
    den: int = 1
    key: tuple[int, ...] | None = None
    columns: tuple[int, ...] | None = None


@dataclass(frozen=True)
class DrawRecord:
    """A validated draw record; ``law``/``param``/``values`` name the entry distribution."""

    seed: int
    key: tuple[int, ...]
    law: str
    param: int
    values: tuple[int, ...]
    rows: int
    cols: int
    mask: Mask | None

    @property
    def distribution(self) -> str:
        if self.law == "set":
            return "set:" + ",".join(map(str, self.values))
        return f"{self.law}:{self.param}"


# ---------------------------------------------------------------- the stream


def stream_input(seed: int, key: tuple[int, ...] | list[int]) -> bytes:
    """The bytes hashed for stream ``(seed, key)``.

    >>> stream_input(0, (1, 2, 0, 0))
    b'exactnorm.shake256.v1|0|1,2,0,0'
    """
    return f"{GENERATOR}|{seed}|{','.join(map(str, key))}".encode("ascii")


def stream_words(seed: int, key: tuple[int, ...] | list[int], count: int) -> list[int]:
    """The first ``count`` 64-bit little-endian words ``u_0, u_1, …`` of stream ``(seed, key)``.

    Parameters
    ----------
    seed, key
        Non-negative integers (not checked here: :func:`validate_record` checks records).
    count
        Number of words; ``8 · count`` bytes are squeezed in one call.

    Returns
    -------
    list of int
        Integers in ``[0, 2^64)``.

    >>> stream_words(0, (), 2) == stream_words(0, (), 3)[:2]
    True
    """
    data = hashlib.shake_256(stream_input(seed, key)).digest(8 * count) if count else b""
    if _LITTLE_ENDIAN:
        return memoryview(data).cast("Q").tolist()
    return list(struct.unpack(f"<{count}Q", data))


# ---------------------------------------------------------------- validation


def _shown(value: Any) -> str:
    """``repr(value)`` cut to 60 characters, safe for any input: an int of thousands of digits
    (which ``repr`` refuses under CPython's digit limit) is shown by its bit size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"({value.bit_length()}-bit integer)"
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _nonneg_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordError(f"draw record: {what} must be a non-negative integer, "
                          f"got {_shown(value)}")
    return value


def _key(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise RecordError(f"draw record: {what} must be a list of non-negative integers, "
                          f"got {_shown(value)}")
    if len(value) > 64:
        raise RecordError(f"draw record: {what} has {len(value)} parts, at most 64 allowed")
    parts = tuple(_nonneg_int(k, f"{what} part") for k in value)
    if any(k.bit_length() > 64 for k in parts):
        raise RecordError(f"draw record: {what} parts must be below 2^64")
    return parts


def _distribution(spec: Any) -> tuple[str, int, tuple[int, ...]]:
    if not isinstance(spec, str) or len(spec) > 100_000:
        raise RecordError(f"draw record: distribution must be a string such as 'nonzero:8', "
                          f"got {_shown(spec)}")
    m = _DIST.fullmatch(spec)
    if m:
        law, param = m.group(1), int(m.group(2))
        lo, hi = {"int": (1, MAX_PARAMETER), "nonzero": (1, MAX_PARAMETER),
                  "rational": (1, MAX_PARAMETER), "bits": (0, MAX_BITS),
                  "gauss": (1, MAX_GAUSS_BITS)}[law]
        if not lo <= param <= hi:
            raise RecordError(f"draw record: distribution {law!r} needs a parameter in "
                              f"[{lo}, {hi}], got {param}")
        return law, param, ()
    m = _SET.fullmatch(spec)
    if m:
        values = tuple(int(v) for v in m.group(1).split(","))
        if any(abs(v) >= MAX_SET_VALUE for v in values):
            raise RecordError("draw record: set values must lie strictly between -2^62 and 2^62")
        return "set", len(values), values
    raise RecordError(f"draw record: unknown distribution {_shown(spec)}; expected int:B, "
                      f"nonzero:B, bits:b, set:a,b,…, rational:B or gauss:b")


def _mask(value: Any, cols: int) -> Mask:
    if not isinstance(value, dict):
        raise RecordError(f"draw record: mask must be an object, got {_shown(value)}")
    if set(value) == {"columns"}:
        columns = value["columns"]
        if not isinstance(columns, list):
            raise RecordError("draw record: mask columns must be a list of column indices")
        cs = tuple(_nonneg_int(c, "mask column") for c in columns)
        if any(a >= b for a, b in zip(cs, cs[1:])) or (cs and cs[-1] >= cols):
            raise RecordError(f"draw record: mask columns must be strictly increasing indices "
                              f"in [0, {cols})")
        return Mask(columns=cs)
    if set(value) != {"p", "key"}:
        raise RecordError(f"draw record: mask must have exactly the fields 'p' and 'key', or "
                          f"only 'columns'; got {_shown(sorted(map(str, value)))}")
    p = value["p"]
    if isinstance(p, int) and not isinstance(p, bool) and p in (0, 1):
        num, den = int(p), 1
    elif isinstance(p, str) and _RATIO.fullmatch(p):
        num, den = (int(x) for x in p.split("/"))
        if not 0 < num < den or den > MAX_PARAMETER or Fraction(num, den).denominator != den:
            raise RecordError(f"draw record: mask p {p!r} must be a fraction a/b in lowest "
                              f"terms with 0 < a < b <= 2^62 (or the integer 0 or 1)")
    else:
        raise RecordError(f"draw record: mask p must be a string 'a/b' or the integer 0 or 1, "
                          f"got {_shown(p)}")
    return Mask(num=num, den=den, key=_key(value["key"], "mask key"))


def validate_record(record: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> DrawRecord:
    """Check a draw record and return it parsed; refuse anything else with one clear line.

    Parameters
    ----------
    record
        The decoded JSON object.
    max_entries
        Largest ``rows · cols`` accepted; checked before any allocation.

    Returns
    -------
    DrawRecord

    Raises
    ------
    RecordError
        Unknown or missing field, wrong generator, bad seed/key/distribution/shape/mask, a mask
        stream equal to the matrix stream, or ``rows · cols > max_entries``.

    >>> validate_record({"generator": "exactnorm.shake256.v1", "seed": 0,  # doctest: +ELLIPSIS
    ...                  "key": [], "distribution": "int:8", "shape": [3, 10]},
    ...                 max_entries=20)
    Traceback (most recent call last):
    ...
    exactnorm.checker.regenerate.RecordError: draw record: shape 3 x 10 has 30 entries, above ...
    """
    if not isinstance(record, dict):
        raise RecordError(f"draw record must be an object, got {type(record).__name__}")
    missing = sorted(_RECORD_FIELDS - {"mask"} - set(record))
    if missing:
        raise RecordError(f"draw record: missing field {missing[0]!r}")
    extra = sorted(set(record) - _RECORD_FIELDS, key=str)
    if extra:
        raise RecordError(f"draw record: unknown field {_shown(extra[0])}")
    if record["generator"] != GENERATOR:
        raise RecordError(f"draw record: unknown generator {_shown(record['generator'])}; "
                          f"only {GENERATOR!r} exists")
    seed = _nonneg_int(record["seed"], "seed")
    if seed.bit_length() > 256:
        raise RecordError("draw record: seed has more than 256 bits")
    key = _key(record["key"], "key")
    law, param, values = _distribution(record["distribution"])
    shape = record["shape"]
    if not isinstance(shape, list) or len(shape) not in (2, 4):
        raise RecordError(f"draw record: shape must be [rows, cols] or [channels, C, kh, kw], "
                          f"got {_shown(shape)}")
    sizes = [_nonneg_int(n, "shape") for n in shape]
    if any(n.bit_length() > 64 for n in sizes):
        raise RecordError(f"draw record: shape {_shown(shape)} has a part of more than 64 bits")
    # a 4-d kernel [c1, C, kh, kw] is the same words as the matrix [c1, C·kh·kw] (row-major)
    rows, cols = sizes[0], sizes[1] * (sizes[2] * sizes[3] if len(sizes) == 4 else 1)
    if rows * cols > max_entries:
        raise RecordError(f"draw record: shape {' x '.join(map(_shown, sizes))} has "
                          f"{_shown(rows * cols)} entries, above "
                          f"the limit {max_entries}")
    words = rows * cols * _WORDS_PER_ENTRY[law] * (2 if "mask" in record else 1)
    if words > 2 * max_entries:
        raise RecordError(f"draw record: {_shown(rows * cols)} entries of {law} read "
                          f"{_shown(words)} stream words, above the limit {2 * max_entries}")
    if len(sizes) == 4 and "mask" in record:
        raise RecordError("draw record: a 4-d kernel record has no mask")
    mask = _mask(record["mask"], cols) if "mask" in record else None
    if mask is not None and mask.key == key:
        raise RecordError("draw record: the mask stream key equals the matrix stream key")
    return DrawRecord(seed, key, law, param, values, rows, cols, mask)


# ---------------------------------------------------------------- min-entropy


def words_per_entry(rec: DrawRecord) -> int:
    """Stream words one entry reads (a Bernoulli mask reads one more per entry)."""
    return _WORDS_PER_ENTRY[rec.law]


def _residue(n: int) -> int:
    """``⌈2^64/n⌉``: the most words ``u`` below ``2^64`` with one residue ``u mod n``."""
    return -(-(1 << 64) // n)


def _gauss_mode(b: int) -> int:
    """How many 12-tuples of ``b``-bit words sum to ``6·(2^b − 1)``, the most likely sum
    (inclusion–exclusion over the summands that reach ``2^b``)."""
    from math import comb

    s, n = 6 * ((1 << b) - 1), 1 << b
    return sum((-1) ** k * comb(12, k) * comb(s - k * n + 11, 11)
               for k in range(13) if s - k * n >= 0)


def max_probability(rec: DrawRecord) -> tuple[int, int, int, int]:
    """Upper bounds ``(p_num, p_den, z_num, z_den)`` of the probability of the most likely value
    of one drawn entry and of the value 0, before any mask (docs/generator.md §7).

    A residue ``u mod n`` of a uniform 64-bit word has probability at most ``⌈2^64/n⌉/2^64``;
    ``gauss:b`` takes ``b`` low bits of each word, which are exactly uniform.

    >>> r = validate_record({"generator": GENERATOR, "seed": 0, "key": [], "shape": [1, 1],
    ...                      "distribution": "set:1,1,2"})
    >>> max_probability(r) == (2 * _residue(3), 1 << 64, 0, 1 << 64)
    True
    """
    two64 = 1 << 64
    if rec.law == "gauss":
        den = 1 << (12 * rec.param)
        return _gauss_mode(rec.param), den, _gauss_mode(rec.param), den
    if rec.law == "set":
        n = len(rec.values)
        counts = Counter(rec.values)
        most, zero = max(counts.values()), counts.get(0, 0)
        return min(most * _residue(n), two64), two64, min(zero * _residue(n), two64), two64
    n = {"int": 2 * rec.param + 1, "nonzero": 2 * rec.param, "rational": 2 * rec.param + 1,
         "bits": 2 * (1 << rec.param) + 1}[rec.law]
    # rational: a value's numerator is one residue of the first word, whatever the denominator
    return _residue(n), two64, (0 if rec.law == "nonzero" else _residue(n)), two64


def _log2_floor_1024(num: int, den: int) -> int:
    """A lower bound of ``1024·log2(den/num)`` for ``0 < num ≤ den``, in integers: the integer
    part ``k`` exactly, then ten binary digits of ``log2(y)``, ``y = den/(num·2^k)`` in
    ``[1, 2)``, by repeated squaring of ``y`` as a fixed-point number with 128 fractional bits,
    rounded down at each step (docs/generator.md §7). Rounding down can only lower a digit, so
    the result never exceeds ``⌊1024·log2(den/num)⌋``; its cost does not depend on the size of
    the numbers.

    >>> _log2_floor_1024(1, 16), _log2_floor_1024(1, 3), _log2_floor_1024(5, 5)
    (4096, 1623, 0)
    """
    k = den.bit_length() - num.bit_length()
    if (num << k) > den:
        k -= 1
    frac = 128
    y = (den << frac) // (num << k)
    e = 0
    for _ in range(10):
        y = (y * y) >> frac
        e <<= 1
        if y >= 2 << frac:
            e |= 1
            y >>= 1
    return (k << 10) + e


def min_entropy_bits(rec: DrawRecord) -> int:
    """A lower bound, in whole bits, of the min-entropy of the matrix a record draws:
    ``⌊n·⌊1024·log2(1/p)⌋/1024⌋`` for the ``n`` entries that are not structurally zero and
    ``p`` the bound of :func:`max_probability` of one entry, combined with a Bernoulli mask
    (docs/generator.md §7). 0 for a constant draw (``set`` with one value) and for a mask with
    ``p = 0``: such a matrix is not random.

    >>> r = validate_record({"generator": GENERATOR, "seed": 0, "key": [], "shape": [2, 3],
    ...                      "distribution": "nonzero:8"})
    >>> min_entropy_bits(r)  # 6 entries of 4 bits (a residue mod 16 of a 64-bit word)
    24
    """
    pn, pd, zn, zd = max_probability(rec)
    n = rec.rows * rec.cols
    mask = rec.mask
    if mask is not None and mask.columns is not None:
        n = rec.rows * len(mask.columns)
    elif mask is not None:
        if mask.num == 0:
            return 0
        if mask.num != mask.den:
            two64, r = 1 << 64, _residue(mask.den)
            keep = min(mask.num * r, two64)  # over 2^64
            drop = min((mask.den - mask.num) * r, two64)
            # the most likely masked value: 0 (dropped, or kept and 0) or the most likely kept
            # one; both over 2^64·zd·pd
            zero = min(drop * zd + keep * zn, two64 * zd) * pd
            most = keep * pn * zd
            pn, pd = max(zero, most), two64 * zd * pd
    if n == 0 or pn >= pd:
        return 0
    return n * _log2_floor_1024(pn, pd) // 1024


# ---------------------------------------------------------------- regeneration


def _integer_map(rec: DrawRecord) -> tuple[int, Callable[[int], int]]:
    """``(n, value)``: an integer-law entry is ``value(u mod n)`` of its one word ``u``."""
    if rec.law == "set":
        return len(rec.values), rec.values.__getitem__
    if rec.law == "nonzero":
        bound = rec.param
        # t - B + [t >= B] skips 0: t in [0, B) -> [-B, -1], t in [B, 2B) -> [1, B]
        return 2 * bound, lambda t: t - bound + (t >= bound)
    bound = rec.param if rec.law == "int" else 1 << rec.param
    return 2 * bound + 1, lambda t: t - bound


def _entries(rec: DrawRecord, convert: Callable[[int], Any]) -> list[Any]:
    """Row-major flat entries before masking; integer laws pass through ``convert``."""
    n = rec.rows * rec.cols
    if rec.law not in ("rational", "gauss"):
        modulus, value = _integer_map(rec)
        if 256 % modulus == 0:
            # n divides 2^8, so u mod n is the low byte of u mod n, and the low byte of a
            # little-endian word is its first: read every eighth byte, no word is built
            data = hashlib.shake_256(stream_input(rec.seed, rec.key)).digest(8 * n) if n else b""
            # byte b maps to value(b mod n): the n values repeated 256/n times, converted once
            by_byte = [convert(value(t)) for t in range(modulus)] * (256 // modulus)
            return list(map(by_byte.__getitem__, data[0::8]))
    u = stream_words(rec.seed, rec.key, _WORDS_PER_ENTRY[rec.law] * n)
    if rec.law == "rational":
        bound, modulus = rec.param, 2 * rec.param + 1
        return [Fraction(a % modulus - bound, 1 + b % bound) for a, b in zip(u[0::2], u[1::2])]
    if rec.law == "gauss":
        # Irwin–Hall: twelve uniforms on {0, 1/2^b, …, 1 − 1/2^b}, summed, minus 6
        scale = 1 << rec.param
        low = scale - 1
        return [Fraction(sum(x & low for x in u[12 * i:12 * i + 12]) - 6 * scale, scale)
                for i in range(n)]
    modulus, value = _integer_map(rec)
    if modulus <= _TABLE_LIMIT:
        # one shared (immutable) object per value: Fraction() per entry would dominate the time
        table = [convert(value(t)) for t in range(modulus)]
        return [table[x % modulus] for x in u]
    return [convert(value(x % modulus)) for x in u]


def regenerate_mask(rec: DrawRecord) -> list[bool] | None:
    """Row-major keep-flags of the record's mask (``None`` without a mask)."""
    mask = rec.mask
    if mask is None:
        return None
    n = rec.rows * rec.cols
    if mask.columns is not None:
        keep = [False] * rec.cols
        for c in mask.columns:
            keep[c] = True
        return keep * rec.rows
    if mask.num == 0:
        return [False] * n
    if mask.num == mask.den:
        return [True] * n
    assert mask.key is not None
    num, den = mask.num, mask.den
    return [x % den < num for x in stream_words(rec.seed, mask.key, n)]


def _flat(rec: DrawRecord, convert: Callable[[int], Any]) -> list[Any]:
    """Row-major entries, masked-out entries 0."""
    flat = _entries(rec, convert)
    keep = regenerate_mask(rec)
    if keep is not None:
        zero = convert(0)
        flat = [x if k else zero for x, k in zip(flat, keep)]
    return flat


def _matrix(rec: DrawRecord, convert: Callable[[int], Any]) -> list[list[Any]]:
    flat = _flat(rec, convert)
    cols = rec.cols
    return [flat[i * cols:(i + 1) * cols] for i in range(rec.rows)]


def regenerate(record: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> list[list[Fraction]]:
    """Regenerate the matrix a draw record describes, bit for bit.

    Parameters
    ----------
    record
        A draw record (docs/certificate-format.md §2).
    max_entries
        Largest ``rows · cols`` accepted (checked before allocating).

    Returns
    -------
    list of list of Fraction
        ``rows`` rows of ``cols`` exact entries (masked-out entries are ``0``).

    Raises
    ------
    RecordError
        When :func:`validate_record` refuses the record.
    """
    return _matrix(validate_record(record, max_entries=max_entries), Fraction)


def regenerate_integers(record: Any, *,
                        max_entries: int = DEFAULT_MAX_ENTRIES) -> list[list[int]]:
    """Like :func:`regenerate` for integer distributions, as plain ``int`` (faster to compare).

    Raises
    ------
    RecordError
        For ``rational:B`` and ``gauss:b`` (not integer-valued) and for malformed records.
    """
    rec = validate_record(record, max_entries=max_entries)
    if rec.law in ("rational", "gauss"):
        raise RecordError(f"draw record: {rec.distribution} is not an integer distribution")
    return _matrix(rec, int)


def regenerate_integers_flat(record: Any, *, max_entries: int = DEFAULT_MAX_ENTRIES,
                             convert: Callable[[int], Any] = int) -> tuple[int, int, list[Any]]:
    """:func:`regenerate_integers` as ``(rows, cols, row-major entries)``: what a matrix
    library builds from directly, without a list per row. ``convert`` maps each integer value
    to the library's integer type; it is called once per possible value when there are at most
    2^16 of them, so the entries share those objects.

    >>> rows, cols, flat = regenerate_integers_flat({"generator": "exactnorm.shake256.v1",
    ...     "seed": 0, "key": [1], "distribution": "int:8", "shape": [2, 3]})
    >>> (rows, cols, len(flat)) == (2, 3, 6)
    True
    """
    rec = validate_record(record, max_entries=max_entries)
    if rec.law in ("rational", "gauss"):
        raise RecordError(f"draw record: {rec.distribution} is not an integer distribution")
    return rec.rows, rec.cols, _flat(rec, convert)
