"""The independent checker on a file or the bytes of one (``check_file``, ``check_bytes``), and on
a parsed document (``check_document``, what :func:`exactnorm.api.check` runs).

Re-exported by :mod:`exactnorm.api`; the writers of :mod:`exactnorm.api._written` check what
they write with :func:`check_file`, the reader and checker of ``exactnorm check``.
"""

from __future__ import annotations

import os
from typing import Any

from exactnorm import checker, checker_flint
from exactnorm.api._progress import Progress, progress_context
from exactnorm.api._results import Verdict
from exactnorm.certificate import DEFAULT_MAX_CERTIFICATE_BYTES, read_certificate_bytes
from exactnorm.checker.vocabulary import DEFAULT_MAX_WORK, MAX_DIGITS_CAP, MAX_WORK_CAP
from exactnorm.errors import InputError, NotACertificateError, require_integer
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.outputs.export.batchnorm import EXPORT_FORMAT

__all__ = ["check_file", "check_bytes", "check_document"]


def check_file(path: str | os.PathLike[str], *, pure: bool = False,
               max_bytes: int = DEFAULT_MAX_CERTIFICATE_BYTES,
               max_digits: int = DEFAULT_MAX_DIGITS,
               progress: Progress = None, max_work: int | None = DEFAULT_MAX_WORK) -> Verdict:
    """Check a certificate file (``.json`` or ``.json.gz``), size-limited before parsing.

    Parameters
    ----------
    path : path-like
    pure : bool
        Standard-library checker instead of python-flint.
    max_bytes : int
        Refuse files (also their inflated size) larger than this.
    max_digits : int
        Refuse numbers with more digits (1 … 10^7).
    progress : callable(done, total), optional
        Told the frozen layers checked so far.
    max_work : int, optional
        The check's work budget in units of 64-bit word operations (docs/certificate-format.md
        §7; 1 … 10^15); ``None`` (default): 1,000 per bit of the numbers the certificate
        writes, at least 5·10^9; an impossibility document (§9) likewise.

    Returns
    -------
    Verdict

    Raises
    ------
    InputError
        Unreadable or oversized file, or a limit out of its range (naming ``max_digits`` or
        ``max_work``).
    NotACertificateError
        Not JSON at all (an ONNX model, a pickle): not a
        certificate at all, which is not the same as an invalid one.
    """
    _check_limits(max_digits, max_work)
    raw = read_certificate_bytes(path, max_bytes=max_bytes)
    return check_bytes(raw, pure=pure, max_digits=max_digits, progress=progress,
                       max_work=max_work, name=os.fspath(path))


def check_bytes(raw: bytes | bytearray, *, pure: bool = False,
                max_digits: int = DEFAULT_MAX_DIGITS, progress: Progress = None,
                max_work: int | None = DEFAULT_MAX_WORK, name: str = "the document") -> Verdict:
    """Check the (uncompressed) bytes of a certificate document as :func:`check_file` checks a
    file's: the same strict reader, the same refusals; ``name`` is what messages call it.

    Raises
    ------
    NotACertificateError
        The bytes are not a JSON object with ``"format"`` (an ONNX model, a target file, an
        ``exactnorm.batchnorm`` export).
    """
    _check_limits(max_digits, max_work)
    if raw.lstrip()[:1] not in (b"{", b"["):
        # not JSON text at all (an ONNX model, a pickle, an image): a usage error, whereas a
        # truncated or malformed JSON document is an invalid certificate
        raise NotACertificateError(f"{name} is not a certificate (an exactnorm certificate is "
                                   f"a JSON object; this file does not start like JSON)")
    try:  # both checkers parse with the pure checker's strict reader
        doc = checker.parse_certificate_text(raw, max_digits=max_digits)
    except checker.CertificateError as exc:
        return Verdict(False, exc.rule, str(exc))
    if isinstance(doc, dict) and "format" not in doc:
        what = " (a target file?)" if "target" in doc else ""
        raise NotACertificateError(f"{name} is not a certificate{what}: a JSON object without "
                                   f"\"format\": \"exactnorm.certificate\"")
    if isinstance(doc, dict) and doc.get("format") == EXPORT_FORMAT:
        raise NotACertificateError(f"{name} is an {EXPORT_FORMAT} export, not a certificate: "
                                   f"check the certificate it was exported from (the export "
                                   f"re-reads what it wrote and compares it with that "
                                   f"certificate's network)")
    del raw  # parsed: the text need not stay in memory during the check
    with progress_context(progress, "check", "frozen layers") as hook:
        verdict = (checker if pure else checker_flint).check_certificate(
            doc, max_digits=max_digits, progress=hook, max_work=max_work)
    return Verdict.of(verdict)


def _check_limits(max_digits: object, max_work: object) -> None:
    """The checker's limits, refused outside their documented ranges before anything is read."""
    for value, name, cap in ((max_digits, "max_digits", MAX_DIGITS_CAP),
                             (max_work, "max_work", MAX_WORK_CAP)):
        if value is None and name == "max_work":
            continue  # the default: a budget that grows with the certificate
        require_integer(value, name, minimum=1)
        if value > cap:  # type: ignore[operator]
            raise InputError(f"{name} must be at most {cap}, got {value}")


def check_document(doc: dict[str, Any], *, pure: bool = False,
                   progress: Progress = None) -> Verdict:
    """A parsed document checked by the python-flint (or, ``pure``, the standard-library)
    checker."""
    with progress_context(progress, "check", "frozen layers") as hook:
        verdict = (checker if pure else checker_flint).check_certificate(doc, progress=hook)
    return Verdict.of(verdict)
