"""Human-readable report on a certificate: what is proven, the checker's verdict, the architecture,
parameter counts and the bit sizes of the tuned γ, β (Markdown, HTML, PNG).

The HTML is the Markdown rendered by markdown-it-py (CommonMark plus tables, raw HTML disabled so
that text from a certificate cannot inject markup). The histograms need matplotlib
(``exactnorm[plot]``); without it the report is written without them and says so.

The statement (docs/certificate-format.md): for all ``x`` in the box ``D``, ``f(x) = g(x)``,
where ``f`` is the frozen network with the tuned normalization parameters and ``g`` the
target. The verdict is the python-flint checker's (:mod:`exactnorm.checker_flint`), which
shares no code with the constructions.

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
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from exactnorm import checker_flint
from exactnorm.certificate import float_network, read_target
from exactnorm.errors import ExactnormError, InputError, MissingExtraError, require_extra
from exactnorm.exact.files import atomic_write
from exactnorm.model.network import FloatNetwork, TargetNetwork
from exactnorm.outputs.data_eval import exact_argmax
from exactnorm.outputs.stages import Stages, declared_depth, refuse_invalid

__all__ = [
    "bit_size",
    "parameter_counts",
    "architecture_lines",
    "residual_lines",
    "report_markdown",
    "markdown_to_html",
    "write_report",
    "report_contents",
    "magnitudes",
    "float_error_study",
    "NO_PLOTS",
    "FLOAT_ERROR_POINTS",
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
    p, q = _ratio(x)
    return max(1, abs(p).bit_length(), q.bit_length())


def _ratio(x: Any) -> tuple[int, int]:
    """``(p, q)`` of an exact number: an fmpq, a ``(p, q)`` pair (the reader's values) or
    anything :class:`~fractions.Fraction` takes."""
    if hasattr(x, "numer"):  # fmpq
        return int(x.numer()), int(x.denom())
    if isinstance(x, tuple):  # (p, q) in lowest terms
        return x
    f = Fraction(x)
    return f.numerator, f.denominator


def _networks(doc: dict[str, Any]) -> tuple[TargetNetwork, FloatNetwork]:
    """The exact target and the frozen network's float copy (layers of every kind through the
    model protocol: widths, skips, counts, exact γ and β, the float evaluation), each read once
    (:func:`~exactnorm.certificate.read_target`, :func:`~exactnorm.certificate.float_network`);
    the structural rules are the checker's, so a document it refuses still gets its report."""
    if not isinstance(doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    return read_target(doc), float_network(doc)


def parameter_counts(doc: dict[str, Any],
                     networks: tuple[TargetNetwork, Any] | None = None) -> dict[str, int]:
    """``{"tuned", "frozen", "target"}`` scalar counts of a certificate (see module docstring)."""
    g, f = _networks(doc) if networks is None else networks
    return {"tuned": f.tuned_parameters, "frozen": f.frozen_parameters, "target": g.parameters}


#: an architecture longer than this is summarised (first and last layers, width statistics)
ARCHITECTURE_LINES = 40


def residual_lines(g: TargetNetwork, f: Any) -> list[str]:
    """The blocks of a residual target, one line each: the target layer that adds a skip, the
    node it reads, the skip's kind and source (an identity, a projection — a target layer of
    its own — or a selection), and the residual its checkpoint carries in ``f``; then every
    other layer that reads a node other than the one before it. Empty for a chain."""
    if g.is_chain:
        return []
    cps = f.checkpoints
    residual = getattr(f, "residual", lambda j: None)

    def node(p: int) -> str:
        return "x" if p == 0 else f"a_{p}"

    lines: list[str] = []
    shortcuts: set[int] = set()
    for i, layer in enumerate(g.layers, 1):
        skip = g.wire(i).skip
        if skip is None:
            continue
        q = skip.source
        if skip.kind == "selection":
            picks = getattr(skip.weight, "picks", ())
            copied = sum(c is not None for c in picks)
            short = (f"a selection of {node(q)} ({copied} of its entries copied, "
                     f"{len(picks) - copied} zeros: an option-A shortcut)")
        elif q > 0 and g.layers[q - 1].activation == "identity" and \
                g.layers[q - 1].parameters > 0:
            shortcuts.add(q)
            short = (f"the projection {node(q)} (target layer {q}: "
                     f"{g.layers[q - 1].describe()}, reading {node(g.wire(q).input)})")
        else:
            short = f"the identity of {node(q)}"
        lines.append(f"block {len(lines) // 2 + 1}: target layer {i} ({layer.describe()}) "
                     f"reads {node(g.wire(i).input)} and adds {short} before its "
                     f"{layer.activation}")
        r = residual(cps[i - 1]) if i <= len(cps) else None
        where = f"checkpoint node {cps[i - 1]} (= a_{i})" if i <= len(cps) else "checkpoint"
        lines.append(f"  {where} adds the residual {r.kind} from node {r.source} before its "
                     f"activation" if r is not None else f"  {where} carries no residual")
    for i in range(1, g.depth + 1):
        w = g.wire(i)
        if w.input != i - 1 and w.skip is None and i not in shortcuts:
            lines.append(f"target layer {i} ({g.layers[i - 1].describe()}) reads "
                         f"{node(w.input)}")
    return lines


def architecture_lines(net: Any) -> list[str]:
    """One line per node: ``node j = layer j`` with its input node, width, activation, skips and
    a checkpoint mark (``= a_i``) where node j equals target layer i's output; a network of more
    than :data:`ARCHITECTURE_LINES` layers is summarised by its first and last ten nodes."""
    marks = {c: i for i, c in enumerate(net.checkpoints, 1)}
    residual = getattr(net, "residual", None)
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
        skips = ", ".join(f"{kind} from node {source}"
                          for kind, (source, _) in zip(layer.skip_kinds, layer.skips))
        text = (f"node {j} = layer {j}: {layer.kind}, input node {layer.input}, width "
                f"{layer.width}, {layer.activation}")
        if skips:
            text += f", skips: {skips}"
        r = residual(j) if residual is not None else None
        if r is not None:
            text += f", residual before the activation: {r.kind} from node {r.source}"
        if j in marks:
            text += f"  [checkpoint: = a_{marks[j]}]"
        lines.append(text)
    return lines


def _bits(net: Any) -> tuple[list[int], list[int]]:
    gam = [bit_size(x) for layer in net.layers for x in layer.gamma]
    bet = [bit_size(x) for layer in net.layers for x in layer.beta]
    return gam, bet


def _verdict(doc: dict[str, Any], progress: Any = None) -> Any:
    # the checker, not the api: outputs sit below the interfaces
    return checker_flint.check_certificate(doc, progress=progress)


def _box_text(values: Any) -> str:
    """A box side for a reader: all equal values once, else the first eight."""
    shown = [str(x) if bit_size(x) <= 64 else f"({bit_size(x)}-bit number)" for x in values[:8]]
    if all(x == values[0] for x in values):
        return f"{shown[0]} (all {len(values)} coordinates)"
    return ", ".join(shown) + (f", … ({len(values)} coordinates)" if len(values) > 8 else "")


#: Markdown lines longer than this (outside tables and code) are wrapped
LINE_WIDTH = 100
#: a list of widths longer than this is summarised
LIST_ITEMS = 12


def _list_text(values: Sequence[Any], sep: str = ", ") -> str:
    """A list for a reader: whole up to :data:`LIST_ITEMS` items, else its ends and a count.

    >>> _list_text(list(range(30)))
    '0, 1, 2, 3, 4, 5, …, 24, 25, 26, 27, 28, 29 (30 values, from 0 to 29)'
    """
    items = [str(v) for v in values]
    if len(items) <= LIST_ITEMS:
        return sep.join(items)
    half = LIST_ITEMS // 2
    nums = [v for v in values if isinstance(v, int)]
    span = f", from {min(nums)} to {max(nums)}" if len(nums) == len(items) else ""
    return (f"{sep.join(items[:half])}{sep}…{sep}{sep.join(items[-half:])} "
            f"({len(items)} values{span})")


def wrap_markdown(md: str, width: int = LINE_WIDTH) -> str:
    """Wrap long prose lines (list items keep their marker's indentation); tables, code blocks
    and headings stay as they are (Markdown joins wrapped lines, so the rendering is the same).

    >>> print(wrap_markdown("* " + "word " * 16, width=40))
    * word word word word word word word
      word word word word word word word
      word word
    """
    import textwrap

    out: list[str] = []
    code = False
    for line in md.split("\n"):
        if line.startswith("```"):
            code = not code
        if code or len(line) <= width or line.lstrip().startswith(("|", "#", "![")):
            out.append(line)
            continue
        indent = "  " if line.startswith(("* ", "- ")) else ""
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False) or [line]
    return "\n".join(out)


