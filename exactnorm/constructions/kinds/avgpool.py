"""The ``avgpool`` kind's realizer: an average pooling is copied as a declared fixed layer.

Nothing is solved: the frozen layer is the target's own map (no γ, β), reading the node where
the run starts, and it is its own checkpoint. Its report says so (no system, no bits).

>>> from exactnorm.model.kinds import ConvGeometry, PoolTargetLayer
>>> pool = PoolTargetLayer(ConvGeometry((1, 2, 2), (2, 2), stride=(2, 2)))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 3, None, ""),
...                         start=5, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(5, [6], [{'layer': 3, 'kind': 'avgpool'}])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from exactnorm.constructions.choice import combined_estimate
from exactnorm.constructions.common import LayerReport
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.errors import InputError
from exactnorm.model.kinds import avgpool
from exactnorm.model.kinds.avgpool import FrozenPoolLayer, PoolTargetLayer
from exactnorm.model.kinds.base import TargetKind

__all__ = ["PoolRealizer", "REALIZER"]


def _layer(run: Sequence[TargetKind]) -> PoolTargetLayer:
    (layer,) = run
    if not isinstance(layer, PoolTargetLayer):
        raise InputError(f"the {avgpool.NAME} realizer got a {layer.kind} layer")
    return layer


class PoolRealizer:
    """Realizer of the ``avgpool`` kind (module doc)."""

    kind = avgpool.NAME
    whole_options: tuple[str, ...] = ()
    constructions: dict[str, Any] = {}

    def claim(self, layers: Sequence[TargetKind], i: int) -> int:
        return 1

    def plan(self, run: Sequence[TargetKind], box: Box, first: int, options: Options | None,
             distribution: str) -> RunPlan:
        _layer(run)
        nothing = dataclasses.replace(combined_estimate([]), depth=1)
        return RunPlan(self.kind, first, 1, "fixed map", nothing,
                       f"target layer {first} {self.kind}: a fixed map")

    def realize(self, run: Sequence[TargetKind], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        g = _layer(run).geometry
        C = g.input_shape[0]
        report = LayerReport(plan.first, C, C, (C,), 0, 0, 0, 0, 0, 0,
                             witness={"layer": plan.first, "kind": self.kind})
        return Realized([FrozenPoolLayer(start, g)], [start + 1], [report], [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None


REALIZER = PoolRealizer()
