"""``certify`` for a transformer: read the ONNX model, derive every slot's box and seed, plan
and build the slots (in parallel), write one ``exactnorm.transformer`` document
(docs/certificate-format.md §11, docs/transformers.md).

The command line ``exactnorm certify model.onnx`` and :func:`exactnorm.certify` on a transformer
file run exactly this code with the same defaults (seed rule ``slot``; ``jobs="auto"``: every
core when the slots' estimated work is 5 s or more), so both write the same bytes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from exactnorm.certificate.transformer import build_slots, slot_seeds, transformer_document
from exactnorm.constructions.choice import Estimate
from exactnorm.constructions.transformer import SlotPlan, plan_slots, slots_estimate
from exactnorm.errors import InputError, require_integer
from exactnorm.exact.parallel import auto_jobs
from exactnorm.model.interop.transformer import transformer_from_onnx
from exactnorm.model.transformer import Transformer

__all__ = ["TransformerResult", "TransformerPlan", "plan_transformer", "certify_transformer"]


@dataclass
class TransformerPlan:
    """Every choice settled before any work: the transformer, each slot's plan, processes."""

    transformer: Transformer
    slots: list[SlotPlan]
    jobs: int
    estimate: Estimate
    seed_rule: str = "slot"

    @property
    def summary(self) -> str:
        return (f"{self.transformer.describe()}; {len(self.slots)} slot certificates, "
                f"{self.estimate.describe()} (estimated); {self.jobs} process(es)")


@dataclass
class TransformerResult:
    """The document, the plan that made it, and the build's wall-clock seconds."""

    document: dict[str, Any]
    plan: TransformerPlan
    seconds: float = 0.0
    reports: dict[str, Any] = field(default_factory=dict)


def plan_transformer(model: Any, *, seed: int | str = "slot", jobs: int | str = "auto",
                     **options: Any) -> TransformerPlan:
    """Read the model (a path, a ``ModelProto`` or a :class:`Transformer`) and settle every
    choice. ``seed``: ``"slot"`` (or ``"target"``, the same rule for a transformer) derives each
    slot's seed from the architecture, the slot's name, box and target; an integer is one seed
    chosen for every slot (the verdict says so)."""
    tr = model if isinstance(model, Transformer) else transformer_from_onnx(model)
    if jobs != "auto":
        require_integer(jobs, "jobs", minimum=1)
    if seed in ("slot", "target"):
        seeds, rule = slot_seeds(tr), "slot"
    else:
        require_integer(seed, "seed")
        seeds, rule = {name: int(seed) for name in tr.slot_order()}, "chosen"
    plans = plan_slots(tr, seeds, **{k: v for k, v in options.items() if v is not None})
    estimate = slots_estimate(plans)
    n = auto_jobs(estimate.seconds) if jobs == "auto" else int(jobs)
    return TransformerPlan(tr, plans, min(n, max(1, len(plans))), estimate, rule)


def certify_transformer(plan: TransformerPlan, *, scheduler: Any = None,
                        frozen_weights: str = "reference",
                        progress: Any = None) -> TransformerResult:
    """Build every slot of ``plan`` and assemble the document (``progress(done, total)`` in
    slots)."""
    if frozen_weights not in ("reference", "explicit"):
        raise InputError(f"frozen_weights must be reference or explicit, got {frozen_weights!r}",
                         parameter="frozen_weights")
    t0 = time.perf_counter()
    slots = dict(build_slots(plan.slots, jobs=plan.jobs, scheduler=scheduler,
                             frozen_weights=frozen_weights, progress=progress))
    doc = transformer_document(plan.transformer, slots, seed_rule=plan.seed_rule,
                               provenance={"construction": "transformer slots",
                                           "seed_rule": plan.seed_rule})
    return TransformerResult(doc, plan, time.perf_counter() - t0)
