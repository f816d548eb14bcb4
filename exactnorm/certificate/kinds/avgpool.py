"""The ``avgpool`` codec, versions 2 and 3 (docs/certificate-format.md §8): target and frozen layers
``{"kind": "avgpool", ["input",] "input_shape", "kernel_shape", "stride", "padding",
"activation": "identity"}`` — a declared fixed map, no weight, γ or β."""

from __future__ import annotations

from typing import Any

from exactnorm.certificate.kinds.records import Sources, geometry
from exactnorm.certificate.kinds.window import geometry_json, geometry_of
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.model.kinds import avgpool
from exactnorm.model.kinds.avgpool import FloatPoolLayer, FrozenPoolLayer, PoolTargetLayer

__all__ = ["PoolCodec", "CODEC"]


class PoolCodec:
    """Codec of the ``avgpool`` kind (module doc)."""

    kind = avgpool.NAME
    since_version = 2

    def target_json(self, layer: PoolTargetLayer, compact: bool = False) -> dict[str, Any]:
        return {"kind": self.kind, **geometry_json(layer.geometry, dilation=False),
                "activation": "identity"}

    def frozen_json(self, layer: FrozenPoolLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        return {"kind": self.kind, "input": layer.input,
                **geometry_json(layer.geometry, dilation=False), "activation": "identity"}

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatPoolLayer:
        return FloatPoolLayer(int(entry["input"]), geometry_of(entry), str(entry["activation"]))

    def target_from_record(self, rec: TargetRecord) -> PoolTargetLayer:
        assert rec.geom is not None  # a windowed kind's record
        return PoolTargetLayer(geometry(rec.geom), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenPoolLayer:
        assert rec.geom is not None  # a windowed kind's record
        return FrozenPoolLayer(rec.input, geometry(rec.geom), rec.act)


CODEC = PoolCodec()
