"""The output verbs of the API: ``export`` (a normalization layer for a framework, exact JSON or
floats, optionally verified under onnxruntime) and ``report`` (Markdown/HTML with plots).
Re-exported by :mod:`exactnorm.api`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exactnorm import checker_flint
from exactnorm.api._results import ReportResult, Verdict
from exactnorm.certificate import (
    load_certificate,
)
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.rationals import DEFAULT_MAX_DIGITS
from exactnorm.outputs.export import EXPORT_FORMATS, export_certificate
from exactnorm.outputs.report import report_markdown, write_report

if TYPE_CHECKING:
    pass


__all__ = ["export", "report"]


def export(certificate: str | os.PathLike[str] | dict[str, Any],
           out: str | os.PathLike[str], *, format: str = "json", mean: Any = 0, scale: Any = 1,
           eps: float | None = None, dtype: str | None = None,
           normalization: str | None = None,
           max_digits: int = DEFAULT_MAX_DIGITS, verify: int = 0,
           allow_float32_error: bool = False) -> str | None:
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
    result: str | None = export_certificate(doc, format, out, **options)
    if verify:
        from exactnorm.outputs.export_onnx import verify_onnx

        m = verify_onnx(doc, out, verify)
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
           max_digits: int = DEFAULT_MAX_DIGITS) -> ReportResult:
    """Write ``report.md``/``report.html`` and bit-size histograms for a certificate (``report``).

    Parameters
    ----------
    certificate : path-like or dict
    out : path-like or None
        Output folder; ``None``: write nothing and return the Markdown (without images).

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
    doc = (certificate if isinstance(certificate, dict)
           else load_certificate(certificate, max_digits=max_digits))
    if out is None:
        verdict = Verdict.of(checker_flint.check_certificate(doc))
        text = report_markdown(doc, verdict, plots=False,
                               no_plots="Histograms are written with --out DIR only.")
        return ReportResult(verdict=verdict, markdown=text)
    return ReportResult.from_mapping(write_report(doc, out))
