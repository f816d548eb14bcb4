"""The bytes checked are the bytes written: every document a verb writes is checked as the file
it becomes, never as the object it was built from.

Contract
--------
:func:`write_checked` writes a document to a temporary file beside its destination (through the
writer's own atomic, possibly compressed, path), checks *that file* with the reader and checker
``exactnorm check`` uses (:func:`exactnorm.api.check_file`), and renames it to the destination
only when the verdict is accepted: what a verb reports as valid is, byte for byte, the file a
fresh ``exactnorm check`` reads. A refused document is not written at all (the temporary file is
removed) and the caller gets the verdict. An interrupt during the check of a complete document
either removes it or, when the caller asks (``certify``: minutes of work), keeps it under its
name, unchecked, and says so. :func:`write_certificate` and :func:`save_certificate` are the
API's writers on this path (``check=True`` by default). :func:`check_document_bytes` checks the
serialized bytes of a document that is not written (``capacity`` without ``--out``).

Correctness argument
--------------------
Serialization can change what a document says (a float where an exact number belongs, a key
lost, a number cut by a digit limit); checking the object before serialization would miss that.
Here the checked bytes are read from the file system after the writer closed and synced them,
and the rename that follows changes the name, not the bytes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exactnorm import certificate as _certificate
from exactnorm.api._progress import Progress
from exactnorm.api._results import Verdict
from exactnorm.certificate import DEFAULT_FROZEN_WEIGHTS, DEFAULT_VERSION, certificate_bytes
from exactnorm.errors import InvalidCertificateError

__all__ = ["Written", "write_checked", "write_certificate", "save_certificate",
           "write_certificate_checked", "save_document_checked", "check_document_bytes",
           "claim_accepted"]


@dataclass(frozen=True)
class Written:
    """What :func:`write_checked` did: the ``path`` (written only when ``kept``), its size in
    ``bytes``, the checker's ``verdict`` on the written bytes (``None`` unchecked) and the
    seconds of the write and of the check."""

    path: Path
    bytes: int
    verdict: Verdict | None
    kept: bool
    write_seconds: float
    check_seconds: float = 0.0


def claim_accepted(expected: str | None = None) -> Callable[[Verdict], bool]:
    """The acceptance of a verdict: valid, and with ``expected`` its claim (``REACHABLE`` for a
    certificate, ``UNREACHABLE`` for an impossibility document) equal to it."""
    def accept(v: Verdict) -> bool:
        claim = (v.facts or {}).get("claim", "REACHABLE")
        return v.ok and (expected is None or claim == expected)
    return accept


def _temporary(path: Path) -> Path:
    """A hidden name beside ``path`` with its compression suffix (the writer compresses by it)."""
    suffix = ".gz" if path.name.endswith(".gz") else ""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.unchecked{suffix}")


def write_checked(path: str | os.PathLike[str], produce: Callable[[Path], int], *,
                  check: bool = True, pure: bool = False, progress: Progress = None,
                  accept: Callable[[Verdict], bool] | None = None,
                  keep_when_interrupted: bool = False,
                  on_checking: Callable[[Path], None] | None = None,
                  check_with: Callable[[Path], Verdict] | None = None) -> Written:
    """``produce(file)`` writes the document to ``file`` and returns its size; the file is
    checked and renamed to ``path`` when ``accept(verdict)`` (default: valid) — module doc.

    Parameters
    ----------
    check : bool
        ``False``: ``produce(path)`` writes it directly, unchecked (``verdict`` ``None``).
    pure : bool
        The standard-library checker instead of python-flint.
    progress : callable(done, total), optional
        Told the frozen layers checked.
    keep_when_interrupted : bool
        An interrupt during the check keeps the complete document under ``path`` (unchecked)
        instead of removing it.
    on_checking : callable(path), optional
        Called when the write is done and the check begins (the command line names what an
        interrupt would keep).
    check_with : callable(path) -> Verdict, optional
        The check of the written file (default: :func:`exactnorm.api.check_file`, the checker
        of ``exactnorm check``; an export compares what it reads back with its certificate).
    """
    from exactnorm.api._check import check_file

    dest = Path(path)
    t0 = time.perf_counter()
    if not check:
        size = produce(dest)
        return Written(dest, size, None, True, time.perf_counter() - t0)
    tmp = _temporary(dest)
    try:
        size = produce(tmp)
        wrote = time.perf_counter() - t0
        if on_checking is not None:
            on_checking(dest)
        t1 = time.perf_counter()
        try:
            verdict = check_file(tmp, pure=pure, progress=progress) if check_with is None \
                else check_with(tmp)
        except KeyboardInterrupt:
            if keep_when_interrupted:
                os.replace(tmp, dest)
            raise
        checked = time.perf_counter() - t1
        kept = (accept or claim_accepted())(verdict)
        if kept:
            os.replace(tmp, dest)
        return Written(dest, size, verdict, kept, wrote, checked)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def check_document_bytes(doc: dict[str, Any], *, pure: bool = False,
                         progress: Progress = None) -> Verdict:
    """The checker's verdict on the bytes :func:`save_certificate` would write for ``doc``
    (uncompressed): for a document that is checked but not written."""
    from exactnorm.api._check import check_bytes

    return check_bytes(certificate_bytes(doc), pure=pure, progress=progress)


def _refuse(written: Written) -> None:
    if not written.kept:
        v = written.verdict
        raise InvalidCertificateError(f"the checker refused the written bytes of "
                                      f"{written.path}, so it was not kept: "
                                      f"{'' if v is None else v.message}")


def write_certificate_checked(c: Any, path: str | os.PathLike[str], *, version: int,
                              frozen_weights: str, check: bool = True, pure: bool = False,
                              progress: Progress = None, keep_when_interrupted: bool = False,
                              on_checking: Callable[[Path], None] | None = None) -> Written:
    """:func:`write_checked` of a construction's certificate, streamed by
    :func:`exactnorm.certificate.write_certificate`: what ``exactnorm certify`` and
    :func:`write_certificate` do, with the verdict and times returned."""
    return write_checked(path, lambda p: _certificate.write_certificate(
        c, p, version=version, frozen_weights=frozen_weights), check=check, pure=pure,
        progress=progress, keep_when_interrupted=keep_when_interrupted, on_checking=on_checking)


def write_certificate(c: Any, path: str | os.PathLike[str], *, version: int = DEFAULT_VERSION,
                      frozen_weights: str = DEFAULT_FROZEN_WEIGHTS, check: bool = True,
                      pure: bool = False, progress: Progress = None) -> int:
    """Write the certificate of a construction (``gzip`` for a ``.gz`` path), check the written
    bytes and keep the file only when they are valid (module doc); the bytes equal those of
    ``exactnorm certify``.

    Parameters
    ----------
    c : Construction, CertifyResult or TransformerResult
        What :func:`exactnorm.api.certify` returned (a transformer's document is written as
        it is; ``version`` and ``frozen_weights`` were its construction's).
    path : path-like
    version : {1, 2, 3}
        Certificate format version (3 by default).
    frozen_weights : {"reference", "explicit"}
        Versions 2 and 3: frozen matrices by draw record or written out.
    check : bool
        Check the written bytes with the independent checker first (default); ``False`` writes
        without a check.
    pure : bool
        The standard-library checker instead of python-flint.
    progress : callable(done, total) or True, optional
        Told the frozen layers checked.

    Returns
    -------
    int
        Bytes written (compressed size for ``.gz``).

    Raises
    ------
    InvalidCertificateError
        The checker refused the written bytes: nothing is kept at ``path``.

    Examples
    --------
    >>> import tempfile, os
    >>> from exactnorm.api import certify, demo_target
    >>> path = os.path.join(tempfile.mkdtemp(), "c.json")
    >>> write_certificate(certify(demo_target(), seed=0), path) == os.path.getsize(path)
    True
    """
    from exactnorm.api._transformer import TransformerResult

    if isinstance(c, TransformerResult):  # its document is built: written as `certify` writes it
        return save_certificate(c.document, path, check=check, pure=pure, progress=progress)
    written = write_certificate_checked(c, path, version=version,
                                        frozen_weights=frozen_weights, check=check, pure=pure,
                                        progress=progress)
    _refuse(written)
    return written.bytes


def save_certificate(doc: dict[str, Any], path: str | os.PathLike[str], *, check: bool = True,
                     pure: bool = False, progress: Progress = None) -> int:
    """Write a certificate (or impossibility) document (``gzip`` for a ``.gz`` path), check the
    written bytes and keep the file only when they are valid (module doc).

    Parameters
    ----------
    doc : dict
        A document, e.g. :func:`~exactnorm.api.certificate_document` of a construction or
        ``CapacityResult.document``.
    path : path-like
    check : bool
        Check the written bytes first (default); ``False`` writes any document as it is.
    pure : bool
        The standard-library checker instead of python-flint.
    progress : callable(done, total) or True, optional

    Returns
    -------
    int
        Bytes written.

    Raises
    ------
    InvalidCertificateError
        The checker refused the written bytes: nothing is kept at ``path``.
    """
    written = save_document_checked(doc, path, check=check, pure=pure, progress=progress)
    _refuse(written)
    return written.bytes


def save_document_checked(doc: dict[str, Any], path: str | os.PathLike[str], *,
                          check: bool = True, pure: bool = False, progress: Progress = None,
                          keep_when_interrupted: bool = False,
                          on_checking: Callable[[Path], None] | None = None) -> Written:
    """:func:`write_checked` of a document (:func:`exactnorm.certificate.save_certificate`
    writes it), with the verdict and times returned."""
    return write_checked(path, lambda p: _certificate.save_certificate(doc, p), check=check,
                         pure=pure, progress=progress,
                         keep_when_interrupted=keep_when_interrupted, on_checking=on_checking)
