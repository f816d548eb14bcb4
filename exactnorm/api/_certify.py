"""``certify``: the plan of the construction (:mod:`exactnorm.constructions.plan`) and the timed
result the API returns.

The command line ``exactnorm certify`` and :func:`exactnorm.certify` run exactly this code with
the same defaults, so that both give byte-identical certificates (tested); every choice
(construction, block size, distribution, processes) is settled by :func:`plan_certify` before
any mathematics runs, for a target of any layer kinds.

>>> from exactnorm.model.targets import demo_target
>>> plan_certify(demo_target()).construction
'theorem1'
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, fields
from typing import Any

from exactnorm.constructions.common import Construction
from exactnorm.constructions.kinds.dense import WIDE_DISTRIBUTION
from exactnorm.constructions.lowrank import factors_from_target_file
from exactnorm.constructions.plan import (
    CONSTRUCTIONS,
    CertifyPlan,
    ProgressHook,
    plan_certify,
)
from exactnorm.constructions.plan import certify_target as build_target
from exactnorm.model.network import TargetNetwork

__all__ = ["CONSTRUCTIONS", "WIDE_DISTRIBUTION", "CertifyPlan", "CertifyResult", "plan_certify",
           "certify_target", "factors_of"]


@dataclass(repr=False)
class CertifyResult(Construction):
    """A :class:`~exactnorm.constructions.common.Construction` with the plan that chose it and
    the build time in seconds (wall clock)."""

    plan: CertifyPlan | None = None
    seconds: float = 0.0


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
    c = build_target(target, plan, progress)
    seconds = time.perf_counter() - t0
    return CertifyResult(**{f.name: getattr(c, f.name) for f in fields(Construction)},
                         plan=plan, seconds=seconds)
