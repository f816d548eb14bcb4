"""``certify``: the choice of construction, the budget, ``jobs="auto"``, the options — one place.

The command line ``exactnorm certify`` and :func:`exactnorm.certify` run exactly this code with
the same defaults, so that both give byte-identical certificates (tested). :func:`plan_certify`
settles every choice (construction, block size, distribution, processes) *before* any
mathematics runs and refuses what cannot finish: an explicit Theorem 1 beyond ``max_system``
is refused at once with its estimate, never after minutes of work with a ``MemoryError``.

Errors name this module's parameters (``block applies to construction tradeoff only``); the CLI
renders them as flags.

>>> from exactnorm.model.targets import demo_target, random_target
>>> plan_certify(demo_target()).construction
'theorem1'
>>> p = plan_certify(random_target((80, 64, 2), seed=0))
>>> p.construction, p.options["block"], p.options["distribution"]
('tradeoff', 1, 'nonzero:8')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from exactnorm.constructions.choice import (
    THEOREM1_MAX_SYSTEM,
    Estimate,
    best_block,
    choose_construction,
    estimate_theorem1,
    estimate_tradeoff,
    human_seconds,
    zero_probability,
)
from exactnorm.constructions.common import DEFAULT_RETRY, SHIFT_MODES, Construction
from exactnorm.constructions.lowrank import certify_lowrank, factors_from_target_file
from exactnorm.constructions.parallel import auto_jobs
from exactnorm.constructions.theorem1 import certify_theorem1
from exactnorm.constructions.tradeoff import certify_tradeoff
from exactnorm.errors import InputError, LimitExceededError, require_integer
from exactnorm.exact.sampling import DEFAULT_DISTRIBUTION, parse_distribution
from exactnorm.model.network import TargetNetwork

__all__ = ["CONSTRUCTIONS", "WIDE_DISTRIBUTION", "CertifyPlan", "CertifyResult", "plan_certify",
           "certify_target"]

#: name → callable(target, **options) → Construction
CONSTRUCTIONS: dict[str, Callable[..., Construction]] = {
    "theorem1": certify_theorem1,
    "lowrank": certify_lowrank,
    "tradeoff": certify_tradeoff,
}

#: distribution used for wide layers when none is given: no zero entries, so block size 1 is
#: never structurally singular (see exactnorm.constructions.choice)
WIDE_DISTRIBUTION = "nonzero:8"

ROUTINGS = ("selection", "mask")
MASK_SIDES = ("input", "output", "both")
SOLVERS = ("auto", "padic", "flint")


@dataclass(frozen=True)
class CertifyPlan:
    """What :func:`plan_certify` settled: the construction, its options, and why.

    ``note`` is the sentence of an automatic choice (``None`` when the caller chose everything),
    ``jobs_note`` that of ``jobs="auto"``, ``estimate`` the cost model's estimate (a planning aid,
    not certified).
    """

    construction: str
    options: dict[str, Any]
    note: str | None
    jobs_note: str | None
    estimate: Estimate
    #: ``"target"``: ``options["seed"]`` was derived from the target and box (checked by the
    #: checker, docs/generator.md §8); ``"chosen"``: the caller gave it
    seed_rule: str = "chosen"

    @property
    def summary(self) -> str | None:
        """The note and the jobs note, as one line (``None`` if neither)."""
        parts = [p for p in (self.note, self.jobs_note) if p]
        return "; ".join(parts) or None

    @property
    def unit(self) -> str:
        """What progress counts: blocks of the trade-off, else target layers."""
        return "blocks" if self.construction == "tradeoff" else "target layers"


@dataclass(repr=False)
class CertifyResult(Construction):
    """A :class:`~exactnorm.constructions.common.Construction` with the plan that chose it and
    the build time in seconds (wall clock)."""

    plan: CertifyPlan | None = None
    seconds: float = 0.0


def _choice(value: Any, allowed: Sequence[str], parameter: str) -> None:
    if value not in allowed:
        raise InputError(f"{parameter} must be one of {', '.join(allowed)}, got {value!r}",
                         parameter=parameter)


def _only(construction: str, parameter: str, *allowed: str) -> InputError:
    which = " or ".join(allowed)
    return InputError(f"{parameter} applies to construction {which} only"
                      + ("" if construction == "auto" else f", not {construction}"),
                      parameter=(parameter, "construction"))


def plan_certify(target: TargetNetwork, construction: str = "auto", *,
                 seed: int | str = "target",
                 distribution: str | None = None, block: int | None = None,
                 routing: str | None = None, max_system: int = THEOREM1_MAX_SYSTEM,
                 rank: int | None = None, retry: int = DEFAULT_RETRY,
                 shift_mode: str | None = None, sparsity: Any = None, mask_side: str = "both",
                 jobs: int | str = "auto", scheduler: Any = None, solver: str = "auto",
                 factors: Sequence[Any] | None = None) -> CertifyPlan:
    """Settle every choice of :func:`exactnorm.api.certify` without building anything.

    Parameters are those of :func:`exactnorm.api.certify`.

    Returns
    -------
    CertifyPlan

    Raises
    ------
    InputError
        An unknown construction or option value, or an option of another construction, naming
        the parameter.
    LimitExceededError
        ``construction="theorem1"`` with a Khatri–Rao system larger than ``max_system``, with the
        estimated time, memory and certificate size (at once, before any work).

    Examples
    --------
    >>> from exactnorm.model.targets import random_target
    >>> plan_certify(random_target((80, 64, 2), seed=0), "theorem1")
    Traceback (most recent call last):
    ...
    exactnorm.errors.LimitExceededError: construction theorem1 would solve a Khatri–Rao system of size 5120 (> max_system = 4096): ...
    """  # noqa: E501
    _choice(construction, ["auto", *sorted(CONSTRUCTIONS)], "construction")
    seed_rule = "target" if seed == "target" else "chosen"
    if seed_rule == "chosen":
        require_integer(seed, "seed")
    require_integer(max_system, "max_system", minimum=1)
    require_integer(retry, "retry")
    if jobs != "auto":
        require_integer(jobs, "jobs", minimum=1)
    if block is not None:
        require_integer(block, "block", minimum=1)
    if rank is not None:
        require_integer(rank, "rank", minimum=1)
    if routing is not None:
        _choice(routing, ROUTINGS, "routing")
    if shift_mode is not None:
        _choice(shift_mode, SHIFT_MODES, "shift_mode")
    _choice(mask_side, MASK_SIDES, "mask_side")
    _choice(solver, SOLVERS, "solver")
    if distribution is not None:
        parse_distribution(distribution)  # a bad name fails here, before any estimate
    one = 1 if jobs == "auto" else int(jobs)  # estimates for one process until settled

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
    if (rank is not None or factors is not None) and construction != "lowrank":
        raise _only(construction, "rank" if rank is not None else "factors", "lowrank")

    if construction == "theorem1":
        t1 = estimate_theorem1(target, one)
        if t1.system_size > max_system:
            raise LimitExceededError(
                f"construction theorem1 would solve a Khatri–Rao system of size "
                f"{t1.system_size} (> max_system = {max_system}): {t1.describe()}; use "
                f"construction auto or tradeoff, or raise max_system",
                parameter=("construction", "max_system"))
    explicit_dist = distribution is not None
    dist = distribution if distribution is not None else DEFAULT_DISTRIBUTION
    note: str | None = None
    if construction == "auto":
        choice = choose_construction(target, dist, jobs=one, max_system=max_system)
        if choice.name == "tradeoff" and not explicit_dist and zero_probability(dist):
            # block size 1 needs zero-free frozen entries; the caller left the distribution to us
            dist = WIDE_DISTRIBUTION
            choice = choose_construction(target, dist, jobs=one, max_system=max_system)
        construction = choice.name
        if choice.block is not None:
            block = choice.block
        note = (f"{choice.name} chosen: {choice.reason}"
                f"{'' if explicit_dist else f', frozen entries {dist}'}; "
                f"{choice.estimate.describe()}")
        if construction == "theorem1" and (routing is not None or scheduler is not None):
            raise _only("auto", "routing" if routing is not None else "scheduler", "tradeoff")
        if construction == "tradeoff" and sparsity is not None:
            raise InputError("sparsity applies to construction theorem1 only, and this target "
                             "needs the trade-off", parameter=("sparsity", "construction"))
    elif construction == "tradeoff" and block is None:
        block, est, _, _ = best_block(target, dist, jobs=one)
        note = f"tradeoff: block size {block} from the cost model; {est.describe()}"

    estimate = (estimate_tradeoff(target, block or 1, routing=routing or "selection")
                if construction == "tradeoff" else estimate_theorem1(target))
    jobs_note = None
    if jobs == "auto":
        jobs = auto_jobs(estimate.seconds)
        if jobs > 1:
            jobs_note = (f"jobs auto: {jobs} processes, "
                         f"≈ {human_seconds(estimate.seconds / jobs)}")
    if seed_rule == "target":
        from exactnorm.certificate import seed_of_target

        seed = seed_of_target(target)
    opts: dict[str, Any] = {"seed": seed, "distribution": dist, "retry": retry}
    if shift_mode is not None:
        opts["shift_mode"] = shift_mode  # else the construction's own default
    if construction == "theorem1":
        opts.update(sparsity=sparsity, mask_side=mask_side, jobs=jobs, solver=solver)
    elif construction == "tradeoff":
        opts.update(block=block, jobs=jobs, scheduler=scheduler)
        if routing is not None:
            opts["routing"] = routing
    else:
        if rank is not None:
            opts["rank"] = rank
        if factors is not None and any(f is not None for f in factors):
            opts["factors"] = list(factors)
    return CertifyPlan(construction, opts, note, jobs_note, estimate, seed_rule)


def factors_of(path: str | os.PathLike[str]) -> list[Any] | None:
    """The low-rank factors a target ``.json`` file declares (``None`` for other files or none)."""
    if not str(path).endswith(".json"):
        return None
    found = factors_from_target_file(path)
    return found if any(f is not None for f in found) else None


def certify_target(target: TargetNetwork, plan: CertifyPlan,
                   progress: Callable[[int, int], None] | None = None) -> CertifyResult:
    """Build the construction of ``plan`` (``progress(done, total)`` in ``plan.unit``)."""
    t0 = time.perf_counter()
    c = CONSTRUCTIONS[plan.construction](target, progress=progress, **plan.options)
    c.provenance["seed_rule"] = plan.seed_rule
    if target.source is not None:
        # where the target came from (names and input shape of the model file): the ONNX
        # export reuses them; descriptive only, the checker ignores provenance
        c.provenance["source"] = target.source
    seconds = time.perf_counter() - t0
    return CertifyResult(**{f.name: getattr(c, f.name) for f in fields(Construction)},
                         plan=plan, seconds=seconds)
