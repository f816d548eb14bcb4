"""Reading certificate files: strict, size-limited reading of ``.json`` and ``.json.gz`` files
(:func:`read_certificate_bytes`, :func:`load_certificate`) and the same document with every
number written out (:func:`expand_document`). The writing half is
:mod:`exactnorm.certificate.write`; :mod:`exactnorm.certificate` re-exports both. The networks of
a document are read by the one reader, :mod:`exactnorm.certificate.read_kinds` (the checker's
reader and its typed records). Nothing here decides validity: that is the independent checker's
job (:mod:`exactnorm.checker`).
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
    InputError,
    InvalidCertificateError,
    LimitExceededError,
)
from exactnorm.exact.generator import matrix_from_record
from exactnorm.exact.rationals import (
    DEFAULT_MAX_DIGITS,
    strict_json_loads,
)

__all__ = ["read_certificate_bytes", "load_certificate", "expand_document", "regenerate_record"]


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
