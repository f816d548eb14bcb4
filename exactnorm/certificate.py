"""Certificate documents, format ``exactnorm.certificate`` version 1 (SPEC §3).

Build one from a :class:`~exactnorm.constructions.Construction`, save it atomically (``.json`` or
``.json.gz``), load it strictly. Validity is *not* decided here: that is the independent checker's
job (:mod:`exactnorm.checker`).

>>> from exactnorm.model.targets import demo_target
>>> from exactnorm.constructions import certify_theorem1
>>> doc = certificate_document(certify_theorem1(demo_target(), seed=0))
>>> doc["format"], doc["version"], doc["network"]["checkpoints"]
('exactnorm.certificate', 1, [2, 4, 6])
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

from flint import fmpz_mat

from exactnorm.constructions.common import Construction
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    LimitExceededError,
    ShapeError,
)
from exactnorm.exact.files import atomic_write_bytes
from exactnorm.exact.linalg import to_fmpq_mat
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
    "MAX_CERTIFICATE_BYTES_CAP",
    "network_to_dict",
    "certificate_document",
    "save_certificate",
    "load_certificate",
    "read_certificate_bytes",
    "certificate_bytes",
    "network_from_dict",
]

FORMAT = "exactnorm.certificate"
VERSION = 1
#: Largest certificate read unless the caller raises it (uncompressed bytes).
DEFAULT_MAX_CERTIFICATE_BYTES = 2 * 1024**3
#: Largest limit a caller may set (1 TiB); the limit guards memory, so a larger one guards nothing.
MAX_CERTIFICATE_BYTES_CAP = 1024**4


def _matrix(M: Any) -> list[list[Any]]:
    if isinstance(M, fmpz_mat) and M.nrows() and M.ncols():
        # frozen weights are small integers: format_number(fmpz) keeps an integer as a JSON int
        # when its decimal string has fewer than 18 characters; decide that once per matrix
        rows = [[int(x) for x in row] for row in M.tolist()]
        if all(-10**16 < x < 10**17 for row in rows for x in row):
            return rows
    return [[format_number(x) for x in row] for row in M.tolist()]


def network_to_dict(net: FrozenNetwork) -> dict[str, Any]:
    """The ``network`` section: layers (input, weight, γ, β, activation, skip), checkpoints."""
    layers = []
    for layer in net.layers:
        entry: dict[str, Any] = {
            "input": layer.input,
            "weight": _matrix(layer.weight),
            "gamma": [format_number(x) for x in layer.gamma],
            "beta": [format_number(x) for x in layer.beta],
            "activation": layer.activation,
        }
        if layer.skips:
            entry["skip"] = [{"from": s.source, "weight": _matrix(s.weight), "kind": s.kind}
                             for s in layer.skips]
        layers.append(entry)
    return {"layers": layers, "checkpoints": list(net.checkpoints)}


def certificate_document(c: Construction) -> dict[str, Any]:
    """The full version-1 document for a construction."""
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    doc.update(target_to_dict(c.target))
    doc["network"] = network_to_dict(c.network)
    doc["provenance"] = c.provenance
    doc["witnesses"] = c.witnesses
    return doc


def certificate_bytes(doc: dict[str, Any]) -> bytes:
    """Deterministic serialization: sorted keys, compact separators, trailing newline."""
    with unlimited_int_digits():
        return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def save_certificate(doc: dict[str, Any], path: str | os.PathLike[str]) -> int:
    """Write atomically; gzip when ``path`` ends in ``.gz`` (still version 1 inside).

    Returns the number of bytes written. The gzip header carries no time stamp, so equal documents
    give equal files.
    """
    data = certificate_bytes(doc)
    if str(path).endswith(".gz"):
        # level 6 (zlib's default) compresses decimal digits as well as 9, in less time
        data = gzip.compress(data, compresslevel=6, mtime=0)
    atomic_write_bytes(path, lambda fh: fh.write(data))
    return len(data)


def read_certificate_bytes(path: str | os.PathLike[str], *,
                           max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES) -> bytes:
    """The bytes of a certificate file (gunzipped for ``.gz``), at most ``max_bytes`` of them.

    One reader for the command line and the standalone checker
    (:func:`exactnorm.checker.read_file_bytes`): regular files only (a directory, FIFO or device
    is refused by name before any byte is read), read in chunks so that memory follows the
    file and not the limit, and a ``.gz`` is inflated once without keeping anything before it is
    kept, so a gzip bomb costs O(1 MiB) of memory.

    Parameters
    ----------
    path
        ``.json`` or ``.json.gz`` file.
    max_bytes
        Largest uncompressed size, at most :data:`MAX_CERTIFICATE_BYTES_CAP`.

    Returns
    -------
    bytes
        The (uncompressed) content; a ``bytearray`` (json reads it without a copy).

    Raises
    ------
    LimitExceededError
        Above ``max_bytes`` (or a limit outside ``0..MAX_CERTIFICATE_BYTES_CAP``).
    InputError
        Missing, not a regular file, unreadable.
    InvalidCertificateError
        A corrupt gzip stream.
    """
    from exactnorm.checker import ReadError, read_file_bytes

    if not 0 <= max_bytes <= MAX_CERTIFICATE_BYTES_CAP:
        raise LimitExceededError(f"--max-bytes must be between 0 and {MAX_CERTIFICATE_BYTES_CAP} "
                                 f"(1 TiB), got {max_bytes}")
    try:
        return read_file_bytes(path, max_bytes)  # type: ignore[return-value]
    except ReadError as exc:
        error = {"limit": LimitExceededError, "corrupt": InvalidCertificateError}.get(exc.kind,
                                                                                  InputError)
        raise error(str(exc)) from None


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

    This parses, it does not validate the proof: use the checker for that.
    """
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
