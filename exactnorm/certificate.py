"""Certificate documents, format ``exactnorm.certificate`` versions 1 and 2.

SPEC §3 defines version 1, docs/certificate-format.md version 2.

Build one from a :class:`~exactnorm.constructions.Construction`, save it atomically (``.json`` or
``.json.gz``), load it strictly. Validity is *not* decided here: that is the independent checker's
job (:mod:`exactnorm.checker`).

Version 2 (what ``exactnorm certify`` writes) stores every rational vector and matrix as one
common denominator and integer numerators, ``{"den": D, "num": [...]}`` (docs/certificate-format.md
§1.1), and :func:`write_certificate` streams it: the document is encoded layer by layer into the
(gzip) file, so the JSON text of a deep network never exists in memory as a whole.

Correctness of the compact encoding: ``D`` is the least common multiple of the denominators and
``n_i = x_i·D`` exactly (python-flint's ``numer_denom``), so ``n_i / D = x_i``; nothing is rounded.
:func:`decode_compact` is the inverse (``"n/D"`` strings in lowest terms), used to hand a version-2
document to a reader that knows version 1 only. Determinism: keys are sorted, separators compact,
the gzip header has no time stamp, so equal constructions give equal bytes.

>>> from exactnorm.model.targets import demo_target
>>> from exactnorm.constructions import certify_theorem1
>>> doc = certificate_document(certify_theorem1(demo_target(), seed=0))
>>> doc["format"], doc["version"], doc["network"]["checkpoints"]
('exactnorm.certificate', 1, [2, 4, 6])
"""

from __future__ import annotations

import gzip
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from flint import fmpq_mat, fmpz_mat

from exactnorm.constructions.common import Construction
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    LimitExceededError,
    ShapeError,
)
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.linalg import clear_denominators, to_fmpq_mat
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    format_number,
    parse_number,
    strict_json_loads,
    unlimited_int_digits,
)
from exactnorm.model.network import FrozenLayer, FrozenNetwork, Skip
from exactnorm.model.targets import target_to_dict

__all__ = [
    "FORMAT",
    "VERSION",
    "DEFAULT_MAX_CERTIFICATE_BYTES",
    "network_to_dict",
    "certificate_document",
    "save_certificate",
    "load_certificate",
    "read_certificate_bytes",
    "certificate_bytes",
    "network_from_dict",
    "COMPACT_VERSION",
    "compact_numbers",
    "decode_compact",
    "write_certificate",
]

FORMAT = "exactnorm.certificate"
VERSION = 1
#: the version with common-denominator vectors and matrices (docs/certificate-format.md)
COMPACT_VERSION = 2
#: Largest certificate read unless the caller raises it (uncompressed bytes).
DEFAULT_MAX_CERTIFICATE_BYTES = 2 * 1024**3