def report_markdown(doc: dict[str, Any], verdict: Any | None = None, *,
                    plots: bool = True, no_plots: str = NO_PLOTS,
                    networks: tuple[TargetNetwork, Any] | None = None,
                    float_errors: tuple[dict[str, Any] | None, str] | None = None,
                    magnitudes_of_f: dict[str, Any] | None = None, checked: bool = True,
                    data: dict[str, Any] | None = None) -> str:
    """The report as Markdown (the HTML version carries the same text).

    With ``plots=False`` the images are replaced by ``no_plots``, saying why. ``networks``
    (target and frozen network of ``doc``) avoids reading the document again; ``float_errors``
    (from :func:`float_error_study`) adds the section on the float error of an export;
    ``magnitudes_of_f`` (:func:`magnitudes` of the frozen network) avoids computing them again;
    ``checked=False`` reports without a verdict (said so); ``data`` (from
    :func:`~exactnorm.outputs.data_eval.data_study`) adds the section on the user's data.
    """
    g, f = _networks(doc) if networks is None else networks
    v = (_verdict(doc) if verdict is None else verdict) if checked else None
    counts = parameter_counts(doc, (g, f))
    gam, bet = _bits(f)
    lo = _box_text(g.lower)
    hi = _box_text(g.upper)
    prov = doc.get("provenance", {}) if isinstance(doc.get("provenance"), dict) else {}
    title = ("## What is claimed (NOT checked: the report was written with --no-check)"
             if v is None else "## What is proven" if v.ok
             else "## What is claimed (NOT proven: the check failed)")
    source = prov.get("source") if isinstance(prov.get("source"), dict) else None
    out = ["# exactnorm certificate report", "", title, "",
           "For all x in the box D, f(x) = g(x), in exact rational arithmetic.", "",
           f"* D = {{x : lower ≤ x ≤ upper}}, lower = {lo}; upper = {hi}",
           f"* target g: widths {_list_text(g.widths, ' → ')}, activations "
           f"{_list_text([layer.activation for layer in g.layers])}",
           f"* frozen f: {f.depth} layers, widths {_list_text(f.widths)}",
           f"* construction: {prov.get('construction', 'unknown')}, seed "
           f"{prov.get('seed', 'unknown')}, distribution {prov.get('distribution', 'unknown')}"]
    if source is not None and isinstance(source.get("head"), dict):
        heads = [str(n.get("op")) for n in source["head"].get("nodes", [])
                 if isinstance(n, dict)][:1]
        out.append(f"* g is the logits of the source model, before its classifier head "
                   f"({', '.join(heads)}); the head is a fixed map of them, kept by the export")
    out += ["", "## Assumptions", ""]
    out += [f"* {a}" for a in ASSUMPTIONS]
    out += ["", "## Verdict (python-flint checker)", "",
            "**NOT CHECKED** (--no-check): run `exactnorm check` before relying on it"
            if v is None else
            f"**{'VALID' if v.ok else 'INVALID'}** — rule `{v.rule}`: {v.message}", "",
            "## Architecture", "", "```"]
    out += architecture_lines(f)
    blocks = residual_lines(g, f)
    if blocks:
        out += ["```", "", "## Residual blocks", "",
                "Each skip is added before its layer's activation; the frozen network adds "
                "the same skip from the checkpoint of its source (the normalization acts on "
                "the other branch only).", "", "```"] + blocks
    out += ["```", "", "## Parameter counts", "",
            "| kind | count | rule |", "|---|---|---|",
            f"| tuned (γ, β) | {counts['tuned']} | one γ and one β per neuron (per channel of "
            f"a convolution) |",
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
    mag = magnitudes(f) if magnitudes_of_f is None else magnitudes_of_f
    out += ["## Magnitudes of the tuned parameters", "",
            "How large the exact values are (a float copy must represent them; large β that "
            "cancel across layers lose digits in float32).", ""]
    for name, symbol in (("gamma", "γ"), ("beta", "β")):
        values = mag[name]
        span = (f"|{symbol}| from 1e{min(values):.1f} to 1e{max(values):.1f}" if values
                else f"no nonzero {symbol}")
        out.append(f"* {symbol}: {span}; {mag[name + '_zeros']} zero values")
    out.append("")
    if plots:
        out += ["![magnitudes of γ and β](magnitudes.png)", ""]
    if float_errors is not None:
        out += _float_error_lines(*float_errors)
        if plots and float_errors[0] is not None:
            out += ["![float error](float_error.png)", ""]
    if data is not None:
        from exactnorm.outputs.data_eval import data_lines

        out += data_lines(data)
    return wrap_markdown("\n".join(out))


def _figure(title: str, panels: int = 1) -> tuple[Any, Any]:
    """A bare Figure on an Agg canvas: no pyplot, so the caller's backend and figures are
    untouched."""
    purpose = "the report's plots"
    FigureCanvasAgg = require_extra("matplotlib.backends.backend_agg", purpose).FigureCanvasAgg
    Figure = require_extra("matplotlib.figure", purpose).Figure
    fig = Figure(figsize=(6 * panels, 3.5))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels)
    fig.suptitle(title)
    return fig, axes if panels > 1 else [axes]


