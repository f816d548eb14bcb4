"""The ``dense`` kind's realizer: runs of dense layers by Theorem 1, low rank or the trade-off.

The dense algorithms (:mod:`~exactnorm.constructions.theorem1`, :mod:`~exactnorm.constructions.
lowrank`, :mod:`~exactnorm.constructions.tradeoff`) and their cost model
(:mod:`~exactnorm.constructions.choice`) are called from here as they are.

* **A whole target of dense layers** (:meth:`DenseRealizer.plan_whole`): the caller's
  construction, or ``auto`` — Theorem 1 while every Khatri–Rao system is within ``max_system``,
  else the trade-off with the block size of the cost model (and the zero-free distribution
  ``nonzero:8`` when the caller left it open, since block size 1 needs it). An explicit Theorem 1
  beyond the budget is refused at once with its estimate. The construction's own name,
  provenance and witnesses are the certificate's.
* **A run inside a target of several kinds** (the head after a flatten): the automatic choice
  between Theorem 1 and the trade-off for that run alone on its exact input box; the run's
  frozen layers are shifted to the node where the run starts, and the provenance records the
  run, the construction, the block size and the reason in ``dense_runs``. The reason is the
  estimate for one process, so that the certificate does not depend on ``jobs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from exactnorm.constructions.burkholz import certify_burkholz
from exactnorm.constructions.choice import (
    best_block,
    choose_construction,
    estimate_theorem1,
    estimate_tradeoff,
    require_checker,
    zero_probability,
)
from exactnorm.constructions.common import Construction
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan, WholePlan
from exactnorm.constructions.lowrank import certify_lowrank
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError, LimitExceededError
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION
from exactnorm.model.layers import FrozenLayer, TargetLayer
from exactnorm.model.network import TargetNetwork
from exactnorm.model.operators import dense
from exactnorm.model.operators.dense import dense_frozen, dense_layers
from exactnorm.model.routes import Skip

__all__ = ["DenseRealizer", "REALIZER", "CONSTRUCTIONS", "WIDE_DISTRIBUTION"]

#: name → callable(target, **options) → Construction: the constructions of a whole dense target
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    "burkholz": certify_burkholz,
    "theorem1": certify_theorem1,
    "lowrank": certify_lowrank,
    "tradeoff": certify_tradeoff,
}

#: distribution used for wide layers when none is given: no zero entries, so block size 1 is
#: never structurally singular (see exactnorm.constructions.choice)
WIDE_DISTRIBUTION = "nonzero:8"


def _only(construction: str, parameter: str, *allowed: str) -> InputError:
    which = " or ".join(allowed)
    return InputError(f"{parameter} applies to construction {which} only"
                      + ("" if construction == "auto" else f", not {construction}"),
                      parameter=(parameter, "construction"))


def _shifted(layer: FrozenLayer, offset: int) -> FrozenLayer:
    return dataclasses.replace(
        layer, input=layer.input + offset,
        skips=tuple(Skip(s.source + offset, s.weight, s.kind, record=s.record)
                    for s in layer.skips))


class DenseRealizer:
    """Realizer of the ``dense`` kind (module doc)."""

    kind = dense.NAME
    whole_options = ("block", "routing", "rank", "factors", "sparsity")
    constructions = CONSTRUCTIONS

    def claim(self, layers: Sequence[TargetLayer], i: int) -> int:
        """Every dense layer from ``i`` up to the next layer of another kind."""
        n = 0
        while i + n < len(layers) and layers[i + n].kind == self.kind:
            n += 1
        return n

    def plan(self, run: Sequence[TargetLayer], box: Box, first: int, options: Options,
             distribution: str) -> RunPlan:
        head = TargetNetwork(dense_layers(run), *box)
        # one process: the recorded reason must not depend on the machine (jobs)
        choice = choose_construction(head, distribution, jobs=1, max_system=options.max_system)
        last = first + len(run) - 1
        where = f"target layer {first}" if last == first else f"target layers {first}–{last}"
        block = f" block size {choice.block}" if choice.block is not None else ""
        return RunPlan(self.kind, first, len(run), choice.name, choice.estimate,
                       f"{where} {self.kind}: {choice.name}{block}",
                       {"block": choice.block, "reason": choice.reason})

    def realize(self, run: Sequence[TargetLayer], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        head = TargetNetwork(dense_layers(run), *box)
        common = {k: options[k] for k in ("seed", "distribution", "retry", "shift_mode", "jobs")}
        if plan.construction == "theorem1":
            sub = certify_theorem1(head, solver=options["solver"], first_layer=plan.first,
                                   **common)
        else:
            sub = certify_tradeoff(head, block=plan.choice["block"] or 1,
                                   scheduler=options["scheduler"], first_layer=plan.first,
                                   **common)
        return Realized(
            layers=[_shifted(fl, start) for fl in dense_frozen(sub.network.layers)],
            checkpoints=[start + c for c in sub.network.checkpoints],
            reports=list(sub.reports), witnesses=list(sub.witnesses["layers"]),
            provenance={"dense_runs": [{"layers": [plan.first, plan.last],
                                        "construction": plan.construction,
                                        "block": plan.choice["block"],
                                        "reason": plan.choice["reason"]}]})

    def provenance_defaults(self) -> dict[str, Any]:
        return {"dense_runs": []}

    def plan_whole(self, target: TargetNetwork, options: Options) -> WholePlan:
        """The construction of a whole dense target and its options (module doc); ``jobs`` is
        settled by the caller from the estimate."""
        construction, block, sparsity = options.construction, options.block, options.sparsity
        routing, scheduler = options.routing, options.scheduler
        one = 1 if options.jobs == "auto" else int(options.jobs)  # estimates for one process
        max_system = options.max_system
        # options that belong to one construction: refuse them for another at once
        if block is not None and construction not in ("auto", "tradeoff"):
            raise _only(construction, "block", "tradeoff")
        if block is not None and construction == "auto":
            raise _only(construction, "block", "tradeoff")
        if routing is not None and construction not in ("auto", "tradeoff"):
            raise _only(construction, "routing", "tradeoff")
        if scheduler is not None and construction not in ("auto", "tradeoff"):
            raise _only(construction, "scheduler", "tradeoff")
        if sparsity is not None and construction not in ("auto", "theorem1"):
            raise _only(construction, "sparsity", "theorem1")
        if (options.rank is not None or options.factors is not None) \
                and construction != "lowrank":
            raise _only(construction, "rank" if options.rank is not None else "factors",
                        "lowrank")
        explicit_dist = options.distribution is not None
        dist = options.distribution if options.distribution is not None else DEFAULT_DISTRIBUTION
        if construction == "theorem1":
            t1 = estimate_theorem1(target, one, distribution=dist)
            if t1.system_size > max_system:
                raise LimitExceededError(
                    f"construction theorem1 would solve a Khatri–Rao system of size "
                    f"{t1.system_size} (> max_system = {max_system}): {t1.describe()}; use "
                    f"construction auto or tradeoff, or raise max_system",
                    parameter=("construction", "max_system"))
            require_checker(t1, "construction theorem1", "construction auto or tradeoff")
        note: str | None = None
        if construction == "auto":
            choice = choose_construction(target, dist, jobs=one, max_system=max_system)
            if choice.name == "tradeoff" and not explicit_dist and zero_probability(dist):
                # block size 1 needs zero-free frozen entries; the caller left the distribution
                dist = WIDE_DISTRIBUTION
                choice = choose_construction(target, dist, jobs=one, max_system=max_system)
            construction = choice.name
            if choice.block is not None:
                block = choice.block
            note = (f"{choice.name} chosen: {choice.reason}"
                    f"{'' if explicit_dist else f', frozen entries {dist}'}; "
                    f"{choice.estimate.describe()}")
            if construction == "theorem1" and (routing is not None or scheduler is not None):
                raise _only("auto", "routing" if routing is not None else "scheduler",
                            "tradeoff")
            if construction == "tradeoff" and sparsity is not None:
                raise InputError("sparsity applies to construction theorem1 only, and this "
                                 "target needs the trade-off",
                                 parameter=("sparsity", "construction"))
        elif construction == "tradeoff" and block is None:
            block, est, _, _ = best_block(target, dist, jobs=one, max_system=max_system)
            note = f"tradeoff: block size {block} from the cost model; {est.describe()}"

        estimate = (estimate_tradeoff(target, block or 1, routing=routing or "selection",
                                      distribution=dist)
                    if construction == "tradeoff"
                    else estimate_theorem1(target, distribution=dist))
        if construction == "tradeoff" and options.construction == "tradeoff":
            require_checker(estimate, f"construction tradeoff with block size {block}",
                            "a smaller block size or construction auto")
        opts: dict[str, Any] = {"seed": options.seed, "distribution": dist,
                                "retry": options.retry}
        if options.shift_mode is not None:
            opts["shift_mode"] = options.shift_mode  # else the construction's own default
        if construction == "theorem1":
            opts.update(sparsity=sparsity, mask_side=options.mask_side, solver=options.solver)
        elif construction == "tradeoff":
            opts.update(block=block, scheduler=scheduler)
            if routing is not None:
                opts["routing"] = routing
        else:
            if options.rank is not None:
                opts["rank"] = options.rank
            if options.factors is not None and any(f is not None for f in options.factors):
                opts["factors"] = list(options.factors)
        return WholePlan(construction, opts, note, estimate,
                         takes_jobs=construction in ("theorem1", "tradeoff"),
                         unit="blocks" if construction == "tradeoff" else "target layers")


REALIZER = DenseRealizer()
