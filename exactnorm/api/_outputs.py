"""The output verbs of the API: ``export`` (a normalization layer for a framework, exact JSON or
floats, optionally verified under onnxruntime) and ``report`` (Markdown/HTML with plots).
Re-exported by :mod:`exactnorm.api`.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from exactnorm.api._progress import Progress, progress_context
from exactnorm.api._results import ExportResult, ReportResult, Verdict
from exactnorm.api._transformer_outputs import (
    export_transformer,
    is_transformer_document,
    load_document,
    report_transformer,
)
from exactnorm.errors import InputError, InvariantError, require_extra, require_integer
from exactnorm.exact.files import atomic_write, require_file
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.outputs.data_eval import data_samples
from exactnorm.outputs.export import (
    EXPORT_FORMATS,
    INTERFACES,
    export_certificate,
    render_export,
)
from exactnorm.outputs.report import FLOAT_ERROR_POINTS, report_contents, write_report
from exactnorm.outputs.stages import Stages, declared_depth, refuse_invalid

__all__ = ["export", "report", "checked_verdict"]


def _require_dependencies(format: str, verify: int, source: Any, data: Any) -> None:
    """A missing package fails before any work (a torch export used to fail after the whole
    certificate was read)."""
    if format == "onnx":
        require_extra("onnx", "the onnx export")
    if format == "torch":
        require_extra("torch", "the torch export")
    if verify or source is not None or data is not None:
        require_extra("onnxruntime", "verifying an ONNX export")


#: the largest difference between a source model's logits and the exact target, relative to the
#: largest exact output (at least 1), that float rounding explains
SOURCE_TOLERANCE = 1e-3


def _check_source(doc: dict[str, Any], source: str | os.PathLike[str]) -> None:
    """``source`` is the model the certificate was made from: the same input (name, dtype,
    shape) and output names as recorded by certify, and the same function on the box up to
    float rounding (:data:`SOURCE_TOLERANCE`); otherwise an :class:`InputError` naming what
    differs, before anything is written."""
    from exactnorm.model.onnx_common import load_model
    from exactnorm.outputs.onnx_interface import source_differences
    from exactnorm.outputs.onnx_runs import exact_target, source_error

    d0 = len(exact_target(doc).lower)
    differences = source_differences(doc, load_model(source), d0)
    if differences:
        raise InputError(f"source {os.fspath(source)} is not the model this certificate was "
                         f"made from: {'; '.join(differences)}; nothing was written",
                         parameter="source")
    error, scale = source_error(doc, source)
    if not error <= SOURCE_TOLERANCE * max(1.0, scale):
        raise InputError(f"source {os.fspath(source)} computes another function than the "
                         f"certified target: its outputs differ from the exact target's by up "
                         f"to {error:.3g} at 8 points of the box (float rounding stays below "
                         f"{SOURCE_TOLERANCE:g} of the outputs, here up to {scale:.3g}); "
                         f"nothing was written", parameter="source")


#: what an exact export's check says it did
READ_BACK = ("the written bytes were read back: γ = γ̂/s and β = β̂ − γ̂μ/s recover the "
             "certificate's network exactly (every frozen matrix, γ and β equal entry by entry)")


def _write_export_checked(doc: dict[str, Any], data: bytes, out: str | os.PathLike[str],
                          max_digits: int) -> str:
    """Write the exact export ``data`` to ``out`` (or standard output) only after the bytes,
    read back from a file, give exactly the certificate's frozen network (γ, β recovered by the
    inverse conversion): the bytes written are the bytes checked. A difference is a bug
    (:class:`InvariantError`) and nothing is written."""
    import sys
    import tempfile

    from exactnorm.api._export_check import export_difference
    from exactnorm.api._written import write_checked

    def compare(path: Path) -> Verdict:
        difference = export_difference(doc, path, max_digits)
        return Verdict(difference is None, "valid" if difference is None else "export",
                       READ_BACK if difference is None else
                       f"the exact export read back differs from the certificate: {difference}")

    if os.fspath(out) == "-":
        with tempfile.TemporaryDirectory(prefix="exactnorm-export-") as folder:
            written = write_checked(Path(folder) / "export.json", lambda p: atomic_write(p, data),
                                    check_with=compare)
            if written.kept:
                sys.stdout.flush()
                sys.stdout.buffer.write(Path(written.path).read_bytes())
                sys.stdout.buffer.flush()
    else:
        written = write_checked(out, lambda p: atomic_write(p, data), check_with=compare)
    if not written.kept:
        raise InvariantError(f"the exact export was not written: "
                             f"{'' if written.verdict is None else written.verdict.message}")
    return READ_BACK


def checked_verdict(doc: dict[str, Any], check: bool, checked: Any, hook: Any) -> Any:
    """The checker's verdict on ``doc`` before an output is written: ``checked`` when the caller
    has one (a verdict of this document, from :func:`exactnorm.api.check` in the same process),
    else the python-flint checker's; ``None`` with ``check=False``.

    Raises
    ------
    InvalidCertificateError
        The verdict is INVALID: nothing uncertified is written.
    """
    from exactnorm import checker_flint
    from exactnorm.checker import Verdict as CheckerVerdict

    if not check:
        return None
    if checked is not None and not isinstance(checked, CheckerVerdict):
        raise InputError("checked must be the Verdict of this certificate (from check)",
                         parameter="checked")
    verdict = checked if checked is not None else checker_flint.check_certificate(
        doc, progress=hook)
    refuse_invalid(verdict)
    return Verdict.of(verdict)


def export(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str], *, format: str = "json", mean: Any = 0, scale: Any = 1,
           eps: float | None = None, dtype: str | None = None,
           normalization: str | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS, verify: int = 0,
           source: str | os.PathLike[str] | None = None, data: Any = None, labels: Any = None,
           check: bool = True, checked: Any = None, interface: str = "source",
           timing: bool = True, allow_float32_error: bool = False,
           progress: Progress = None) -> ExportResult:
    """Write the tuned γ, β for a framework (``export``), after the checker accepts the
    certificate.

    Parameters
    ----------
    certificate : path-like or dict
        A certificate file or document.
    out : path-like
        A file, or ``"-"`` for standard output.
    format : {"json", "npz", "onnx", "torch"}
        ``json`` is exact (BatchNorm-style ``"p/q"`` strings); the others are floats and not
        certified (``npz`` arrays, an ONNX model, a PyTorch state dict).
    mean, scale : exact number
        Frozen running mean μ and scale ``s > 0`` of every neuron.
    eps : float, optional
        Float formats: ``running_var = s² − eps``.
    dtype, normalization : str, optional
        ONNX only: ``float64`` (default) or ``float32`` arithmetic, and ``batchnorm``/``muladd``.
    verify : int
        ONNX only: run the written model under onnxruntime at this many seeded points of the
        box against the exact target (and against ``source``).
    source : path-like, optional
        ONNX only: the model the certificate was made from; run beside the export on the same
        inputs, its outputs compared and its size and latency measured.
    data, labels : path-like or array, optional
        ONNX only: samples (``.npy``, ``(n, d_0)`` or images) and integer labels: the export's
        (and the source's) error, changed predictions and accuracy on them.
    check : bool
        Run the python-flint checker first and refuse an INVALID certificate (default); ``False``
        exports without a check (the result's ``verdict`` is then ``None``).
    checked : Verdict, optional
        A verdict of this very document from :func:`exactnorm.api.check` in the same process:
        used instead of checking again.
    interface : {"source", "plain"}
        ONNX only: the source model's input, outputs and classifier head as certify recorded
        them (default), or input ``x`` and output ``y`` (the logits) in the arithmetic dtype.
    timing : bool
        ONNX only: measure the latency per sample (batch 1) when onnxruntime is installed.
    allow_float32_error : bool
        A float32 model whose largest output differs from the exact target's at a verified
        point or sample is refused (the file is removed) unless this is set.
    progress : callable(done, total) or True, optional
        Told the steps done: the check and the read per frozen layer, the write, the verified
        points and samples, the timing; ``True`` draws a bar (:func:`~exactnorm.api.
        progress_bar`).

    Returns
    -------
    ExportResult
        The file, its size, the verdict, the warning of a float format and the measurements.

    Raises
    ------
    InvalidCertificateError
        The checker refuses the certificate (nothing is written).
    InputError
        Naming ``format``, ``scale``, ``eps``, ``dtype``, ``normalization``, ``verify``,
        ``source``, ``data`` or ``interface``.
    MissingExtraError
        ``onnx``, ``onnxruntime`` or ``torch`` without the package, before any work.
    """
    if format not in EXPORT_FORMATS:
        raise InputError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}",
                         parameter="format")
    if format != "onnx" and (dtype or normalization):
        raise InputError("dtype and normalization apply to the onnx format only",
                         parameter="dtype" if dtype else "normalization")
    require_integer(verify, "verify", minimum=0)
    for name, value in (("verify", verify), ("source", source), ("data", data)):
        if value and (format != "onnx" or os.fspath(out) == "-"):
            raise InputError(f"{name} applies to the onnx format written to a file",
                             parameter=name)
    if labels is not None and data is None:
        raise InputError("labels go with data", parameter="labels")
    if interface not in INTERFACES:
        raise InputError(f"interface must be one of {', '.join(INTERFACES)}, got {interface!r}",
                         parameter="interface")
    _require_dependencies(format, verify, source, data)
    if source is not None:
        require_file(source, "source model", parameter="source")
    doc = (certificate if isinstance(certificate, dict)
           else load_document(certificate, max_digits=max_digits))
    if is_transformer_document(doc):  # the rewritten transformer (docs/transformers.md)
        return export_transformer(doc, out, format=format, mean=mean, scale=scale, eps=eps,
                                  dtype=dtype, normalization=normalization,
                                  max_digits=max_digits, verify=verify, source=source,
                                  data=data, labels=labels, check=check, checked=checked,
                                  interface=interface, timing=timing,
                                  allow_float32_error=allow_float32_error, progress=progress,
                                  checked_verdict=checked_verdict)
    options: dict[str, Any] = {"mean": mean, "scale": scale, "eps": eps}
    if format == "onnx":
        options.update(dtype=dtype or "float64", normalization=normalization or "batchnorm",
                       interface=interface)
    if source is not None:
        _check_source(doc, source)  # before anything is written
    depth = declared_depth(doc)
    measure = format == "onnx" and os.fspath(out) != "-" and (
        verify or data is not None or source is not None
        or (timing and importlib.util.find_spec("onnxruntime") is not None))
    samples = verify + (data_samples(data) if data is not None else 0)
    with progress_context(progress, f"export {format}", "steps") as hook:
        stages = Stages(hook, check=depth if check and checked is None else 0, layers=depth,
                        write=1, verify=samples, timing=1 if measure and timing else 0)
        t0 = time.perf_counter()
        verdict = checked_verdict(doc, check, checked, stages.hook("check"))
        check_seconds = time.perf_counter() - t0 if verdict is not None and checked is None \
            else None
        stages.finish("check")
        read_back = None
        if format == "json":
            # the bytes written are read back and compared with the certificate's network
            data, warning = render_export(doc, "json", progress=stages.hook("layers"),
                                          **options)
            read_back = _write_export_checked(doc, data, out, max_digits)
        else:
            warning = export_certificate(doc, format, out, progress=stages.hook("layers"),
                                         **options)
        stages.finish("write")
        m = None
        if measure:
            from exactnorm.outputs.onnx_runs import verify_export

            m = verify_export(doc, out, verify, source=source, data=data, labels=labels,
                              timing=timing, progress=stages.hook("verify"))
            stages.finish("verify")
            stages.finish("timing")
    text = warning or ""
    if m is not None and "box" in m:
        e = m["box"]["export"]
        line = (f"verified under onnxruntime at {verify} points of the box: max abs error "
                f"{e['max_abs']:.3g}, max rel error {e['max_rel']:.3g}, largest output agrees "
                f"at {verify - e['changed']}/{verify}")
        text = f"{text}; {line}" if text else line
    changed = sum(m[k]["export"]["changed"] for k in ("box", "data") if m and k in m)
    if options.get("dtype") == "float32" and changed and not allow_float32_error:
        Path(out).unlink()
        raise InputError(f"{text}: the float32 model changes predictions ({changed} against "
                         f"the exact target), so it was not kept; use dtype float64, or "
                         f"allow_float32_error to keep it", parameter="dtype")
    size = len(b"") if os.fspath(out) == "-" else os.path.getsize(out)
    return ExportResult(path=None if os.fspath(out) == "-" else Path(out), format=format,
                        bytes=size, warning=warning, verdict=verdict, verification=m,
                        text=text, frozen_numbers=None if m is None else m.get("numbers"),
                        depth=depth, check_seconds=check_seconds, read_back=read_back)


def report(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str] | None = "report", *,
           max_digits: int = DEFAULT_MAX_DIGITS, float_points: int = FLOAT_ERROR_POINTS,
           data: Any = None, labels: Any = None, check: bool = True, checked: Any = None,
           progress: Progress = None) -> ReportResult:
    """Write ``report.md``/``report.html`` and plots for a certificate (``report``) after the
    checker accepts it: what is proven, the verdict, the architecture, counts, bit sizes and
    magnitudes of γ, β, the error a float32 or float64 export would have, and, with ``data``,
    what the float copies do on the user's samples.

    Parameters
    ----------
    certificate : path-like or dict
    out : path-like or None
        Output folder; ``None``: write nothing and return the Markdown (without images).
    float_points : int
        Points of the box at which the float error of an export is measured (0: not measured).
    data, labels : path-like or array, optional
        Samples (``.npy``, ``(n, d_0)`` or images) and integer labels: the largest error of the
        float32 and float64 copies against the exact target, the predictions they change, and
        the accuracy of the exact target and of each copy.
    check : bool
        Run the python-flint checker first and refuse an INVALID certificate (default);
        ``False``: no check, the report says it is not checked.
    checked : Verdict, optional
        A verdict of this document from :func:`exactnorm.api.check` in the same process.
    progress : callable(done, total) or True, optional
        Told the steps done (the check and the float copy one per frozen layer, the samples,
        then the plots and the write); ``True`` draws a bar.

    Returns
    -------
    ReportResult
        ``paths`` (name → path), ``verdict`` (python-flint checker; ``None`` unchecked),
        ``counts`` (parameters), ``plots``, ``float_errors``, ``data``; with ``out=None``:
        ``markdown``.

    Raises
    ------
    InvalidCertificateError
        The checker refuses the certificate (nothing is written).
    InputError
        Unreadable certificate or data.
    """
    require_integer(float_points, "float_points", minimum=0)
    if float_points > MAX_FLOAT_POINTS:
        raise InputError(f"float_points must be at most {MAX_FLOAT_POINTS}, got {float_points}",
                         parameter="float_points")
    if labels is not None and data is None:
        raise InputError("labels go with data", parameter="labels")
    doc = (certificate if isinstance(certificate, dict)
           else load_document(certificate, max_digits=max_digits))
    if is_transformer_document(doc):  # slots, boxes, bits (docs/transformers.md)
        return report_transformer(doc, out, float_points=float_points, data=data,
                                  labels=labels, check=check, checked=checked,
                                  progress=progress, checked_verdict=checked_verdict)
    if checked is not None:
        checked = checked_verdict(doc, check, checked, None)
    with progress_context(progress, "report", "steps") as hook:
        if out is None:
            parts = report_contents(doc, checked, float_points=float_points, progress=hook,
                                    plots=False, checked=check, data=data, labels=labels,
                                    refuse=True,
                                    no_plots="Plots are written with --out DIR only.")
            return ReportResult(verdict=None if parts["verdict"] is None
                                else Verdict.of(parts["verdict"]),
                                markdown=parts["markdown"], float_errors=parts["float_errors"],
                                data=parts["data"])
        result = write_report(doc, out, checked, progress=hook, float_points=float_points,
                              checked=check, data=data, labels=labels, refuse=True)
        if result["verdict"] is not None:
            result["verdict"] = Verdict.of(result["verdict"])
        return ReportResult.from_mapping(result)


#: the largest ``float_points`` of :func:`report` (each point is an exact evaluation of the target)
MAX_FLOAT_POINTS = 100_000
