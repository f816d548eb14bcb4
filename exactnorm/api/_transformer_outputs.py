"""``export`` and ``report`` of a transformer document (``exactnorm.transformer``): what
:func:`exactnorm.api.export` and :func:`exactnorm.api.report` do when the certificate is one
(docs/transformers.md, "Export and report").

* ``onnx``: the rewritten transformer as a drop-in model
  (:func:`~exactnorm.outputs.export.transformer.transformer_onnx`), then, with ``verify``,
  ``source`` or ``data``, its logits and predictions against the float64 reference of the
  original and against the source model under onnxruntime
  (:func:`~exactnorm.outputs.transformer_runs.verify_transformer_export`). A source model is
  validated before anything is written: its input and output names must be the ones the
  certificate recorded, and on seeded sequences its logits must be the original transformer's
  up to float rounding.
* ``json``: exact (:func:`~exactnorm.outputs.export.transformer.transformer_json_document`); the
  written bytes are read back and compared with the certificate (:func:`json_difference`)
  before the file gets its name.
* ``npz``, ``torch``: refused, naming what works.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from exactnorm.api._results import ExportResult, ReportResult
from exactnorm.checker.vocabulary import TRANSFORMER_FORMAT
from exactnorm.errors import InputError, InvariantError
from exactnorm.exact.files import atomic_write
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS, strict_json_loads, unlimited_int_digits
from exactnorm.outputs.export.batchnorm import DEFAULT_EPS, FLOAT_WARNING
from exactnorm.outputs.stages import Stages
from exactnorm.outputs.transformer_runs import measurement_lines

__all__ = ["is_transformer_document", "load_document", "export_transformer",
           "report_transformer", "json_difference", "measurement_lines", "SOURCE_TOLERANCE"]

#: a source model whose logits differ from the original transformer's by more than this part of
#: the largest logit (on seeded sequences) is not the model the certificate was made from;
#: float32 rounding of a trained model stays below 1e-5 of it
SOURCE_TOLERANCE = 1e-3
#: sequences on which a source model is compared before an export is written
SOURCE_SEQUENCES = 8


def is_transformer_document(doc: Any) -> bool:
    """Whether ``doc`` declares the transformer format."""
    return isinstance(doc, dict) and doc.get("format") == TRANSFORMER_FORMAT


def load_document(path: str | os.PathLike[str], *, max_digits: int = DEFAULT_MAX_DIGITS
                  ) -> dict[str, Any]:
    """A certificate or transformer document from a file, read strictly (no floats, no
    duplicate keys, size-limited): a transformer document as it is, anything else through
    :func:`exactnorm.certificate.load_certificate`'s rules."""
    from exactnorm.certificate import load_certificate
    from exactnorm.certificate.read import read_certificate_bytes

    raw = read_certificate_bytes(Path(path))
    doc = strict_json_loads(raw, what=f"certificate {os.fspath(path)}", max_digits=max_digits)
    if is_transformer_document(doc):
        return doc
    return load_certificate(path, max_digits=max_digits)


def _check_source(tr: Any, source: Any) -> None:
    """The source model is the one the certificate was made from (module doc), or an
    :class:`InputError` before anything is written."""
    from exactnorm.outputs.export.transformer import token_interface
    from exactnorm.outputs.transformer_runs import TokenModel, reference_logits, task_sequences

    token_interface(tr, source)  # names, types, shapes
    model = TokenModel(source, "source model",
                       logits=(tr.source or {}).get("output", {}).get("name")
                       if isinstance(tr.source, dict) else None)
    length = model.length or tr.positions or 8
    tokens, _ = task_sequences(tr.vocabulary, length, SOURCE_SEQUENCES, seed=1)
    ref = reference_logits(tr, tokens)
    theirs = model.run(tokens)
    scale = float(np.max(np.abs(ref)))
    error = float(np.max(np.abs(theirs - ref))) if theirs.shape == ref.shape else float("inf")
    if not error <= SOURCE_TOLERANCE * max(1.0, scale):
        raise InputError(f"source {os.fspath(source)} computes another function than the "
                         f"certified transformer: its logits differ from the original's by up "
                         f"to {error:.3g} on {SOURCE_SEQUENCES} seeded sequences (float "
                         f"rounding stays below {SOURCE_TOLERANCE:g} of the logits, here up to "
                         f"{scale:.3g}); nothing was written", parameter="source")


