"""The report of a transformer document (``exactnorm report`` on an ``exactnorm.transformer``
certificate): what is proven, the verdict, the graph, one row per slot, parameter counts, bit
sizes, and the float error an export would have (Markdown and HTML; no plots).

Contract
--------
:func:`transformer_report_contents` computes, once: the checker's verdict (unless given or
``checked=False``), the transformer (:func:`~exactnorm.certificate.transformer.transformer_of`),
every slot's frozen network as a float copy with its exact ``γ, β``
(:func:`~exactnorm.outputs.data_eval.float_copy`), the exact box of every node a slot reads
(:meth:`Transformer.boxes <exactnorm.model.transformer.Transformer.boxes>`, the rules the
checker applies), and, per slot:

* its role, the node it reads and the **box rule** that bounds that node (the one-hot cube, the
  LayerNorm rule ``b ± |g|·r``, the value hull of an attention, the interval image of a slot,
  an interval sum), the box's widest interval;
* the target's widths, the frozen network's widths and depth, the largest bit size of its
  ``γ`` and ``β`` (``max(bits(|p|), bits(q))``);

and with ``float_points`` (seeded sequences, or all of them when there are no more) and
``data`` (token sequences, optional labels) the largest logit error of the float32 and float64
rewritten transformer (every parameter rounded, every operation in that precision: what a float
export computes, :func:`~exactnorm.outputs.transformer_runs.rewritten_logits`) against the
float64 reference of the original, the predictions they change, and with labels the accuracies.

The numbers of the slot table are exact (bit sizes, widths) or descriptive (a box's widest
interval, in decimal); the float errors are measurements, not part of the proof.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from flint import fmpq

from exactnorm import checker_flint
from exactnorm.certificate.transformer import transformer_of
from exactnorm.exact.files import atomic_write
from exactnorm.model.transformer import Transformer
from exactnorm.outputs.export.transformer import slot_depths
from exactnorm.outputs.report import bit_size, markdown_to_html, wrap_markdown
from exactnorm.outputs.stages import Stages, refuse_invalid

__all__ = ["slot_rows", "box_rule", "transformer_report_contents", "write_transformer_report",
           "transformer_float_study", "NO_PLOTS_TRANSFORMER"]

NO_PLOTS_TRANSFORMER = "A transformer report has tables only (no plots)."

ASSUMPTIONS = (
    "Exact rational arithmetic for every slot; the parameter-free operations (LayerNorm "
    "normalisation, scores, mask, softmax, residual adds) are the original's, on equal values "
    "(real arithmetic: square roots and exponentials included).",
    "Every slot's box is derived by the checker from the architecture (one-hot cube, LayerNorm "
    "rule, value hull of attention, interval images and sums); no box is taken from the writer.",
    "Frozen weights are the ones the certificate's draw records regenerate; only each slot's "
    "γ and β are tuned.",
    "Trust rests on the independent checker, not on the construction code.",
)


def box_rule(tr: Transformer, k: int) -> str:
    """How the box of node ``k`` is derived (docs/certificate-format.md §11.2), in words."""
    node = tr.nodes[k]
    if node.op == "input":
        return f"one-hot cube [0, 1]^{tr.vocabulary + tr.positions}"
    if node.op == "layernorm":
        assert node.layernorm is not None
        return f"LayerNorm b ± \\|g\\|·r, r = {node.layernorm.r}"
    if node.op == "attention":
        return "value hull of the heads' values"
    if node.op == "slot":
        return f"interval image of slot {node.slot}"
    return f"interval sum of nodes {node.reads[0]} and {node.reads[1]}"


def _widest(box: tuple[Any, Any]) -> fmpq:
    return max((hi - lo for lo, hi in zip(*box)), default=fmpq(0))


def slot_rows(tr: Transformer, copies: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per slot in node order (module doc)."""
    boxes = tr.boxes()
    reads = tr.slot_reads()
    rows = []
    for name in tr.slot_order():
        s, f, k = tr.slots[name], copies[name], reads[name]
        widest = _widest(boxes[k])
        rows.append({
            "slot": name, "role": s.role, "reads": k, "reads_op": tr.nodes[k].op,
            "box_rule": box_rule(tr, k), "widest": float(widest),
            "widest_bits": bit_size(widest),
            "target": [s.input_size] + [layer.width for layer in s.layers],
            "activations": [layer.activation for layer in s.layers],
            "frozen_widths": list(f.widths), "frozen_layers": f.depth,
            "gamma_bits": max((bit_size(x) for layer in f.layers for x in layer.gamma),
                              default=0),
            "beta_bits": max((bit_size(x) for layer in f.layers for x in layer.beta),
                             default=0),
            "tuned": f.tuned_parameters, "frozen": f.frozen_parameters,
            "target_parameters": sum(layer.parameters for layer in s.layers)})
    return rows


