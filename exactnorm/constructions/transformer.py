"""Realizing a transformer slot by slot (docs/transformers.md): every slot is an ordinary dense
target on the box its node has, and the existing constructions realize it.

Contract. :func:`plan_slots` settles, before any work, the plan of every slot of a
:class:`~exactnorm.model.transformer.Transformer` (the automatic choice of
:func:`~exactnorm.constructions.plan.plan_certify`: Theorem 1 for a small slot, the trade-off
with blocks beyond it; an identity layer for a projection, a ReLU layer then an identity layer
for an MLP), each with its own seed (the caller derives it: seed rule ``slot``), one process per
slot. :func:`realize_slot` builds one slot's plan. Slots are independent: the certificate writer
(:mod:`exactnorm.certificate.transformer`) runs them in parallel and assembles them in node
order, so the result never depends on the number of processes.

Correctness: each slot's frozen network equals its target on the box of the node it reads
(Theorem 1, the trade-off; checked by the walk); the boxes are the rules of
docs/certificate-format.md §11.2, derived again by the checker.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from exactnorm.constructions.choice import Estimate, combined_estimate
from exactnorm.constructions.common import Construction
from exactnorm.constructions.plan import CertifyPlan, certify_target, plan_certify
from exactnorm.errors import InputError
from exactnorm.model.network import TargetNetwork
from exactnorm.model.transformer import Transformer

__all__ = ["SlotPlan", "plan_slots", "realize_slot", "slots_estimate", "SLOT_OPTIONS",
           "SLOT_MAX_SYSTEM"]

#: the largest Khatri–Rao system a slot's Theorem 1 pair may solve unless the caller says
#: otherwise: a transformer has many slots, and beyond this the trade-off's many small systems
#: cost seconds where one pair costs minutes (a 32 → 128 → 32 MLP: about 2 s against 7 min)
SLOT_MAX_SYSTEM = 1024
#: options of ``certify`` a transformer's slots take (each slot is planned with them)
SLOT_OPTIONS = ("distribution", "block", "routing", "max_system", "retry", "shift_mode",
                "solver")


@dataclass(frozen=True)
class SlotPlan:
    """One slot: its name, its target on its derived box, and its settled plan."""

    name: str
    target: TargetNetwork
    plan: CertifyPlan


def plan_slots(tr: Transformer, seeds: dict[str, int], **options: Any) -> list[SlotPlan]:
    """The plan of every slot in node order (one process each: the slots are the parallel
    unit), with ``seeds[name]`` as its seed; ``options`` are :data:`SLOT_OPTIONS`."""
    for name in options:
        if name not in SLOT_OPTIONS:
            raise InputError(f"{name} does not apply to a transformer (its slots take "
                             f"{', '.join(SLOT_OPTIONS)})", parameter=name)
    options.setdefault("max_system", SLOT_MAX_SYSTEM)
    out = []
    for name, target in tr.slot_targets().items():
        plan = plan_certify(target, "auto", seed=seeds[name], jobs=1, **options)
        out.append(SlotPlan(name, target, replace(plan, seed_rule="chosen")))
    return out


def slots_estimate(plans: list[SlotPlan]) -> Estimate:
    """The cost model's estimate of all slots together (a planning aid, not certified): their
    footprints added (:func:`~exactnorm.constructions.choice.combined_estimate`), the slots as
    the parallel tasks (one process each), so that with several processes the build takes at
    least its largest slot."""
    est = combined_estimate([p.plan.estimate for p in plans])
    builds = [p.plan.estimate.build_seconds for p in plans]
    total = sum(builds)
    largest = max(builds) / total if total > 0 else 1.0
    tasks = max(1, len(plans))
    fp = est.footprint
    return replace(est, tasks=tasks, largest_task=largest,
                   footprint=None if fp is None else replace(fp, tasks=tasks,
                                                             largest_task=largest))


def realize_slot(target: TargetNetwork, plan: CertifyPlan) -> Construction:
    """Build one slot's plan."""
    return certify_target(target, plan)
