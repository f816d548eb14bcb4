"""The ``avgpool`` codec, versions 2 and 3 (docs/certificate-format.md §8): target and frozen layers
``{"kind": "avgpool", ["input",] "input_shape", "kernel_shape", "stride", "padding",
"activation": "identity"}`` — a declared fixed map, no weight, γ or β."""

from __future__ import annotations

from typing import Any

from exactnorm.certificate.kinds.records import Sources, float_frozen, geometry
from exactnorm.certificate.kinds.window import geometry_json, geometry_of
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators import avgpool
from exactnorm.model.operators.avgpool import AvgPool

__all__ = ["PoolCodec", "CODEC"]


class PoolCodec:
    """Codec of the ``avgpool`` kind (module doc)."""

    kind = avgpool.NAME
    since_version = 2

    def target_json(self, layer: TargetLayer, compact: bool = False) -> dict[str, Any]:
        assert isinstance(layer.operator, AvgPool)
        return {"kind": self.kind, **geometry_json(layer.operator.geometry, dilation=False),
                "activation": "identity"}

    def frozen_json(self, layer: FrozenLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        assert isinstance(layer.operator, AvgPool)
        return {"kind": self.kind, "input": layer.input,
                **geometry_json(layer.operator.geometry, dilation=False), "activation": "identity"}

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatLayer:
        return float_frozen(entry, j, AvgPool(geometry_of(entry)))

    def target_from_record(self, rec: TargetRecord) -> TargetLayer:
        assert rec.geom is not None  # a windowed kind's record
        return TargetLayer(AvgPool(geometry(rec.geom)), (), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenLayer:
        assert rec.geom is not None  # a windowed kind's record
        return FrozenLayer(rec.input, AvgPool(geometry(rec.geom)), activation=rec.act)


CODEC = PoolCodec()