def transformer_float_study(tr: Transformer, copies: dict[str, Any], tokens: np.ndarray,
                            labels: np.ndarray | None = None) -> dict[str, Any]:
    """The float32 and float64 rewritten transformer against the float64 reference on
    ``tokens`` (module doc): per precision ``max_abs``, ``max_rel``, ``changed`` (positions
    whose prediction moved), ``changed_last``; ``samples`` (positions), ``sequences``; with
    labels ``accuracy`` per precision and ``exact_accuracy`` (the reference's)."""
    from exactnorm.outputs.transformer_runs import reference_logits, rewritten_logits

    ref = reference_logits(tr, tokens)
    best = ref.argmax(-1)
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    out: dict[str, Any] = {"sequences": int(len(tokens)), "samples": int(tokens.size),
                           "length": int(tokens.shape[1])}
    for name, dtype in (("float32", np.float32), ("float64", np.float64)):
        y = rewritten_logits(tr, copies, tokens, dtype)
        err = float(np.nanmax(np.abs(y - ref))) if ref.size else 0.0
        if np.isnan(y).any():
            err = float("inf")
        pred = y.argmax(-1)
        e = {"max_abs": err, "max_rel": err / scale if scale else err,
             "changed": int(np.sum(pred != best)),
             "changed_last": int(np.sum(pred[:, -1] != best[:, -1]))}
        if labels is not None:
            e["accuracy"] = float(np.mean((pred[:, -1] if labels.ndim == 1 else pred) == labels))
        out[name] = e
    if labels is not None:
        out["exact_accuracy"] = float(np.mean((best[:, -1] if labels.ndim == 1 else best)
                                              == labels))
    return out


def _float_lines(title: str, study: dict[str, Any], what: str) -> list[str]:
    out = [f"## {title}", "",
           f"{what}: {study['sequences']} sequences of {study['length']} tokens "
           f"({study['samples']} positions). Every parameter rounded, every operation in that "
           f"precision, against the original transformer in float64 (its slots' exact targets "
           f"rounded once):", "",
           "| precision | max abs logit error | max rel error | predictions changed | at the "
           "last position |" + (" accuracy |" if "accuracy" in study["float64"] else ""),
           "|---|---|---|---|---|" + ("---|" if "accuracy" in study["float64"] else "")]
    for name in ("float32", "float64"):
        e = study[name]
        out.append(f"| {name} | {e['max_abs']:.3g} | {e['max_rel']:.3g} | "
                   f"{e['changed']}/{study['samples']} | {e['changed_last']}/"
                   f"{study['sequences']} |"
                   + (f" {e['accuracy']:.2%} |" if "accuracy" in e else ""))
    if "exact_accuracy" in study:
        out += ["", f"The original transformer (float64 reference): accuracy "
                    f"{study['exact_accuracy']:.2%}."]
    if study["float32"]["changed"]:
        out += ["", f"**float32 changes {study['float32']['changed']} predictions: export "
                    f"float64 (the default).**"]
    return out + [""]


