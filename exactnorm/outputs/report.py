"""Human-readable report on a certificate: what is proven, the checker's verdict, the architecture,
parameter counts and the bit sizes of the tuned γ, β (Markdown, HTML, PNG).

The HTML is the Markdown rendered by markdown-it-py (CommonMark plus tables, raw HTML disabled so
that text from a certificate cannot inject markup). The histograms need matplotlib
(``exactnorm[plot]``); without it the report is written without them and says so.

The statement (SPEC §3): for all ``x`` in the box ``D``, ``f(x) = g(x)``, where ``f`` is the frozen
network with the tuned normalization parameters and ``g`` the target. The verdict is the
python-flint checker's (:mod:`exactnorm.checker_flint`), which shares no code with the
constructions.

Parameter counts: tuned = ``2·Σ widths`` (one γ and one β per neuron), frozen = ``Σ`` entries of
every ``V_j`` plus entries of random skip matrices (identity/selection skips are fixed structure,
not parameters), target = ``Σ`` entries of every ``W_i`` and ``b_i``.

The bit size of a rational ``p/q`` is ``max(bits(|p|), bits(q))`` as in
:func:`exactnorm.exact.linalg.max_bits`.

>>> from fractions import Fraction
>>> bit_size(Fraction(-5, 16)), bit_size(0)
(5, 1)
"""

from __future__ import annotations

import html
import io as _stdio
import math
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

from exactnorm import checker_flint
from exactnorm.certificate import decode_compact, network_from_dict
from exactnorm.checker.numbers import CertificateError
from exactnorm.checker.reading import Picks, read_certificate
from exactnorm.checker.vocabulary import DEFAULT_MAX_DIGITS
from exactnorm.errors import InputError, MissingExtraError, require_extra
from exactnorm.exact.files import atomic_write
from exactnorm.model.network import TargetNetwork
from exactnorm.model.targets import target_from_dict

__all__ = [
    "bit_size",
    "parameter_counts",
    "architecture_lines",
    "report_markdown",
    "markdown_to_html",
    "write_report",
    "NO_PLOTS",
]

NO_PLOTS = ("No histograms: matplotlib is not installed "
            "(pip install 'exactnorm[plot]' to add them).")

ASSUMPTIONS = (
    "Exact rational arithmetic throughout; no floating-point number enters the proof.",
    "The statement holds on the box D only (interval bound propagation over D).",
    "Activations are exactly relu or identity as declared; the target's are as listed.",
    "Frozen weights V and skip matrices are the ones written in the certificate "
    "(drawn as recorded in provenance); only γ and β are tuned.",
    "Normalization statistics are frozen: γ, β act as u = γ ⊙ (V h) + β "
    "(a BatchNorm with mean μ and scale s > 0 is converted exactly by `exactnorm export`).",
    "Trust rests on the independent checker, not on the construction code.",
)


def bit_size(x: Any) -> int:
    """``max(bits(|p|), bits(q))`` of an exact number ``p/q`` (at least 1), from the integers
    themselves (never through decimal text: a 20,000-bit γ has more digits than CPython converts
    by default)."""
    if hasattr(x, "numer"):  # fmpq
        p, q = int(x.numer()), int(x.denom())
    elif isinstance(x, tuple):  # (p, q) in lowest terms
        p, q = x
    else:
        f = Fraction(x)
        p, q = f.numerator, f.denominator
    return max(1, abs(p).bit_length(), q.bit_length())


class _Skip:
    __slots__ = ("kind", "source")

    def __init__(self, kind: str, source: int) -> None:
        self.kind, self.source = kind, source


class _Layer:
    """What the report needs of a frozen layer, read without regenerating its matrix."""

    def __init__(self, layer: dict[str, Any], kinds: list[str]) -> None:
        self.input, self.activation = layer["input"], layer["act"]
        self.width = layer["V"].nrows
        self.frozen = layer["V"].nrows * layer["V"].ncols + sum(
            P.nrows * P.ncols for _, P in layer["skips"] if not isinstance(P, Picks))
        self.skips = [_Skip(kind, src) for kind, (src, _) in zip(kinds, layer["skips"])]
        self.gamma, self.beta = _pairs(layer["gamma"]), _pairs(layer["beta"])