def _json_bytes(export: dict[str, Any]) -> bytes:
    """The exact export's text: one line per top-level key and per slot, each slot in the
    layout of :func:`~exactnorm.outputs.export.json.export_bytes`."""
    from exactnorm.outputs.export.json import export_bytes

    with unlimited_int_digits():
        def dump(v: Any) -> str:
            return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

        slots = ",\n".join(f"  {dump(name)}: {export_bytes(body).decode().rstrip()}"
                           for name, body in sorted(export["slots"].items()))
        top = [f" {dump(k)}: {dump(v)}" for k, v in sorted(export.items()) if k != "slots"]
    return ("{\n" + ",\n".join(sorted(top + [f' "slots": {{\n{slots}\n }}'])) + "\n}\n").encode()


def json_difference(doc: dict[str, Any], path: str | os.PathLike[str],
                    max_digits: int = DEFAULT_MAX_DIGITS) -> str | None:
    """``None`` when the exact export written at ``path`` gives the certificate: it parses
    strictly, its format and version are the transformer export's, its architecture is the
    certificate's, it has the certificate's slots, and each slot's ``γ̂, β̂, μ, s`` give back
    the slot's frozen network exactly (``Γ = γ̂/s``, ``β = β̂ − γ̂μ/s``,
    :func:`~exactnorm.outputs.export.read_exported_json`); else the first difference."""
    import tempfile

    from exactnorm.certificate.read_kinds import read_networks
    from exactnorm.errors import ExactnormError
    from exactnorm.outputs.export import read_exported_json
    from exactnorm.outputs.export.transformer import TRANSFORMER_EXPORT_FORMAT

    try:
        written = strict_json_loads(Path(path).read_bytes(), what="the exact export",
                                    max_digits=max_digits)
    except ExactnormError as exc:
        return f"the written bytes do not parse strictly: {exc}"
    if not isinstance(written, dict) or written.get("format") != TRANSFORMER_EXPORT_FORMAT \
            or written.get("version") != 1 or set(written) != {"format", "version",
                                                               "architecture", "slots"}:
        return f"the written bytes are not an {TRANSFORMER_EXPORT_FORMAT} version 1 document"
    if written["architecture"] != doc["architecture"]:
        return "the architecture differs from the certificate's"
    slots = written["slots"]
    if not isinstance(slots, dict) or sorted(slots) != sorted(doc["slots"]):
        return "the slots differ from the certificate's"
    with tempfile.TemporaryDirectory(prefix="exactnorm-readback-") as folder:
        for name in sorted(slots):
            part = Path(folder) / "slot.json"
            with unlimited_int_digits():
                part.write_text(json.dumps(slots[name]))
            try:
                same = read_exported_json(part, max_digits=max_digits) == read_networks(
                    doc["slots"][name], max_digits=max_digits)[1]
            except ExactnormError as exc:
                return f"slot {name}: {exc}"
            if not same:
                return f"slot {name}: the exported network differs from the certificate's"
    return None