def _architecture_lines(tr: Transformer) -> list[str]:
    out = []
    for k, node in enumerate(tr.nodes):
        if node.op == "input":
            text = f"input: e_V(t) ⊕ e_T(p), width {tr.vocabulary + tr.positions}"
        elif node.op == "slot":
            text = f"slot {node.slot} reads node {node.reads[0]}"
        elif node.op == "layernorm":
            assert node.layernorm is not None
            eps = node.layernorm.epsilon
            text = (f"layernorm reads node {node.reads[0]}: d = {len(node.layernorm.gain)}, "
                    f"ε = {eps}" + (f" (≈ {float(eps):.3g})" if eps.q != 1 else "")
                    + f", r = {node.layernorm.r}")
        elif node.op == "attention":
            mask = node.mask if isinstance(node.mask, str) else \
                f"{node.mask[0]} {node.mask[1]}" if node.mask else "none"
            text = (f"attention reads node {node.reads[0]}: {len(node.heads)} heads "
                    f"({', '.join(h.q.rsplit('.', 1)[0] for h in node.heads)}), scale "
                    f"{node.scale}, mask {mask}")
        else:
            text = f"add nodes {node.reads[0]} and {node.reads[1]}"
        out.append(f"{k:>3}  {text}" + ("   ← output" if k == tr.output else ""))
    return out


def _short(values: list[Any]) -> str:
    if len(values) <= 6:
        return ", ".join(map(str, values))
    return f"{', '.join(map(str, values[:3]))}, …, {values[-1]} ({len(values)} layers)"


def transformer_markdown(tr: Transformer, rows: list[dict[str, Any]], verdict: Any, *,
                         checked: bool, floats: dict[str, Any] | None,
                         data: dict[str, Any] | None) -> str:
    """The report's Markdown (module doc)."""
    v = verdict if checked else None
    title = ("## What is claimed (NOT checked: the report was written with --no-check)"
             if v is None else "## What is proven" if v.ok
             else "## What is claimed (NOT proven: the check failed)")
    heads = [len(n.heads) for n in tr.nodes if n.op == "attention"]
    src = tr.source if isinstance(tr.source, dict) else {}
    names = (f"; source model input {src.get('input', {}).get('name')!r}, output "
             f"{src.get('output', {}).get('name')!r}") if src else ""
    tuned = sum(r["tuned"] for r in rows)
    frozen = sum(r["frozen"] for r in rows)
    target = sum(r["target_parameters"] for r in rows)
    out = ["# exactnorm transformer report", "", title, "",
           f"For every input sequence of length ≤ {tr.positions or 'any'} over this vocabulary, "
           f"the rewritten transformer equals the original; attention, softmax and LayerNorm "
           f"normalisation are the original's operations on equal values.", "",
           f"* vocabulary {tr.vocabulary}, positions {tr.positions}, {len(heads)} block(s) with "
           f"heads {heads}, {sum(n.op == 'layernorm' for n in tr.nodes)} LayerNorm(s), "
           f"{len(rows)} slots{names}",
           "* the rewritten transformer: every slot (embedding, queries, keys, values, output "
           "projection, MLP, unembedding) replaced by a frozen random ReLU network whose only "
           "tuned parameters are γ and β", "",
           "## Assumptions", ""]
    out += [f"* {a}" for a in ASSUMPTIONS]
    out += ["", "## Verdict (python-flint checker)", "",
            "**NOT CHECKED** (--no-check): run `exactnorm check` before relying on it"
            if v is None else
            f"**{'VALID' if v.ok else 'INVALID'}** — rule `{v.rule}`: {v.message}", "",
            "## Architecture", "", "```"] + _architecture_lines(tr) + ["```", ""]
    out += ["## Slots", "",
            "Each slot's frozen network equals its target on the box of the node it reads; "
            "the box rule says how the checker derives that box.", "",
            "| slot | role | reads | box rule | widest interval | target | frozen widths | "
            "frozen layers | γ bits | β bits |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['slot']} | {r['role']} | {r['reads']} ({r['reads_op']}) | "
                   f"{r['box_rule']} | {r['widest']:.4g} | "
                   f"{' → '.join(map(str, r['target']))} ({'/'.join(r['activations'])}) | "
                   f"{_short(r['frozen_widths'])} | {r['frozen_layers']} | {r['gamma_bits']} | "
                   f"{r['beta_bits']} |")
    out += ["", "## Parameter counts", "", "| kind | count | rule |", "|---|---|---|",
            f"| tuned (γ, β) | {tuned} | one γ and one β per frozen neuron, every slot |",
            f"| frozen | {frozen} | Σ entries of every slot's V |",
            f"| target | {target} | Σ entries of every slot's W and b |", "",
            "## Bit sizes of the tuned parameters", "",
            "Bit size of p/q = max(bits(|p|), bits(q)).", "",
            f"* γ: max {max((r['gamma_bits'] for r in rows), default=0)} bits (slot "
            f"{max(rows, key=lambda r: r['gamma_bits'])['slot'] if rows else '-'})",
            f"* β: max {max((r['beta_bits'] for r in rows), default=0)} bits (slot "
            f"{max(rows, key=lambda r: r['beta_bits'])['slot'] if rows else '-'})", "",
            f"_{NO_PLOTS_TRANSFORMER}_", ""]
    if floats is not None:
        out += _float_lines("Float error of an export", floats,
                            "every sequence" if floats.get("every") else "Seeded sequences")
    if data is not None:
        out += _float_lines("On the data", data, f"On {data.get('data', 'the data')}")
    return wrap_markdown("\n".join(out))