def _png(fig: Any) -> bytes:
    fig.tight_layout()
    buf = _stdio.BytesIO()
    # no Software/date metadata: equal certificates give equal files
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _bars(ax: Any, values: Any, edges: Any, label: str | None = None,
          color: str = "#4c72b0") -> None:
    # counted by NumPy and drawn as one outline: ax.hist on 400,000 values took 1.5 s a plot
    import numpy as np

    counts, edges = np.histogram(np.asarray(values, dtype=float), bins=edges)
    ax.stairs(counts, edges, fill=label is None, label=label, color=color,
              linewidth=2 if label else None)


def _histogram_png(values: list[int], title: str) -> bytes:
    fig, (ax,) = _figure(title)
    top = max(values, default=1)
    # at most 40 bars of whole bit counts: a bar per bit of a 1,445-bit γ draws nothing visible
    width = max(1, -(-top // 40))
    _bars(ax, values, list(range(1, top + width + 1, width)))
    ax.set_xlabel("bit size max(bits(|p|), bits(q))")
    ax.set_ylabel("neurons")
    return _png(fig)


def _log10_abs(x: Any) -> float | None:
    """``log10 |p/q|`` from the integers (exact to double precision at any size), ``None`` for 0."""
    p, q = _ratio(x)
    return None if p == 0 else math.log10(abs(p)) - math.log10(q)


def magnitudes(net: Any) -> dict[str, Any]:
    """``log10 |γ|`` and ``log10 |β|`` of every nonzero tuned value, and the count of zeros."""
    out: dict[str, Any] = {}
    for name in ("gamma", "beta"):
        logs = [_log10_abs(x) for layer in net.layers for x in getattr(layer, name)]
        out[name] = [v for v in logs if v is not None]
        out[f"{name}_zeros"] = sum(v is None for v in logs)
    return out


def _magnitude_png(mag: dict[str, Any]) -> bytes:
    fig, axes = _figure("magnitudes of the tuned parameters", panels=2)
    for ax, name, symbol in zip(axes, ("gamma", "beta"), ("γ", "β")):
        values = mag[name]
        lo, hi = math.floor(min(values, default=0)), math.ceil(max(values, default=0))
        step = max(0.25, (hi - lo) / 40)
        edges = [lo + step * k for k in range(int((hi - lo) / step) + 2)]
        _bars(ax, values, edges)
        ax.set_xlabel(f"log10 |{symbol}|  ({mag[name + '_zeros']} zero values not shown)")
        ax.set_ylabel("neurons")
    return _png(fig)


def _float_error_png(errors: dict[str, dict[str, Any]]) -> bytes:
    import numpy as np

    fig, (ax,) = _figure("error of a float copy of the network against the exact target")
    # exact outputs (error 0) have no logarithm: they are counted in the legend instead
    logs = {name: np.log10(e["abs"].ravel()[e["abs"].ravel() > 0]) for name, e in errors.items()}
    finite = np.concatenate([v[np.isfinite(v)] for v in logs.values()])
    lo = math.floor(float(finite.min())) if finite.size else -17
    hi = math.ceil(float(finite.max())) if finite.size else 0
    edges = np.linspace(lo, hi + 1, 41)
    colours = {"float32": "#c44e52", "float64": "#4c72b0"}
    for name, values in logs.items():
        exact = errors[name]["abs"].size - values.size
        label = f"{name} ({exact} outputs exact)" if exact else name
        _bars(ax, values, edges, label=label, color=colours.get(name, "#55a868"))
    ax.set_xlabel("log10 |float output − exact output|  (every output at every point)")
    ax.set_ylabel("outputs")
    ax.legend()
    return _png(fig)


#: points of the box at which the report measures the float error of an export
FLOAT_ERROR_POINTS = 64


def float_error_study(doc: dict[str, Any], target: Any, *,
                      points: int = FLOAT_ERROR_POINTS, progress: Any = None,
                      copy: FloatNetwork | None = None
                      ) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """The float32/float64 error an export would have, measured at ``points`` seeded points of
    the box (:func:`~exactnorm.outputs.floatnet.box_points`) against the exact target, for
    certificates of every kind (:mod:`exactnorm.outputs.data_eval`; ``copy``: the float copy
    already read); or ``None`` and the reason when the network cannot be read as floats.

    Per precision: ``abs`` (every output's error), ``max_abs``, ``max_rel``, ``argmax_agree``
    (points whose largest output keeps its index) and ``points``."""
    import numpy as np

    from exactnorm.outputs.data_eval import compare, float_copy, run_float
    from exactnorm.outputs.floatnet import box_points

    try:
        xs = box_points(target.lower, target.upper, points, 0)
        values = [target.evaluate(x) for x in xs]
        exact = np.array([[int(v.p) / int(v.q) for v in y] for y in values]).reshape(
            points, -1)
        best = np.array([exact_argmax(y) for y in values], dtype=np.int64)
        X = np.array([[int(v.p) / int(v.q) for v in x] for x in xs]).reshape(points, -1)
        if copy is None:
            copy = float_copy(doc, progress=progress)
        elif progress is not None:
            progress(copy.depth, copy.depth)
        out = {}
        for name in ("float32", "float64"):
            e = compare(run_float(copy, X, np.dtype(name).type), exact, best)
            out[name] = {"abs": e["abs"], "max_abs": e["max_abs"], "max_rel": e["max_rel"],
                         "argmax_agree": points - e["changed"], "points": points}
        return out, ""
    except (ExactnormError, ValueError) as exc:
        return None, f"not measured: {str(exc)[:200]}"


def _float_error_lines(errors: dict[str, dict[str, Any]] | None, why: str) -> list[str]:
    out = ["## Float error of an export", ""]
    if errors is None:
        return out + [f"_{why}_", ""]
    n = next(iter(errors.values()))["points"]
    out += [f"The certificate is exact; `exactnorm export` to npz, ONNX or PyTorch rounds every "
            f"parameter once. Measured at {n} seeded points of D (every parameter rounded, "
            f"then evaluated in that precision, against the exact target):", "",
            "| precision | max abs error | max rel error | largest output agrees |",
            "|---|---|---|---|"]
    for name, e in errors.items():
        out.append(f"| {name} | {e['max_abs']:.3g} | {e['max_rel']:.3g} | "
                   f"{e['argmax_agree']}/{e['points']} |")
    f32 = errors.get("float32")
    if f32 is not None and f32["argmax_agree"] < f32["points"]:
        out += ["", f"**float32 changes the largest output at {f32['points'] - f32['argmax_agree']}"
                f" of {f32['points']} points: export float64 (the default).**"]
    return out + [""]


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


def report_contents(doc: dict[str, Any], verdict: Any | None = None, *,
                    float_points: int = FLOAT_ERROR_POINTS, progress: Any = None,
                    plots: bool = True, no_plots: str = NO_PLOTS,
                    steps_after: int = 0, checked: bool = True,
                    data: Any = None, labels: Any = None,
                    refuse: bool = False) -> dict[str, Any]:
    """Everything a report holds, computed once: ``verdict`` (checked here unless given, or
    ``None`` with ``checked=False``), ``networks``, ``float_errors`` (:func:`float_error_study`;
    ``None`` with ``float_points=0``), ``data`` (the study of ``data``/``labels``,
    :func:`~exactnorm.outputs.data_eval.data_study`), ``pngs`` (name → bytes; empty without
    ``plots`` or matplotlib) and ``markdown``.

    ``progress(done, total)`` counts the check and the float copy per frozen layer, the reading,
    the data (per sample, exact target and both copies), the plots, plus ``steps_after`` steps
    that the caller finishes itself (on the returned ``stages``, e.g. the write). With
    ``refuse``, an INVALID verdict stops here (:func:`~exactnorm.outputs.stages.refuse_invalid`).
    """
    from exactnorm.outputs.data_eval import data_samples

    depth = declared_depth(doc)
    samples = data_samples(data) if data is not None else 0
    stages = Stages(progress, check=depth if verdict is None and checked else 0, read=1,
                    floats=depth, data=3 * samples, plots=1 if plots else 0, after=steps_after)
    v = (_verdict(doc, stages.hook("check")) if verdict is None else verdict) if checked \
        else None
    if refuse:
        refuse_invalid(v)
    stages.finish("check")
    if not isinstance(doc, dict):
        raise InputError("expected a certificate document (a JSON object)")
    g = read_target(doc)
    stages.finish("read")
    f = float_network(doc, progress=stages.hook("floats"))
    study = (float_error_study(doc, g, points=float_points, copy=f) if float_points else None)
    stages.finish("floats")
    on_data = None
    if data is not None:
        from exactnorm.outputs.data_eval import data_study

        on_data = data_study(doc, g, data, labels, copy=f, progress=stages.hook("data"))
    stages.finish("data")
    mag = magnitudes(f)
    pngs: dict[str, bytes] = {}
    if plots:
        gam, bet = _bits(f)
        try:
            pngs = {"gamma_bits.png": _histogram_png(gam, "bit sizes of the tuned γ"),
                    "beta_bits.png": _histogram_png(bet, "bit sizes of the tuned β"),
                    "magnitudes.png": _magnitude_png(mag)}
            if study is not None and study[0] is not None:
                pngs["float_error.png"] = _float_error_png(study[0])
        except MissingExtraError:
            pngs = {}
        stages.finish("plots")
    md = report_markdown(doc, v, plots=bool(pngs), no_plots=no_plots, networks=(g, f),
                         float_errors=study, magnitudes_of_f=mag, checked=checked,
                         data=on_data)
    return {"verdict": v, "networks": (g, f), "float_errors": None if study is None
            else study[0], "pngs": pngs, "markdown": md, "stages": stages, "data": on_data}


def write_report(doc: dict[str, Any], out_dir: str | os.PathLike[str],
                 verdict: Any | None = None, *, progress: Any = None,
                 float_points: int = FLOAT_ERROR_POINTS, checked: bool = True,
                 data: Any = None, labels: Any = None, refuse: bool = False) -> dict[str, Any]:
    """Write ``report.md``, ``report.html`` and, with matplotlib, the plots (``gamma_bits.png``,
    ``beta_bits.png``, ``magnitudes.png``, ``float_error.png``) into ``out_dir`` (atomically, file
    by file).

    Parameters
    ----------
    doc
        A certificate document.
    out_dir
        The output folder (created if missing).
    verdict
        A verdict already computed for ``doc``; checked here otherwise.
    progress
        ``progress(done, total)`` over the steps: the check (one per frozen layer), the float
        copy (one per frozen layer), the plots and the write.
    float_points
        Points of the box at which the float error of an export is measured (0: not measured).
    checked
        ``False``: no check, the report says it is not checked.
    data, labels
        Samples (``.npy`` path or array) and optional integer labels: the float copies on the
        user's data (:func:`~exactnorm.outputs.data_eval.data_study`).
    refuse
        Stop at an INVALID verdict before anything is written.

    Returns
    -------
    dict
        ``paths`` (name → path), ``verdict``, ``counts``, ``float_errors``, ``data`` and
        ``plots`` (``False`` when matplotlib is missing: the report then says so instead of
        showing them).
    """
    parts = report_contents(doc, verdict, float_points=float_points, progress=progress,
                            steps_after=1, checked=checked, data=data, labels=labels,
                            refuse=refuse)
    md, pngs = parts["markdown"], parts["pngs"]
    files: dict[str, bytes] = {"report.md": md.encode(),
                               "report.html": markdown_to_html(md).encode(), **pngs}
    out = Path(out_dir)
    paths = {}
    for name, data in files.items():
        atomic_write(out / name, data)
        paths[name] = out / name
    parts["stages"].finish("after")
    return {"paths": paths, "verdict": parts["verdict"],
            "counts": parameter_counts(doc, parts["networks"]), "plots": bool(pngs),
            "no_plots": NO_PLOTS, "float_errors": parts["float_errors"], "data": parts["data"]}
