"""T12: a seeded small transformer, every weight matrix replaced by a frozen random ReLU network
tuned only in γ, β, slot by slot (fixed seeds, no timings).

The transformer (:data:`T12_MODEL`) is written without PyTorch: float32 weights from
``numpy.random.default_rng(0)`` in an ONNX graph (:func:`~exactnorm.model.interop.
transformer_build.onnx_transformer`: token and position embeddings, one pre-LN block with two
causal heads and a ReLU MLP, a final LayerNorm, the unembedding), read back by the transformer
reader. Each row is one slot: the node it reads and the rule that gives its box
(docs/certificate-format.md §11.2: the one-hot cube, ``b ± |g|·r`` after a LayerNorm, the value
hull after an attention, interval images and sums), the box's widest interval, the slot's shape,
the construction the cost model chose, the exact ranks of its Khatri–Rao systems, γ and β bit
sizes and the frozen widths. The whole document is then checked by both arithmetics.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from exactnorm.certificate.transformer import slot_seeds, transformer_document
from exactnorm.certificate.write import certificate_document
from exactnorm.checker import check_certificate
from exactnorm.checker_flint import check_certificate as check_flint
from exactnorm.constructions.transformer import plan_slots, realize_slot
from exactnorm.exact.rationals import format_decimal, unlimited_int_digits
from exactnorm.model.interop.transformer import transformer_from_onnx
from exactnorm.model.interop.transformer_build import onnx_transformer
from exactnorm.model.transformer import Transformer
from exactnorm.outputs.tables.proof_table import ProofTable

__all__ = ["table_t12", "T12_MODEL"]

#: the options of T12's transformer (:func:`onnx_transformer`, seed 0)
T12_MODEL: dict[str, int] = {"vocabulary": 7, "positions": 3, "d_model": 8, "heads": 2, "d_mlp": 16,
             "blocks": 1}


def _rule(tr: Transformer, k: int) -> str:
    node = tr.nodes[k]
    if node.op == "input":
        return f"one-hot [0,1]^{tr.vocabulary}+{tr.positions}"
    if node.op == "layernorm":
        assert node.layernorm is not None
        return f"LayerNorm b ± abs(g)·r, r = {node.layernorm.r}"
    if node.op == "attention":
        return f"value hull of {len(node.heads)} heads"
    if node.op == "add":
        return "interval sum"
    return f"interval image of {node.slot}"


def _widest(box: tuple[Any, Any]) -> str:
    return format_decimal(max(Fraction(int(h.p), int(h.q)) - Fraction(int(lo.p), int(lo.q))
                              for lo, h in zip(*box)), 3)


def _options() -> str:
    return ", ".join(f"{k}={v}" for k, v in T12_MODEL.items())


def table_t12() -> ProofTable:
    """T12: per slot of a seeded 1-block transformer (d_model 8, 2 heads, d_mlp 16)."""
    tr = transformer_from_onnx(onnx_transformer(0, **T12_MODEL))  # type: ignore[arg-type]
    plans = plan_slots(tr, slot_seeds(tr))
    boxes = tr.boxes()
    reads = tr.slot_reads()
    rows, slots = [], {}
    for p in plans:
        c = realize_slot(p.target, p.plan)
        with unlimited_int_digits():
            doc = certificate_document(c, version=3)
        doc.pop("witnesses", None)
        slots[p.name] = doc
        k = reads[p.name]
        ranks = "; ".join(r.rank_text() for r in c.reports)
        widths = ",".join(str(w) for r in c.reports for w in r.widths)
        rows.append([p.name, tr.slots[p.name].role, f"{k} ({tr.nodes[k].op})", _rule(tr, k),
                     _widest(boxes[k]), f"{p.target.widths[0]}→{p.target.widths[-1]}"
                     + (f" (via {p.target.widths[1]})" if p.target.depth > 1 else ""),
                     p.plan.construction, ranks, max(r.gamma_bits for r in c.reports),
                     max(r.beta_bits for r in c.reports), widths])
    document = transformer_document(tr, slots)
    pure, fast = check_certificate(document), check_flint(document)
    verdict = "VALID" if pure.ok and fast.ok and pure == fast else f"INVALID ({pure.message})"
    return ProofTable(
        key="T12", slug="transformer_slots",
        title="A seeded transformer rewritten slot by slot: every weight matrix a frozen random "
              "ReLU network tuned only in γ, β, on a box the checker derives",
        command="exactnorm tables --only T12",
        columns=["slot", "role", "reads node", "box rule", "widest interval", "shape",
                 "construction", "exact rank", "γ bits", "β bits", "frozen widths"],
        rows=rows,
        notes=[
            f"Transformer: onnx_transformer(0, {_options()}) "
            "(exactnorm.model.interop.transformer_build): float32 weights from "
            "numpy.random.default_rng(0), pre-LN, causal mask, ReLU MLP, read by "
            "exactnorm.model.interop.transformer; " + tr.describe() + ".",
            "box rule: how the checker derives the box of the node a slot reads "
            "(docs/certificate-format.md §11.2); widest interval: the largest upper − lower "
            "bound of that box (3 decimals).",
            "construction: the automatic choice per slot (Theorem 1 while d_in·d_out ≤ 4096), "
            "seed rule slot (each slot's seed derived from the architecture, its name, box and "
            "target); exact rank: rank / unknowns of each Khatri–Rao system, per target layer "
            "of the slot; γ/β bits: largest numerator or denominator bit size.",
            f"Checker: the whole exactnorm.transformer document is {verdict} in both "
            f"arithmetics (pure and python-flint, equal verdicts).",
        ],
    )
