"""Realizers of fixed-map kinds (average and global average pooling): the target's own map is
copied as a declared frozen layer.

Nothing is solved: the frozen layer is the target's map (no γ, β), reading the node where the run
starts, and it is its own checkpoint. Its report says so (no system, no bits). A kind module
names its target class, its frozen class and how a frozen layer is made from a target layer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from exactnorm.constructions.choice import combined_estimate
from exactnorm.constructions.common import LayerReport
from exactnorm.constructions.kinds.base import Box, Options, Realized, RunPlan
from exactnorm.errors import InputError
from exactnorm.model.kinds.base import FrozenKind, TargetKind

__all__ = ["FixedMapRealizer"]


class FixedMapRealizer:
    """A run of one fixed-map layer, copied (module doc). Subclasses set ``kind`` and
    ``target_type`` and implement :meth:`frozen`."""

    kind: ClassVar[str]
    target_type: ClassVar[type]
    whole_options: tuple[str, ...] = ()
    constructions: dict[str, Any] = {}

    def frozen(self, layer: Any, start: int) -> FrozenKind:
        """The frozen copy of ``layer`` reading node ``start``."""
        raise NotImplementedError

    def channels(self, layer: Any) -> int:
        """The channels ``layer`` reads (and writes)."""
        raise NotImplementedError

    def _layer(self, run: Sequence[TargetKind]) -> Any:
        (layer,) = run
        if not isinstance(layer, self.target_type):
            raise InputError(f"the {self.kind} realizer got a {layer.kind} layer")
        return layer

    def claim(self, layers: Sequence[TargetKind], i: int) -> int:
        return 1

    def plan(self, run: Sequence[TargetKind], box: Box, first: int, options: Options | None,
             distribution: str) -> RunPlan:
        self._layer(run)
        nothing = dataclasses.replace(combined_estimate([]), depth=1)
        return RunPlan(self.kind, first, 1, "fixed map", nothing,
                       f"target layer {first} {self.kind}: a fixed map")

    def realize(self, run: Sequence[TargetKind], box: Box, plan: RunPlan, *, start: int,
                options: dict[str, Any]) -> Realized:
        layer = self._layer(run)
        C = self.channels(layer)
        report = LayerReport(plan.first, C, C, (C,), 0, 0, 0, 0, 0, 0,
                             witness={"layer": plan.first, "kind": self.kind})
        return Realized([self.frozen(layer, start)], [start + 1], [report], [report.witness])

    def provenance_defaults(self) -> dict[str, Any]:
        return {}

    def plan_whole(self, target: Any, options: Options) -> None:
        return None
