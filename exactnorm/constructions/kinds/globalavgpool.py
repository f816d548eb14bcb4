"""The ``globalavgpool`` kind's realizer: a global average pooling is copied as a declared fixed
layer.

Nothing is solved: the frozen layer is the target's own map (no γ, β), reading the node where
the run starts, and it is its own checkpoint. Its report says so (no system, no bits).

>>> from exactnorm.model.kinds import GlobalPoolTargetLayer
>>> pool = GlobalPoolTargetLayer((2, 3, 3))
>>> done = REALIZER.realize([pool], ((), ()), REALIZER.plan([pool], ((), ()), 2, None, ""),
...                         start=4, options={})
>>> done.layers[0].input, done.checkpoints, done.witnesses
(4, [5], [{'layer': 2, 'kind': 'globalavgpool'}])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from exactnorm.constructions.choice import combined_estimate
from exactnorm.constructions.common import LayerReport
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.errors import InputError
from exactnorm.model.kinds import globalavgpool
from exactnorm.model.kinds.base import TargetKind
from exactnorm.model.kinds.globalavgpool import FrozenGlobalPoolLayer, GlobalPoolTargetLayer

__all__ = ["GlobalPoolRealizer", "REALIZER"]


def _layer(run: Sequence[TargetKind]) -> GlobalPoolTargetLayer:
    (layer,) = run
    if not isinstance(layer, GlobalPoolTargetLayer):
        raise InputError(f"the {globalavgpool.NAME} realizer got a {layer.kind} layer")
    return layer


class GlobalPoolRealizer:
    """Realizer of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
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
        shape = _layer(run).input_shape
        C = shape[0]
        report = LayerReport(plan.first, C, C, (C,), 0, 0, 0, 0, 0, 0,
                             witness={"layer": plan.first, "kind": self.kind})
        return Realized([FrozenGlobalPoolLayer(start, shape)], [start + 1], [report],
                        [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None


REALIZER = GlobalPoolRealizer()
