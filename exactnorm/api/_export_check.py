"""The read-back of an exact export: the bytes written, parsed strictly, give the certificate's
frozen network exactly.

Contract
--------
:func:`export_difference` takes a certificate document and the bytes of its exact
``exactnorm.batchnorm`` export and returns ``None`` when they agree, else the first
difference, in words. Agreement means: the bytes parse as strict JSON (no float, no NaN, no
number beyond the digit limit); the frame (format, version, domain, checkpoints, the target of a
document of several kinds) equals the certificate's; every frozen layer keeps the certificate's
own fields (kind, input, geometry, activation, residual); every frozen matrix written out equals
the certificate's — a matrix by reference equal to the matrix its draw record regenerates, entry
by entry —, skips too; and the BatchNorm fields give back ``Γ = γ̂/s`` and ``β = β̂ − γ̂μ/s``
equal to the certificate's ``γ`` and ``β``, exactly.

The certificate is read by the checker's own reader (:func:`exactnorm.checker.document.
read_certificate`, no matrix built as ``fmpq_mat``), so that the read-back of a 784-128-10
export (138 MB, 13.6 million frozen entries) costs seconds, not the minutes the exact network
takes; a certificate that reader refuses, or one with a grouped convolution (whose record is the
block-diagonal kernel of the whole patch, not the groups' blocks written), is compared through
the exact networks instead (:func:`exactnorm.outputs.export.read_exported_json`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm.certificate import decode_compact
from exactnorm.certificate.arrays import kernel_record
from exactnorm.checker.document import read_certificate
from exactnorm.checker.numbers import CertificateError, IntMatrix
from exactnorm.checker.provenance import Draw
from exactnorm.checker.topology import Picks
from exactnorm.errors import ExactnormError
from exactnorm.exact import generator
from exactnorm.exact.rationals import parse_number, strict_json_loads
from exactnorm.outputs.export.batchnorm import EXPORT_FORMAT, EXPORT_VERSION, from_batchnorm

__all__ = ["export_difference"]

#: fields of a frozen layer that the export rewrites; every other one is the certificate's own
_REWRITTEN = ("weight", "source", "skip", "gamma", "beta")
_BATCHNORM = ("gamma_hat", "beta_hat", "mean", "scale")


def _exact(x: Any, where: str, max_digits: int) -> fmpq:
    q = parse_number(x, max_digits=max_digits, where=where)
    return fmpq(q.numerator, q.denominator)


def _same_matrix(rows: Any, matrix: Any, where: str, max_digits: int) -> str | None:
    """``None`` when the JSON ``rows`` are the matrix the checker's reader holds."""
    if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
        return f"{where} is not a list of rows"
    if isinstance(matrix, Picks):
        picks = [[1 if c == t else 0 for c in range(matrix.cols)] for t in matrix.rows]
        return None if rows == picks else f"{where} differs from the certificate's selection"
    if isinstance(matrix, IntMatrix):
        if len(rows) != len(matrix.rows):
            return f"{where} has {len(rows)} rows, the certificate {len(matrix.rows)}"
        for r, (got, want) in enumerate(zip(rows, matrix.rows)):
            if len(got) != len(want) or any(_exact(x, where, max_digits) != fmpq(w, matrix.den)
                                            for x, w in zip(got, want)):
                return f"{where} row {r} differs from the certificate's"
        return None
    if not isinstance(matrix, Draw):
        return f"{where}: a matrix of type {type(matrix).__name__}"
    if len(rows) != matrix.rows or any(len(r) != matrix.cols for r in rows):
        return f"{where} is not {matrix.rows} × {matrix.cols}"
    values = generator.record_values(kernel_record(matrix.record))
    if isinstance(values, tuple):  # a rational distribution: numerators over denominators
        flat = [x for r in rows for x in r]
        num, den = values
        same = all(_exact(x, where, max_digits) == fmpq(int(a), int(b))
                   for x, a, b in zip(flat, num.tolist(), den.tolist()))
    else:
        try:
            got = np.array(rows, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):  # big entries are written as strings
            got = np.array([[int(_exact(x, where, max_digits).p) for x in r] for r in rows],
                           dtype=object)
        same = bool(np.array_equal(got.reshape(-1), values.reshape(-1)))
    return None if same else f"{where} differs from the matrix its draw record regenerates"


