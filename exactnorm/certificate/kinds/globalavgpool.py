"""The ``globalavgpool`` codec, version 2 (docs/certificate-format.md §8): target and frozen
layers ``{"kind": "globalavgpool", ["input",] "input_shape": [C, H, W], "activation":
"identity"}`` — a declared fixed map (the channel means), no weight, γ or β."""

from __future__ import annotations

from typing import Any

from exactnorm.certificate.kinds.records import Sources, float_frozen
from exactnorm.checker.records import FrozenRecord, TargetRecord
from exactnorm.model.layers import FloatLayer, FrozenLayer, TargetLayer
from exactnorm.model.operators import globalavgpool
from exactnorm.model.operators.globalavgpool import GlobalAvgPool

__all__ = ["GlobalPoolCodec", "CODEC"]


class GlobalPoolCodec:
    """Codec of the ``globalavgpool`` kind (module doc)."""

    kind = globalavgpool.NAME
    since_version = 2

    def target_json(self, layer: TargetLayer, compact: bool = False) -> dict[str, Any]:
        assert isinstance(layer.operator, GlobalAvgPool)
        return {"kind": self.kind, "input_shape": list(layer.operator.input_shape),
                "activation": "identity"}

    def frozen_json(self, layer: FrozenLayer, j: int, version: int,
                    frozen_weights: str) -> dict[str, Any]:
        assert isinstance(layer.operator, GlobalAvgPool)
        return {"kind": self.kind, "input": layer.input,
                "input_shape": list(layer.operator.input_shape), "activation": "identity"}

    def float_layer(self, entry: dict[str, Any], j: int) -> FloatLayer:
        return float_frozen(entry, j, GlobalAvgPool(tuple(entry["input_shape"])))

    def target_from_record(self, rec: TargetRecord) -> TargetLayer:
        assert rec.shape is not None  # a global pooling's record
        return TargetLayer(GlobalAvgPool(rec.shape), (), rec.act)

    def frozen_from_record(self, rec: FrozenRecord, j: int, source: Sources) -> FrozenLayer:
        assert rec.shape is not None  # a global pooling's record
        return FrozenLayer(rec.input, GlobalAvgPool(rec.shape), activation=rec.act)


CODEC = GlobalPoolCodec()