def _rows(flat: list[Any], cols: int) -> list[list[Any]]:
    return [flat[r * cols:(r + 1) * cols] for r in range(len(flat) // cols)] if cols else []


def _json_integers(flat: list[int]) -> list[int | str]:
    """Integers as :func:`format_number` writes them (18 digits or more as strings), in bulk."""
    if not flat or (max(flat) < 10**17 and min(flat) > -10**16):
        return list(flat)  # the common case, decided once per vector or matrix
    with unlimited_int_digits():
        return [x if abs(x) < 10**18 else str(x) for x in flat]


def _matrix(M: Any) -> list[list[Any]]:
    if isinstance(M, fmpz_mat) and M.nrows() and M.ncols():
        # frozen weights are small integers: JSON ints, converted without per-entry formatting
        return _rows(_json_integers(list(map(int, M.entries()))), M.ncols())
    return [[format_number(x) for x in row] for row in M.tolist()]


def _numbers(values: Any, compact: bool) -> Any:
    if compact:
        return compact_numbers(values)
    if isinstance(values, (fmpz_mat, fmpq_mat)):
        return _matrix(values)
    return [format_number(x) for x in values]


def _weight(M: Any, compact: bool) -> Any:
    # integer frozen weights stay plain rows in both versions: a denominator 1 says nothing
    if isinstance(M, fmpz_mat):
        return _shared_matrix(M)
    return _matrix(M) if not compact else compact_numbers(M)


#: the rows of the last few integer matrices written, by identity: the trade-off shares one
#: identity-skip object between all its blocks, converted to Python integers once
_recent_rows: dict[int, tuple[Any, list[list[Any]]]] = {}


def _shared_matrix(M: fmpz_mat) -> list[list[Any]]:
    hit = _recent_rows.get(id(M))
    if hit is not None and hit[0] is M:
        return hit[1]
    rows = _matrix(M)
    if len(_recent_rows) >= 4:
        _recent_rows.pop(next(iter(_recent_rows)))
    _recent_rows[id(M)] = (M, rows)  # holding M keeps its id from being reused
    return rows


def _layer_dict(layer: FrozenLayer, compact: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "input": layer.input,
        "weight": _weight(layer.weight, compact),
        "gamma": _numbers(layer.gamma, compact),
        "beta": _numbers(layer.beta, compact),
        "activation": layer.activation,
    }
    if layer.skips:
        entry["skip"] = [{"from": s.source, "weight": _weight(s.weight, compact), "kind": s.kind}
                         for s in layer.skips]
    return entry


def network_to_dict(net: FrozenNetwork, *, compact: bool = False) -> dict[str, Any]:
    """The ``network`` section: layers (input, weight, γ, β, activation, skip), checkpoints.

    ``compact=True`` writes γ, β and rational weights as ``{"den": D, "num": …}`` (version 2).
    """
    return {"layers": [_layer_dict(layer, compact) for layer in net.layers],
            "checkpoints": list(net.checkpoints)}


def certificate_document(c: Construction, *, version: int = VERSION) -> dict[str, Any]:
    """The full document for a construction: version 1 (plain lists) or 2 (compact numbers).

    >>> from exactnorm.model.targets import demo_target
    >>> from exactnorm.constructions import certify_theorem1
    >>> v2 = certificate_document(certify_theorem1(demo_target(), seed=0), version=2)
    >>> v2["version"], sorted(v2["network"]["layers"][0]["gamma"])
    (2, ['den', 'num'])
    """
    doc = _document_parts(c, version)
    doc["network"]["layers"] = list(doc["network"]["layers"])
    return doc


def _document_parts(c: Construction, version: int) -> dict[str, Any]:
    """The document with ``network.layers`` as a lazy iterator (one layer encoded at a time)."""
    if version not in (VERSION, COMPACT_VERSION):
        raise InputError(f"certificate version must be {VERSION} or {COMPACT_VERSION}, "
                         f"got {version!r}")
    compact = version == COMPACT_VERSION
    doc: dict[str, Any] = {"format": FORMAT, "version": version}
    doc.update(_target_sections(c, compact))
    doc["network"] = {"layers": _LazyList(_layer_dict(layer, compact)
                                          for layer in c.network.layers),
                      "checkpoints": list(c.network.checkpoints)}
    doc["provenance"] = c.provenance
    doc["witnesses"] = c.witnesses
    return doc


def _target_sections(c: Construction, compact: bool) -> dict[str, Any]:
    if not compact:
        return target_to_dict(c.target)
    g = c.target
    return {
        "domain": {"lower": compact_numbers(g.lower), "upper": compact_numbers(g.upper)},
        "target": {"layers": [{"weight": compact_numbers(tl.weight),
                               "bias": compact_numbers(tl.bias),
                               "activation": tl.activation} for tl in g.layers]},
    }


def compact_numbers(values: Any) -> dict[str, Any]:
    """Exact vector or matrix → ``{"den": D, "num": …}`` with ``D`` the least common denominator.

    ``values`` is a python-flint matrix (numerators as rows) or a sequence of exact numbers
    (``fmpq``, ``fmpz``, ``int``, ``Fraction``). Integers of 18 digits or more are written as
    decimal strings, as in version 1, so that no JSON reader rounds them.

    >>> from fractions import Fraction
    >>> compact_numbers([Fraction(1, 2), Fraction(-1, 3), 2])
    {'den': 6, 'num': [3, -2, 12]}
    >>> compact_numbers([])
    {'den': 1, 'num': []}
    """
    if isinstance(values, (fmpz_mat, fmpq_mat)):
        numer, den = clear_denominators(values)
        flat = _json_integers(list(map(int, numer.entries())))
        return {"den": format_number(int(den)), "num": _rows(flat, numer.ncols())}
    items = list(values)
    if not items:
        return {"den": 1, "num": []}
    numer, den = clear_denominators(to_fmpq_mat([items]))
    return {"den": format_number(int(den)),
            "num": _json_integers(list(map(int, numer.entries())))}


def _compact_integer(x: Any, where: str) -> int:
    if type(x) is int:
        return x
    if isinstance(x, str) and x.lstrip("-").isdigit() and x.isascii():
        with unlimited_int_digits():
            return int(x)
    raise InvalidCertificateError(f"{where}: compact numbers must be JSON integers or decimal "
                                  f"integer strings, got {str(x)[:40]!r}")


def _decode_one(obj: dict[str, Any], where: str) -> list[Any]:
    den = _compact_integer(obj["den"], f"{where} den")
    if den <= 0:
        raise InvalidCertificateError(f"{where}: compact denominator must be positive, got {den}")

    def fraction(n: Any) -> int | str:
        num = _compact_integer(n, f"{where} num")
        g = math.gcd(num, den)
        return format_number(num // g) if g == den else f"{num // g}/{den // g}"

    nums = obj["num"]
    if not isinstance(nums, list):
        raise InvalidCertificateError(f"{where}: compact 'num' must be a list")
    with unlimited_int_digits():
        return [[fraction(n) for n in row] if isinstance(row, list) else fraction(row)
                for row in nums]


def decode_compact(obj: Any, where: str = "certificate") -> Any:
    """Replace every ``{"den": D, "num": …}`` in ``obj`` by the plain version-1 list it denotes.

    The values are unchanged (``"n/D"`` in lowest terms, integers as integers); everything else is
    copied as it is. A malformed compact object raises :class:`InvalidCertificateError`.

    >>> decode_compact({"gamma": {"den": 6, "num": [3, -2, 12]}, "activation": "relu"})
    {'gamma': ['1/2', '-1/3', 2], 'activation': 'relu'}
    """
    if isinstance(obj, dict):
        if set(obj) == {"den", "num"}:
            return _decode_one(obj, where)
        return {k: decode_compact(v, f"{where}.{k}") for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_compact(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj


class _LazyList:
    """An iterable that :func:`_encode_stream` writes as a JSON array, one element at a time."""

    def __init__(self, items: Iterable[Any]) -> None:
        self._items = items

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items)


def _encode_stream(obj: Any) -> Iterator[str]:
    """The JSON text of ``obj`` in pieces, byte-equal to :func:`certificate_bytes` without the
    final newline: dictionaries key by key (sorted), a :class:`_LazyList` element by element,
    everything else in one ``json.dumps`` call."""
    if isinstance(obj, dict):
        yield "{"
        for n, key in enumerate(sorted(obj)):
            yield ("," if n else "") + json.dumps(key) + ":"
            yield from _encode_stream(obj[key])
        yield "}"
    elif isinstance(obj, _LazyList):
        yield "["
        for n, item in enumerate(obj):
            if n:
                yield ","
            yield from _encode_stream(item)
        yield "]"
    else:
        yield json.dumps(obj, sort_keys=True, separators=(",", ":"))


def write_certificate(c: Construction, path: str | os.PathLike[str], *,
                      version: int = COMPACT_VERSION) -> int:
    """Stream the certificate of ``c`` to ``path`` (gzip when it ends in ``.gz``), atomically.

    Layers are encoded one at a time straight into the (compressed) file, so peak memory is one
    layer's text, not the document's. The bytes equal ``save_certificate(certificate_document(c,
    version=version), path)`` (tested).

    Parameters
    ----------
    c : Construction
    path : path-like
    version : {1, 2}
        2 (default) writes compact common-denominator numbers (docs/certificate-format.md).

    Returns
    -------
    int
        Bytes written (compressed size for ``.gz``).
    """
    return _write_pieces(path, _encode_stream(_document_parts(c, version)))


def certificate_bytes(doc: dict[str, Any]) -> bytes:
    """Deterministic serialization: sorted keys, compact separators, trailing newline."""
    with unlimited_int_digits():
        return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def save_certificate(doc: dict[str, Any], path: str | os.PathLike[str]) -> int:
    """Write ``doc`` atomically; gzip when ``path`` ends in ``.gz`` (any version inside).

    Returns the number of bytes written. The gzip header carries no time stamp, so equal documents
    give equal files; :func:`write_certificate` of the same construction writes the same bytes.
    """
    return _write_pieces(path, _encode_stream(doc))


def _write_pieces(path: str | os.PathLike[str], pieces: Iterable[str]) -> int:
    """Atomically write the text ``pieces`` plus a newline, through gzip for ``.gz``."""
    gz = str(path).endswith(".gz")

    def produce(fh: IO[bytes]) -> None:
        # level 6 (zlib's default) compresses decimal digits as well as 9, in less time; no file
        # name and no time stamp in the header, so equal text gives equal bytes
        sink: IO[bytes] = (gzip.GzipFile(filename="", mode="wb", fileobj=fh, compresslevel=6,
                                         mtime=0) if gz else fh)
        pending: list[bytes] = []
        size = 0
        with unlimited_int_digits():
            for piece in pieces:
                pending.append(piece.encode())
                size += len(pending[-1])
                if size >= 1 << 20:  # few large writes: gzip and the OS like them
                    sink.write(b"".join(pending))
                    pending, size = [], 0
        sink.write(b"".join(pending) + b"\n")
        if gz:
            sink.close()  # writes the gzip trailer; ``fh`` itself stays open

    atomic_write_bytes(path, produce)
    return os.path.getsize(path)


def read_certificate_bytes(path: str | os.PathLike[str], *,
                           max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES) -> bytes:
    """The bytes of a certificate file (gunzipped for ``.gz``), at most ``max_bytes`` of them.

    The limit applies to the uncompressed size, so a small ``.gz`` that inflates to gigabytes
    (a "gzip bomb") stops at ``max_bytes + 1`` bytes with a :class:`LimitExceededError`.
    An unreadable file is an :class:`InputError`; a corrupt gzip stream makes the certificate
    invalid (:class:`InvalidCertificateError`).
    """
    p = Path(path)
    if max_bytes < 0:
        raise InputError(f"the certificate size limit must be non-negative, got {max_bytes}")
    if not p.is_file():
        raise InputError(f"no such certificate file: {p}")
    try:
        if p.suffix == ".gz":
            with gzip.open(p, "rb") as fh:
                raw = fh.read(max_bytes + 1)
        else:
            with open(p, "rb") as fh:
                raw = fh.read(max_bytes + 1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InvalidCertificateError(f"certificate {p} is not a valid gzip file: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot read certificate {p}: {exc}") from None
    if len(raw) > max_bytes:
        raise LimitExceededError(f"certificate {p} exceeds {max_bytes} bytes "
                                 f"(raise the limit with --max-bytes)")
    return raw


def load_certificate(path: str | os.PathLike[str], *,
                     max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES,
                     max_digits: int = DEFAULT_MAX_DIGITS) -> dict[str, Any]:
    """Read a certificate strictly (no floats, no duplicate keys, size-limited)."""
    p = Path(path)
    raw = read_certificate_bytes(p, max_bytes=max_bytes)
    doc = strict_json_loads(raw, what=f"certificate {p}", max_digits=max_digits)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvalidCertificateError(f"{p} is not an {FORMAT} document")
    return doc


def network_from_dict(doc: dict[str, Any], *,
                      max_digits: int = DEFAULT_MAX_DIGITS) -> FrozenNetwork:
    """Rebuild the :class:`FrozenNetwork` of a certificate (for evaluation and export).

    This parses, it does not validate the proof: use the checker for that. Compact
    (version-2) numbers are accepted.
    """
    doc = decode_compact(doc)

    def vec(obj: Any, what: str) -> tuple[Any, ...]:
        if not isinstance(obj, list):
            raise ShapeError(f"{what} must be a list")
        return tuple(to_fmpq_mat([[parse_number(x, max_digits=max_digits, where=what)
                                   for x in obj]]).entries()) if obj else ()

    def mat(obj: Any, what: str) -> Any:
        if not isinstance(obj, list):
            raise ShapeError(f"{what} must be a list of rows")
        return to_fmpq_mat([[parse_number(x, max_digits=max_digits, where=what) for x in row]
                            if isinstance(row, list) else row for row in obj], what)

    try:
        net = doc["network"]
        d0 = len(doc["domain"]["lower"])
        layers = []
        for j, L in enumerate(net["layers"], 1):
            skips = tuple(Skip(int(s["from"]), mat(s["weight"], f"layer {j} skip weight"),
                               s["kind"]) for s in L.get("skip", []))
            layers.append(FrozenLayer(int(L["input"]), mat(L["weight"], f"layer {j} weight"),
                                      vec(L["gamma"], f"layer {j} gamma"),
                                      vec(L["beta"], f"layer {j} beta"), L["activation"], skips))
        return FrozenNetwork(d0, tuple(layers), tuple(int(c) for c in net["checkpoints"]))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        # int("abc") for a node index, a list where a mapping belongs, …
        raise InputError(f"certificate network section is malformed: {exc!r}"[:300]) from None
