"""The output verbs of the API: ``export`` (a normalization layer for a framework, exact JSON or
floats, optionally verified under onnxruntime) and ``report`` (Markdown/HTML with plots).
Re-exported by :mod:`exactnorm.api`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from exactnorm.api._progress import Progress, progress_context
from exactnorm.api._results import ReportResult, Verdict
from exactnorm.certificate import (
    load_certificate,
)
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.outputs.export import EXPORT_FORMATS, export_certificate
from exactnorm.outputs.export_onnx import verify_onnx
from exactnorm.outputs.report import FLOAT_ERROR_POINTS, report_contents, write_report
from exactnorm.outputs.stages import Stages, declared_depth

__all__ = ["export", "report"]


def export(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str], *, format: str = "json", mean: Any = 0, scale: Any = 1,
           eps: float | None = None, dtype: str | None = None,
           normalization: str | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS, verify: int = 0,
           allow_float32_error: bool = False, progress: Progress = None) -> str | None:
    """Write the tuned γ, β for a framework (``export``).

    Parameters
    ----------
    certificate : path-like or dict
        A certificate file or document (read strictly, not checked: use :func:`check`).
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
        ONNX only: ``float64`` (default) or ``float32``, and ``batchnorm``/``muladd``.
    verify : int
        ONNX only: evaluate the written model under onnxruntime at this many seeded points of
        the box against the exact target; the measured error joins the returned text.
    allow_float32_error : bool
        With ``verify``, a float32 model whose largest output differs from the exact target's at
        some point is refused (the file is removed) unless this is set.
    progress : callable(done, total) or True, optional
        Told the steps done: one per frozen layer read, then the write and the verification;
        ``True`` draws a bar (:func:`~exactnorm.api.progress_bar`).

    Returns
    -------
    str or None
        The not-certified warning of a float export, ``None`` for JSON.

    Raises
    ------
    InputError
        Naming ``format``, ``scale``, ``eps``, ``dtype`` or ``normalization``.
    MissingExtraError
        ``onnx`` or ``torch`` without the package.
    """
    if format not in EXPORT_FORMATS:
        raise InputError(f"format must be one of {', '.join(EXPORT_FORMATS)}, got {format!r}",
                         parameter="format")
    if format != "onnx" and (dtype or normalization):
        raise InputError("dtype and normalization apply to the onnx format only",
                         parameter="dtype" if dtype else "normalization")
    doc = (certificate if isinstance(certificate, dict)
           else load_certificate(certificate, max_digits=max_digits))
    options: dict[str, Any] = {"mean": mean, "scale": scale, "eps": eps}
    require_integer(verify, "verify", minimum=0)
    if verify and (format != "onnx" or os.fspath(out) == "-"):
        raise InputError("verify applies to the onnx format written to a file",
                         parameter="verify")
    if format == "onnx":
        options.update(dtype=dtype or "float64", normalization=normalization or "batchnorm")
    depth = declared_depth(doc)
    with progress_context(progress, f"export {format}", "steps") as hook:
        stages = Stages(hook, layers=depth, write=1, verify=1 if verify else 0)
        result: str | None = export_certificate(doc, format, out, progress=stages.hook("layers"),
                                                **options)
        stages.finish("write")
        if verify:
            m = verify_onnx(doc, out, verify)
            stages.finish("verify")
    if verify:
        text = (f"verified under onnxruntime at {m['points']} points of the box: max abs error "
                f"{m['max_abs_error']:.3g}, max rel error {m['max_rel_error']:.3g}, largest "
                f"output agrees at {m['argmax_agree']}/{m['points']}")
        if options["dtype"] == "float32" and m["argmax_agree"] < m["points"] \
                and not allow_float32_error:
            Path(out).unlink()
            raise InputError(f"{text}: the float32 model changes predictions, so it was not "
                             f"kept; use dtype float64, or allow_float32_error to keep it",
                             parameter="dtype")
        result = f"{result}; {text}" if result else text
    return result


def report(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str] | None = "report", *,
           max_digits: int = DEFAULT_MAX_DIGITS, float_points: int = FLOAT_ERROR_POINTS,
           progress: Progress = None) -> ReportResult:
    """Write ``report.md``/``report.html`` and plots for a certificate (``report``): what is
    proven, the verdict, the architecture, counts, bit sizes and magnitudes of γ, β, and the error
    a float32 or float64 export would have.

    Parameters
    ----------
    certificate : path-like or dict
    out : path-like or None
        Output folder; ``None``: write nothing and return the Markdown (without images).
    float_points : int
        Points of the box at which the float error of an export is measured (0: not measured).
    progress : callable(done, total) or True, optional
        Told the steps done (the check and the float copy one per frozen layer, then the plots
        and the write); ``True`` draws a bar.

    Returns
    -------
    ReportResult
        ``paths`` (name → path), ``verdict`` (python-flint checker), ``counts`` (parameters),
        ``plots``; with ``out=None``: ``markdown`` and ``verdict``.

    Raises
    ------
    InputError
        Unreadable certificate, or matplotlib missing (``pip install exactnorm[plot]``).
    """
    require_integer(float_points, "float_points", minimum=0)
    if float_points > MAX_FLOAT_POINTS:
        raise InputError(f"float_points must be at most {MAX_FLOAT_POINTS}, got {float_points}",
                         parameter="float_points")
    doc = (certificate if isinstance(certificate, dict)
           else load_certificate(certificate, max_digits=max_digits))
    with progress_context(progress, "report", "steps") as hook:
        if out is None:
            parts = report_contents(doc, float_points=float_points, progress=hook, plots=False,
                                    no_plots="Plots are written with --out DIR only.")
            return ReportResult(verdict=Verdict.of(parts["verdict"]), markdown=parts["markdown"],
                                float_errors=parts["float_errors"])
        return ReportResult.from_mapping(write_report(doc, out, progress=hook,
                                                      float_points=float_points))


#: the largest ``float_points`` of :func:`report` (each point is an exact evaluation of the target)
MAX_FLOAT_POINTS = 100_000