def _pairs(v: Any) -> list[tuple[int, int]]:
    out = []
    for n in v.nums:
        g = math.gcd(n, v.den)
        out.append((n // g, v.den // g))
    return out


class _Frozen:
    """The frozen network as the checker's reader sees it: shapes, γ and β, no matrix."""

    def __init__(self, layers: list[dict[str, Any]], raw: list[dict[str, Any]],
                 checkpoints: list[int], d0: int) -> None:
        # the declared skip kinds, as the document states them (the reader checked them)
        self.layers = [_Layer(layer, [s["kind"] for s in doc_layer.get("skip", [])])
                       for layer, doc_layer in zip(layers, raw)]
        self.checkpoints, self.input_dim = tuple(checkpoints), d0
        self.depth = len(self.layers)
        self.widths = tuple(layer.width for layer in self.layers)
        self.tuned_parameters = sum(2 * layer.width for layer in self.layers)
        self.frozen_parameters = sum(layer.frozen for layer in self.layers)


def _networks(doc: dict[str, Any]) -> tuple[TargetNetwork, Any]:
    """The target exactly, and the frozen network's shapes and tuned values through the
    checker's reader (draws are not regenerated: the report needs no frozen matrix); a document
    that reader refuses is read fully instead, so an invalid certificate still gets its report."""
    if not isinstance(doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    target = target_from_dict(decode_compact(doc))
    try:
        lower, _, _, layers, cps, _ = read_certificate(doc, DEFAULT_MAX_DIGITS)
    except CertificateError:
        return target, network_from_dict(doc)
    if any(layer["kind"] != "dense" for layer in layers):
        return target, network_from_dict(doc)
    return target, _Frozen(layers, doc["network"]["layers"], cps, len(lower))


def parameter_counts(doc: dict[str, Any],
                     networks: tuple[TargetNetwork, Any] | None = None) -> dict[str, int]:
    """``{"tuned", "frozen", "target"}`` scalar counts of a certificate (see module docstring)."""
    g, f = _networks(doc) if networks is None else networks
    return {"tuned": f.tuned_parameters, "frozen": f.frozen_parameters, "target": g.parameters}


#: an architecture longer than this is summarised (first and last layers, width statistics)
ARCHITECTURE_LINES = 40


def architecture_lines(net: Any) -> list[str]:
    """One line per node: ``node j = layer j`` with its input node, width, activation, skips and
    a checkpoint mark (``= a_i``) where node j equals target layer i's output; a network of more
    than :data:`ARCHITECTURE_LINES` layers is summarised by its first and last ten nodes."""
    marks = {c: i for i, c in enumerate(net.checkpoints, 1)}
    lines = [f"node 0: input x, width {net.input_dim}"]
    n = len(net.layers)
    if n > ARCHITECTURE_LINES:
        widths = [layer.width for layer in net.layers]
        n_skips = sum(len(layer.skips) for layer in net.layers)
        lines.append(f"({n} frozen layers: widths {min(widths)} to {max(widths)}, "
                     f"{n_skips} skip connections, {len(net.checkpoints)} checkpoints; the "
                     f"first and last ten follow)")
    for j, layer in enumerate(net.layers, 1):
        if n > ARCHITECTURE_LINES and 10 < j <= n - 10:
            if j == 11:
                lines.append(f"... nodes 11 to {n - 10} ...")
            continue
        skips = ", ".join(f"{s.kind} from node {s.source}" for s in layer.skips)
        text = (f"node {j} = layer {j}: input node {layer.input}, width {layer.width}, "
                f"{layer.activation}")
        if skips:
            text += f", skips: {skips}"
        if j in marks:
            text += f"  [checkpoint: = a_{marks[j]}]"
        lines.append(text)
    return lines


def _bits(net: Any) -> tuple[list[int], list[int]]:
    gam = [bit_size(x) for layer in net.layers for x in layer.gamma]
    bet = [bit_size(x) for layer in net.layers for x in layer.beta]
    return gam, bet


def _verdict(doc: dict[str, Any]) -> Any:
    # the checker, not the api: outputs sit below the interfaces
    return checker_flint.check_certificate(doc)


def _box_text(values: Any) -> str:
    """A box side for a reader: all equal values once, else the first eight."""
    shown = [str(x) if bit_size(x) <= 64 else f"({bit_size(x)}-bit number)" for x in values[:8]]
    if all(x == values[0] for x in values):
        return f"{shown[0]} (all {len(values)} coordinates)"
    return ", ".join(shown) + (f", … ({len(values)} coordinates)" if len(values) > 8 else "")


def report_markdown(doc: dict[str, Any], verdict: Any | None = None, *,
                    plots: bool = True, no_plots: str = NO_PLOTS,
                    networks: tuple[TargetNetwork, Any] | None = None) -> str:
    """The report as Markdown (the HTML version carries the same text).

    With ``plots=False`` the histogram images are replaced by ``no_plots``, saying why.
    ``networks`` (target and frozen network of ``doc``) avoids reading the document again.
    """
    g, f = _networks(doc) if networks is None else networks
    v = _verdict(doc) if verdict is None else verdict
    counts = parameter_counts(doc, (g, f))
    gam, bet = _bits(f)
    lo = _box_text(g.lower)
    hi = _box_text(g.upper)
    prov = doc.get("provenance", {}) if isinstance(doc.get("provenance"), dict) else {}
    out = ["# exactnorm certificate report", "",
           "## What is proven" if v.ok else "## What is claimed (NOT proven: the check failed)",
           "",
           "For all x in the box D, f(x) = g(x), in exact rational arithmetic.", "",
           f"* D = {{x : lower ≤ x ≤ upper}}, lower = {lo}; upper = {hi}",
           f"* target g: widths {' → '.join(map(str, g.widths))}, activations "
           f"{', '.join(layer.activation for layer in g.layers)}",
           f"* frozen f: {f.depth} layers, widths {', '.join(map(str, f.widths))}",
           f"* construction: {prov.get('construction', 'unknown')}, seed "
           f"{prov.get('seed', 'unknown')}, distribution {prov.get('distribution', 'unknown')}",
           "", "## Assumptions", ""]
    out += [f"* {a}" for a in ASSUMPTIONS]
    out += ["", "## Verdict (python-flint checker)", "",
            f"**{'VALID' if v.ok else 'INVALID'}** — rule `{v.rule}`: {v.message}", "",
            "## Architecture", "", "```"]
    out += architecture_lines(f)
    out += ["```", "", "## Parameter counts", "",
            "| kind | count | rule |", "|---|---|---|",
            f"| tuned (γ, β) | {counts['tuned']} | 2 · Σ widths |",
            f"| frozen | {counts['frozen']} | Σ entries of V + random skips |",
            f"| target | {counts['target']} | Σ entries of W and b |", "",
            "## Bit sizes of the tuned parameters", "",
            "Bit size of p/q = max(bits(|p|), bits(q)).", "",
            f"* γ: {len(gam)} values, max {max(gam, default=0)} bits",
            f"* β: {len(bet)} values, max {max(bet, default=0)} bits", ""]
    if plots:
        out += ["![γ bit sizes](gamma_bits.png)", "", "![β bit sizes](beta_bits.png)", ""]
    else:
        out += [f"_{no_plots}_", ""]
    return "\n".join(out)


def _histogram_png(values: list[int], title: str) -> bytes:
    purpose = "the bit-size histograms"
    FigureCanvasAgg = require_extra("matplotlib.backends.backend_agg", purpose).FigureCanvasAgg
    Figure = require_extra("matplotlib.figure", purpose).Figure

    # a bare Figure on an Agg canvas: no pyplot, so the caller's backend and figures are untouched
    fig = Figure(figsize=(6, 3.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    top = max(values, default=1)
    # at most 40 bars of whole bit counts: a bar per bit of a 1,445-bit γ draws nothing visible
    width = max(1, -(-top // 40))
    ax.hist(values, bins=range(1, top + width + 1, width), color="#4c72b0", edgecolor="none")
    ax.set_xlabel("bit size max(bits(|p|), bits(q))")
    ax.set_ylabel("neurons")
    ax.set_title(title)
    fig.tight_layout()
    buf = _stdio.BytesIO()
    # no Software/date metadata: equal certificates give equal files
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def markdown_to_html(md: str, title: str = "exactnorm certificate report") -> str:
    """Render Markdown to a standalone HTML page with markdown-it-py (tables on, raw HTML off).

    >>> "<strong>VALID</strong>" in markdown_to_html("**VALID** rule `ok`")
    True
    >>> "<script>" in markdown_to_html("<script>alert(1)</script>")
    False
    """
    from markdown_it import MarkdownIt

    # raw HTML off: a rule name or message from a certificate is text, never markup
    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(md)
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n{body}"
            "</body></html>\n")


_CSS = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
        "line-height:1.5;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.2rem .6rem}pre,code{background:#f5f5f5;font-size:90%}pre{padding:.6rem;"
        "overflow-x:auto}img{max-width:100%}")


def write_report(doc: dict[str, Any], out_dir: str | os.PathLike[str],
                 verdict: Any | None = None) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and, with matplotlib, ``gamma_bits.png`` and
    ``beta_bits.png`` into ``out_dir`` (atomically, file by file).

    Parameters
    ----------
    doc
        A certificate document.
    out_dir
        The output folder (created if missing).
    verdict
        A verdict already computed for ``doc``; checked here otherwise.

    Returns
    -------
    dict
        ``paths`` (name → path), ``verdict``, ``counts`` and ``plots`` (``False`` when matplotlib
        is missing: the report then says so instead of showing histograms).
    """
    g, f = _networks(doc)
    v = _verdict(doc) if verdict is None else verdict
    gam, bet = _bits(f)
    try:
        pngs = {"gamma_bits.png": _histogram_png(gam, "tuned γ"),
                "beta_bits.png": _histogram_png(bet, "tuned β")}
    except MissingExtraError:
        pngs = {}
    md = report_markdown(doc, v, plots=bool(pngs), networks=(g, f))
    files: dict[str, bytes] = {"report.md": md.encode(),
                               "report.html": markdown_to_html(md).encode(), **pngs}
    out = Path(out_dir)
    paths = {}
    for name, data in files.items():
        atomic_write(out / name, data)
        paths[name] = out / name
    return {"paths": paths, "verdict": v, "counts": parameter_counts(doc, (g, f)),
            "plots": bool(pngs),
            "no_plots": NO_PLOTS}
