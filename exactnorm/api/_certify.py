"""``certify``: the plan of the construction (:mod:`exactnorm.constructions.plan`) with the seed
rule of the API and the command line, and the timed result the API returns.

The two functions here wrap the two of :mod:`exactnorm.constructions.plan` of the same names and
call them by their module (``constructions_plan.plan_certify``, ``constructions_plan.
certify_target``), so the route from the API to the construction reads in the code: the API's
:func:`plan_certify` adds the seed rule to the construction's plan, its :func:`certify_target`
times the construction's build.

The command line ``exactnorm certify`` and :func:`exactnorm.certify` run exactly this code with
the same defaults, so that both give byte-identical certificates (tested); every choice
(construction, block size, distribution, processes, seed) is settled by :func:`plan_certify`
before any mathematics runs, for a target of any layer kinds.

>>> from exactnorm.model.targets import demo_target
>>> p = plan_certify(demo_target())
>>> p.construction, p.seed_rule
('theorem1', 'target')
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, fields
from typing import Any

from exactnorm.certificate.write import seed_of_target
from exactnorm.constructions import plan as constructions_plan
from exactnorm.constructions.common import Construction
from exactnorm.constructions.kinds.dense import WIDE_DISTRIBUTION
from exactnorm.constructions.lowrank import factors_from_target_file
from exactnorm.constructions.plan import CONSTRUCTIONS, CertifyPlan, ProgressHook
from exactnorm.model.network import TargetNetwork

__all__ = ["CONSTRUCTIONS", "WIDE_DISTRIBUTION", "CertifyPlan", "CertifyResult", "plan_certify",
           "certify_target", "factors_of"]


@dataclass(repr=False)
class CertifyResult(Construction):
    """A :class:`~exactnorm.constructions.common.Construction` with the plan that chose it and
    the build time in seconds (wall clock)."""

    plan: CertifyPlan | None = None
    seconds: float = 0.0


def plan_certify(target: TargetNetwork, construction: str = "auto", *,
                 seed: int | str = "target", **options: Any) -> CertifyPlan:
    """Settle every choice of :func:`exactnorm.api.certify` without building anything:
    :func:`exactnorm.constructions.plan.plan_certify` (which documents the options and what it
    raises) with the seed rule of the API and the command line.

    ``seed="target"`` (the default) derives the seed from the target and its box
    (:func:`~exactnorm.certificate.write.seed_of_target`, docs/generator.md §8) after every
    option is settled, so a wrong option is refused before the target is hashed; the plan's
    ``seed_rule`` is then ``"target"``, which the certificate declares and the checker verifies.
    An integer is a seed the caller chose (``seed_rule`` ``"chosen"``). The rule is the same for
    every layer kind.
    """
    if seed != "target":
        chosen: int = seed  # type: ignore[assignment]
        return constructions_plan.plan_certify(target, construction, seed=chosen, **options)
    # no option of the plan depends on the seed: settle it with a placeholder, then put the
    # derived seed where the construction reads it
    settled = constructions_plan.plan_certify(target, construction, seed=0, **options)
    return dataclasses.replace(settled, options=dict(settled.options,
                                                     seed=seed_of_target(target)),
                               seed_rule="target")


def factors_of(path: str | os.PathLike[str]) -> list[Any] | None:
    """The low-rank factors a target ``.json`` file declares (``None`` for other files or none)."""
    if not str(path).endswith(".json"):
        return None
    found = factors_from_target_file(path)
    return found if any(f is not None for f in found) else None


def certify_target(target: TargetNetwork, plan: CertifyPlan,
                   progress: ProgressHook | None = None) -> CertifyResult:
    """Build the construction of ``plan`` (``progress(done, total)`` in ``plan.unit``)."""
    t0 = time.perf_counter()
    c = constructions_plan.certify_target(target, plan, progress)
    seconds = time.perf_counter() - t0
    return CertifyResult(**{f.name: getattr(c, f.name) for f in fields(Construction)},
                         plan=plan, seconds=seconds)
