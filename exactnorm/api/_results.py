"""Typed results of the verbs that used to return dictionaries.

A result is a frozen dataclass with named fields (an IDE completes them, a notebook shows them),
and it still answers ``result["verdict"]`` so that code written against the dictionaries keeps
working.

>>> r = ReportResult.from_mapping({"markdown": "# report", "verdict": None, "extra": 1})
>>> r.markdown == r["markdown"], r["extra"]
(True, 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from exactnorm import checker as _checker

__all__ = ["ReportResult", "ExportResult", "Verdict"]


@dataclass(frozen=True)
class ReportResult:
    """What :func:`exactnorm.api.report` wrote and found.

    ``verdict``: the python-flint checker's verdict on the certificate; ``paths``: name → file
    written (empty with ``out=None``); ``counts``: tuned, frozen and target parameters;
    ``plots``: whether the plots were drawn, ``no_plots`` the reason when not; ``float_errors``:
    per precision (``float32``, ``float64``) the measured error of a float copy of the network
    (``max_abs``, ``max_rel``, ``argmax_agree``, ``points``, ``abs``), ``None`` when not measured;
    ``markdown``: the report text when nothing was written; ``data``: the study of the user's
    samples (:func:`~exactnorm.outputs.data_eval.data_study`), ``None`` without data;
    ``extra``: anything else.
    """

    verdict: Any
    paths: dict[str, Path] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    plots: bool = False
    no_plots: str | None = None
    markdown: str | None = None
    float_errors: dict[str, dict[str, Any]] | None = None
    data: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ReportResult:
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in values.items() if k in names}
        return cls(**known, extra={k: v for k, v in values.items() if k not in names})

    def __getitem__(self, key: str) -> Any:
        if key in self.extra:
            return self.extra[key]
        if key in {f.name for f in fields(self)} - {"extra"}:
            return getattr(self, key)
        raise KeyError(key)

    def __repr__(self) -> str:
        ok = None if self.verdict is None else getattr(self.verdict, "ok", None)
        return (f"ReportResult(valid={ok}, files={sorted(self.paths)}, plots={self.plots})")


@dataclass(frozen=True)
class ExportResult:
    """What :func:`exactnorm.api.export` wrote and measured.

    ``path``: the file written (``None`` for standard output); ``format``; ``bytes``: its size;
    ``warning``: the not-certified warning of a float format (``None`` for JSON); ``verdict``:
    the checker's verdict on the certificate before the export (``None`` with ``check=False``);
    ``verification``: an ONNX export run under onnxruntime
    (:func:`~exactnorm.outputs.onnx_runs.verify_export`: ``box`` and ``data`` studies against
    the exact target and the source model, ``latency``, ``source_latency``, ``source_bytes``),
    ``None`` when not run; ``text``: the warning and the measured error in one text (what
    ``export`` returned before it returned this object; ``"…" in result`` searches it);
    ``frozen_numbers``: the numbers an ONNX export stores; ``depth``: frozen layers;
    ``check_seconds``: the time of the check before the export (``None`` when not run here);
    ``read_back``: for the exact JSON format, how its written bytes were read back and found to
    give the certificate's network exactly (``None`` for the float formats).
    """

    path: Path | None
    format: str
    bytes: int
    warning: str | None = None
    verdict: Any = None
    verification: dict[str, Any] | None = None
    text: str = ""
    frozen_numbers: int | None = None
    depth: int | None = None
    check_seconds: float | None = None  #: wall time of the check before the export
    #: json: how the written bytes were read back and compared with the certificate
    read_back: str | None = None

    def __contains__(self, part: str) -> bool:
        return part in self.text

    def __str__(self) -> str:
        return self.text


class Verdict(_checker.Verdict):
    """The checker's :class:`~exactnorm.checker.Verdict`, with a short ``repr`` and an HTML view
    for notebooks (the facts of a 784-input certificate hold its whole box); equal to the
    checker's verdict with the same fields.

    >>> v = Verdict(True, "ok", "f = g on [0,1]^2", facts={"box": {"lower": [0] * 784}})
    >>> v
    Verdict(VALID: f = g on [0,1]^2)
    >>> v == _checker.Verdict(True, "ok", "f = g on [0,1]^2", facts={"box": {"lower": [0] * 784}})
    True
    """

    @classmethod
    def of(cls, v: _checker.Verdict) -> Verdict:
        return cls(v.ok, v.rule, v.message, v.layer, v.neuron, v.facts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _checker.Verdict):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        text = self.message if len(self.message) <= 160 \
            else self.message[:158].rsplit(" ", 1)[0] + " …"  # cut between words
        where = "" if self.ok or self.layer is None else f" at layer {self.layer}"
        claim = (self.facts or {}).get("claim") if self.ok else None
        status = f"{claim} VALID" if claim else "VALID" if self.ok else "INVALID"
        return f"Verdict({status}{where}: {text})"

    def _repr_html_(self) -> str:
        import html

        colour = "green" if self.ok else "red"
        return (f"<b style='color:{colour}'>{'VALID' if self.ok else 'INVALID'}</b> "
                f"(rule <code>{html.escape(self.rule)}</code>): "
                f"{html.escape(self.message[:2000])}")
