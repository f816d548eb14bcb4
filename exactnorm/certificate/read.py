"""Reading certificate files and documents: strict, size-limited reading of ``.json`` and
``.json.gz`` files, the frozen network of a dense document (``network_from_dict``), version-2
documents written out as plain lists (``expand_document``), and both networks of a document of
any kinds (``read_networks``, ``read_target``). The writing half is
:mod:`exactnorm.certificate.write`; :mod:`exactnorm.certificate` re-exports both. This reads; it
does not decide validity: that is the independent checker's job (:mod:`exactnorm.checker`).

The exact reading of a document of any kind and version is
:func:`~exactnorm.certificate.read_kinds.read_networks` (the checker's reader and its typed
records); ``network_from_dict`` stays for dense documents that need not pass the checker's
structural rules (edited documents of the tests and of the JSON export's fallback).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from exactnorm.certificate.compact import decode_compact, expand_skip, weight_json
from exactnorm.checker import ReadError, read_file_bytes
from exactnorm.checker.regenerate import RecordError, validate_record
from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES as DEFAULT_MAX_CERTIFICATE_BYTES
from exactnorm.checker.vocabulary import (
    FORMAT,
)
from exactnorm.checker.vocabulary import MAX_BYTES_CAP as MAX_CERTIFICATE_BYTES_CAP
from exactnorm.checker.vocabulary import MAX_MAP_ENTRIES as DEFAULT_MAX_ENTRIES
from exactnorm.errors import (
    ExactnormError,
    InputError,
    InvalidCertificateError,
    LimitExceededError,
    ShapeError,
)
from exactnorm.exact.generator import matrix_from_record
from exactnorm.exact.linalg import to_fmpq_mat
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    parse_number,
    strict_json_loads,
)
from exactnorm.model.network import FrozenLayer, FrozenNetwork, Skip

__all__ = ["read_certificate_bytes", "load_certificate", "network_from_dict", "expand_document",
           "regenerate_record"]


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
    InputError
        Also a truncated or corrupt gzip stream (unreadable input, not an invalid proof).
    """
    if not 0 <= max_bytes <= MAX_CERTIFICATE_BYTES_CAP:
        raise LimitExceededError(f"--max-bytes must be between 0 and {MAX_CERTIFICATE_BYTES_CAP} "
                                 f"(1 TiB), got {max_bytes}")
    try:
        raw = read_file_bytes(path, max_bytes)
    except ReadError as exc:
        if exc.reason == "corrupt":
            # unreadable input (exit 2), named as what it is, not as bad JSON or an invalid proof
            detail = str(exc).split(": ", 1)[-1]
            raise InputError(f"certificate {os.fspath(path)} is a truncated or corrupt gzip file "
                             f"({detail})") from None
        error = LimitExceededError if exc.reason == "limit" else InputError
        raise error(str(exc)) from None
    if not raw:
        raise InputError(f"certificate {os.fspath(path)} is empty (0 bytes)")
    return raw  # type: ignore[return-value]


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