def _same_layer(j: int, out: Any, entry: dict[str, Any], rec: Any,
                max_digits: int) -> str | None:
    if not isinstance(out, dict):
        return f"layer {j} is not an object"
    for key, value in entry.items():
        if key not in _REWRITTEN and out.get(key) != value:
            return f"layer {j} {key} differs from the certificate's"
    if rec.V is not None:
        if (d := _same_matrix(out.get("weight"), rec.V, f"layer {j} weight", max_digits)):
            return d
        if isinstance(rec.V, Draw) and out.get("source") != rec.V.record:
            return f"layer {j} source is not the draw record of the certificate's matrix"
    skips, wanted = out.get("skip", []), tuple(rec.skips or ())
    if not isinstance(skips, list) or len(skips) != len(wanted):
        return f"layer {j} has other skips than the certificate's"
    for k, (skip, (frm, P)) in enumerate(zip(skips, wanted)):
        if not isinstance(skip, dict) or skip.get("from") != frm:
            return f"layer {j} skip {k} reads another node than the certificate's"
        if (d := _same_matrix(skip.get("weight"), P, f"layer {j} skip {k}", max_digits)):
            return d
    if rec.gamma is None:
        return None if not any(k in out for k in _BATCHNORM) else \
            f"layer {j} tunes parameters the certificate does not"
    fields: dict[str, list[Any]] = {}
    for name in _BATCHNORM:
        value = out.get(name)
        if not isinstance(value, list):
            return f"layer {j} lacks the list {name}"
        fields[name] = [_exact(x, f"layer {j} {name}", max_digits) for x in value]
    G, B = from_batchnorm(*(fields[name] for name in _BATCHNORM))
    want_g = [fmpq(n, rec.gamma.den) for n in rec.gamma.nums]
    want_b = [fmpq(n, rec.beta.den) for n in rec.beta.nums]
    if list(G) != want_g:
        return f"layer {j}: γ̂/s is not the certificate's γ"
    if list(B) != want_b:
        return f"layer {j}: β̂ − γ̂μ/s is not the certificate's β"
    return None


def export_difference(cert_doc: dict[str, Any], path: str | os.PathLike[str],
                      max_digits: int) -> str | None:
    """``None`` when the export written at ``path`` gives the certificate's network (module
    doc), else the first difference."""
    raw = Path(path).read_bytes()
    try:
        exported = strict_json_loads(raw, what="the exact export", max_digits=max_digits)
    except ExactnormError as exc:
        return f"the written bytes do not parse strictly: {exc}"
    if not isinstance(exported, dict) or exported.get("format") != EXPORT_FORMAT \
            or exported.get("version") != EXPORT_VERSION:
        return f"the written bytes are not an {EXPORT_FORMAT} version {EXPORT_VERSION} document"
    try:
        _, _, _, records, checkpoints, _ = read_certificate(cert_doc, max_digits)
    except (CertificateError, RecursionError):
        return _difference_exact(cert_doc, path, max_digits)
    if any(rec.geom is not None and rec.geom.group > 1 for rec in records):
        # a grouped convolution's record holds the block-diagonal kernel of the whole patch,
        # the export its groups' blocks (as the certificate writes them)
        return _difference_exact(cert_doc, path, max_digits)
    if exported.get("domain") != decode_compact(cert_doc.get("domain"), "domain"):
        return "the domain differs from the certificate's"
    if exported.get("checkpoints") != list(checkpoints):
        return "the checkpoints differ from the certificate's"
    if "target" in exported and exported["target"] != decode_compact(cert_doc.get("target"),
                                                                      "target"):
        return "the target differs from the certificate's"
    layers = exported.get("layers")
    entries = cert_doc["network"]["layers"]
    if not isinstance(layers, list) or len(layers) != len(records):
        return f"the export has {len(layers) if isinstance(layers, list) else 'no'} layers, " \
               f"the certificate {len(records)}"
    for j, (out, entry, rec) in enumerate(zip(layers, entries, records), 1):
        try:
            d = _same_layer(j, out, entry, rec, max_digits)
        except ExactnormError as exc:
            d = f"layer {j}: {exc}"
        if d:
            return d
    return None


def _difference_exact(cert_doc: dict[str, Any], path: str | os.PathLike[str],
                      max_digits: int) -> str | None:
    """Through the exact networks (any certificate the library reads)."""
    from exactnorm.certificate import read_frozen
    from exactnorm.outputs.export import read_exported_json

    same = read_exported_json(path, max_digits=max_digits) == read_frozen(
        cert_doc, max_digits=max_digits)
    return None if same else "the exact export read back differs from the certificate's network"