def transformer_report_contents(doc: dict[str, Any], verdict: Any | None = None, *,
                                float_points: int = 0, data: Any = None, labels: Any = None,
                                checked: bool = True, refuse: bool = False,
                                progress: Any = None, steps_after: int = 0) -> dict[str, Any]:
    """Everything the report holds (module doc): ``verdict``, ``transformer``, ``rows``,
    ``counts``, ``float_errors``, ``data``, ``markdown`` and ``stages``."""
    from exactnorm.outputs.data_eval import float_copy
    from exactnorm.outputs.transformer_runs import (
        load_token_labels,
        load_tokens,
        task_sequences,
    )

    depths = slot_depths(doc)
    total = sum(depths.values())
    stages = Stages(progress, check=total if verdict is None and checked else 0, floats=total,
                    study=1 if float_points or data is not None else 0, after=steps_after)
    v = (checker_flint.check_certificate(doc, progress=stages.hook("check"))
         if verdict is None else verdict) if checked else None
    if refuse:
        refuse_invalid(v)
    stages.finish("check")
    tr = transformer_of(doc)
    copies: dict[str, Any] = {}
    done = 0
    hook = stages.hook("floats")
    for name in tr.slot_order():
        copies[name] = float_copy(doc["slots"][name])
        done += depths.get(name, 0)
        if hook is not None:
            hook(done, total)
    rows = slot_rows(tr, copies)
    floats = on_data = None
    if float_points:
        length = tr.positions or 8
        tokens, every = task_sequences(tr.vocabulary, length, float_points)
        floats = dict(transformer_float_study(tr, copies, tokens), every=every)
    if data is not None:
        tokens = load_tokens(data, tr)
        y = None if labels is None else load_token_labels(labels, tokens,
                                                          tr.widths()[tr.output])
        on_data = dict(transformer_float_study(tr, copies, tokens, y),
                       data=str(data) if not isinstance(data, np.ndarray) else "array")
    stages.finish("study")
    md = transformer_markdown(tr, rows, v, checked=checked, floats=floats, data=on_data)
    counts = {"tuned": sum(r["tuned"] for r in rows), "frozen": sum(r["frozen"] for r in rows),
              "target": sum(r["target_parameters"] for r in rows)}
    return {"verdict": v, "transformer": tr, "rows": rows, "counts": counts,
            "float_errors": floats, "data": on_data, "markdown": md, "stages": stages}


def write_transformer_report(doc: dict[str, Any], out_dir: str | os.PathLike[str],
                             verdict: Any | None = None, **options: Any) -> dict[str, Any]:
    """Write ``report.md`` and ``report.html`` into ``out_dir`` (atomically, file by file);
    ``options`` as :func:`transformer_report_contents`. Returns its contents with ``paths``."""
    parts = transformer_report_contents(doc, verdict, steps_after=1, **options)
    out = Path(out_dir)
    paths = {}
    for name, data in (("report.md", parts["markdown"].encode()),
                       ("report.html", markdown_to_html(
                           parts["markdown"], "exactnorm transformer report").encode())):
        atomic_write(out / name, data)
        paths[name] = out / name
    parts["stages"].finish("after")
    parts["paths"] = paths
    return parts