def network_from_dict(doc: dict[str, Any], *, max_digits: int = DEFAULT_MAX_DIGITS,
                      max_entries: int = DEFAULT_MAX_ENTRIES) -> FrozenNetwork:
    """Rebuild the :class:`FrozenNetwork` of a certificate, version 1 or 2 (for evaluation and
    export).

    This parses, it does not validate the proof: use the checker for that. Compact
    (version-2 and 3) numbers are accepted; by-reference weights are regenerated from their
    draw records (at most ``max_entries`` entries each); records of explicit weights are kept on
    the layers (``FrozenLayer.record``) unchecked.
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

    def frozen(obj: dict[str, Any], what: str) -> tuple[Any, dict[str, Any] | None]:
        """A frozen matrix (explicit or by reference) and its record, if any."""
        weight, source = expand_skip(obj["weight"]), obj.get("source")
        if isinstance(weight, dict) and set(weight) == {"random"}:
            if source is not None:
                raise InputError(f"{what} is given by reference and also has a 'source'")
            return regenerate_record(weight["random"], what, max_entries), weight["random"]
        if source is not None and not isinstance(source, dict):
            raise InputError(f"{what} source must be an object")
        return mat(weight, what), source

    try:
        net = doc["network"]
        d0 = len(doc["domain"]["lower"])
        layers = []
        for j, L in enumerate(net["layers"], 1):
            skips = []
            for s in L.get("skip", []):
                skip_weight, skip_record = frozen(s, f"layer {j} skip weight")
                skips.append(Skip(int(s["from"]), skip_weight, s["kind"], record=skip_record))
            weight, record = frozen(L, f"layer {j} weight")
            layers.append(FrozenLayer(int(L["input"]), weight,
                                      vec(L["gamma"], f"layer {j} gamma"),
                                      vec(L["beta"], f"layer {j} beta"), L["activation"],
                                      tuple(skips), record=record))
        return FrozenNetwork(d0, tuple(layers), tuple(int(c) for c in net["checkpoints"]))
    except ExactnormError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        # int("abc") for a node index, a list where a mapping belongs, …
        raise InputError(f"certificate network section is malformed: {exc!r}"[:300]) from None


def regenerate_record(record: Any, what: str, max_entries: int = DEFAULT_MAX_ENTRIES) -> Any:
    """The matrix of a by-reference weight: the reference validates, the fast generator draws."""
    try:
        validate_record(record, max_entries=max_entries)
    except RecordError as exc:
        if "above the limit" in str(exc):
            raise LimitExceededError(f"{what}: {exc} (raise it with --max-entries)") from None
        raise InputError(f"{what}: {exc}") from None
    return matrix_from_record(record)


def expand_document(doc: dict[str, Any], *,
                    max_entries: int = DEFAULT_MAX_ENTRIES) -> dict[str, Any]:
    """The same certificate with every number written out: the view for readers of its JSON.

    Compact ``{"den", "num"}`` numbers become plain lists (:func:`decode_compact`) and every
    by-reference frozen matrix becomes its explicit integer rows, its draw record kept in
    ``source``. The proof is unchanged: both checkers give the same verdict (a version-2 explicit
    weight is compared entry by entry with its record), and a version-1 document only loses
    nothing. Use it to count, display or edit a certificate without parsing two encodings.

    Parameters
    ----------
    doc : dict
        A certificate document, version 1 or 2.
    max_entries : int
        Largest frozen matrix regenerated from one record.

    Returns
    -------
    dict
        A new document; ``doc`` is not modified.

    Examples
    --------
    >>> from exactnorm.model.targets import demo_target
    >>> from exactnorm.constructions import certify_theorem1
    >>> from exactnorm.certificate.write import certificate_document
    >>> full = expand_document(certificate_document(certify_theorem1(demo_target(), seed=0)))
    >>> layer = full["network"]["layers"][0]
    >>> type(layer["weight"]), type(layer["gamma"]), layer["source"]["generator"]
    (<class 'list'>, <class 'list'>, 'exactnorm.shake256.v1')
    """
    out = decode_compact(doc)

    def write_out(obj: dict[str, Any], what: str) -> None:
        weight = obj.get("weight")
        if "weight" in obj:
            weight = obj["weight"] = expand_skip(weight)
        if isinstance(weight, dict) and set(weight) == {"random"}:
            record = weight["random"]
            shape = record.get("shape") if isinstance(record, dict) else None
            if isinstance(shape, list) and len(shape) == 4 and \
                    all(type(v) is int and v >= 1 for v in shape):
                # a kernel [c, C, kh, kw] is written as its c × C·kh·kw matrix (same words)
                record = dict(record, shape=[shape[0], shape[1] * shape[2] * shape[3]])
            M = regenerate_record(record, what, max_entries)
            obj["weight"] = weight_json(M, compact=False)
            obj["source"] = weight["random"]

    for j, layer in enumerate(out.get("network", {}).get("layers", []), 1):
        write_out(layer, f"layer {j} weight")
        for s in layer.get("skip", []):
            write_out(s, f"layer {j} skip weight")
    return out
