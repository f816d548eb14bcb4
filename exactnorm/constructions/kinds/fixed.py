"""The realizer of every fixed-map kind (average and global average pooling): the target's own
map is copied as a declared frozen layer.

Nothing is solved: the frozen layer is the target layer's operator itself (a fixed map has no
bias, γ or β), reading the node where the run starts, and it is its own checkpoint. Its report
says so (no system, no bits). Nothing here depends on the kind: a kind module makes one
:class:`FixedMapRealizer` with its word.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from exactnorm.constructions.choice import combined_estimate
from exactnorm.constructions.common import LayerReport
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.errors import InputError
from exactnorm.model.layers import FrozenLayer, TargetLayer

__all__ = ["FixedMapRealizer"]


class FixedMapRealizer:
    """A run of one fixed-map layer of kind ``kind``, copied (module doc)."""

    whole_options: tuple[str, ...] = ()
    constructions: dict[str, Any] = {}

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _layer(self, run: Sequence[TargetLayer]) -> TargetLayer:
        (layer,) = run
        if layer.kind != self.kind or layer.channels:
            raise InputError(f"the {self.kind} realizer got a {layer.kind} layer")
        return layer

    def claim(self, layers: Sequence[TargetLayer], i: int) -> int:
        return 1

    def plan(self, run: Sequence[TargetLayer], box: Box, first: int, options: Options | None,
             distribution: str) -> RunPlan:
        self._layer(run)
        nothing = dataclasses.replace(combined_estimate([]), depth=1)
        return RunPlan(self.kind, first, 1, "fixed map", nothing,
                       f"target layer {first} {self.kind}: a fixed map")

    def realize(self, run: Sequence[TargetLayer], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        layer = self._layer(run)
        C = layer.output_shape[0]
        report = LayerReport(plan.first, C, C, (C,), 0, 0, 0, 0, 0, 0,
                             witness={"layer": plan.first, "kind": self.kind})
        return Realized([FrozenLayer(start, layer.operator)], [start + 1], [report],
                        [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None
