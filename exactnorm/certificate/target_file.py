"""Target files: the ``domain`` and ``target`` sections of a certificate, on their own.

Contract. A target file is a JSON object ``{"domain": …, "target": …}`` (optionally
``.json.gz``) with exactly the sections a certificate holds — layers of any kind (dense,
convolution, pooling), residual topology (a layer's ``input`` and ``skip``) included — and
optionally the low-rank ``factors`` a construction reads (docs/constructions.md). It is written
by :func:`save_target` (:func:`~exactnorm.certificate.write.target_sections`, the writer of
those sections in a certificate) and read by the one reader of documents
(:func:`~exactnorm.certificate.read_kinds.read_target`, the checker's rules), so a target file
round-trips exactly and a certificate is a target file too. :func:`read_document` reads a JSON
file strictly (no floats, no duplicate keys, size-limited; a pickle is refused by its first byte
before anything is parsed).

>>> import tempfile, os
>>> from exactnorm.model.targets import demo_target
>>> path = os.path.join(tempfile.mkdtemp(), "t.json")
>>> save_target(demo_target(), path)
>>> read_target_file(path) == demo_target()
True
"""

from __future__ import annotations

import json
import os
from typing import Any

from exactnorm.certificate.read_kinds import read_target
from exactnorm.certificate.write import target_sections
from exactnorm.checker.vocabulary import DEFAULT_MAX_BYTES
from exactnorm.errors import InputError
from exactnorm.exact.files import atomic_write_bytes, read_text_file, require_file
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, strict_json_loads, unlimited_int_digits
from exactnorm.model.box import Box
from exactnorm.model.network import DEFAULT_MAX_WIDTH, TargetNetwork
from exactnorm.model.targets import PICKLE_SUFFIXES, pickle_refusal

__all__ = ["DEFAULT_MAX_TARGET_BYTES", "target_document", "save_target", "read_document",
           "read_target_file"]

#: the largest JSON document read as a network (uncompressed): the checker's default limit
DEFAULT_MAX_TARGET_BYTES = DEFAULT_MAX_BYTES


def target_document(g: TargetNetwork) -> dict[str, Any]:
    """The target file of ``g``: its ``domain`` and ``target`` sections as a certificate writes
    them (plain exact numbers), for a target of any layer kinds and wiring."""
    return target_sections(g, compact=False)


def save_target(g: TargetNetwork, path: str | os.PathLike[str]) -> None:
    """Write ``g`` as a JSON target file (atomic)."""

    def produce(fh: Any) -> None:
        with unlimited_int_digits():
            fh.write(json.dumps(target_document(g), indent=1).encode())

    atomic_write_bytes(path, produce)


def read_document(path: str | os.PathLike[str], what: str = "target file", *,
                  max_digits: int = DEFAULT_MAX_DIGITS,
                  max_bytes: int = DEFAULT_MAX_TARGET_BYTES) -> Any:
    """A JSON (or ``.json.gz``) document read strictly (module docstring)."""
    p = require_file(path, what)
    try:
        text = read_text_file(p, what, max_bytes)
    except OSError as exc:
        raise InputError(f"cannot read {p}: {exc}") from None
    if p.suffix.lower() in PICKLE_SUFFIXES or text[:1] == b"\x80":  # pickle protocol ≥ 2
        raise pickle_refusal(p)
    return strict_json_loads(text, what=str(p), max_digits=max_digits)


def read_target_file(path: str | os.PathLike[str], *, box: Box | None = None,
                     max_digits: int = DEFAULT_MAX_DIGITS,
                     max_width: int = DEFAULT_MAX_WIDTH) -> TargetNetwork:
    """The target of a JSON target file or certificate (module docstring), on its own domain
    or, for a file without one, on ``box``."""
    doc = read_document(path, max_digits=max_digits)
    return read_target(doc, box=box, max_digits=max_digits, max_width=max_width)