def export_transformer(doc: dict[str, Any], out: str | os.PathLike[str], *, format: str,
                       mean: Any = 0, scale: Any = 1, eps: float | None = None,
                       dtype: str | None = None, normalization: str | None = None,
                       max_digits: int = DEFAULT_MAX_DIGITS, verify: int = 0,
                       source: Any = None, data: Any = None, labels: Any = None,
                       check: bool = True, checked: Any = None, interface: str = "source",
                       timing: bool = True, allow_float32_error: bool = False,
                       progress: Any = None, checked_verdict: Any) -> ExportResult:
    """:func:`exactnorm.api.export` of a transformer document (module doc); the arguments
    have been validated by it (format, verify, labels, files); ``checked_verdict(doc, check,
    checked, hook)`` is its check before an output is written."""
    from exactnorm.api._progress import progress_context
    from exactnorm.certificate.transformer import transformer_of
    from exactnorm.outputs.export.transformer import (
        refuse_format,
        slot_depths,
        transformer_json_document,
        transformer_onnx,
    )

    if format not in ("onnx", "json"):
        raise refuse_format(format)
    if interface != "source":
        raise InputError("a transformer export keeps the source model's token input and logits "
                         "(interface 'source')", parameter="interface")
    if format == "json" and eps is not None:
        raise InputError("eps applies to the float formats only (the JSON export stores s)",
                         parameter="eps")
    to_stdout = os.fspath(out) == "-"
    if format == "onnx" and to_stdout and (verify or source is not None or data is not None):
        raise InputError("verify, source and data need the export written to a file",
                         parameter="verify")
    tr = transformer_of(doc, max_digits=max_digits)
    if source is not None:
        _check_source(tr, source)  # before anything is written
    depth = sum(slot_depths(doc).values())
    measure = format == "onnx" and not to_stdout and bool(verify or source is not None
                                                          or data is not None)
    with progress_context(progress, f"export {format}", "steps") as hook:
        stages = Stages(hook, check=depth if check and checked is None else 0, layers=depth,
                        write=1, verify=1 if measure else 0)
        t0 = time.perf_counter()
        verdict = checked_verdict(doc, check, checked, stages.hook("check"))
        check_seconds = time.perf_counter() - t0 if verdict is not None and checked is None \
            else None
        stages.finish("check")
        read_back = None
        if format == "onnx":
            model = transformer_onnx(doc, dtype=dtype or "float64",
                                     normalization=normalization or "batchnorm", mean=mean,
                                     scale=scale, eps=DEFAULT_EPS if eps is None else eps,
                                     source=source, progress=stages.hook("layers"))
            data_bytes = model.SerializeToString()
            warning: str | None = FLOAT_WARNING
            _write(out, data_bytes)
        else:
            export = transformer_json_document(doc, mean, scale, progress=stages.hook("layers"))
            read_back = _write_json_checked(doc, _json_bytes(export), out, max_digits)
            warning = None
        stages.finish("write")
        m = None
        if measure:
            from exactnorm.outputs.transformer_runs import verify_transformer_export

            m = verify_transformer_export(tr, out, verify, source=source, data=data,
                                          labels=labels, timing=timing)
            stages.finish("verify")
    text = warning or (read_back or "")
    if m is not None:
        for key in ("sequences", "data"):
            if key in m:
                e, s = m[key]["export"], m[key]
                line = (f"verified under onnxruntime on {s['sequences']} sequences "
                        f"({s['positions']} positions): max abs logit error {e['max_abs']:.3g} "
                        f"against the float64 reference, predictions changed at "
                        f"{e['changed']}/{s['positions']} positions")
                text = f"{text}; {line}" if text else line
    changed = sum(m[k]["export"]["changed"] for k in ("sequences", "data") if m and k in m)
    if dtype == "float32" and changed and not allow_float32_error:
        Path(out).unlink()
        raise InputError(f"{text}: the float32 model changes predictions ({changed} against "
                         f"the reference), so it was not kept; use dtype float64, or "
                         f"allow_float32_error to keep it", parameter="dtype")
    size = 0 if to_stdout else os.path.getsize(out)
    return ExportResult(path=None if to_stdout else Path(out), format=format, bytes=size,
                        warning=warning, verdict=verdict, verification=m, text=text,
                        frozen_numbers=None if m is None else m.get("numbers"), depth=depth,
                        check_seconds=check_seconds)


def _write(out: str | os.PathLike[str], data: bytes) -> None:
    import sys

    if os.fspath(out) == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        atomic_write(out, data)


#: what the exact transformer export's read-back says it did
READ_BACK = ("the written bytes were read back: the architecture is the certificate's and every "
             "slot's γ = γ̂/s, β = β̂ − γ̂μ/s give back its frozen network exactly")


def _write_json_checked(doc: dict[str, Any], data: bytes, out: str | os.PathLike[str],
                        max_digits: int) -> str:
    """Write the exact export only after its bytes, read back from a file, give the
    certificate (:func:`json_difference`): a difference is a bug and nothing is written."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="exactnorm-export-") as folder:
        tmp = Path(folder) / "export.json"
        atomic_write(tmp, data)
        difference = json_difference(doc, tmp, max_digits)
        if difference is not None:
            raise InvariantError(f"the exact export was not written: {difference}")
        _write(out, tmp.read_bytes())
    return READ_BACK


def report_transformer(doc: dict[str, Any], out: str | os.PathLike[str] | None, *,
                       float_points: int, data: Any = None, labels: Any = None,
                       check: bool = True, checked: Any = None, progress: Any = None,
                       checked_verdict: Any) -> ReportResult:
    """:func:`exactnorm.api.report` of a transformer document (arguments validated there;
    ``checked_verdict`` as for :func:`export_transformer`)."""
    from exactnorm.api._progress import progress_context
    from exactnorm.api._results import Verdict
    from exactnorm.outputs.report_transformer import (
        NO_PLOTS_TRANSFORMER,
        transformer_report_contents,
        write_transformer_report,
    )

    if checked is not None:
        checked = checked_verdict(doc, check, checked, None)
    with progress_context(progress, "report", "steps") as hook:
        options = dict(float_points=float_points, data=data, labels=labels, checked=check,
                       refuse=True, progress=hook)
        parts = transformer_report_contents(doc, checked, **options) if out is None \
            else write_transformer_report(doc, out, checked, **options)
    v = parts["verdict"]
    return ReportResult(verdict=None if v is None else Verdict.of(v),
                        paths=parts.get("paths", {}), counts=parts["counts"], plots=False,
                        no_plots=NO_PLOTS_TRANSFORMER,
                        markdown=parts["markdown"] if out is None else None,
                        float_errors=parts["float_errors"], data=parts["data"],
                        extra={"slots": parts["rows"]})
